//! `BatchNorm`: `out = gamma · (data - mean) / sqrt(var + eps) + beta` per
//! channel.
//!
//! As in MXNet 1.9.1 (CPU): in train mode without `use_global_stats` the
//! mean and (biased) variance are the batch's; otherwise the moving
//! statistics (auxiliary states `moving_mean`, `moving_var`). The second
//! and third outputs (with `output_mean_var`) are the mean used and the
//! *inverse* standard deviation `1 / sqrt(var + eps)`. The moving
//! statistics are updated by the backward pass of a train-mode call —
//! `moving = moving · momentum + batch · (1 - momentum)` — which is where
//! MXNet's CPU operator updates them; a forward call alone leaves them
//! unchanged. With `fix_gamma`, gamma is taken as 1 and gets a zero
//! gradient.

use super::channel_pass::{channel_map, channel_sums, run_grad_sums, run_sq_dev, run_sum};
use super::params::{bn_params, infer_shape, infer_type, parse_bn_params, BnParams, ChannelView};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext, OpDef,
    Req, Result,
};

/// Per-channel mean and inverse standard deviation of `x`, and the biased
/// variance, accumulated in f64 (two passes: the mean, then the centred
/// squares), on the thread pool.
fn batch_stats<T: FloatElement>(x: &[T], v: &ChannelView, eps: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let m = v.per_channel().max(1) as f64;
    let [sum] = channel_sums(v, x, None, |_, r, _| [run_sum(r)]);
    let mean: Vec<f64> = sum.iter().map(|s| s / m).collect();
    let [sq] = channel_sums(v, x, None, |c, r, _| [run_sq_dev(r, mean[c])]);
    let var: Vec<f64> = sq.iter().map(|s| s / m).collect();
    let invstd = var.iter().map(|s| 1.0 / (s + eps).sqrt()).collect();
    (mean, var, invstd)
}

/// Writes `f(coef(channel), x, y)` for every element into `out` under
/// `req`: straight into `out`'s memory for `write`, through a scratch
/// buffer otherwise.
fn write_map<T: FloatElement, C: Copy>(
    req: Req,
    out: &NDArray,
    v: &ChannelView,
    x: &[T],
    y: Option<&[T]>,
    coef: impl Fn(usize) -> C + Sync,
    f: impl Fn(C, T::Compute, T::Compute) -> T::Compute + Sync,
) -> Result<()> {
    match req {
        Req::Null => Ok(()),
        Req::Write if out.is_contiguous() => {
            channel_map(v, x, y, out.as_mut_slice::<T>()?, coef, f);
            Ok(())
        }
        _ => {
            let mut tmp = vec![T::zero(); x.len()];
            channel_map(v, x, y, &mut tmp, coef, f);
            store_slice(req, out.as_mut_slice::<T>()?, &tmp);
            Ok(())
        }
    }
}

/// True when this call normalises with the batch's statistics.
fn uses_batch_stats(ctx: &OpContext, p: &BnParams) -> bool {
    ctx.is_train && !p.use_global_stats
}

/// A per-channel array (whatever its float dtype: float32 parameters go
/// with float16 data) as f64.
fn to_f64(a: &NDArray) -> Result<Vec<f64>> {
    a.to_vec::<f64>()
}

/// Stores per-channel values into `dst` under `req`, in `dst`'s dtype.
fn store_f64(req: Req, dst: &NDArray, v: &[f64]) -> Result<()> {
    oxnet_core::with_float_dtype!(dst.dtype(), P => {
        let vals: Vec<P> = v.iter().map(|&e| <P as oxnet_core::Element>::from_f64(e)).collect();
        store_slice(req, dst.as_mut_slice::<P>()?, &vals);
    });
    Ok(())
}

/// The mean and inverse std a call normalises with.
fn stats_for<T: FloatElement>(
    ctx: &OpContext,
    p: &BnParams,
    x: &[T],
    view: &ChannelView,
    moving_mean: &NDArray,
    moving_var: &NDArray,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    if uses_batch_stats(ctx, p) {
        return Ok(batch_stats(x, view, p.eps));
    }
    let mean = to_f64(moving_mean)?;
    let var = to_f64(moving_var)?;
    let invstd = var.iter().map(|s| 1.0 / (s + p.eps).sqrt()).collect();
    Ok((mean, var, invstd))
}

fn gammas(p: &BnParams, gamma: &NDArray, c: usize) -> Result<Vec<f64>> {
    if p.fix_gamma {
        Ok(vec![1.0; c])
    } else {
        to_f64(gamma)
    }
}

fn forward_typed<T: FloatElement>(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = bn_params(ctx.attrs)?;
    let x = inputs[0].as_slice::<T>()?;
    let view = ChannelView::new(inputs[0].shape(), p.axis)?;
    let (mean, var, invstd) = stats_for(ctx, &p, x, &view, &inputs[3], &inputs[4])?;
    let gamma = gammas(&p, &inputs[1], view.channels)?;
    let beta = to_f64(&inputs[2])?;
    let scale_shift = |c: usize| {
        let scale = gamma[c] * invstd[c];
        (T::from_f64(scale).to_compute(), T::from_f64(beta[c] - mean[c] * scale).to_compute())
    };
    write_map(ctx.req[0], &outputs[0], &view, x, None, scale_shift, |(s, b), v, _| v * s + b)?;
    if outputs.len() == 3 {
        store_f64(ctx.req[1], &outputs[1], &mean)?;
        let third = if p.var_output { var } else { invstd };
        store_f64(ctx.req[2], &outputs[2], &third)?;
    }
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(ctx, inputs, outputs))
}

fn backward_typed<T: FloatElement>(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = bn_params(ctx.attrs)?;
    let missing = || Error::Autograd("BatchNorm: the backward kernel lacks a saved array".into());
    let get = |i: usize| args.inputs[i].as_ref().ok_or_else(missing);
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let (data, gamma, moving_mean, moving_var) = (get(0)?, get(1)?, get(3)?, get(4)?);
    let x = data.as_slice::<T>()?;
    let dys = dy.as_slice::<T>()?;
    let view = ChannelView::new(data.shape(), p.axis)?;
    let c = view.channels;
    let batch = uses_batch_stats(ctx, &p);
    let (mean, var, invstd) = stats_for(ctx, &p, x, &view, moving_mean, moving_var)?;
    let g = gammas(&p, gamma, c)?;

    // sums of dy and dy·xhat per channel
    let m = view.per_channel().max(1) as f64;
    let [sum_dy, sum_dy_dev] =
        channel_sums(&view, x, Some(dys), |ch, xr, dr| run_grad_sums(xr, dr, mean[ch]));
    let sum_dy_xhat: Vec<f64> = sum_dy_dev.iter().zip(&invstd).map(|(s, is)| s * is).collect();
    // dx = scale · (dy - mean(dy) - (x - mu) · invstd · mean(dy · xhat)), as a·dy + b·x + k
    let coef = |ch: usize| {
        let (mu, is, scale) = (mean[ch], invstd[ch], g[ch] * invstd[ch]);
        let (a, b, k) = if batch {
            let b = -scale * is * sum_dy_xhat[ch] / m;
            (scale, b, -scale * sum_dy[ch] / m - b * mu)
        } else {
            (scale, 0.0, 0.0)
        };
        let t = |v: f64| T::from_f64(v).to_compute();
        (t(a), t(b), t(k))
    };
    write_map(ctx.req[0], &grads[0], &view, x, Some(dys), coef, |(a, b, k), xv, d| a * d + b * xv + k)?;
    if ctx.req[1] != Req::Null {
        let dgamma = if p.fix_gamma { vec![0.0; c] } else { sum_dy_xhat.clone() };
        store_f64(ctx.req[1], &grads[1], &dgamma)?;
    }
    store_f64(ctx.req[2], &grads[2], &sum_dy)?;
    // the moving statistics get no gradient
    for (g, r) in grads.iter().zip(ctx.req).skip(3) {
        if *r == Req::Write {
            store_f64(Req::Write, g, &vec![0.0; c])?;
        }
    }
    if batch {
        let k = p.momentum;
        for (stat, batch_value) in [(moving_mean, &mean), (moving_var, &var)] {
            let moved: Vec<f64> =
                to_f64(stat)?.iter().zip(batch_value).map(|(s, b)| s * k + b * (1.0 - k)).collect();
            store_f64(Req::Write, stat, &moved)?;
        }
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let dtype = args.inputs[0]
        .as_ref()
        .map(|x| x.dtype())
        .ok_or_else(|| Error::Autograd("BatchNorm: the backward kernel lacks the data".into()))?;
    oxnet_core::with_float_dtype!(dtype, T => backward_typed::<T>(ctx, args, grads))
}

/// Which of MXNet's batch normalizations an operator is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `BatchNorm`: any channel axis, inverse std as third output.
    Standard,
    /// `BatchNorm_v1`: axis 1, variance as third output.
    V1,
    /// `_contrib_SyncBatchNorm` on one process: `BatchNorm_v1` with `ndev`
    /// and `key` attributes.
    Sync,
}

fn def(name: &'static str, variant: Variant, doc: &str) -> OpDef {
    let mut op = OpDef::new(name)
        .doc(doc)
        // MXNet's default is the float 1e-3 (0.0010000000474974513), which
        // float64 data sees
        .attr(AttrSpec::optional("eps", AttrKind::Float, f64::from(1e-3f32), "Added to the variance."))
        .attr(AttrSpec::optional("momentum", AttrKind::Float, 0.9, "Decay of the moving statistics."))
        .attr(AttrSpec::optional("fix_gamma", AttrKind::Bool, true, "Take gamma as 1 (zero gradient)."))
        .attr(AttrSpec::optional(
            "use_global_stats",
            AttrKind::Bool,
            false,
            "Normalise with the moving statistics in train mode too.",
        ))
        .attr(AttrSpec::optional(
            "output_mean_var",
            AttrKind::Bool,
            false,
            "Also output the mean and the inverse standard deviation (variance for the v1 and sync forms).",
        ));
    op = match variant {
        Variant::Standard => op
            .attr(AttrSpec::optional("axis", AttrKind::Int, 1i64, "The channel axis."))
            .attr(AttrSpec::optional(
                "cudnn_off",
                AttrKind::Bool,
                false,
                "Accepted for compatibility; ignored.",
            ))
            .attr(AttrSpec::optional(
                "min_calib_range",
                AttrKind::Str,
                "None",
                "Quantization calibration; accepted for compatibility, ignored.",
            ))
            .attr(AttrSpec::optional(
                "max_calib_range",
                AttrKind::Str,
                "None",
                "Quantization calibration; accepted for compatibility, ignored.",
            )),
        Variant::V1 => op,
        Variant::Sync => op
            .attr(AttrSpec::optional("ndev", AttrKind::Int, 1i64, "Number of devices synchronised (1 here)."))
            .attr(AttrSpec::required("key", AttrKind::Str, "Identifies the layer across devices.")),
    };
    op.arguments(&["data", "gamma", "beta"])
        .aux_states(&["moving_mean", "moving_var"])
        .outputs_fn(|attrs| {
            Ok(if attrs.bool("output_mean_var")? {
                vec!["output".into(), "mean".into(), "var".into()]
            } else {
                vec!["output".into()]
            })
        })
        .arity_fn(|attrs| Ok([3, 2, if attrs.bool("output_mean_var")? { 3 } else { 1 }]))
        .mutate_inputs(|_| vec![3, 4])
        // the moving statistics start at 0 and 1, whatever the global initializer
        .input_var_attrs(|_, input| match input {
            "moving_mean" => vec![("__init__".into(), r#"["zero", {}]"#.into())],
            "moving_var" => vec![("__init__".into(), r#"["one", {}]"#.into())],
            _ => Vec::new(),
        })
        .prepare(move |attrs| {
            if variant == Variant::Sync && attrs.int("ndev")? != 1 {
                return Err(Error::attr("ndev", "SyncBatchNorm: only one device (ndev=1) is supported yet"));
            }
            Ok(std::sync::Arc::new(parse_bn_params(name, attrs, variant != Variant::Standard)?))
        })
        .infer_shape(infer_shape)
        .infer_shape_partial(infer_shape)
        .infer_type(infer_type)
        .forward(forward)
        .backward(
            |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1, 3, 4], outputs: vec![] },
            backward,
        )
}

pub(super) fn register() {
    registry::register(def(
        "BatchNorm",
        Variant::Standard,
        "Batch normalization: out = gamma · (data - mean) / sqrt(var + eps) + beta along \
         `axis` (the channel axis, default 1). In train mode (unless use_global_stats) the \
         statistics are the batch's and the backward pass updates the auxiliary states \
         moving_mean and moving_var as moving = moving·momentum + batch·(1 - momentum) \
         (biased variance), as MXNet's CPU operator does; otherwise the moving statistics \
         are used. fix_gamma takes gamma as 1. With output_mean_var the mean and the \
         inverse standard deviation used are also returned.",
    ));
    registry::register(def(
        "BatchNorm_v1",
        Variant::V1,
        "MXNet's older batch normalization: BatchNorm over axis 1 whose output_mean_var \
         outputs are the mean and the variance.",
    ));
    registry::register(def(
        "_contrib_SyncBatchNorm",
        Variant::Sync,
        "Batch normalization synchronised across devices; on one device (ndev=1) the same \
         as BatchNorm over axis 1, with the mean and the variance as output_mean_var outputs.",
    ));
}
