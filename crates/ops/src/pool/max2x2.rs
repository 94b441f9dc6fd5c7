//! The commonest pooling on its own path: 2-D max pooling of 2x2 windows at
//! stride 2 without padding. Each output reads two pairs of neighbours, so
//! a plane is one pass over its input rows, without the general kernel's
//! per-window bookkeeping. Results equal the general kernel's.

use crate::conv::geometry::Geom3;
use num_traits::Float;
use oxnet_core::FloatElement;

/// True for 2-D windows of 2x2 at stride 2 without padding, each inside
/// the input.
pub(super) fn applies(g: &Geom3) -> bool {
    g.inp[0] == 1
        && g.out[0] == 1
        && g.k == [1, 2, 2]
        && g.s[1..] == [2, 2]
        && g.p == [0; 3]
        && 2 * g.out[1] <= g.inp[1]
        && 2 * g.out[2] <= g.inp[2]
        && g.out[2] > 0
}

/// One plane's maxima into `y` (`out[1] x out[2]`).
pub(super) fn forward_plane<T: FloatElement>(g: &Geom3, x: &[T], y: &mut [T]) {
    let (w, ow) = (g.inp[2], g.out[2]);
    let init = <T::Compute as Float>::min_value();
    for (ob, out) in y.chunks_exact_mut(ow).enumerate() {
        let r0 = &x[2 * ob * w..][..2 * ow];
        let r1 = &x[(2 * ob + 1) * w..][..2 * ow];
        for ((o, a), b) in out.iter_mut().zip(r0.chunks_exact(2)).zip(r1.chunks_exact(2)) {
            let m = init
                .max(a[0].to_compute())
                .max(b[0].to_compute())
                .max(a[1].to_compute())
                .max(b[1].to_compute());
            *o = T::from_compute(m);
        }
    }
}

/// One plane's input gradient, written whole into `dx`: each window's
/// gradient goes to its first element (in scan order) equal to its
/// maximum, every other element is zero. Returns false when a window has
/// no element equal to its maximum (a NaN input), leaving `dx` for the
/// general kernel to redo.
pub(super) fn backward_plane<T: FloatElement>(g: &Geom3, x: &[T], y: &[T], dy: &[T], dx: &mut [T]) -> bool {
    let (w, ow) = (g.inp[2], g.out[2]);
    if 2 * ow < w || 2 * g.out[1] < g.inp[1] {
        dx.fill(T::zero()); // inputs that no window covers
    }
    let zero = T::zero();
    for ob in 0..g.out[1] {
        let (ys, dys) = (&y[ob * ow..][..ow], &dy[ob * ow..][..ow]);
        let (x0, x1) = (&x[2 * ob * w..][..2 * ow], &x[(2 * ob + 1) * w..][..2 * ow]);
        let (d0, rest) = dx[2 * ob * w..].split_at_mut(w);
        let (d0, d1) = (&mut d0[..2 * ow], &mut rest[..2 * ow]);
        for oc in 0..ow {
            let (yv, gy, j) = (ys[oc].to_compute(), dys[oc], 2 * oc);
            let e = [x0[j], x0[j + 1], x1[j], x1[j + 1]].map(|v| v.to_compute() == yv);
            if !(e[0] | e[1] | e[2] | e[3]) {
                return false;
            }
            // the first match only, with no branch (`&`, not `&&`): where the
            // maximum lies is data-dependent, and a branch would mispredict
            let h = [e[0], e[1] & !e[0], e[2] & !(e[0] | e[1]), e[3] & !(e[0] | e[1] | e[2])];
            d0[j] = if h[0] { gy } else { zero };
            d0[j + 1] = if h[1] { gy } else { zero };
            d1[j] = if h[2] { gy } else { zero };
            d1[j + 1] = if h[3] { gy } else { zero };
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::geometry::Window;

    fn geom(h: usize, w: usize) -> Geom3 {
        let win = Window {
            kernel: vec![2, 2],
            stride: vec![2, 2],
            dilate: vec![1, 1],
            pad_before: vec![0, 0],
            pad_after: vec![0, 0],
        };
        win.geom3(&[h, w], &[h / 2, w / 2])
    }

    #[test]
    fn maxima_and_gradients_by_hand() {
        // 3x5: the last row and column belong to no window
        let g = geom(3, 5);
        assert!(applies(&g));
        #[rustfmt::skip]
        let x = [
            1.0f32, 4.0, 2.0, 2.0, 9.0,
            3.0,    4.0, 2.0, 1.0, 9.0,
            7.0,    7.0, 7.0, 7.0, 7.0,
        ];
        let mut y = [0.0f32; 2];
        forward_plane(&g, &x, &mut y);
        assert_eq!(y, [4.0, 2.0]);
        let mut dx = [f32::NAN; 15];
        assert!(backward_plane(&g, &x, &y, &[10.0, 20.0], &mut dx));
        // ties go to the first in scan order: (0, 1) and (0, 2)
        #[rustfmt::skip]
        let want = [
            0.0, 10.0, 20.0, 0.0, 0.0,
            0.0, 0.0,  0.0,  0.0, 0.0,
            0.0, 0.0,  0.0,  0.0, 0.0,
        ];
        assert_eq!(dx, want);
        // a NaN window is left to the general kernel
        let mut xn = x;
        xn[0] = f32::NAN;
        xn[1] = f32::NAN;
        xn[5] = f32::NAN;
        xn[6] = f32::NAN;
        forward_plane(&g, &xn, &mut y);
        assert_eq!(y[0], f32::MIN);
        assert!(!backward_plane(&g, &xn, &y, &[1.0, 1.0], &mut dx));
    }

    #[test]
    fn applies_only_to_unpadded_2x2_stride_2() {
        assert!(applies(&geom(4, 4)));
        let mut g = geom(4, 4);
        g.p[2] = 1;
        assert!(!applies(&g));
        let mut g = geom(4, 4);
        g.s[1] = 1;
        assert!(!applies(&g));
    }
}
