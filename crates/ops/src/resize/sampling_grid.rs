//! Sampling grids in normalized coordinates, shared by `GridGenerator` and
//! `SpatialTransformer`: the coordinate of a pixel, the `target_shape`
//! attribute, and the affine grid with its gradient.
//!
//! A grid of shape (N, 2, H, W) holds, for each output position, the
//! source position to read: channel 0 the x (column) coordinate, channel 1
//! the y (row) coordinate, both normalized so that -1 is the first pixel
//! and 1 the last of the axis.

use super::cast;
use num_traits::ToPrimitive;
use oxnet_core::{Attrs, Error, FloatElement, Result};

/// The normalized coordinate of pixel `i` of an axis of `extent` pixels:
/// `-1 + 2i / (extent - 1)`, computed in float64 as MXNet does. A one-pixel
/// axis has its pixel at the centre, 0 (MXNet divides by zero there and
/// gives NaN).
pub(super) fn coord(i: usize, extent: usize) -> f64 {
    if extent <= 1 {
        0.0
    } else {
        -1.0 + (i as f64 * 2.0) / (extent - 1) as f64
    }
}

/// The `target_shape` attribute as (height, width), both positive; `why`
/// (empty, or starting with a space) says when it is needed, for the error.
pub(super) fn target_hw(op: &str, attrs: &Attrs, why: &str) -> Result<[usize; 2]> {
    let t = attrs.ints("target_shape")?;
    match *t {
        [h, w] if h > 0 && w > 0 => Ok([h as usize, w as usize]),
        _ => Err(Error::attr(
            "target_shape",
            format!("{op}: target_shape must be two positive extents (height, width){why}, got {t:?}"),
        )),
    }
}

/// The affine grid of every image: `theta` holds N rows of 6 values, the
/// 2 x 3 matrix A of each image in row-major order, and the grid at row
/// `i`, column `j` is `A · [x_j, y_i, 1]` with the normalized coordinates
/// of [`coord`]. Returns N x 2 x `h` x `w` values.
pub(super) fn affine_grid<T: FloatElement>(theta: &[T], h: usize, w: usize) -> Vec<T> {
    let plane = h * w;
    let n = theta.len() / 6;
    let mut grid = vec![T::zero(); n * 2 * plane];
    if plane == 0 || n == 0 {
        return grid;
    }
    let xs: Vec<T::Compute> = (0..w).map(|j| cast(coord(j, w))).collect();
    let ys: Vec<T::Compute> = (0..h).map(|i| cast(coord(i, h))).collect();
    let per = images_per_task(n);
    oxnet_core::parallel::for_each_chunk_mut(&mut grid, per * 2 * plane, |t, part| {
        for (k, img) in part.chunks_exact_mut(2 * plane).enumerate() {
            let a: Vec<T::Compute> = theta[(t * per + k) * 6..][..6].iter().map(|v| v.to_compute()).collect();
            for (r, out) in img.chunks_exact_mut(plane).enumerate() {
                let (ax, ay, a0) = (a[3 * r], a[3 * r + 1], a[3 * r + 2]);
                for (i, row) in out.chunks_exact_mut(w).enumerate() {
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = T::from_compute(ax * xs[j] + ay * ys[i] + a0);
                    }
                }
            }
        }
    });
    grid
}

/// The gradient of the affine matrices from the gradient `dgrid` of their
/// grids (N x 2 x `h` x `w` values): entry (r, 0) of an image's matrix gets
/// the sum of channel r's gradient times x, (r, 1) times y, (r, 2) the
/// plain sum. Sums run in float64. Returns `n` x 6 values.
pub(super) fn affine_grid_backward<T: FloatElement>(dgrid: &[T], n: usize, h: usize, w: usize) -> Vec<T> {
    let plane = h * w;
    let mut dtheta = vec![T::zero(); n * 6];
    if plane == 0 || dgrid.len() != n * 2 * plane {
        return dtheta;
    }
    let xs: Vec<f64> = (0..w).map(|j| coord(j, w)).collect();
    let ys: Vec<f64> = (0..h).map(|i| coord(i, h)).collect();
    let per = images_per_task(n);
    let to_f64 = |v: T| v.to_compute().to_f64().unwrap_or(f64::NAN);
    oxnet_core::parallel::for_each_chunk_mut(&mut dtheta, per * 6, |t, part| {
        for (k, d) in part.chunks_exact_mut(6).enumerate() {
            let img = &dgrid[(t * per + k) * 2 * plane..][..2 * plane];
            for (r, g) in img.chunks_exact(plane).enumerate() {
                let mut s = [0.0f64; 3];
                for (i, row) in g.chunks_exact(w).enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        let v = to_f64(v);
                        s[0] += v * xs[j];
                        s[1] += v * ys[i];
                        s[2] += v;
                    }
                }
                for (slot, v) in d[3 * r..3 * r + 3].iter_mut().zip(s) {
                    *slot = T::from_compute(cast(v));
                }
            }
        }
    });
    dtheta
}

/// Images per parallel task for a batch of `n`.
pub(super) fn images_per_task(n: usize) -> usize {
    n.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1)
}
