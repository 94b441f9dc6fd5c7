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

/// Fills `col` (`c·taps x out_size`) from `x` (`c` input planes).
pub(crate) fn im2col<T: FloatElement>(x: &[T], c: usize, g: &Geom3, col: &mut [T]) {
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
