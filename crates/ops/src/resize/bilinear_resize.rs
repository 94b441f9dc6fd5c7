//! `_contrib_BilinearResize2D`: bilinear resizing of the two last axes of
//! 4-d data to a size given directly, by scales, by a rule on the parity
//! of the input size, or by a second array (`mode='like'`).
//!
//! As in MXNet, source positions and interpolation weights are computed in
//! float32 whatever the data's dtype, and `align_corners` (on by default)
//! maps the corner pixels onto each other.

use super::{dims4, merge_out};
use crate::conv::geometry::fmt_tuple;
use num_traits::Zero;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext,
    OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "_contrib_BilinearResize2D";

/// How the output size is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `height`/`width`, or the input size times the scales.
    Size,
    /// Like `Size` with scales, but an odd extent `x` becomes `(x - 1)·scale + 1`.
    OddScale,
    /// The two last extents of the second input.
    Like,
    /// The nearest even extent not above the input's.
    ToEvenDown,
    /// The nearest even extent not below the input's.
    ToEvenUp,
    /// The nearest odd extent not above the input's.
    ToOddDown,
    /// The nearest odd extent not below the input's.
    ToOddUp,
}

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct ResizeParams {
    mode: Mode,
    height: usize,
    width: usize,
    scale_height: Option<f32>,
    scale_width: Option<f32>,
    align_corners: bool,
}

fn opt_scale(attrs: &Attrs, name: &str) -> Result<Option<f32>> {
    let s = attrs.str(name)?.trim();
    if matches!(s, "None" | "none" | "") {
        return Ok(None);
    }
    let v: f64 =
        s.parse().map_err(|_| Error::attr(name, format!("{OP}: {name} must be a number, got `{s}`")))?;
    if v.is_nan() || v <= 0.0 {
        return Err(Error::attr(name, format!("{OP}: {name} must be positive, got {s}")));
    }
    Ok(Some(v as f32))
}

fn parse(attrs: &Attrs) -> Result<ResizeParams> {
    if let Some(p) = attrs.prepared::<ResizeParams>() {
        return Ok(*p);
    }
    let extent = |name: &str| -> Result<usize> {
        let v = attrs.int(name)?;
        if v < 1 {
            return Err(Error::attr(name, format!("{OP}: {name} must be at least 1, got {v}")));
        }
        Ok(v as usize)
    };
    let mode = match attrs.str("mode")? {
        "size" => Mode::Size,
        "odd_scale" => Mode::OddScale,
        "like" => Mode::Like,
        "to_even_down" => Mode::ToEvenDown,
        "to_even_up" => Mode::ToEvenUp,
        "to_odd_down" => Mode::ToOddDown,
        "to_odd_up" => Mode::ToOddUp,
        other => {
            return Err(Error::attr(
                "mode",
                format!(
                    "{OP}: unknown mode `{other}` (like, odd_scale, size, to_even_down, to_even_up, \
                     to_odd_down, to_odd_up)"
                ),
            ))
        }
    };
    let p = ResizeParams {
        mode,
        height: extent("height")?,
        width: extent("width")?,
        scale_height: opt_scale(attrs, "scale_height")?,
        scale_width: opt_scale(attrs, "scale_width")?,
        align_corners: attrs.bool("align_corners")?,
    };
    // MXNet reads both scales once scale_height is given (mode 'size') and
    // always in mode 'odd_scale'
    let needs_both = mode == Mode::OddScale || (mode == Mode::Size && p.scale_height.is_some());
    if needs_both {
        for (name, v) in [("scale_height", p.scale_height), ("scale_width", p.scale_width)] {
            if v.is_none() {
                let why = if mode == Mode::OddScale { "mode='odd_scale'" } else { "scale_height" };
                return Err(Error::attr(name, format!("{OP}: {why} needs {name} too")));
            }
        }
    }
    Ok(p)
}

/// `x · scale`, truncated (in float32, as MXNet).
fn scaled(x: usize, scale: f32) -> usize {
    (x as f32 * scale) as usize
}

/// The output height and width for data of spatial size `(h, w)` (0:
/// unknown) and, in mode 'like', the second input's `(h, w)`.
fn out_hw(p: &ResizeParams, hw: [usize; 2], like: Option<[usize; 2]>) -> [usize; 2] {
    let scales = [p.scale_height.unwrap_or(1.0), p.scale_width.unwrap_or(1.0)];
    let rule = |i: usize| -> usize {
        let x = hw[i];
        if x == 0 && !matches!(p.mode, Mode::Like) && !(p.mode == Mode::Size && p.scale_height.is_none()) {
            return 0;
        }
        match p.mode {
            Mode::Size if p.scale_height.is_none() => [p.height, p.width][i],
            Mode::Size => scaled(x, scales[i]),
            Mode::OddScale if x.is_multiple_of(2) => scaled(x, scales[i]),
            Mode::OddScale => scaled(x - 1, scales[i]) + 1,
            Mode::Like => like.map_or(0, |l| l[i]),
            Mode::ToEvenDown => x - x % 2,
            Mode::ToEvenUp => x + x % 2,
            Mode::ToOddDown => x - (1 - x % 2),
            Mode::ToOddUp => x + (1 - x % 2),
        }
    };
    [rule(0), rule(1)]
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = parse(attrs)?;
    let like = match ins.get(1).cloned().flatten() {
        Some(l) => {
            let [_, _, h, w] = dims4(OP, "like", &l)?;
            Some([h, w])
        }
        None => None,
    };
    let Some(data) = ins[0].clone() else { return Ok(()) };
    let [n, c, h, w] = dims4(OP, "data", &data)?;
    let [oh, ow] = out_hw(&p, [h, w], like);
    merge_out(OP, &mut outs[0], &[n, c, oh, ow], || {
        format!("data of shape {} in mode '{}'", fmt_tuple(&data), attrs.str("mode").unwrap_or("size"))
    })
}

/// Where output row (or column) `dst` reads: the lower source index, the
/// step to the upper one (0 or 1) and the upper one's weight, in float32.
#[derive(Clone, Copy)]
struct Tap {
    lo: usize,
    step: usize,
    frac: f32,
}

/// MXNet's source-position rule along one axis.
fn taps(input: usize, output: usize, align_corners: bool) -> Vec<Tap> {
    let ratio = if output > 1 {
        if align_corners {
            (input as f32 - 1.0) / (output as f32 - 1.0)
        } else {
            input as f32 / output as f32
        }
    } else {
        0.0
    };
    (0..output)
        .map(|dst| {
            let src = if align_corners {
                ratio * dst as f32
            } else {
                // computed in float64 and rounded, as MXNet's mixed arithmetic does
                let s = (ratio as f64 * (dst as f64 + 0.5) - 0.5) as f32;
                s.max(0.0)
            };
            let lo = (src as usize).min(input.saturating_sub(1));
            Tap { lo, step: usize::from(lo + 1 < input), frac: src - lo as f32 }
        })
        .collect()
}

/// The interpolation weights of one tap in the compute type: (lower, upper).
#[inline]
fn weights<C: num_traits::Float>(t: &Tap) -> (C, C) {
    let hi: C = super::cast(t.frac as f64);
    (C::one() - hi, hi)
}

fn resize_plane<T: FloatElement>(x: &[T], iw: usize, rows: &[Tap], cols: &[Tap], y: &mut [T]) {
    let ow = cols.len();
    for (r, yrow) in rows.iter().zip(y.chunks_exact_mut(ow.max(1))) {
        let (h0, h1) = weights::<T::Compute>(r);
        let top = &x[r.lo * iw..];
        let bottom = &x[(r.lo + r.step) * iw..];
        for (c, v) in cols.iter().zip(yrow.iter_mut()) {
            let (w0, w1) = weights::<T::Compute>(c);
            let at = |row: &[T], k: usize| row[k].to_compute();
            let upper = w0 * at(top, c.lo) + w1 * at(top, c.lo + c.step);
            let lower = w0 * at(bottom, c.lo) + w1 * at(bottom, c.lo + c.step);
            *v = T::from_compute(h0 * upper + h1 * lower);
        }
    }
}

fn unresize_plane<T: FloatElement>(dy: &[T], iw: usize, rows: &[Tap], cols: &[Tap], dx: &mut [T::Compute]) {
    let ow = cols.len();
    for (r, dyrow) in rows.iter().zip(dy.chunks_exact(ow.max(1))) {
        let (h0, h1) = weights::<T::Compute>(r);
        let (top, bottom) = (r.lo * iw, (r.lo + r.step) * iw);
        for (c, g) in cols.iter().zip(dyrow) {
            let (w0, w1) = weights::<T::Compute>(c);
            let g = g.to_compute();
            let (left, right) = (c.lo, c.lo + c.step);
            dx[top + left] = dx[top + left] + h0 * w0 * g;
            dx[top + right] = dx[top + right] + h0 * w1 * g;
            dx[bottom + left] = dx[bottom + left] + h1 * w0 * g;
            dx[bottom + right] = dx[bottom + right] + h1 * w1 * g;
        }
    }
}

/// Planes per parallel task.
fn planes_per_task(planes: usize) -> usize {
    planes.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1)
}

fn forward_typed<T: FloatElement>(p: &ResizeParams, req: Req, x: &NDArray, out: &NDArray) -> Result<()> {
    let [n, c, ih, iw] = dims4(OP, "data", x.shape())?;
    let [_, _, oh, ow] = dims4(OP, "the output", out.shape())?;
    let xs = x.as_slice::<T>()?;
    let mut y = vec![T::zero(); n * c * oh * ow];
    let (ip, op) = (ih * iw, oh * ow);
    if (ih, iw) == (oh, ow) {
        y.copy_from_slice(xs);
    } else if op > 0 && ip > 0 && !y.is_empty() {
        let (rows, cols) = (taps(ih, oh, p.align_corners), taps(iw, ow, p.align_corners));
        let per = planes_per_task(n * c);
        oxnet_core::parallel::for_each_chunk_mut(&mut y, per * op, |t, ys| {
            for (k, plane) in ys.chunks_exact_mut(op).enumerate() {
                resize_plane(&xs[(t * per + k) * ip..][..ip], iw, &rows, &cols, plane);
            }
        });
    }
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(p: &ResizeParams, req: Req, dy: &NDArray, dx: &NDArray) -> Result<()> {
    let [n, c, ih, iw] = dims4(OP, "data", dx.shape())?;
    let [_, _, oh, ow] = dims4(OP, "the output gradient", dy.shape())?;
    let dys = dy.as_slice::<T>()?;
    let (ip, op) = (ih * iw, oh * ow);
    let mut g = vec![T::zero(); n * c * ip];
    if (ih, iw) == (oh, ow) {
        g.copy_from_slice(dys);
    } else if op > 0 && ip > 0 && !g.is_empty() {
        let (rows, cols) = (taps(ih, oh, p.align_corners), taps(iw, ow, p.align_corners));
        let per = planes_per_task(n * c);
        oxnet_core::parallel::for_each_chunk_mut(&mut g, per * ip, |t, gs| {
            let mut acc = vec![<T::Compute as Zero>::zero(); ip];
            for (k, plane) in gs.chunks_exact_mut(ip).enumerate() {
                acc.iter_mut().for_each(|v| *v = <T::Compute as Zero>::zero());
                unresize_plane::<T>(&dys[(t * per + k) * op..][..op], iw, &rows, &cols, &mut acc);
                for (d, v) in plane.iter_mut().zip(&acc) {
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
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(&p, ctx.req[0], &inputs[0], &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    let dy = args.out_grads[0]
        .as_ref()
        .ok_or_else(|| Error::Autograd(format!("{OP}: the backward kernel lacks the output gradient")))?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    if ctx.req[0] != Req::Null {
        oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(&p, ctx.req[0], &dy, &grads[0])?);
    }
    // the like input only gives a shape: its gradient is zero
    super::zero_second_grad(ctx.req, grads)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Bilinear resizing of 4-d data (batch, channel, height, width) along height and \
                 width. mode='size': to (height, width), or, when scale_height is given, to the \
                 input's extents times scale_height and scale_width (truncated); 'odd_scale': \
                 like the scales, but an odd extent x becomes (x - 1)·scale + 1; 'like': to the \
                 height and width of the second input `like` (whose gradient is zero); \
                 'to_even_down', 'to_even_up', 'to_odd_down', 'to_odd_up': to the nearest even or \
                 odd extents below or above. align_corners=True (the default) maps corner pixels \
                 onto corner pixels; False maps pixel areas (half-pixel centres).",
            )
            .attr(AttrSpec::optional(
                "height",
                AttrKind::Int,
                1i64,
                "Output height in mode 'size' without scales.",
            ))
            .attr(AttrSpec::optional(
                "width",
                AttrKind::Int,
                1i64,
                "Output width in mode 'size' without scales.",
            ))
            .attr(AttrSpec::optional(
                "scale_height",
                AttrKind::Str,
                "None",
                "Height scale (modes 'size' and 'odd_scale'); None: unset.",
            ))
            .attr(AttrSpec::optional(
                "scale_width",
                AttrKind::Str,
                "None",
                "Width scale (modes 'size' and 'odd_scale'); None: unset.",
            ))
            .attr(AttrSpec::optional(
                "mode",
                AttrKind::Choice(vec![
                    "size",
                    "odd_scale",
                    "like",
                    "to_even_down",
                    "to_even_up",
                    "to_odd_down",
                    "to_odd_up",
                ]),
                "size",
                "How the output size is chosen.",
            ))
            .attr(AttrSpec::optional(
                "align_corners",
                AttrKind::Bool,
                true,
                "Map corner pixels onto corner pixels.",
            ))
            .arguments_fn(|attrs| {
                Ok(if attrs.str("mode")? == "like" {
                    vec!["data".into(), "like".into()]
                } else {
                    vec!["data".into()]
                })
            })
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![], outputs: vec![] }, backward),
    );
}
