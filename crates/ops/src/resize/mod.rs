//! Resizing and regions of interest: `UpSampling` (nearest, and bilinear
//! through `Deconvolution`), `_contrib_BilinearResize2D`, `ROIPooling`,
//! `_contrib_ROIAlign`, `_contrib_PSROIPooling` (position-sensitive average
//! pooling, R-FCN) and `_contrib_RROIAlign` (rotated regions), all on
//! channel-first 4-D data (batch, channel, height, width), with backward
//! kernels for the data (none for `_contrib_RROIAlign`, as in MXNet).
//!
//! `GridGenerator`, `BilinearSampler` and `SpatialTransformer` make and
//! read sampling grids of normalized coordinates (spatial transformer
//! networks), with gradients for the data, the grid and the affine matrices.
//!
//! The region operators take `rois` of shape (R, 5), one row
//! `[batch_index, x1, y1, x2, y2]` per region (`_contrib_RROIAlign`: (R, 6),
//! rows `[batch_index, center_x, center_y, width, height, theta_degrees]`);
//! as in MXNet they pass no gradient to `rois` (a requested one is zero).

mod bilinear_kernel;
mod bilinear_resize;
mod bilinear_sampler;
mod grid_generator;
mod psroi_pooling;
mod roi_align;
mod roi_pooling;
mod rroi_align;
mod sampling_grid;
mod spatial_transformer;
mod upsampling;

#[cfg(test)]
mod mx_values;
#[cfg(test)]
mod psroi_rroi_tests;
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
use oxnet_core::{AttrKind, AttrSpec, BackwardArgs, DType, Error, NDArray, Req, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    upsampling::register();
    bilinear_resize::register();
    roi_pooling::register();
    roi_align::register();
    psroi_pooling::register();
    rroi_align::register();
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
    Ok(RoiParams { pooled, scale: spatial_scale(op, attrs)? })
}

/// The `spatial_scale` attribute, in [0, 1], as the float32 MXNet keeps.
fn spatial_scale(op: &str, attrs: &Attrs) -> Result<f32> {
    let scale = attrs.float("spatial_scale")?;
    if !(0.0..=1.0).contains(&scale) {
        return Err(Error::attr(
            "spatial_scale",
            format!("{op}: spatial_scale must lie in [0, 1], got {scale}"),
        ));
    }
    Ok(scale as f32)
}

/// The columns of a `rois` row of `ROIPooling` and `ROIAlign`.
const CORNER_ROW: [&str; 5] = ["batch_index", "x1", "y1", "x2", "y2"];

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
    roi_infer_shape_rows(op, p, &CORNER_ROW, channels, ins, outs)
}

/// [`roi_infer_shape`] for `rois` rows of the columns `row` (R, `row.len()`).
fn roi_infer_shape_rows(
    op: &str,
    p: &RoiParams,
    row: &[&str],
    channels: impl Fn(usize) -> Result<usize>,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let width = row.len();
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
        Some(r) if r.len() != 2 || (r[1] != width && r[1] != 0) => {
            return Err(Error::Shape(format!(
                "{op}: rois must have shape (num_rois, {width}), rows [{}], got shape {}",
                row.join(", "),
                fmt_tuple(r)
            )))
        }
        Some(r) => {
            out[0] = r[0];
            let mut full = r.clone();
            full[1] = width;
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

/// The image that row `row` of `rois` reads: its batch index `v`
/// (truncated toward zero) must name one of the `n` images of the data.
fn region_image(op: &str, v: f64, n: usize, row: usize) -> Result<usize> {
    batch_index(v, n).ok_or_else(|| {
        Error::Invalid(format!(
            "{op}: rois row {row} has batch_index {v}, but the data holds {n} image(s) (valid: 0 to {})",
            n as i64 - 1
        ))
    })
}

/// The saved head gradient (made contiguous) and `rois` of a region
/// operator's backward kernel.
fn roi_grad_inputs(op: &str, args: &BackwardArgs) -> Result<(NDArray, NDArray)> {
    let missing = || Error::Autograd(format!("{op}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let rois = args.inputs[1].as_ref().ok_or_else(missing)?;
    Ok((if dy.is_contiguous() { dy.clone() } else { dy.copy()? }, rois.clone()))
}

/// Fills `out`, `unit` elements at a time, in parallel: `f(k, part)` gets
/// unit `k` (a few tasks per thread, each of consecutive units).
fn for_each_unit<T: Send>(out: &mut [T], unit: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if unit == 0 || out.is_empty() {
        return;
    }
    let units = out.len() / unit;
    let per = units.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
    oxnet_core::parallel::for_each_chunk_mut(out, per * unit, |t, part| {
        for (k, u) in part.chunks_exact_mut(unit).enumerate() {
            f(t * per + k, u);
        }
    });
}

/// The `spatial_scale` attribute of the region operators.
fn spatial_scale_attr() -> AttrSpec {
    AttrSpec::required(
        "spatial_scale",
        AttrKind::Float,
        "Ratio of the data's size to the rois' coordinates, in [0, 1].",
    )
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
