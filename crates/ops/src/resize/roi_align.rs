//! `_contrib_ROIAlign`: average of bilinear samples over each bin of each
//! region of interest (Mask R-CNN), without rounding the region. Sampling
//! points lie on a regular grid in each bin (`sample_ratio` per axis, or
//! `ceil(bin extent)` when it is not positive); `aligned` shifts the
//! region by half a pixel (Detectron2); `position_sensitive` reads each bin
//! from its own group of channels (R-FCN). `rois` get no gradient.

use super::{batch_index, cast, dims4, roi_infer_shape, roi_infer_type, roi_params, RoiParams};
use crate::conv::geometry::fmt_tuple;
use num_traits::{Float, Zero};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext,
    OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "_contrib_ROIAlign";

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct AlignParams {
    roi: RoiParams,
    sample_ratio: i64,
    position_sensitive: bool,
    aligned: bool,
}

fn parse(attrs: &Attrs) -> Result<AlignParams> {
    Ok(AlignParams {
        roi: roi_params(OP, attrs)?,
        sample_ratio: attrs.int("sample_ratio")?,
        position_sensitive: attrs.bool("position_sensitive")?,
        aligned: attrs.bool("aligned")?,
    })
}

/// Output channels for data with `c` channels.
fn out_channels(p: &AlignParams, c: usize) -> Result<usize> {
    let bins = p.roi.pooled[0] * p.roi.pooled[1];
    if !p.position_sensitive {
        return Ok(c);
    }
    if !c.is_multiple_of(bins) {
        return Err(Error::Shape(format!(
            "{OP}: position_sensitive needs data channels divisible by pooled_size {}x{} = {bins}, got {c}",
            p.roi.pooled[0], p.roi.pooled[1]
        )));
    }
    Ok(c / bins)
}

/// One region's placement in the data, in the compute type `C`.
#[derive(Clone, Copy)]
struct Frame<C> {
    /// The image (`None`: the batch index names none; the output is 0).
    image: Option<usize>,
    start: [C; 2],
    bin: [C; 2],
    grid: [usize; 2],
    count: C,
}

/// The most sampling points a bin may have (an adaptive grid over a huge or
/// infinite region would not end).
pub(super) const MAX_SAMPLES: usize = 1 << 20;

/// The frame of region row `r`, index `i`, for a batch of `n`.
fn frame<C: Float>(p: &AlignParams, r: [C; 5], i: usize, n: usize) -> Result<Frame<C>> {
    let scale: C = cast(p.roi.scale as f64);
    let offset: C = cast(if p.aligned { 0.5 } else { 0.0 });
    let at = |v: C| v * scale - offset;
    let (sw, sh, ew, eh) = (at(r[1]), at(r[2]), at(r[3]), at(r[4]));
    let (mut rw, mut rh) = (ew - sw, eh - sh);
    if p.aligned {
        if !(rw > C::zero() && rh > C::zero()) {
            return Err(Error::Invalid(format!(
                "{OP}: with aligned=True every region needs a positive width and height; region {i} \
                 [{}, {}, {}, {}, {}] has {} x {}",
                r[0].to_f64().unwrap_or(f64::NAN),
                r[1].to_f64().unwrap_or(f64::NAN),
                r[2].to_f64().unwrap_or(f64::NAN),
                r[3].to_f64().unwrap_or(f64::NAN),
                r[4].to_f64().unwrap_or(f64::NAN),
                rw.to_f64().unwrap_or(f64::NAN),
                rh.to_f64().unwrap_or(f64::NAN)
            )));
        }
    } else {
        // malformed regions become at least 1 x 1
        rw = rw.max(C::one());
        rh = rh.max(C::one());
    }
    let pooled = [cast::<C>(p.roi.pooled[0] as f64), cast::<C>(p.roi.pooled[1] as f64)];
    let grid_of = |extent: C, bins: C| -> Option<usize> {
        if p.sample_ratio > 0 {
            Some(p.sample_ratio as usize)
        } else {
            (extent / bins).ceil().to_usize()
        }
    };
    let grid = match (grid_of(rh, pooled[0]), grid_of(rw, pooled[1])) {
        (Some(a), Some(b)) if a.checked_mul(b).is_some_and(|n| n <= MAX_SAMPLES) => [a, b],
        _ => {
            return Err(Error::Invalid(format!(
                "{OP}: region {i} of {} x {} data positions needs more than {MAX_SAMPLES} sampling points \
                 per bin (sample_ratio={}); give a positive sample_ratio",
                rh.to_f64().unwrap_or(f64::NAN),
                rw.to_f64().unwrap_or(f64::NAN),
                p.sample_ratio
            )))
        }
    };
    Ok(Frame {
        image: batch_index(r[0].to_f64().unwrap_or(-1.0), n),
        start: [sh, sw],
        bin: [rh / pooled[0], rw / pooled[1]],
        grid,
        count: cast((grid[0] * grid[1]) as f64),
    })
}

/// The frames of every row of `rois`.
fn frames<T: FloatElement>(p: &AlignParams, rois: &[T], n: usize) -> Result<Vec<Frame<T::Compute>>> {
    rois.chunks_exact(5)
        .enumerate()
        .map(|(i, r)| frame(p, [r[0], r[1], r[2], r[3], r[4]].map(|v| v.to_compute()), i, n))
        .collect()
}

/// One sampling point: the four data positions around it in a plane and
/// their weights; `valid` is false for a point off the data (weights 0).
#[derive(Clone, Copy)]
pub(super) struct Sample<C> {
    pub(super) pos: [usize; 4],
    pub(super) w: [C; 4],
    valid: bool,
}

/// The bilinear sample at `(y, x)` of an `h` x `w` plane.
pub(super) fn sample<C: Float>(mut y: C, mut x: C, h: usize, w: usize) -> Sample<C> {
    let (hf, wf): (C, C) = (cast(h as f64), cast(w as f64));
    let minus_one: C = cast(-1.0);
    if h == 0 || w == 0 || y < minus_one || y > hf || x < minus_one || x > wf {
        return Sample { pos: [0; 4], w: [C::zero(); 4], valid: false };
    }
    y = y.max(C::zero());
    x = x.max(C::zero());
    let corner = |v: &mut C, extent: usize| -> (usize, usize) {
        let lo = v.to_usize().unwrap_or(0);
        if lo + 1 >= extent {
            let last = extent - 1;
            *v = cast(last as f64);
            (last, last)
        } else {
            (lo, lo + 1)
        }
    };
    let (y0, y1) = corner(&mut y, h);
    let (x0, x1) = corner(&mut x, w);
    let (ly, lx) = (y - cast(y0 as f64), x - cast(x0 as f64));
    let (hy, hx) = (C::one() - ly, C::one() - lx);
    Sample {
        pos: [y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1],
        w: [hy * hx, hy * lx, ly * hx, ly * lx],
        valid: true,
    }
}

/// The samples of bin `(i, j)` of a frame, row-major.
fn bin_samples<C: Float>(f: &Frame<C>, i: usize, j: usize, h: usize, w: usize, out: &mut Vec<Sample<C>>) {
    out.clear();
    let (gh, gw): (C, C) = (cast(f.grid[0] as f64), cast(f.grid[1] as f64));
    let y0 = f.start[0] + cast::<C>(i as f64) * f.bin[0];
    let x0 = f.start[1] + cast::<C>(j as f64) * f.bin[1];
    for iy in 0..f.grid[0] {
        let y = y0 + cast::<C>(iy as f64 + 0.5) * f.bin[0] / gh;
        for ix in 0..f.grid[1] {
            let x = x0 + cast::<C>(ix as f64 + 0.5) * f.bin[1] / gw;
            out.push(sample(y, x, h, w));
        }
    }
}

/// The data channel that output channel `c`, bin `b` reads.
fn source_channel(p: &AlignParams, c: usize, b: usize) -> usize {
    if p.position_sensitive {
        c * p.roi.pooled[0] * p.roi.pooled[1] + b
    } else {
        c
    }
}

fn forward_typed<T: FloatElement>(
    p: &AlignParams,
    req: Req,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let [n, c, h, w] = dims4(OP, "data", inputs[0].shape())?;
    let (x, rois) = (inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?);
    let fs = frames::<T>(p, rois, n)?;
    let co = out_channels(p, c)?;
    let (pw, bins) = (p.roi.pooled[1], p.roi.pooled[0] * p.roi.pooled[1]);
    let per_roi = co * bins;
    let mut y = vec![T::zero(); fs.len() * per_roi];
    if per_roi > 0 && !y.is_empty() {
        let per = fs.len().div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
        oxnet_core::parallel::for_each_chunk_mut(&mut y, per * per_roi, |t, part| {
            let mut samples = Vec::new();
            for (k, yr) in part.chunks_exact_mut(per_roi).enumerate() {
                let f = &fs[t * per + k];
                let Some(img) = f.image.filter(|_| h * w > 0) else { continue };
                for b in 0..bins {
                    bin_samples(f, b / pw, b % pw, h, w, &mut samples);
                    for ch in 0..co {
                        let plane = &x[(img * c + source_channel(p, ch, b)) * h * w..][..h * w];
                        let mut acc = <T::Compute as Zero>::zero();
                        for s in &samples {
                            let v = |i: usize| plane[s.pos[i]].to_compute();
                            acc = acc + (s.w[0] * v(0) + s.w[1] * v(1) + s.w[2] * v(2) + s.w[3] * v(3));
                        }
                        yr[ch * bins + b] = T::from_compute(acc / f.count);
                    }
                }
            }
        });
    }
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(
    p: &AlignParams,
    req: Req,
    dy: &NDArray,
    rois: &NDArray,
    dx: &NDArray,
) -> Result<()> {
    let [n, c, h, w] = dims4(OP, "data", dx.shape())?;
    let (rs, dys) = (rois.as_slice::<T>()?, dy.as_slice::<T>()?);
    let fs = frames::<T>(p, rs, n)?;
    let co = out_channels(p, c)?;
    let (pw, bins) = (p.roi.pooled[1], p.roi.pooled[0] * p.roi.pooled[1]);
    let plane = h * w;
    let mut g = vec![T::zero(); n * c * plane];
    if plane > 0 && !g.is_empty() {
        // one task per data plane: the bins that read it, in output order
        let per = (n * c).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
        oxnet_core::parallel::for_each_chunk_mut(&mut g, per * plane, |t, part| {
            let mut acc = vec![<T::Compute as Zero>::zero(); plane];
            let mut samples = Vec::new();
            for (k, gp) in part.chunks_exact_mut(plane).enumerate() {
                let (img, ci) = ((t * per + k) / c, (t * per + k) % c);
                acc.iter_mut().for_each(|v| *v = <T::Compute as Zero>::zero());
                // (output channel, bins) reading channel ci
                let (oc, bin_range) =
                    if p.position_sensitive { (ci / bins, ci % bins..ci % bins + 1) } else { (ci, 0..bins) };
                for (r, f) in fs.iter().enumerate() {
                    if f.image != Some(img) {
                        continue;
                    }
                    for b in bin_range.clone() {
                        let gy = dys[(r * co + oc) * bins + b].to_compute();
                        bin_samples(f, b / pw, b % pw, h, w, &mut samples);
                        for s in samples.iter().filter(|s| s.valid) {
                            for (pos, wt) in s.pos.iter().zip(&s.w) {
                                acc[*pos] = acc[*pos] + gy * *wt / f.count;
                            }
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
    let p = parse(ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(&p, ctx.req[0], inputs, &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let rois = args.inputs[1].as_ref().ok_or_else(missing)?;
    if ctx.req[0] != Req::Null {
        oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(&p, ctx.req[0], &dy, rois, &grads[0])?);
    }
    super::zero_second_grad(ctx.req, grads)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Region-of-interest align (Mask R-CNN): data (N, C, H, W) and rois (R, 5), rows \
                 [batch_index, x1, y1, x2, y2] in the coordinates that spatial_scale maps onto \
                 the data, give (R, C, pooled_h, pooled_w): each bin is the mean of bilinear \
                 samples on a sample_ratio x sample_ratio grid (ceil of the bin's extent per \
                 axis when sample_ratio <= 0), without rounding the region. aligned=True shifts \
                 regions by half a pixel (they then need a positive size); position_sensitive \
                 reads bin (i, j) of output channel c from data channel c·ph·pw + i·pw + j and \
                 gives C / (ph·pw) channels. A region whose batch_index names no image gives 0; \
                 rois get a zero gradient.",
            )
            .attr(AttrSpec::required("pooled_size", AttrKind::Ints, "Output bins (height, width)."))
            .attr(AttrSpec::required(
                "spatial_scale",
                AttrKind::Float,
                "Ratio of the data's size to the rois' coordinates, in [0, 1].",
            ))
            .attr(AttrSpec::optional(
                "sample_ratio",
                AttrKind::Int,
                -1i64,
                "Sampling points per bin and axis; <= 0: ceil of the bin's extent.",
            ))
            .attr(AttrSpec::optional(
                "position_sensitive",
                AttrKind::Bool,
                false,
                "Read each bin from its own channel group (R-FCN).",
            ))
            .attr(AttrSpec::optional("aligned", AttrKind::Bool, false, "Shift regions by half a pixel."))
            .arguments(&["data", "rois"])
            .prepare(|attrs| {
                parse(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(|_, ins, outs| roi_infer_type(OP, ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![1], outputs: vec![] }, backward),
    );
}

fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<oxnet_core::shape::Shape>],
    outs: &mut [Option<oxnet_core::shape::Shape>],
) -> Result<()> {
    let p = parse(attrs)?;
    let data = ins[0].clone();
    roi_infer_shape(
        OP,
        &p.roi,
        |c| {
            out_channels(&p, c).map_err(|e| match data.as_ref() {
                Some(d) => Error::Shape(format!("{e} (data of shape {})", fmt_tuple(d))),
                None => e,
            })
        },
        ins,
        outs,
    )
}
