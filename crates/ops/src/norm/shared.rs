//! What `LayerNorm`, `GroupNorm` and `InstanceNorm` share around the
//! [`lanes`](super::lanes) kernels: running them on a call's arrays under
//! its requests, the backward kernel's bookkeeping, and dtype inference
//! over `(data, gamma, beta)`.

use super::lanes::{self, Affine, Lanes, Normalize};
use crate::conv::geometry::fmt_tuple;
use oxnet_core::store::store_slice;
use oxnet_core::{BackwardArgs, DType, Error, FloatElement, NDArray, OpContext, Req, Result};

/// Stores `v` into `dst` under `req`, converted to `dst`'s dtype.
pub(crate) fn store_f64(req: Req, dst: &NDArray, v: &[f64]) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(dst.dtype(), P => {
        let vals: Vec<P> = v.iter().map(|&e| <P as oxnet_core::Element>::from_f64(e)).collect();
        store_slice(req, dst.as_mut_slice::<P>()?, &vals);
    });
    Ok(())
}

/// Runs `f` on `out`'s own buffer under `req = write`, else on a scratch
/// buffer that is then stored under `req` (nothing is stored for `null`).
pub(crate) fn write_with<T: FloatElement, R>(
    req: Req,
    out: &NDArray,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> Result<R> {
    if req == Req::Write {
        return Ok(f(out.as_mut_slice::<T>()?));
    }
    let mut tmp = vec![T::zero(); len];
    let r = f(&mut tmp);
    if req != Req::Null {
        store_slice(req, out.as_mut_slice::<T>()?, &tmp);
    }
    Ok(r)
}

/// How many values gamma and beta hold.
fn param_count(lanes: Lanes, affine: Affine) -> usize {
    match affine {
        Affine::PerPosition => lanes.n,
        Affine::PerBlock(period) => period,
    }
}

/// Gamma and beta as f64, checked to hold `want` values each.
fn affine_params(op: &str, gamma: &NDArray, beta: &NDArray, want: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    for (name, a) in [("gamma", gamma), ("beta", beta)] {
        if a.size() != want {
            return Err(Error::Shape(format!(
                "{op}: {name} has shape {}, expected ({want},)",
                fmt_tuple(a.shape())
            )));
        }
    }
    Ok((gamma.to_vec::<f64>()?, beta.to_vec::<f64>()?))
}

/// The forward kernel of a lane normalization: output 0 is the normalised
/// data; outputs 1 and 2 (when present) each lane's mean and standard
/// deviation.
pub(crate) fn forward<T: FloatElement>(
    op: &str,
    ctx: &OpContext,
    inputs: &[NDArray],
    outputs: &[NDArray],
    lanes: Lanes,
    affine: Affine,
    eps: f64,
) -> Result<()> {
    let (gamma, beta) = affine_params(op, &inputs[1], &inputs[2], param_count(lanes, affine))?;
    let p = Normalize { lanes, eps, gamma: &gamma, beta: &beta, affine };
    let x = inputs[0].as_slice::<T>()?;
    let (mean, std) = write_with::<T, _>(ctx.req[0], &outputs[0], x.len(), |y| lanes::forward(&p, x, y))?;
    if outputs.len() == 3 {
        store_f64(ctx.req[1], &outputs[1], &mean)?;
        store_f64(ctx.req[2], &outputs[2], &std)?;
    }
    Ok(())
}

/// The backward kernel of a lane normalization: the gradients of data,
/// gamma and beta from the head gradient of output 0 (the mean and std
/// outputs take none, as in MXNet).
pub(crate) fn backward<T: FloatElement>(
    op: &str,
    ctx: &OpContext,
    args: &BackwardArgs,
    grads: &[NDArray],
    lanes: Lanes,
    affine: Affine,
    eps: f64,
) -> Result<()> {
    let missing = || Error::Autograd(format!("{op}: the backward kernel lacks a saved array"));
    let data = args.inputs[0].as_ref().ok_or_else(missing)?;
    let gamma = args.inputs[1].as_ref().ok_or_else(missing)?;
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    // beta does not enter the gradients
    let (gamma, _) = affine_params(op, gamma, gamma, param_count(lanes, affine))?;
    let p = Normalize { lanes, eps, gamma: &gamma, beta: &[], affine };
    let x = data.as_slice::<T>()?;
    let dys = dy.as_slice::<T>()?;
    let (dgamma, dbeta) =
        write_with::<T, _>(ctx.req[0], &grads[0], x.len(), |dx| lanes::backward(&p, x, dys, dx))?;
    store_f64(ctx.req[1], &grads[1], &dgamma)?;
    store_f64(ctx.req[2], &grads[2], &dbeta)?;
    Ok(())
}

/// The data's dtype in a backward call.
pub(crate) fn backward_dtype(op: &str, args: &BackwardArgs) -> Result<DType> {
    args.inputs[0]
        .as_ref()
        .map(|x| x.dtype())
        .ok_or_else(|| Error::Autograd(format!("{op}: the backward kernel lacks the data")))
}

/// Dtype inference for `(data, gamma, beta)` of one float dtype among
/// `allowed`: every input and output takes it; a mismatch is an error
/// naming the input.
pub(crate) fn infer_type_same(
    op: &str,
    allowed: &[DType],
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let Some(dt) = ins.iter().chain(outs.iter()).flatten().copied().next() else {
        return Ok(());
    };
    if !allowed.contains(&dt) {
        let names: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
        return Err(Error::DType(format!("{op}: supports dtypes {}, got {dt}", names.join(", "))));
    }
    let names = ["data", "gamma", "beta"];
    for (i, slot) in ins.iter_mut().enumerate() {
        match slot {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!(
                    "{op}: {} has dtype {have}, but the other inputs have {dt}",
                    names.get(i).copied().unwrap_or("input")
                )))
            }
            _ => *slot = Some(dt),
        }
    }
    for slot in outs.iter_mut() {
        match slot {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!(
                    "{op}: an output has dtype {have}, but the inputs have {dt}"
                )))
            }
            _ => *slot = Some(dt),
        }
    }
    Ok(())
}
