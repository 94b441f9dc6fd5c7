//! im2col and col2im over the normalised three-axis geometry.
//!
//! For `c` channels of one image, the column matrix has one row per
//! (channel, kernel tap) pair, `c · taps` rows in all, and one column per
//! output position: row `(ch, t)` holds, for every output position, the
//! input value that tap `t` of the window at that position reads (zero in
//! the padding). A convolution is then `weight (F x c·taps) · col`.

use super::geometry::Geom3;
use oxnet_core::FloatElement;

/// Kernel taps of `g` in row order: `(kd, kh, kw)`.
fn taps(g: &Geom3) -> impl Iterator<Item = [usize; 3]> + '_ {
    (0..g.k[0]).flat_map(move |a| (0..g.k[1]).flat_map(move |b| (0..g.k[2]).map(move |c| [a, b, c])))
}

/// Output indices `[lo, hi)` along axis `a` whose tap `t` reads inside the
/// input (the others read padding).
#[inline]
fn valid_range(g: &Geom3, a: usize, t: usize) -> (usize, usize) {
    let (s, off) = (g.s[a] as isize, (t * g.d[a]) as isize - g.p[a]);
    // z = o·s + off must satisfy 0 <= z < inp
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let end = g.inp[a] as isize - off;
    let hi = if end <= 0 { 0 } else { (end + s - 1) / s };
    let hi = (hi as usize).min(g.out[a]);
    ((lo as usize).min(hi), hi)
}

/// True when [`im2col_range_same_width`] applies: a 1-D or 2-D window at stride
/// 1, undilated along the rows, whose output rows are as wide as the input
/// rows (the usual "same" padding of 3x3, 5x5, ... kernels).
fn same_width_2d(g: &Geom3) -> bool {
    g.inp[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.s == [1; 3] && g.d[2] == 1 && g.out[2] == g.inp[2]
}

/// One stretch of output positions along a single output line, as seen by
/// one kernel tap: `len` positions starting at `dst` (relative to the
/// range), of which `lo..hi` (relative to the stretch) read the input line
/// starting at `line` (an offset into the plane) from element `first`, at
/// the window stride; the others read padding. `line` is `None` when the
/// whole stretch lies in the padding.
struct Stretch {
    dst: usize,
    len: usize,
    line: Option<usize>,
    lo: usize,
    hi: usize,
    first: usize,
}

/// Calls `visit` for the stretches that output positions
/// `first..first + len` form for tap `t`, in order.
#[inline]
fn stretches(g: &Geom3, t: [usize; 3], first: usize, len: usize, mut visit: impl FnMut(Stretch)) {
    let ow = g.out[2];
    let (vlo, vhi) = valid_range(g, 2, t[2]);
    let (mut pos, end) = (first, first + len);
    while pos < end {
        let (line_index, a) = (pos / ow, pos % ow);
        let b = (a + (end - pos)).min(ow);
        let (o0, o1) = (line_index / g.out[1], line_index % g.out[1]);
        let (z0, z1) = (g.coord(0, o0, t[0]), g.coord(1, o1, t[1]));
        let mut stretch = Stretch { dst: pos - first, len: b - a, line: None, lo: 0, hi: 0, first: 0 };
        if g.inside(0, z0) && g.inside(1, z1) {
            let (lo, hi) = (vlo.clamp(a, b), vhi.clamp(a, b));
            if lo < hi {
                stretch.line = Some((z0 as usize * g.inp[1] + z1 as usize) * g.inp[2]);
                stretch.lo = lo - a;
                stretch.hi = hi - a;
                stretch.first = g.coord(2, lo, t[2]) as usize;
            }
        }
        visit(stretch);
        pos += b - a;
    }
}

/// What one tap of a [`same_width_2d`] window does over output positions
/// `first..end`, the same for every channel: output position `o` reads
/// input element `o + shift` of the plane; positions `lo..hi` read inside
/// the plane, and of those the stretches `edges` (relative to `first`)
/// read across a row edge, i.e. padding.
struct SameWidthTap {
    shift: isize,
    lo: usize,
    hi: usize,
    edges: Vec<(usize, usize)>,
}

/// The taps of a [`same_width_2d`] window over positions `first..end`, in
/// row order.
fn same_width_taps(g: &Geom3, first: usize, end: usize) -> Vec<SameWidthTap> {
    let (in_size, w) = (g.in_size() as isize, g.inp[2]);
    let mut taps = Vec::with_capacity(g.k[1] * g.k[2]);
    for t1 in 0..g.k[1] {
        let (r_lo, r_hi) = valid_range(g, 1, t1);
        for t2 in 0..g.k[2] {
            let shift = ((t1 * g.d[1]) as isize - g.p[1]) * w as isize + t2 as isize - g.p[2];
            let lo = (r_lo as isize * w as isize).max(-shift).clamp(first as isize, end as isize);
            let hi = (r_hi as isize * w as isize).min(in_size - shift).clamp(lo, end as isize);
            let (c_lo, c_hi) = valid_range(g, 2, t2);
            let mut edges = Vec::new();
            if c_lo > 0 || c_hi < w {
                for line in first / w..end.div_ceil(w) {
                    let (a, b) = (line * w, line * w + w);
                    for (z0, z1) in [(a, a + c_lo), (a + c_hi, b)] {
                        let (z0, z1) = (z0.max(first), z1.min(end));
                        if z1 > z0 {
                            edges.push((z0 - first, z1 - first));
                        }
                    }
                }
            }
            taps.push(SameWidthTap { shift, lo: lo as usize, hi: hi as usize, edges });
        }
    }
    taps
}

/// [`im2col_range`] for [`same_width_2d`] windows: one shifted block copy
/// per row of the tile, then the entries that read across a row edge are
/// zeroed.
fn im2col_range_same_width<T: FloatElement>(
    x: &[T],
    c: usize,
    g: &Geom3,
    first: usize,
    len: usize,
    col: &mut [T],
) {
    let in_size = g.in_size();
    let taps = same_width_taps(g, first, first + len);
    for (t, tap) in taps.iter().enumerate() {
        for ch in 0..c {
            let plane = &x[ch * in_size..(ch + 1) * in_size];
            let row = &mut col[(ch * taps.len() + t) * len..][..len];
            let (lo, hi) = (tap.lo - first, tap.hi - first);
            row[..lo].fill(T::zero());
            if hi > lo {
                let src = (tap.lo as isize + tap.shift) as usize;
                row[lo..hi].copy_from_slice(&plane[src..src + (hi - lo)]);
            }
            row[hi..].fill(T::zero());
            for &(a, b) in &tap.edges {
                row[a..b].fill(T::zero());
            }
        }
    }
}

/// [`col2im_add_range`] over a scratch tile, which it may overwrite. For
/// [`same_width_2d`] windows each row's entries that read across a row
/// edge are zeroed, and the row then folds back as one contiguous add.
pub(crate) fn col2im_add_range_scratch<T: FloatElement>(
    col: &mut [T],
    c: usize,
    g: &Geom3,
    first: usize,
    len: usize,
    dx: &mut [T::Compute],
) {
    if !same_width_2d(g) {
        return col2im_add_range(col, c, g, first, len, dx);
    }
    let in_size = g.in_size();
    let taps = same_width_taps(g, first, first + len);
    for (t, tap) in taps.iter().enumerate() {
        if tap.hi <= tap.lo {
            continue;
        }
        let src = (tap.lo as isize + tap.shift) as usize;
        for ch in 0..c {
            let row = &mut col[(ch * taps.len() + t) * len..][..len];
            for &(a, b) in &tap.edges {
                row[a..b].fill(T::zero());
            }
            let plane = &mut dx[ch * in_size..(ch + 1) * in_size];
            let (lo, hi) = (tap.lo - first, tap.hi - first);
            for (d, v) in plane[src..src + (hi - lo)].iter_mut().zip(&row[lo..hi]) {
                *d = *d + v.to_compute();
            }
        }
    }
}

/// Fills `col` (`c·taps x len`, rows of `len`) with the columns of output
/// positions `first..first + len` only: a tile of [`im2col`]'s matrix.
pub(crate) fn im2col_range<T: FloatElement>(
    x: &[T],
    c: usize,
    g: &Geom3,
    first: usize,
    len: usize,
    col: &mut [T],
) {
    if same_width_2d(g) {
        return im2col_range_same_width(x, c, g, first, len, col);
    }
    let in_size = g.in_size();
    let mut rows = col.chunks_exact_mut(len.max(1));
    for ch in 0..c {
        let plane = &x[ch * in_size..(ch + 1) * in_size];
        for t in taps(g) {
            let Some(row) = rows.next() else { return };
            stretches(g, t, first, len, |st| {
                let dst = &mut row[st.dst..st.dst + st.len];
                let Some(line) = st.line else {
                    dst.fill(T::zero());
                    return;
                };
                dst[..st.lo].fill(T::zero());
                dst[st.hi..].fill(T::zero());
                let src = &plane[line..];
                if g.s[2] == 1 {
                    dst[st.lo..st.hi].copy_from_slice(&src[st.first..st.first + (st.hi - st.lo)]);
                } else {
                    for (d, z) in dst[st.lo..st.hi].iter_mut().zip((st.first..).step_by(g.s[2])) {
                        *d = src[z];
                    }
                }
            });
        }
    }
}

/// Adds a tile of columns (`c·taps x len`, output positions
/// `first..first + len`) back into `dx` (`c` input planes, compute type):
/// the adjoint of [`im2col_range`].
pub(crate) fn col2im_add_range<T: FloatElement>(
    col: &[T],
    c: usize,
    g: &Geom3,
    first: usize,
    len: usize,
    dx: &mut [T::Compute],
) {
    let in_size = g.in_size();
    let mut rows = col.chunks_exact(len.max(1));
    for ch in 0..c {
        let plane = &mut dx[ch * in_size..(ch + 1) * in_size];
        for t in taps(g) {
            let Some(row) = rows.next() else { return };
            stretches(g, t, first, len, |st| {
                let Some(line) = st.line else { return };
                let src = &row[st.dst + st.lo..st.dst + st.hi];
                let dst = &mut plane[line..];
                if g.s[2] == 1 {
                    for (d, v) in dst[st.first..st.first + src.len()].iter_mut().zip(src) {
                        *d = *d + v.to_compute();
                    }
                } else {
                    for (v, z) in src.iter().zip((st.first..).step_by(g.s[2])) {
                        dst[z] = dst[z] + v.to_compute();
                    }
                }
            });
        }
    }
}

/// Fills `col` (`c·taps x out_size`) from `x` (`c` input planes).
pub(crate) fn im2col<T: FloatElement>(x: &[T], c: usize, g: &Geom3, col: &mut [T]) {
    im2col_range(x, c, g, 0, g.out_size(), col)
}

/// Adds `col` (`c·taps x out_size`) back into `dx` (`c` input planes, in
/// the compute type): the adjoint of [`im2col`].
pub(crate) fn col2im_add<T: FloatElement>(col: &[T], c: usize, g: &Geom3, dx: &mut [T::Compute]) {
    col2im_add_range(col, c, g, 0, g.out_size(), dx)
}

#[cfg(test)]
mod tests {
    use super::super::geometry::Window;
    use super::*;

    #[test]
    fn columns_of_a_padded_strided_window() {
        // 1-D: x = [1 2 3 4 5], kernel 3, stride 2, pad 1 -> outputs at -1, 1, 3
        let w = Window {
            kernel: vec![3],
            stride: vec![2],
            dilate: vec![1],
            pad_before: vec![1],
            pad_after: vec![1],
        };
        let g = w.geom3(&[5], &[3]);
        let x = [1.0f64, 2., 3., 4., 5.];
        let mut col = vec![9.0; 9];
        im2col(&x, 1, &g, &mut col);
        assert_eq!(col, vec![0., 2., 4., 1., 3., 5., 2., 4., 0.]);
        // col2im is the adjoint: <im2col(x), y> = <x, col2im(y)>
        let y: Vec<f64> = (0..9).map(|i| (i as f64) * 0.5 - 1.0).collect();
        let mut back = vec![0.0; 5];
        col2im_add(&y, 1, &g, &mut back);
        let lhs: f64 = col.iter().zip(&y).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&back).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12);
    }

    /// im2col by definition: zero where a tap reads padding.
    fn im2col_by_definition(x: &[f64], c: usize, g: &Geom3) -> Vec<f64> {
        let mut col = Vec::new();
        for ch in 0..c {
            for t in taps(g) {
                for o0 in 0..g.out[0] {
                    for o1 in 0..g.out[1] {
                        for o2 in 0..g.out[2] {
                            let z = [g.coord(0, o0, t[0]), g.coord(1, o1, t[1]), g.coord(2, o2, t[2])];
                            let inside = (0..3).all(|a| g.inside(a, z[a]));
                            col.push(if inside {
                                x[ch * g.in_size()
                                    + (z[0] as usize * g.inp[1] + z[1] as usize) * g.inp[2]
                                    + z[2] as usize]
                            } else {
                                0.0
                            });
                        }
                    }
                }
            }
        }
        col
    }

    #[test]
    fn same_width_block_copies_match_the_definition() {
        // (h, w, kernel, pad, dilate along rows): all keep the width
        for (h, w, k, p, d) in [
            (5, 4, [3, 3], [1, 1], 1),
            (3, 6, [5, 5], [2, 2], 1),
            (4, 3, [3, 1], [2, 0], 2),
            (1, 5, [1, 3], [0, 1], 1),
            (2, 2, [3, 3], [1, 1], 1),
            (1, 1, [3, 3], [1, 1], 1),
            (1, 2, [5, 5], [2, 2], 1),
            (4, 1, [3, 3], [1, 1], 2),
        ] {
            let win = Window {
                kernel: k.to_vec(),
                stride: vec![1, 1],
                dilate: vec![d, 1],
                pad_before: p.to_vec(),
                pad_after: p.to_vec(),
            };
            let out_h = h + 2 * p[0] - d * (k[0] - 1);
            let g = win.geom3(&[h, w], &[out_h, w]);
            assert!(same_width_2d(&g));
            let c = 2;
            let x: Vec<f64> = (0..c * h * w).map(|i| i as f64 + 1.0).collect();
            let mut col = vec![f64::NAN; c * k[0] * k[1] * out_h * w];
            im2col(&x, c, &g, &mut col);
            assert_eq!(col, im2col_by_definition(&x, c, &g), "{h}x{w} k{k:?} p{p:?} d{d}");
        }
    }

    #[test]
    fn tiles_agree_with_the_whole_matrix_and_fold_back_alike() {
        // (input, kernel, stride, dilate, pad) per axis, 1-D to 3-D windows
        let cases: [(&[usize], &[usize], &[usize], &[usize], &[usize]); 7] = [
            (&[7], &[3], &[2], &[1], &[1]),
            (&[5, 6], &[3, 3], &[1, 1], &[1, 1], &[1, 1]),
            (&[6, 5], &[3, 2], &[2, 1], &[1, 2], &[0, 1]),
            (&[3, 4, 5], &[2, 3, 3], &[1, 2, 1], &[1, 1, 2], &[1, 0, 2]),
            (&[4, 4], &[5, 5], &[1, 1], &[1, 1], &[2, 2]),
            (&[6, 5], &[3, 3], &[1, 1], &[2, 1], &[2, 1]),
            (&[1, 9], &[1, 3], &[1, 1], &[1, 1], &[0, 1]),
        ];
        for (inp, k, s, d, p) in cases {
            let w = Window {
                kernel: k.to_vec(),
                stride: s.to_vec(),
                dilate: d.to_vec(),
                pad_before: p.to_vec(),
                pad_after: p.to_vec(),
            };
            let out: Vec<usize> =
                (0..inp.len()).map(|i| (inp[i] + 2 * p[i] - w.span(i)) / s[i] + 1).collect();
            let g = w.geom3(inp, &out);
            let c = 2;
            let x: Vec<f64> = (0..c * g.in_size()).map(|i| i as f64 * 0.25 - 3.0).collect();
            let whole = im2col_by_definition(&x, c, &g);
            let rows = c * w.taps();
            let pos = g.out_size();
            let mut folded = vec![0.0; x.len()];
            let mut scratch_folded = vec![0.0; x.len()];
            let mut any_folded = vec![0.0; x.len()];
            let mut reference = vec![0.0; x.len()];
            col2im_add(&whole, c, &g, &mut reference);
            for tile in [1, 3, 7, pos] {
                folded.fill(0.0);
                scratch_folded.fill(0.0);
                any_folded.fill(0.0);
                for first in (0..pos).step_by(tile) {
                    let len = tile.min(pos - first);
                    let mut col = vec![f64::NAN; rows * len];
                    im2col_range(&x, c, &g, first, len, &mut col);
                    for r in 0..rows {
                        assert_eq!(
                            col[r * len..][..len],
                            whole[r * pos + first..][..len],
                            "{inp:?} tile {tile}"
                        );
                    }
                    col2im_add_range(&col, c, &g, first, len, &mut folded);
                    // any tile, not only im2col's (whose padding entries are zero)
                    let mut any: Vec<f64> = (0..rows * len).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
                    col2im_add_range(&any, c, &g, first, len, &mut any_folded);
                    col2im_add_range_scratch(&mut any, c, &g, first, len, &mut scratch_folded);
                }
                assert_eq!(folded, reference, "{inp:?} tile {tile}");
                assert_eq!(scratch_folded, any_folded, "{inp:?} tile {tile} (scratch)");
            }
        }
    }

    #[test]
    fn valid_ranges_agree_with_the_coordinates() {
        for (inp, k, s, d, p) in
            [(5, 3, 2, 1, 1), (7, 3, 1, 2, 2), (4, 5, 3, 1, 3), (1, 1, 1, 1, 0), (6, 2, 4, 3, 0)]
        {
            let w = Window {
                kernel: vec![k],
                stride: vec![s],
                dilate: vec![d],
                pad_before: vec![p],
                pad_after: vec![p],
            };
            let out = (inp + 2 * p - (d * (k - 1) + 1)) / s + 1;
            let g = w.geom3(&[inp], &[out]);
            for t in 0..k {
                let (lo, hi) = valid_range(&g, 2, t);
                for o in 0..out {
                    assert_eq!(
                        (lo..hi).contains(&o),
                        g.inside(2, g.coord(2, o, t)),
                        "{inp} {k} {s} {d} {p} t={t} o={o}"
                    );
                }
            }
        }
    }
}
