//! `_contrib_PSROIPooling`: position-sensitive region-of-interest average
//! pooling (R-FCN). Each region is cut into `pooled_size` x `pooled_size`
//! bins; bin `(ph, pw)` of output channel `ctop` averages the data channel
//! `(ctop * group_size + gh) * group_size + gw` over the bin's window, with
//! `gh = floor(ph * group_size / pooled_size)` (and `gw` likewise) clamped
//! into the groups. As MXNet's CPU kernel, region corners are rounded to
//! whole positions before `spatial_scale` (the far corner one position
//! past), regions are at least 0.1 wide and high, bin windows are floored
//! and ceiled and clipped to the data, and an empty window gives 0. The
//! gradient of a bin is spread evenly over its window; `rois` get none.

use super::{
    cast, dims4, for_each_unit, region_image, roi_grad_inputs, roi_infer_shape, roi_infer_type,
    spatial_scale, spatial_scale_attr, zero_second_grad, RoiParams,
};
use crate::conv::geometry::fmt_tuple;
use num_traits::{Float, Zero};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext,
    OpDef, Req, Result, Shape,
};
use std::sync::Arc;

const OP: &str = "_contrib_PSROIPooling";

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct PsParams {
    /// `pooled_size` along both axes and the scale.
    roi: RoiParams,
    /// Output channels.
    output_dim: usize,
    /// Channel groups per axis (`group_size`, 0 meaning `pooled_size`).
    group: usize,
}

impl PsParams {
    /// Bins per side.
    fn side(&self) -> usize {
        self.roi.pooled[0]
    }

    /// The data channels the attributes need: `output_dim * group_size²`.
    fn in_channels(&self) -> Option<usize> {
        self.output_dim.checked_mul(self.group)?.checked_mul(self.group)
    }

    /// The channel group of bin row (or column) `k`.
    fn group_of<C: Float>(&self, k: usize) -> usize {
        let g = cast::<C>(k as f64) * cast(self.group as f64) / cast(self.side() as f64);
        g.floor().to_usize().unwrap_or(0).min(self.group - 1)
    }
}

fn parse(attrs: &Attrs) -> Result<PsParams> {
    if let Some(p) = attrs.prepared::<PsParams>() {
        return Ok(*p);
    }
    let count = |name: &str, zero_ok: bool| -> Result<usize> {
        let v = attrs.int(name)?;
        match usize::try_from(v) {
            Ok(n) if n > 0 || zero_ok => Ok(n),
            _ => Err(Error::attr(
                name,
                format!(
                    "{OP}: {name} must be {}, got {v}",
                    if zero_ok { "0 or positive" } else { "positive" }
                ),
            )),
        }
    };
    let side = count("pooled_size", false)?;
    let output_dim = count("output_dim", false)?;
    let group = match count("group_size", true)? {
        0 => side,
        g => g,
    };
    let p = PsParams {
        roi: RoiParams { pooled: [side, side], scale: spatial_scale(OP, attrs)? },
        output_dim,
        group,
    };
    if p.in_channels().is_none() {
        return Err(Error::attr(
            "group_size",
            format!("{OP}: output_dim * group_size^2 = {output_dim} * {group}^2 overflows"),
        ));
    }
    Ok(p)
}

/// Checks that data with `c` channels fits the attributes; the output
/// channels.
fn out_channels(p: &PsParams, data: &[usize]) -> Result<usize> {
    let want = p.in_channels().unwrap_or(usize::MAX);
    match data.get(1) {
        Some(&c) if c != want => Err(Error::Shape(format!(
            "{OP}: data must have output_dim * group_size^2 = {} * {}^2 = {want} channels, got data of shape {}",
            p.output_dim,
            p.group,
            fmt_tuple(data)
        ))),
        _ => Ok(p.output_dim),
    }
}

/// One region: its image and the window `[h0, h1) x [w0, w1)` of each bin,
/// row-major (an empty window: no value).
struct Region {
    image: usize,
    bins: Vec<[usize; 4]>,
}

/// The region of row `row` of `rois`, `[batch_index, x1, y1, x2, y2]`, in
/// the compute type `C`, over data of shape `data`.
fn region<C: Float>(p: &PsParams, r: [C; 5], row: usize, data: [usize; 4]) -> Result<Region> {
    let image = region_image(OP, r[0].to_f64().unwrap_or(f64::NAN), data[0], row)?;
    let scale: C = cast(p.roi.scale as f64);
    let (x0, y0) = (r[1].round() * scale, r[2].round() * scale);
    let (x1, y1) = ((r[3].round() + C::one()) * scale, (r[4].round() + C::one()) * scale);
    let side: C = cast(p.side() as f64);
    let least: C = cast(0.1);
    let (bin_h, bin_w) = ((y1 - y0).max(least) / side, (x1 - x0).max(least) / side);
    // bin k's bound: floored (start) or ceiled (end), clipped to [0, limit]
    let bound = |k: usize, bin: C, origin: C, end: bool, limit: usize| -> usize {
        let v = cast::<C>(k as f64) * bin + origin;
        let v = if end { v.ceil() } else { v.floor() };
        if v.is_nan() || v <= C::zero() {
            0
        } else {
            v.to_usize().map_or(limit, |v| v.min(limit))
        }
    };
    let (h, w) = (data[2], data[3]);
    let mut bins = Vec::with_capacity(p.side() * p.side());
    for i in 0..p.side() {
        let rows = [bound(i, bin_h, y0, false, h), bound(i + 1, bin_h, y0, true, h)];
        for j in 0..p.side() {
            bins.push([rows[0], rows[1], bound(j, bin_w, x0, false, w), bound(j + 1, bin_w, x0, true, w)]);
        }
    }
    Ok(Region { image, bins })
}

/// The regions of every row of `rois`.
fn regions<T: FloatElement>(p: &PsParams, rois: &[T], data: [usize; 4]) -> Result<Vec<Region>> {
    let row = |r: &[T]| [r[0], r[1], r[2], r[3], r[4]].map(|v| v.to_compute());
    rois.chunks_exact(5).enumerate().map(|(i, r)| region(p, row(r), i, data)).collect()
}

/// The positions of a bin's window and their count (0: empty).
fn window(bin: [usize; 4], w: usize) -> (impl Iterator<Item = usize>, usize) {
    let [h0, h1, w0, w1] = bin;
    let area = h1.saturating_sub(h0) * w1.saturating_sub(w0);
    ((h0..h1).flat_map(move |r| (w0..w1).map(move |c| r * w + c)), area)
}

fn forward_typed<T: FloatElement>(
    p: &PsParams,
    req: Req,
    x: &NDArray,
    rois: &NDArray,
    out: &NDArray,
) -> Result<()> {
    let data = dims4(OP, "data", x.shape())?;
    let od = out_channels(p, &data)?;
    let [_, c, h, w] = data;
    let regs = regions(p, rois.as_slice::<T>()?, data)?;
    let xs = x.as_slice::<T>()?;
    let k = p.side();
    let groups: Vec<usize> = (0..k).map(|i| p.group_of::<T::Compute>(i)).collect();
    let mut y = vec![T::zero(); regs.len() * od * k * k];
    // one unit per (region, output channel)
    for_each_unit(&mut y, k * k, |u, bins| {
        let (reg, ctop) = (&regs[u / od], u % od);
        for (b, (o, bin)) in bins.iter_mut().zip(&reg.bins).enumerate() {
            let ch = (ctop * p.group + groups[b / k]) * p.group + groups[b % k];
            let plane = &xs[(reg.image * c + ch) * h * w..][..h * w];
            let (positions, area) = window(*bin, w);
            if area > 0 {
                let sum = positions.fold(<T::Compute as Zero>::zero(), |s, i| s + plane[i].to_compute());
                *o = T::from_compute(sum / cast(area as f64));
            }
        }
    });
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(
    p: &PsParams,
    req: Req,
    dy: &NDArray,
    rois: &NDArray,
    dx: &NDArray,
) -> Result<()> {
    let data = dims4(OP, "data", dx.shape())?;
    let od = out_channels(p, &data)?;
    let [n, c, h, w] = data;
    let regs = regions(p, rois.as_slice::<T>()?, data)?;
    let dys = dy.as_slice::<T>()?;
    let (k, g) = (p.side(), p.group);
    let groups: Vec<usize> = (0..k).map(|i| p.group_of::<T::Compute>(i)).collect();
    let mut grad = vec![<T::Compute as Zero>::zero(); n * c * h * w];
    // one unit per data plane: the bins that read it, in output order (as
    // MXNet adds them up)
    for_each_unit(&mut grad, h * w, |u, acc| {
        let (image, ch) = (u / c, u % c);
        let (ctop, gh, gw) = (ch / (g * g), ch / g % g, ch % g);
        for (r, reg) in regs.iter().enumerate().filter(|(_, reg)| reg.image == image) {
            let at = (r * od + ctop) * k * k;
            for (b, bin) in reg.bins.iter().enumerate() {
                if groups[b / k] != gh || groups[b % k] != gw {
                    continue;
                }
                let (positions, area) = window(*bin, w);
                if area > 0 {
                    let share = dys[at + b].to_compute() / cast(area as f64);
                    positions.for_each(|i| acc[i] = acc[i] + share);
                }
            }
        }
    });
    let grad: Vec<T> = grad.into_iter().map(T::from_compute).collect();
    store_slice(req, dx.as_mut_slice::<T>()?, &grad);
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (p, req) = (parse(ctx.attrs)?, ctx.req[0]);
    if req != Req::Null {
        let (x, rois) = (&inputs[0], &inputs[1]);
        oxnet_core::with_float_dtype!(x.dtype(), T => forward_typed::<T>(&p, req, x, rois, &outputs[0])?);
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    let (dy, rois) = roi_grad_inputs(OP, args)?;
    if ctx.req[0] != Req::Null {
        oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(&p, ctx.req[0], &dy, &rois, &grads[0])?);
    }
    zero_second_grad(ctx.req, grads)
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = parse(attrs)?;
    let data = ins[0].clone().unwrap_or_default();
    roi_infer_shape(OP, &p.roi, |_| out_channels(&p, &data), ins, outs)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Position-sensitive region-of-interest pooling (R-FCN): data (N, C, H, W) with \
                 C = output_dim * group_size^2 and rois (R, 5), rows [batch_index, x1, y1, x2, y2] \
                 in the coordinates that spatial_scale maps onto the data, give (R, output_dim, \
                 pooled_size, pooled_size). Region corners are rounded to whole positions (the \
                 far corner taken one past) before scaling; each region, at least 0.1 wide and \
                 high, is cut into pooled_size x pooled_size bins (floored and ceiled, clipped to \
                 the data), and bin (ph, pw) of output channel c is the average of data channel \
                 (c * group_size + gh) * group_size + gw over it, gh = floor(ph * group_size / \
                 pooled_size) (gw likewise). An empty bin gives 0. The gradient of each bin is \
                 spread evenly over its window; rois get a zero gradient.",
            )
            .attr(spatial_scale_attr())
            .attr(AttrSpec::required("output_dim", AttrKind::Int, "Output channels (classes)."))
            .attr(AttrSpec::required("pooled_size", AttrKind::Int, "Output bins along each axis."))
            .attr(AttrSpec::optional(
                "group_size",
                AttrKind::Int,
                0i64,
                "Position-sensitive channel groups along each axis; 0: pooled_size.",
            ))
            .arguments(&["data", "rois"])
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_type(|_, ins, outs| roi_infer_type(OP, ins, outs))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![1], outputs: vec![] }, backward),
    );
}
