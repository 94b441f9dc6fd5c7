//! Resizing and regions of interest: `UpSampling` (nearest, and bilinear
//! through `Deconvolution`), `_contrib_BilinearResize2D`, `ROIPooling` and
//! `_contrib_ROIAlign`, all on channel-first 4-D data (batch, channel,
//! height, width), with backward kernels for the data.
//!
//! `GridGenerator`, `BilinearSampler` and `SpatialTransformer` make and
//! read sampling grids of normalized coordinates (spatial transformer
//! networks), with gradients for the data, the grid and the affine matrices.
//!
//! The region operators take `rois` of shape (R, 5), one row
//! `[batch_index, x1, y1, x2, y2]` per region; as in MXNet they pass no
//! gradient to `rois` (a requested one is zero).

mod bilinear_kernel;
mod bilinear_resize;
mod bilinear_sampler;
mod grid_generator;
mod roi_align;
mod roi_pooling;
mod sampling_grid;
mod spatial_transformer;
mod upsampling;

#[cfg(test)]
mod mx_values;
#[cfg(test)]
mod roi_tests;
#[cfg(test)]
mod stn_mx_values;
#[cfg(test)]
mod stn_tests;
#[cfg(test)]
mod tests;

use crate::conv::geometry::fmt_tuple;
use num_traits::{Float, NumCast};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{DType, Error, NDArray, Req, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    upsampling::register();
    bilinear_resize::register();
    roi_pooling::register();
    roi_align::register();
    grid_generator::register();
    bilinear_sampler::register();
    spatial_transformer::register();
}

/// `v` in the compute type `C` (0 where it does not fit).
#[inline]
fn cast<C: Float>(v: f64) -> C {
    <C as NumCast>::from(v).unwrap_or_else(C::zero)
}

/// The extents of a 4-D shape, or an error naming the operator, the input
/// and the shape.
fn dims4(op: &str, what: &str, shape: &[usize]) -> Result<[usize; 4]> {
    match *shape {
        [n, c, h, w] => Ok([n, c, h, w]),
        _ => Err(Error::Shape(format!(
            "{op}: {what} must be 4-d (batch, channel, height, width), got shape {}",
            fmt_tuple(shape)
        ))),
    }
}

/// Merges `want` (0: unknown) into the output slot `slot`; an output
/// whose element count overflows is an error.
fn merge_out(op: &str, slot: &mut Option<Shape>, want: &[usize], context: impl Fn() -> String) -> Result<()> {
    if want.iter().filter(|&&d| d > 0).try_fold(1usize, |n, &d| n.checked_mul(d)).is_none() {
        return Err(Error::Shape(format!(
            "{op}: the output shape {} for {} is too large",
            fmt_tuple(want),
            context()
        )));
    }
    crate::conv::merge_shape(slot, want, &format!("{op}: the output"), context)
}

/// The region attributes `pooled_size` (two positive extents) and
/// `spatial_scale` (in [0, 1]) shared by `ROIPooling` and `ROIAlign`.
#[derive(Debug, Clone, Copy)]
struct RoiParams {
    /// Output bins along height and width.
    pooled: [usize; 2],
    /// Factor from `rois` coordinates to data positions; MXNet keeps it as
    /// a float32.
    scale: f32,
}

fn roi_params(op: &str, attrs: &Attrs) -> Result<RoiParams> {
    let p = attrs.ints("pooled_size")?;
    let pooled = match *p {
        [h, w] if h > 0 && w > 0 => [h as usize, w as usize],
        [_, _] => {
            return Err(Error::attr("pooled_size", format!("{op}: pooled_size must be positive, got {p:?}")))
        }
        _ => {
            return Err(Error::attr(
                "pooled_size",
                format!("{op}: pooled_size must have 2 entries (height, width), got {p:?}"),
            ))
        }
    };
    let scale = attrs.float("spatial_scale")?;
    if !(0.0..=1.0).contains(&scale) {
        return Err(Error::attr(
            "spatial_scale",
            format!("{op}: spatial_scale must lie in [0, 1], got {scale}"),
        ));
    }
    Ok(RoiParams { pooled, scale: scale as f32 })
}

/// Shape inference shared by the region operators: data (N, C, H, W) and
/// rois (R, 5) give (R, `channels(C)`, pooled height, pooled width); over
/// partially known shapes (0: unknown) what is known passes through.
fn roi_infer_shape(
    op: &str,
    p: &RoiParams,
    channels: impl Fn(usize) -> Result<usize>,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let data = ins[0].clone();
    let rois = ins[1].clone();
    let mut out = [0, 0, p.pooled[0], p.pooled[1]];
    if let Some(d) = &data {
        let [_, c, _, _] = dims4(op, "data", d)?;
        if c > 0 {
            out[1] = channels(c)?;
        }
    }
    match &rois {
        Some(r) if r.len() != 2 || (r[1] != 5 && r[1] != 0) => {
            return Err(Error::Shape(format!(
                "{op}: rois must have shape (num_rois, 5), rows [batch_index, x1, y1, x2, y2], got shape {}",
                fmt_tuple(r)
            )))
        }
        Some(r) => {
            out[0] = r[0];
            let mut full = r.clone();
            full[1] = 5;
            ins[1] = Some(full);
        }
        None => {}
    }
    if data.is_none() && rois.is_none() {
        return Ok(());
    }
    merge_out(op, &mut outs[0], &out, || {
        format!(
            "data of shape {} and rois of shape {}",
            data.as_ref().map_or("unknown".into(), |s| fmt_tuple(s)),
            rois.as_ref().map_or("unknown".into(), |s| fmt_tuple(s))
        )
    })
}

/// Dtype inference of the region operators: data and rois share one
/// floating-point dtype, which the output has.
fn roi_infer_type(op: &str, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let Some(dt) = ins[0].or(ins[1]).or(outs[0]) else { return Ok(()) };
    for (slot, what) in ins.iter_mut().zip(["data", "rois"]).chain(outs.iter_mut().zip(["output"])) {
        match slot {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!(
                    "{op}: data and rois must have one dtype, got {what} of dtype {have} with {dt}"
                )))
            }
            _ => *slot = Some(dt),
        }
    }
    if !dt.is_float() {
        return Err(Error::DType(format!("{op}: expected a floating-point dtype, got {dt}")));
    }
    Ok(())
}

/// The batch index of a region row (truncated toward zero, as MXNet
/// casts it), or `None` when it names no image of a batch of `n`.
fn batch_index(v: f64, n: usize) -> Option<usize> {
    let b = v.trunc();
    (b >= 0.0 && b < n as f64).then_some(b as usize)
}

/// Writes the zero gradient of input 1 (`rois`, or `like`) when one is
/// requested with `write` (`add` leaves the buffer as it is).
fn zero_second_grad(req: &[Req], grads: &[NDArray]) -> Result<()> {
    if let (Some(g), Some(Req::Write | Req::Inplace)) = (grads.get(1), req.get(1)) {
        g.assign_from(&NDArray::zeros(g.shape(), g.dtype(), g.device())?)?;
    }
    Ok(())
}

/// Dtype inference of operators whose inputs (named `names`) and outputs
/// share one floating-point dtype: the first known one fills the others; a
/// different one is an error naming the input.
fn infer_float_type(
    op: &str,
    names: &[&str],
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let Some(dt) = ins.iter().chain(outs.iter()).flatten().copied().next() else { return Ok(()) };
    if !dt.is_float() {
        return Err(Error::DType(format!("{op}: expected a floating-point dtype, got {dt}")));
    }
    let named = ins.iter_mut().enumerate().map(|(i, s)| (s, names.get(i).copied().unwrap_or("input")));
    for (slot, what) in named.chain(outs.iter_mut().map(|s| (s, "the output"))) {
        match slot {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!(
                    "{op}: {} must share one dtype, got {what} of dtype {have} with {dt}",
                    names.join(", ")
                )))
            }
            _ => *slot = Some(dt),
        }
    }
    Ok(())
}
