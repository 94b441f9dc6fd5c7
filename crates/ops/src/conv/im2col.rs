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
                    for (o2, d) in dst.iter_mut().enumerate() {
                        let z2 = g.coord(2, o2, t[2]);
                        *d = if g.inside(2, z2) { line[z2 as usize] } else { T::zero() };
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
                    for (o2, s) in src.iter().enumerate() {
                        let z2 = g.coord(2, o2, t[2]);
                        if g.inside(2, z2) {
                            line[z2 as usize] = line[z2 as usize] + s.to_compute();
                        }
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
}
