//! `_contrib_RROIAlign`: region-of-interest align over rotated regions
//! (text detection). A region `[batch_index, center_x, center_y, width,
//! height, theta_degrees]` is scaled by `spatial_scale` (its width and
//! height then at least 1), cut into `pooled_size` bins, and each bin is
//! the mean of bilinear samples on a regular grid in it (`sampling_ratio`
//! per axis, or the ceiling of the bin's extent), each sampling point
//! rotated by theta about the center. Samples follow MXNet's border rules:
//! a point more than one position off the data gives 0; coordinates below
//! 0 read the first row or column, those at or past the last one the last.
//! As in MXNet 1.9.1 the operator has no gradient.

use super::roi_align::{sample, Sample, MAX_SAMPLES};
use super::{
    cast, dims4, for_each_unit, region_image, roi_infer_shape_rows, roi_infer_type, roi_params, RoiParams,
};
use num_traits::{Float, Zero};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Attrs, Error, FloatElement, NDArray, OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "_contrib_RROIAlign";

/// The columns of a `rois` row.
const ROW: [&str; 6] = ["batch_index", "center_x", "center_y", "width", "height", "theta_degrees"];

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct RotParams {
    roi: RoiParams,
    /// Sampling points per bin and axis; not positive: adaptive.
    sampling_ratio: i64,
}

fn parse(attrs: &Attrs) -> Result<RotParams> {
    if let Some(p) = attrs.prepared::<RotParams>() {
        return Ok(*p);
    }
    Ok(RotParams { roi: roi_params(OP, attrs)?, sampling_ratio: attrs.int("sampling_ratio")? })
}

/// One rotated region in data positions, in the compute type `C`.
struct Rotated<C> {
    image: usize,
    center: [C; 2],
    /// The corner of the unrotated region relative to its center (y, x).
    start: [C; 2],
    bin: [C; 2],
    grid: [usize; 2],
    cos: C,
    sin: C,
    count: C,
}

impl<C: Float> Rotated<C> {
    /// The samples of bin `(i, j)` on an `h` x `w` plane, row-major.
    fn bin_samples(&self, i: usize, j: usize, h: usize, w: usize, out: &mut Vec<Sample<C>>) {
        out.clear();
        let [gh, gw] = self.grid;
        for iy in 0..gh {
            let yy = self.start[0]
                + cast::<C>(i as f64) * self.bin[0]
                + cast::<C>(iy as f64 + 0.5) * self.bin[0] / cast(gh as f64);
            for ix in 0..gw {
                let xx = self.start[1]
                    + cast::<C>(j as f64) * self.bin[1]
                    + cast::<C>(ix as f64 + 0.5) * self.bin[1] / cast(gw as f64);
                // rotate about the center, then move there
                let x = xx * self.cos + yy * self.sin + self.center[1];
                let y = yy * self.cos - xx * self.sin + self.center[0];
                out.push(sample(y, x, h, w));
            }
        }
    }
}

/// The region of row `row` of `rois` for a batch of `n`.
fn rotated<C: Float>(p: &RotParams, r: [C; 6], row: usize, n: usize) -> Result<Rotated<C>> {
    let image = region_image(OP, r[0].to_f64().unwrap_or(f64::NAN), n, row)?;
    let scale: C = cast(p.roi.scale as f64);
    let theta: C = cast(r[5].to_f64().unwrap_or(f64::NAN) * std::f64::consts::PI / 180.0);
    // malformed regions become at least 1 x 1
    let (rh, rw) = ((r[4] * scale).max(C::one()), (r[3] * scale).max(C::one()));
    let bins = [cast::<C>(p.roi.pooled[0] as f64), cast::<C>(p.roi.pooled[1] as f64)];
    let bin = [rh / bins[0], rw / bins[1]];
    let points = |b: C| -> Option<usize> {
        match p.sampling_ratio {
            s if s > 0 => usize::try_from(s).ok(),
            _ => b.ceil().to_usize(),
        }
    };
    let grid = match (points(bin[0]), points(bin[1])) {
        (Some(a), Some(b)) if a.checked_mul(b).is_some_and(|m| m <= MAX_SAMPLES) => [a, b],
        _ => {
            return Err(Error::Invalid(format!(
                "{OP}: rois row {row} (a {} x {} region) needs more than {MAX_SAMPLES} sampling points per \
                 bin (sampling_ratio={}); give a smaller region or a positive sampling_ratio",
                rh.to_f64().unwrap_or(f64::NAN),
                rw.to_f64().unwrap_or(f64::NAN),
                p.sampling_ratio
            )))
        }
    };
    let half: C = cast(2.0);
    Ok(Rotated {
        image,
        center: [r[2] * scale, r[1] * scale],
        start: [-rh / half, -rw / half],
        bin,
        grid,
        cos: theta.cos(),
        sin: theta.sin(),
        count: cast((grid[0] * grid[1]) as f64),
    })
}

/// The bilinear value of sample `s` on `plane`, as MXNet adds it up.
#[inline]
fn interpolate<T: FloatElement>(s: &Sample<T::Compute>, plane: &[T]) -> T::Compute {
    let [a, b, c, d] = s.pos.map(|i| plane[i].to_compute());
    s.w[0] * a + s.w[1] * b + s.w[2] * c + s.w[3] * d
}

fn forward_typed<T: FloatElement>(ctx: &OpContext, inputs: &[NDArray], out: &NDArray) -> Result<()> {
    let p = &parse(ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    let (x, rois) = (&inputs[0], &inputs[1]);
    let [n, c, h, w] = dims4(OP, "data", x.shape())?;
    let xs = x.as_slice::<T>()?;
    let regions = rois
        .as_slice::<T>()?
        .chunks_exact(ROW.len())
        .enumerate()
        .map(|(i, r)| rotated(p, [r[0], r[1], r[2], r[3], r[4], r[5]].map(|v| v.to_compute()), i, n))
        .collect::<Result<Vec<Rotated<T::Compute>>>>()?;
    let [_, pw] = p.roi.pooled;
    let bins = p.roi.pooled[0] * pw;
    let plane = h * w;
    let mut y = vec![T::zero(); regions.len() * c * bins];
    // one unit per region; its sampling points serve every channel
    for_each_unit(&mut y, c * bins, |u, yr| {
        let reg = &regions[u];
        if plane == 0 {
            return;
        }
        let image = &xs[reg.image * c * plane..][..c * plane];
        let mut samples = Vec::new();
        for b in 0..bins {
            reg.bin_samples(b / pw, b % pw, h, w, &mut samples);
            for (ch, src) in image.chunks_exact(plane).enumerate() {
                let total = samples.iter().fold(<T::Compute as Zero>::zero(), |t, s| t + interpolate(s, src));
                yr[ch * bins + b] = T::from_compute(total / reg.count);
            }
        }
    });
    store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(ctx, inputs, &outputs[0]))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Rotated region-of-interest align (text detection): data (N, C, H, W) and rois \
                 (R, 6), rows [batch_index, center_x, center_y, width, height, theta_degrees] in \
                 the coordinates that spatial_scale maps onto the data, give (R, C, pooled_h, \
                 pooled_w). Each region (width and height at least 1 after scaling) is cut into \
                 pooled_size bins; a bin is the mean of bilinear samples on a sampling_ratio x \
                 sampling_ratio grid (ceil of the bin's extent per axis when sampling_ratio <= 0), \
                 each point rotated by theta (counter-clockwise in image coordinates) about the \
                 region's center. A point more than one position off the data counts as 0. \
                 Not differentiable (MXNet has no backward for it).",
            )
            .attr(AttrSpec::required("pooled_size", AttrKind::Ints, "Output bins (height, width)."))
            .attr(super::spatial_scale_attr())
            .attr(AttrSpec::optional(
                "sampling_ratio",
                AttrKind::Int,
                -1i64,
                "Sampling points per bin and axis; <= 0: ceil of the bin's extent.",
            ))
            .arguments(&["data", "rois"])
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_shape(|attrs, ins, outs| roi_infer_shape_rows(OP, &parse(attrs)?.roi, &ROW, Ok, ins, outs))
            .infer_shape_partial(|attrs, ins, outs| {
                roi_infer_shape_rows(OP, &parse(attrs)?.roi, &ROW, Ok, ins, outs)
            })
            .infer_type(|_, ins, outs| roi_infer_type(OP, ins, outs))
            .forward(forward),
    );
}
