//! `UpSampling`: nearest-neighbour upsampling of one or more 4-D inputs by
//! an integer factor, or bilinear upsampling, which MXNet defines as a
//! depth-wise `Deconvolution` with a learnable weight (kernel
//! `2·scale - scale % 2`, stride `scale`, padding `ceil((scale - 1) / 2)`,
//! one group per channel) and which runs that operator's kernels here.

use super::{dims4, merge_out};
use crate::conv::geometry::fmt_tuple;
use num_traits::Zero;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement,
    Gradient, NDArray, OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "UpSampling";

/// The parsed attributes.
#[derive(Debug, Clone)]
struct UpParams {
    /// The upsampling factor of the first input.
    scale: usize,
    /// Bilinear (a deconvolution) rather than nearest.
    bilinear: bool,
    /// Nearest with several inputs: add them up rather than joining their
    /// channels.
    sum: bool,
    /// Number of inputs (nearest).
    num_args: usize,
    /// Channels of the data (bilinear).
    num_filter: usize,
    /// The `Deconvolution` attributes of the bilinear form.
    deconv: Option<Attrs>,
}

/// The bilinear form's kernel extent for `scale`.
fn bilinear_kernel(scale: usize) -> usize {
    2 * scale - scale % 2
}

fn parse(attrs: &Attrs) -> Result<UpParams> {
    if let Some(p) = attrs.prepared::<UpParams>() {
        return Ok(p.clone());
    }
    let positive = |name: &str| -> Result<usize> {
        let v = attrs.int(name)?;
        if v < 1 {
            return Err(Error::attr(name, format!("{OP}: {name} must be at least 1, got {v}")));
        }
        Ok(v as usize)
    };
    let scale = positive("scale")?;
    let num_args = positive("num_args")?;
    if attrs.int("workspace")? < 0 {
        return Err(Error::attr("workspace", format!("{OP}: workspace must not be negative")));
    }
    let bilinear = match attrs.str("sample_type")? {
        "nearest" => false,
        "bilinear" => true,
        other => {
            return Err(Error::attr(
                "sample_type",
                format!("{OP}: unknown sample_type `{other}` (bilinear, nearest)"),
            ))
        }
    };
    let sum = match attrs.str("multi_input_mode")? {
        "concat" => false,
        "sum" => true,
        other => {
            return Err(Error::attr(
                "multi_input_mode",
                format!("{OP}: unknown multi_input_mode `{other}` (concat, sum)"),
            ))
        }
    };
    let num_filter = attrs.int("num_filter")?;
    let deconv = if bilinear {
        if num_filter < 1 {
            return Err(Error::attr(
                "num_filter",
                format!(
                    "{OP}: sample_type='bilinear' needs num_filter, the number of channels of the data \
                     (got {num_filter})"
                ),
            ));
        }
        let (k, s) = (bilinear_kernel(scale) as i64, scale as i64);
        let pad = (s - 1 + 1) / 2; // ceil((s - 1) / 2)
        let deconv = registry::get("Deconvolution")?;
        Some(deconv.parse_attrs(&[
            ("kernel", AttrValue::Ints(vec![k, k])),
            ("stride", AttrValue::Ints(vec![s, s])),
            ("pad", AttrValue::Ints(vec![pad, pad])),
            ("num_filter", AttrValue::Int(num_filter)),
            ("num_group", AttrValue::Int(num_filter)),
            ("no_bias", AttrValue::Bool(true)),
            ("workspace", AttrValue::Int(attrs.int("workspace")?)),
        ])?)
    } else {
        None
    };
    Ok(UpParams { scale, bilinear, sum, num_args, num_filter: num_filter.max(0) as usize, deconv })
}

/// The factor by which nearest upsampling enlarges input `i` of shape
/// `shape` to `out_hw`: the output extent over its own, equal along both
/// axes.
fn input_scale(i: usize, shape: &[usize], out_hw: [usize; 2]) -> Result<usize> {
    let (h, w) = (shape[2], shape[3]);
    let ok = h > 0
        && w > 0
        && out_hw[0].is_multiple_of(h)
        && out_hw[1].is_multiple_of(w)
        && out_hw[0] / h == out_hw[1] / w;
    if !ok {
        return Err(Error::Shape(format!(
            "{OP}: input {i} of shape {} does not upsample to the output's {}x{} by one integer factor \
             on both axes",
            fmt_tuple(shape),
            out_hw[0],
            out_hw[1]
        )));
    }
    Ok(out_hw[0] / h)
}

/// Shape inference over complete or partial shapes (0: unknown).
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = parse(attrs)?;
    for (i, s) in ins.iter().enumerate() {
        if let Some(s) = s {
            let what =
                if p.bilinear { ["data", "weight"][i.min(1)].to_string() } else { format!("input {i}") };
            dims4(OP, &what, s)?;
        }
    }
    let Some(data) = ins[0].clone() else { return Ok(()) };
    let [n, c, h, w] = dims4(OP, "data", &data)?;
    // (an extent that overflows saturates: the output check reports it)
    let known = |v: usize| v.saturating_mul(p.scale);
    let out_hw = [known(h), known(w)];
    let context = || format!("data of shape {}", fmt_tuple(&data));
    if p.bilinear {
        if c > 0 && c != p.num_filter {
            return Err(Error::attr(
                "num_filter",
                format!(
                    "{OP}: sample_type='bilinear' needs num_filter equal to the data's channels: got \
                     num_filter={} for data of shape {}",
                    p.num_filter,
                    fmt_tuple(&data)
                ),
            ));
        }
        let k = bilinear_kernel(p.scale);
        crate::conv::merge_shape(&mut ins[1], &[p.num_filter, 1, k, k], &format!("{OP}: weight"), context)?;
        return merge_out(OP, &mut outs[0], &[n, c, out_hw[0], out_hw[1]], context);
    }
    let mut channels = if p.sum { c } else { 0 };
    let mut all_known = true;
    for (i, s) in ins.iter().enumerate() {
        let Some(s) = s else {
            all_known = false;
            continue;
        };
        if s[0] != 0 && n != 0 && s[0] != n {
            return Err(Error::Shape(format!(
                "{OP}: input {i} of shape {} has another batch size than input 0 of shape {}",
                fmt_tuple(s),
                fmt_tuple(&data)
            )));
        }
        if i > 0 && s[2] != 0 && s[3] != 0 && out_hw[0] != 0 && out_hw[1] != 0 {
            input_scale(i, s, out_hw)?;
        }
        if p.sum {
            if s[1] != 0 && channels != 0 && s[1] != channels {
                return Err(Error::Shape(format!(
                    "{OP}: multi_input_mode='sum' needs inputs with one number of channels: input {i} \
                     has shape {}, input 0 {}",
                    fmt_tuple(s),
                    fmt_tuple(&data)
                )));
            }
            channels = channels.max(s[1]);
        } else {
            all_known &= s[1] != 0;
            channels += s[1];
        }
    }
    if !p.sum && !all_known {
        channels = 0;
    }
    merge_out(OP, &mut outs[0], &[n, channels, out_hw[0], out_hw[1]], context)
}

/// Nearest: one output plane `y` (`oh` x `ow`) from input plane `x`
/// enlarged `s` times, added to `y` when `add`.
fn up_plane<T: FloatElement>(x: &[T], s: usize, ow: usize, y: &mut [T::Compute], add: bool) {
    let iw = ow / s;
    for (r, row) in y.chunks_exact_mut(ow).enumerate() {
        let src = &x[(r / s) * iw..][..iw];
        for (c, v) in row.iter_mut().enumerate() {
            let u = src[c / s].to_compute();
            *v = if add { *v + u } else { u };
        }
    }
}

/// Nearest's gradient: input plane `dx` (`oh / s` x `ow / s`) as the sums
/// of the `s` x `s` blocks of output plane `dy`.
fn down_plane<T: FloatElement>(dy: &[T], s: usize, ow: usize, dx: &mut [T]) {
    let iw = ow / s;
    for (r, row) in dx.chunks_exact_mut(iw.max(1)).enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            let mut acc = <T::Compute as Zero>::zero();
            for a in 0..s {
                let line = &dy[(r * s + a) * ow + c * s..][..s];
                for u in line {
                    acc = acc + u.to_compute();
                }
            }
            *v = T::from_compute(acc);
        }
    }
}

/// Planes per parallel task so that the pool gets a few tasks per thread.
fn planes_per_task(planes: usize) -> usize {
    planes.div_ceil(oxnet_core::parallel::num_threads() * 4).max(1)
}

fn nearest_forward<T: FloatElement>(p: &UpParams, req: Req, inputs: &[NDArray], out: &NDArray) -> Result<()> {
    let [n, oc, oh, ow] = dims4(OP, "the output", out.shape())?;
    let plane = oh * ow;
    // per output channel: (input, its channel) for concat; all inputs for sum
    let mut scales = Vec::with_capacity(inputs.len());
    let mut owner = Vec::with_capacity(oc);
    for (i, x) in inputs.iter().enumerate() {
        let s = if i == 0 { p.scale } else { input_scale(i, x.shape(), [oh, ow])? };
        scales.push(s);
        if !p.sum {
            owner.extend((0..x.shape()[1]).map(|c| (i, c)));
        }
    }
    let xs: Vec<&[T]> = inputs.iter().map(|x| x.as_slice::<T>()).collect::<Result<_>>()?;
    let mut y = vec![T::zero(); n * oc * plane];
    if plane > 0 && !y.is_empty() {
        let per = planes_per_task(n * oc);
        oxnet_core::parallel::for_each_chunk_mut(&mut y, per * plane, |t, ys| {
            let mut acc = vec![<T::Compute as Zero>::zero(); plane];
            for (k, yp) in ys.chunks_exact_mut(plane).enumerate() {
                let (b, co) = ((t * per + k) / oc, (t * per + k) % oc);
                if p.sum {
                    for (i, x) in xs.iter().enumerate() {
                        let ip = plane / (scales[i] * scales[i]);
                        up_plane(&x[(b * oc + co) * ip..][..ip], scales[i], ow, &mut acc, i > 0);
                    }
                } else {
                    let (i, c) = owner[co];
                    let (ic, ip) = (inputs[i].shape()[1], plane / (scales[i] * scales[i]));
                    up_plane(&xs[i][(b * ic + c) * ip..][..ip], scales[i], ow, &mut acc, false);
                }
                for (d, v) in yp.iter_mut().zip(&acc) {
                    *d = T::from_compute(*v);
                }
            }
        });
    }
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn nearest_backward<T: FloatElement>(
    p: &UpParams,
    req: &[Req],
    dy: &NDArray,
    grads: &[NDArray],
) -> Result<()> {
    let [n, oc, oh, ow] = dims4(OP, "the output gradient", dy.shape())?;
    let dys = dy.as_slice::<T>()?;
    let mut first_channel = 0;
    for (i, g) in grads.iter().enumerate() {
        let [_, c, h, _] = dims4(OP, "a gradient", g.shape())?;
        let at = first_channel;
        if !p.sum {
            first_channel += c;
        }
        if req[i] == Req::Null {
            continue;
        }
        let s = if i == 0 { p.scale } else { input_scale(i, g.shape(), [oh, ow])? };
        let ip = h * (ow / s);
        let mut dx = vec![T::zero(); n * c * ip];
        if ip > 0 && !dx.is_empty() {
            let per = planes_per_task(n * c);
            oxnet_core::parallel::for_each_chunk_mut(&mut dx, per * ip, |t, dxs| {
                for (k, plane) in dxs.chunks_exact_mut(ip).enumerate() {
                    let (b, ch) = ((t * per + k) / c, (t * per + k) % c);
                    down_plane(&dys[(b * oc + at + ch) * oh * ow..][..oh * ow], s, ow, plane);
                }
            });
        }
        store_slice(req[i], g.as_mut_slice::<T>()?, &dx);
    }
    Ok(())
}

/// The Deconvolution operator and a context carrying its attributes.
fn deconv_call<R>(
    ctx: &OpContext,
    p: &UpParams,
    f: impl FnOnce(&registry::Op, &OpContext) -> Result<R>,
) -> Result<R> {
    let attrs = p.deconv.as_ref().ok_or_else(|| Error::Invalid(format!("{OP}: not bilinear")))?;
    let op = registry::get("Deconvolution")?;
    let inner = OpContext {
        op_name: ctx.op_name,
        attrs,
        req: ctx.req,
        is_train: ctx.is_train,
        device: ctx.device,
        state: None,
    };
    f(&op, &inner)
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    if p.bilinear {
        return deconv_call(ctx, &p, |op, inner| (op.kernel_for(ctx.device)?)(inner, inputs, outputs));
    }
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(outputs[0].dtype(), T => nearest_forward::<T>(&p, ctx.req[0], inputs, &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    if p.bilinear {
        return deconv_call(ctx, &p, |op, inner| match &op.gradient {
            Gradient::Kernel { backward, .. } => backward(inner, args, grads),
            _ => Err(Error::Autograd(format!("{OP}: Deconvolution has no backward kernel"))),
        });
    }
    let dy = args.out_grads[0]
        .as_ref()
        .ok_or_else(|| Error::Autograd(format!("{OP}: the backward kernel lacks the output gradient")))?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    oxnet_core::with_float_dtype!(dy.dtype(), T => nearest_backward::<T>(&p, ctx.req, &dy, grads))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Upsamples 4-d data (batch, channel, height, width) by an integer `scale`. \
                 sample_type='nearest' repeats each element scale x scale times; with several \
                 inputs (num_args) the output is scale times the first input's size, each other \
                 input is enlarged by the integer factor that reaches it, and the results are \
                 joined along the channels (multi_input_mode='concat') or added \
                 ('sum'). sample_type='bilinear' takes data and a weight of shape \
                 (num_filter, 1, 2·scale - scale % 2, 2·scale - scale % 2) and computes the \
                 depth-wise Deconvolution with stride scale and padding ceil((scale - 1) / 2) \
                 (num_filter must equal the channels; the weight's variable is initialised \
                 'bilinear').",
            )
            .attr(AttrSpec::required("scale", AttrKind::Int, "Upsampling factor (at least 1)."))
            .attr(AttrSpec::optional(
                "num_filter",
                AttrKind::Int,
                0i64,
                "Channels of the data (bilinear only).",
            ))
            .attr(AttrSpec::required(
                "sample_type",
                AttrKind::Choice(vec!["nearest", "bilinear"]),
                "Upsampling method.",
            ))
            .attr(AttrSpec::optional(
                "multi_input_mode",
                AttrKind::Choice(vec!["concat", "sum"]),
                "concat",
                "How several nearest inputs combine: joined channels or a sum.",
            ))
            .attr(AttrSpec::required(
                "num_args",
                AttrKind::Int,
                "Number of inputs (nearest); bilinear always takes data and weight.",
            ))
            .attr(AttrSpec::optional(
                "workspace",
                AttrKind::Int,
                512i64,
                "Accepted for compatibility; ignored.",
            ))
            .arguments_fn(|attrs| {
                let p = parse(attrs)?;
                Ok(if p.bilinear {
                    vec!["data".into(), "weight".into()]
                } else {
                    (0..p.num_args).map(|i| format!("arg{i}")).collect()
                })
            })
            .input_var_attrs(|attrs, input| match (attrs.str("sample_type"), input) {
                (Ok("bilinear"), "weight") => vec![("__init__".into(), r#"["bilinear", {}]"#.into())],
                _ => Vec::new(),
            })
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(
                |attrs| {
                    let bilinear = attrs.str("sample_type").is_ok_and(|s| s == "bilinear");
                    let inputs = if bilinear { vec![0, 1] } else { vec![] };
                    BackwardDeps { out_grads: vec![0], inputs, outputs: vec![] }
                },
                backward,
            ),
    );
}
