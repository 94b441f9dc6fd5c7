//! `ROIPooling`: max pooling of each region of interest of 4-d data into a
//! fixed grid of bins (Fast R-CNN). Region corners are rounded to whole
//! data positions after `spatial_scale`; a bin that is empty, or a region
//! whose batch index names no image, gives 0. The gradient of each bin goes
//! to the first largest element of its window; `rois` get none.

use super::{batch_index, cast, dims4, roi_infer_shape, roi_infer_type, roi_params, RoiParams};
use num_traits::Float;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext, OpDef,
    Req, Result,
};
use std::sync::Arc;

const OP: &str = "ROIPooling";

/// One region in data positions: its image (`None`: no such image) and the
/// window `[h0, h1) x [w0, w1)` of each bin, row-major.
struct Region {
    image: Option<usize>,
    bins: Vec<[usize; 4]>,
}

/// The bins of region row `roi` (`[batch_index, x1, y1, x2, y2]`) over
/// data planes of `h` x `w` in a batch of `n`, computed in the data's
/// compute type `C` as MXNet does.
fn region<C: Float>(p: &RoiParams, roi: [C; 5], n: usize, h: usize, w: usize) -> Region {
    let scale: C = cast(p.scale as f64);
    let corner = |v: C| v.mul(scale).round().to_i64().unwrap_or(0);
    let (x1, y1, x2, y2) = (corner(roi[1]), corner(roi[2]), corner(roi[3]), corner(roi[4]));
    let image = batch_index(roi[0].to_f64().unwrap_or(-1.0), n);
    // malformed regions become 1 x 1
    let extent = |lo: i64, hi: i64| cast::<C>(hi.saturating_sub(lo).saturating_add(1).max(1) as f64);
    let (rh, rw) = (extent(y1, y2), extent(x1, x2));
    let (ph, pw) = (p.pooled[0], p.pooled[1]);
    let bin_h = rh / cast(ph as f64);
    let bin_w = rw / cast(pw as f64);
    let clip = |v: i64, origin: i64, limit: usize| v.saturating_add(origin).clamp(0, limit as i64) as usize;
    let edge = |k: usize, bin: C, up: bool| {
        let v = cast::<C>(k as f64) * bin;
        (if up { v.ceil() } else { v.floor() }).to_i64().unwrap_or(0)
    };
    let mut bins = Vec::with_capacity(ph * pw);
    for i in 0..ph {
        let (h0, h1) = (clip(edge(i, bin_h, false), y1, h), clip(edge(i + 1, bin_h, true), y1, h));
        for j in 0..pw {
            let (w0, w1) = (clip(edge(j, bin_w, false), x1, w), clip(edge(j + 1, bin_w, true), x1, w));
            bins.push([h0, h1, w0, w1]);
        }
    }
    Region { image, bins }
}

/// The regions of every row of `rois`.
fn regions<T: FloatElement>(p: &RoiParams, rois: &[T], data: [usize; 4]) -> Vec<Region> {
    rois.chunks_exact(5)
        .map(|r| {
            let row = [r[0], r[1], r[2], r[3], r[4]].map(|v| v.to_compute());
            region(p, row, data[0], data[2], data[3])
        })
        .collect()
}

/// The largest element of each bin of one plane and its index in the
/// plane (-1 where the bin is empty or the image missing: value 0).
fn pool_plane<T: FloatElement>(
    x: Option<&[T]>,
    w: usize,
    bins: &[[usize; 4]],
    out: &mut [(T::Compute, isize)],
) {
    for (bin, o) in bins.iter().zip(out.iter_mut()) {
        let [h0, h1, w0, w1] = *bin;
        let Some(x) = x.filter(|_| h1 > h0 && w1 > w0) else {
            *o = (<T::Compute as num_traits::Zero>::zero(), -1);
            continue;
        };
        let mut best = (cast::<T::Compute>(-(f32::MAX as f64)), -1isize);
        for r in h0..h1 {
            for c in w0..w1 {
                let v = x[r * w + c].to_compute();
                if v > best.0 {
                    best = (v, (r * w + c) as isize);
                }
            }
        }
        *o = best;
    }
}

/// Every output element's value and the index of its source in the data
/// (-1: none), in output order.
fn pool_all<T: FloatElement>(
    p: &RoiParams,
    x: &[T],
    data: [usize; 4],
    regions: &[Region],
) -> Vec<(T::Compute, isize)> {
    let [_, c, h, w] = data;
    let bins = p.pooled[0] * p.pooled[1];
    let plane = h * w;
    let zero = <T::Compute as num_traits::Zero>::zero();
    let mut out = vec![(zero, -1isize); regions.len() * c * bins];
    if out.is_empty() {
        return out;
    }
    let planes = regions.len() * c;
    let per = planes.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
    oxnet_core::parallel::for_each_chunk_mut(&mut out, per * bins, |t, part| {
        for (k, o) in part.chunks_exact_mut(bins).enumerate() {
            let (r, ch) = ((t * per + k) / c, (t * per + k) % c);
            let reg = &regions[r];
            let src = reg.image.map(|b| &x[(b * c + ch) * plane..][..plane]);
            pool_plane::<T>(src, w, &reg.bins, o);
        }
    });
    out
}

fn forward_typed<T: FloatElement>(p: &RoiParams, req: Req, inputs: &[NDArray], out: &NDArray) -> Result<()> {
    let data = dims4(OP, "data", inputs[0].shape())?;
    let (x, rois) = (inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?);
    let regs = regions(p, rois, data);
    let y: Vec<T> = pool_all(p, x, data, &regs).into_iter().map(|(v, _)| T::from_compute(v)).collect();
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(
    p: &RoiParams,
    req: Req,
    dy: &NDArray,
    x: &NDArray,
    rois: &NDArray,
    dx: &NDArray,
) -> Result<()> {
    let data = dims4(OP, "data", x.shape())?;
    let [_, c, h, w] = data;
    let (xs, rs, dys) = (x.as_slice::<T>()?, rois.as_slice::<T>()?, dy.as_slice::<T>()?);
    let regs = regions(p, rs, data);
    let found = pool_all(p, xs, data, &regs);
    let bins = p.pooled[0] * p.pooled[1];
    let plane = h * w;
    let mut g = vec![T::zero(); xs.len()];
    if plane > 0 && !g.is_empty() {
        // one task per data plane: the bins that read it, in output order
        let per = (g.len() / plane).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
        oxnet_core::parallel::for_each_chunk_mut(&mut g, per * plane, |t, part| {
            let mut acc = vec![<T::Compute as num_traits::Zero>::zero(); plane];
            for (k, gp) in part.chunks_exact_mut(plane).enumerate() {
                let (b, ch) = ((t * per + k) / c, (t * per + k) % c);
                acc.iter_mut().for_each(|v| *v = <T::Compute as num_traits::Zero>::zero());
                for (r, reg) in regs.iter().enumerate() {
                    if reg.image != Some(b) {
                        continue;
                    }
                    let at = (r * c + ch) * bins;
                    for (&(_, i), gy) in found[at..at + bins].iter().zip(&dys[at..at + bins]) {
                        if i >= 0 {
                            acc[i as usize] = acc[i as usize] + gy.to_compute();
                        }
                    }
                }
                for (d, v) in gp.iter_mut().zip(&acc) {
                    *d = T::from_compute(*v);
                }
            }
        });
    }
    store_slice(req, dx.as_mut_slice::<T>()?, &g);
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = roi_params(OP, ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(&p, ctx.req[0], inputs, &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = roi_params(OP, ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let rois = args.inputs[1].as_ref().ok_or_else(missing)?;
    if ctx.req[0] != Req::Null {
        oxnet_core::with_float_dtype!(x.dtype(), T => backward_typed::<T>(&p, ctx.req[0], &dy, x, rois, &grads[0])?);
    }
    super::zero_second_grad(ctx.req, grads)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .alias("_npx_roi_pooling")
            .doc(
                "Region-of-interest max pooling (Fast R-CNN): data (N, C, H, W) and rois (R, 5), \
                 rows [batch_index, x1, y1, x2, y2] in the coordinates that spatial_scale maps \
                 onto the data, give (R, C, pooled_h, pooled_w). Each region, its corners \
                 rounded to whole positions, is cut into pooled_size bins whose maxima are \
                 taken; an empty bin or a region whose batch_index names no image gives 0. The \
                 gradient goes to each bin's first largest element; rois get a zero gradient.",
            )
            .attr(AttrSpec::required("pooled_size", AttrKind::Ints, "Output bins (height, width)."))
            .attr(AttrSpec::required(
                "spatial_scale",
                AttrKind::Float,
                "Ratio of the data's size to the rois' coordinates, in [0, 1].",
            ))
            .arguments(&["data", "rois"])
            .prepare(|attrs| {
                roi_params(OP, attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(|attrs, ins, outs| roi_infer_shape(OP, &roi_params(OP, attrs)?, Ok, ins, outs))
            .infer_shape_partial(|attrs, ins, outs| {
                roi_infer_shape(OP, &roi_params(OP, attrs)?, Ok, ins, outs)
            })
            .infer_type(|_, ins, outs| roi_infer_type(OP, ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}
