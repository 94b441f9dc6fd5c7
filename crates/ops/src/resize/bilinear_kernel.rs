//! The bilinear sampling kernels shared by `BilinearSampler` and
//! `SpatialTransformer`: data (N, C, H, W) read at a grid (N, 2, Ho, Wo) of
//! normalized source positions (channel 0: x, channel 1: y; -1 the first
//! pixel, 1 the last) gives (N, C, Ho, Wo).
//!
//! As in MXNet, a grid value g becomes the pixel position
//! `(g + 1) · (extent - 1) / 2`, the four pixels around it are weighted
//! bilinearly, and pixels off the data count as zeros (so a position within
//! one pixel outside the data still sees the border pixels, faded). The
//! gradient with respect to the grid is the derivative of that
//! interpolation (one-sided, from above, at whole pixel positions).

use super::cast;
use crate::conv::geometry::fmt_tuple;
use num_traits::{Float, Zero};
use oxnet_core::{Error, FloatElement, Result};

/// The extents of one sampling: data (n, c, h, w), grid (n, 2, ho, wo).
#[derive(Debug, Clone, Copy)]
pub(super) struct Dims {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub ho: usize,
    pub wo: usize,
}

impl Dims {
    /// Checks the data and grid shapes of an `op` call.
    pub(super) fn new(op: &str, data: &[usize], grid: &[usize]) -> Result<Dims> {
        let [n, c, h, w] = super::dims4(op, "data", data)?;
        match *grid {
            [gn, 2, ho, wo] if gn == n => Ok(Dims { n, c, h, w, ho, wo }),
            _ => Err(Error::Shape(format!(
                "{op}: grid must have shape (batch, 2, height, width) with data's batch {n}, got grid of \
                 shape {} for data of shape {}",
                fmt_tuple(grid),
                fmt_tuple(data)
            ))),
        }
    }

    /// Elements of one data plane.
    fn plane(&self) -> usize {
        self.h * self.w
    }

    /// Grid positions per image.
    fn points(&self) -> usize {
        self.ho * self.wo
    }
}

/// One grid point's reading: the top-left pixel (row, column; either may
/// lie off the data) and the weights of the top row and the left column.
#[derive(Clone, Copy)]
struct Tap<C> {
    row: i64,
    col: i64,
    top: C,
    left: C,
}

/// A pixel position from a normalized coordinate `g` on an axis of `extent`
/// pixels, in MXNet's order of operations.
#[inline]
fn position<C: Float>(g: C, extent: usize) -> C {
    (g + C::one()) * cast::<C>(extent as f64 - 1.0) / cast::<C>(2.0)
}

/// The tap of the grid point with normalized coordinates `(gx, gy)`.
#[inline]
fn tap<C: Float>(gx: C, gy: C, d: &Dims) -> Tap<C> {
    let (y, x) = (position(gy, d.h), position(gx, d.w));
    let (fy, fx) = (y.floor(), x.floor());
    // a position too far off (or not a number) reads nothing; its weights
    // still carry the NaN or infinity into the result, as in MXNet
    let far = |f: C| f.to_i64().filter(|v| v.abs() < (1 << 53)).unwrap_or(i64::MIN / 2);
    Tap { row: far(fy), col: far(fx), top: C::one() - (y - fy), left: C::one() - (x - fx) }
}

impl<C: Float> Tap<C> {
    /// The four corners (top-left, top-right, bottom-left, bottom-right) as
    /// plane offsets (`None`: off the data) with their weights.
    #[inline]
    fn corners(&self, d: &Dims) -> [(Option<usize>, C); 4] {
        let at = |r: i64, c: i64| -> Option<usize> {
            (r >= 0 && c >= 0 && (r as u64) < d.h as u64 && (c as u64) < d.w as u64)
                .then(|| r as usize * d.w + c as usize)
        };
        let (bottom, right) = (C::one() - self.top, C::one() - self.left);
        [
            (at(self.row, self.col), self.top * self.left),
            (at(self.row, self.col + 1), self.top * right),
            (at(self.row + 1, self.col), bottom * self.left),
            (at(self.row + 1, self.col + 1), bottom * right),
        ]
    }
}

/// The taps of image `img`'s grid points.
fn taps<T: FloatElement>(grid: &[T], d: &Dims, img: usize) -> Vec<Tap<T::Compute>> {
    let g = &grid[img * 2 * d.points()..][..2 * d.points()];
    let (gx, gy) = g.split_at(d.points());
    gx.iter().zip(gy).map(|(x, y)| tap(x.to_compute(), y.to_compute(), d)).collect()
}

/// Planes (or images) per parallel task.
fn per_task(count: usize) -> usize {
    count.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1)
}

/// The sampled output, N x C x Ho x Wo values.
pub(super) fn forward<T: FloatElement>(data: &[T], grid: &[T], d: &Dims) -> Vec<T> {
    let (plane, points) = (d.plane(), d.points());
    let mut out = vec![T::zero(); d.n * d.c * points];
    if out.is_empty() {
        return out;
    }
    let per = per_task(d.n * d.c);
    oxnet_core::parallel::for_each_chunk_mut(&mut out, per * points, |t, part| {
        let mut cached: Option<(usize, Vec<Tap<T::Compute>>)> = None;
        for (k, y) in part.chunks_exact_mut(points).enumerate() {
            let (img, ch) = ((t * per + k) / d.c, (t * per + k) % d.c);
            if cached.as_ref().is_none_or(|(i, _)| *i != img) {
                cached = Some((img, taps(grid, d, img)));
            }
            let ts = &cached.as_ref().expect("set above").1;
            let x = &data[(img * d.c + ch) * plane..][..plane];
            for (v, tp) in y.iter_mut().zip(ts) {
                let mut acc = <T::Compute as Zero>::zero();
                for (pos, wt) in tp.corners(d) {
                    let value = pos.map_or_else(<T::Compute as Zero>::zero, |p| x[p].to_compute());
                    acc = acc + value * wt;
                }
                *v = T::from_compute(acc);
            }
        }
    });
    out
}

/// The gradient of the data, N x C x H x W values, from the output
/// gradient `dy`.
pub(super) fn backward_data<T: FloatElement>(dy: &[T], grid: &[T], d: &Dims) -> Vec<T> {
    let (plane, points) = (d.plane(), d.points());
    let mut dx = vec![T::zero(); d.n * d.c * plane];
    if dx.is_empty() || points == 0 {
        return dx;
    }
    let per = per_task(d.n * d.c);
    oxnet_core::parallel::for_each_chunk_mut(&mut dx, per * plane, |t, part| {
        let mut cached: Option<(usize, Vec<Tap<T::Compute>>)> = None;
        let mut acc = vec![<T::Compute as Zero>::zero(); plane];
        for (k, gx) in part.chunks_exact_mut(plane).enumerate() {
            let (img, ch) = ((t * per + k) / d.c, (t * per + k) % d.c);
            if cached.as_ref().is_none_or(|(i, _)| *i != img) {
                cached = Some((img, taps(grid, d, img)));
            }
            let ts = &cached.as_ref().expect("set above").1;
            acc.iter_mut().for_each(|v| *v = <T::Compute as Zero>::zero());
            let g = &dy[(img * d.c + ch) * points..][..points];
            for (gv, tp) in g.iter().zip(ts) {
                let gv = gv.to_compute();
                for (pos, wt) in tp.corners(d) {
                    if let Some(p) = pos {
                        acc[p] = acc[p] + gv * wt;
                    }
                }
            }
            for (o, v) in gx.iter_mut().zip(&acc) {
                *o = T::from_compute(*v);
            }
        }
    });
    dx
}

/// The gradient of the grid, N x 2 x Ho x Wo values, from the output
/// gradient `dy`.
pub(super) fn backward_grid<T: FloatElement>(dy: &[T], data: &[T], grid: &[T], d: &Dims) -> Vec<T> {
    let (plane, points) = (d.plane(), d.points());
    let mut dg = vec![T::zero(); d.n * 2 * points];
    if dg.is_empty() {
        return dg;
    }
    let half_h: T::Compute = cast((d.h as f64 - 1.0) / 2.0);
    let half_w: T::Compute = cast((d.w as f64 - 1.0) / 2.0);
    let per = per_task(d.n);
    oxnet_core::parallel::for_each_chunk_mut(&mut dg, per * 2 * points, |t, part| {
        for (k, gimg) in part.chunks_exact_mut(2 * points).enumerate() {
            let img = t * per + k;
            let ts = taps(grid, d, img);
            let (gxs, gys) = gimg.split_at_mut(points);
            for (p, tp) in ts.iter().enumerate() {
                let corners = tp.corners(d);
                // d(out)/d(top weight) and d(out)/d(left weight), over channels
                let (mut d_top, mut d_left) = (<T::Compute as Zero>::zero(), <T::Compute as Zero>::zero());
                for ch in 0..d.c {
                    let x = &data[(img * d.c + ch) * plane..][..plane];
                    let v = corners
                        .map(|(pos, _)| pos.map_or_else(<T::Compute as Zero>::zero, |q| x[q].to_compute()));
                    let g = dy[(img * d.c + ch) * points + p].to_compute();
                    let mixed = v[0] - v[1] - v[2] + v[3];
                    d_top = d_top + g * (v[1] - v[3] + mixed * tp.left);
                    d_left = d_left + g * (v[2] - v[3] + mixed * tp.top);
                }
                // the top weight falls as the position rises
                gys[p] = T::from_compute(-d_top * half_h);
                gxs[p] = T::from_compute(-d_left * half_w);
            }
        }
    });
    dg
}
