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

/// True when [`im2col_same_width`] applies: a 1-D or 2-D window at stride
/// 1, undilated along the rows, whose output rows are as wide as the input
/// rows (the usual "same" padding of 3x3, 5x5, ... kernels).
fn same_width_2d(g: &Geom3) -> bool {
    g.inp[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.s == [1; 3] && g.d[2] == 1 && g.out[2] == g.inp[2]
}

/// [`im2col`] for [`same_width_2d`] windows. Output row `o1`, column `o2`
/// of tap `t` reads input element `(o1 + t1·d1 - p1)·w + o2 + t2 - p2` of
/// the plane: the same shift for the whole row of `col`, so it is one
/// block copy per (channel, tap) instead of one short copy per output row,
/// after which the columns that wrapped around a row edge and the rows
/// that fall into the padding are zeroed.
fn im2col_same_width<T: FloatElement>(x: &[T], c: usize, g: &Geom3, col: &mut [T]) {
    let (in_size, p, w) = (g.in_size(), g.out_size(), g.inp[2]);
    let mut rows = col.chunks_exact_mut(p.max(1));
    for ch in 0..c {
        let plane = &x[ch * in_size..(ch + 1) * in_size];
        for t1 in 0..g.k[1] {
            let (r_lo, r_hi) = valid_range(g, 1, t1);
            for t2 in 0..g.k[2] {
                let Some(row) = rows.next() else { return };
                let (c_lo, c_hi) = valid_range(g, 2, t2);
                let shift = (t1 * g.d[1]) as isize * w as isize - g.p[1] * w as isize + t2 as isize - g.p[2];
                // destination positions whose source lies inside the plane
                let (row_lo, row_hi) = ((r_lo * w) as isize, (r_hi * w) as isize);
                let j_lo = row_lo.max(-shift).min(row_hi) as usize;
                let j_hi = row_hi.min(in_size as isize - shift).max(j_lo as isize) as usize;
                row[..j_lo].fill(T::zero());
                if j_hi > j_lo {
                    let src = (j_lo as isize + shift) as usize;
                    row[j_lo..j_hi].copy_from_slice(&plane[src..src + (j_hi - j_lo)]);
                }
                row[j_hi..].fill(T::zero());
                if c_lo > 0 || c_hi < w {
                    for line in row[r_lo * w..r_hi * w].chunks_exact_mut(w) {
                        line[..c_lo].fill(T::zero());
                        line[c_hi..].fill(T::zero());
                    }
                }
            }
        }
    }
}

/// Fills `col` (`c·taps x out_size`) from `x` (`c` input planes).
pub(crate) fn im2col<T: FloatElement>(x: &[T], c: usize, g: &Geom3, col: &mut [T]) {
    if same_width_2d(g) {
        return im2col_same_width(x, c, g, col);
    }
    let (in_size, p) = (g.in_size(), g.out_size());
    let [_, ih, iw] = g.inp;
    let mut rows = col.chunks_exact_mut(p.max(1));
    for ch in 0..c {
        let plane = &x[ch * in_size..(ch + 1) * in_size];
        for t in taps(g) {
            let Some(row) = rows.next() else { return };
            let mut idx = 0;
            for o0 in 0..g.out[0] {
                let z0 = g.coord(0, o0, t[0]);
                for o1 in 0..g.out[1] {
                    let z1 = g.coord(1, o1, t[1]);
                    let dst = &mut row[idx..idx + g.out[2]];
                    idx += g.out[2];
                    if !g.inside(0, z0) || !g.inside(1, z1) {
                        dst.fill(T::zero());
                        continue;
                    }
                    let line = &plane[(z0 as usize * ih + z1 as usize) * iw..][..iw];
                    let (lo, hi) = valid_range(g, 2, t[2]);
                    dst[..lo].fill(T::zero());
                    dst[hi..].fill(T::zero());
                    let first = (g.coord(2, lo, t[2])).max(0) as usize;
                    if g.s[2] == 1 {
                        dst[lo..hi].copy_from_slice(&line[first..first + (hi - lo)]);
                    } else {
                        for (d, z) in dst[lo..hi].iter_mut().zip((first..).step_by(g.s[2])) {
                            *d = line[z];
                        }
                    }
                }
            }
        }
    }
}

/// Adds `col` (`c·taps x out_size`) back into `dx` (`c` input planes, in
/// the compute type): the adjoint of [`im2col`].
pub(crate) fn col2im_add<T: FloatElement>(col: &[T], c: usize, g: &Geom3, dx: &mut [T::Compute]) {
    let (in_size, p) = (g.in_size(), g.out_size());
    let [_, ih, iw] = g.inp;
    let mut rows = col.chunks_exact(p.max(1));
    for ch in 0..c {
        let plane = &mut dx[ch * in_size..(ch + 1) * in_size];
        for t in taps(g) {
            let Some(row) = rows.next() else { return };
            let mut idx = 0;
            for o0 in 0..g.out[0] {
                let z0 = g.coord(0, o0, t[0]);
                for o1 in 0..g.out[1] {
                    let z1 = g.coord(1, o1, t[1]);
                    let src = &row[idx..idx + g.out[2]];
                    idx += g.out[2];
                    if !g.inside(0, z0) || !g.inside(1, z1) {
                        continue;
                    }
                    let line = &mut plane[(z0 as usize * ih + z1 as usize) * iw..][..iw];
                    let (lo, hi) = valid_range(g, 2, t[2]);
                    let first = (g.coord(2, lo, t[2])).max(0) as usize;
                    for (v, z) in src[lo..hi].iter().zip((first..).step_by(g.s[2])) {
                        line[z] = line[z] + v.to_compute();
                    }
                }
            }
        }
    }
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
