//! `_contrib_count_sketch`: projects each row of `data` (..., in_dim) onto
//! `out_dim` buckets, `out[..., h[j]] += s[j] · data[..., j]`, with the
//! bucket `h` and the sign `s` of every input feature given as (1, in_dim)
//! arrays.
//!
//! The gradient towards `data` is `s[j] · g[..., h[j]]`, written as
//! `take` along the last axis times `s`, so higher orders work; `h` and
//! `s` get none (zero), as in MXNet, whose backward pass writes only the
//! data's gradient.

use crate::util::call;
use oxnet_core::shape::Shape;
use oxnet_core::{
    parallel, registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Element, Error, GradCtx, NDArray,
    OpContext, OpDef, Req, Result,
};

const ARGS: [&str; 3] = ["data", "h", "s"];

/// Attribute `name` as a positive integer.
fn positive(attrs: &Attrs, name: &str) -> Result<usize> {
    let v = attrs.int(name)?;
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| Error::attr(name, format!("must be a positive integer, got {v}")))
}

/// `out_dim`, after checking `processing_batch_size` (MXNet's GPU batching
/// knob, otherwise unused).
fn out_dim(attrs: &Attrs) -> Result<usize> {
    positive(attrs, "processing_batch_size")?;
    positive(attrs, "out_dim")
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let out_dim = out_dim(attrs)?;
    let Some(x) = ins[0].clone() else { return Ok(()) };
    let Some((&in_dim, rest)) = x.split_last() else {
        return Err(Error::Shape("`data` must have at least one axis, got a 0-d array".into()));
    };
    let hash = Shape::from_slice(&[1, in_dim]);
    for (slot, name) in ins[1..].iter_mut().zip(&ARGS[1..]) {
        match slot {
            Some(have) if *have != hash => {
                return Err(Error::Shape(format!(
                    "`{name}` must have shape [1, {in_dim}] (one entry per feature of `data` {:?}), got {:?}",
                    x.as_slice(),
                    have.as_slice()
                )))
            }
            Some(_) => {}
            None => *slot = Some(hash.clone()),
        }
    }
    let out: Shape = rest.iter().copied().chain([out_dim]).collect();
    crate::shape_ops::set_shape(&mut outs[0], out, "the output")
}

/// One dtype, float32 or float64, for the three inputs and the output.
fn infer_type(ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let named = || ARGS.iter().copied().chain(["output"]).zip(ins.iter().chain(outs.iter()).copied());
    let Some((first, dt)) = named().find_map(|(n, d)| d.map(|d| (n, d))) else { return Ok(()) };
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(Error::DType(format!(
            "`{first}` has dtype {dt}; count_sketch takes float32 or float64 (MXNet has no float16 kernel \
             either), the same for `data`, `h` and `s`"
        )));
    }
    if let Some((name, other)) = named().find_map(|(n, d)| d.filter(|&d| d != dt).map(|d| (n, d))) {
        return Err(Error::DType(format!(
            "`{name}` has dtype {other}, `{first}` has {dt}: they must be equal"
        )));
    }
    for slot in ins.iter_mut().chain(outs.iter_mut()) {
        *slot = Some(dt);
    }
    Ok(())
}

/// The bucket of every feature: `h` must hold whole numbers in `[0, out_dim)`.
fn buckets(h: &NDArray, out_dim: usize) -> Result<Vec<usize>> {
    h.to_vec::<f64>()?
        .into_iter()
        .enumerate()
        .map(|(j, v)| {
            if v.fract() == 0.0 && v >= 0.0 && v < out_dim as f64 {
                Ok(v as usize)
            } else {
                Err(Error::Invalid(format!(
                    "`h` must hold whole numbers in [0, out_dim) = [0, {out_dim}), got {v} at position {j}"
                )))
            }
        })
        .collect()
}

/// Rows per parallel task (at least about 16k multiply-adds each).
fn rows_per_task(rows: usize, in_dim: usize) -> usize {
    let by_work = (1usize << 14).div_ceil(in_dim.max(1));
    by_work.max(rows.div_ceil(parallel::num_threads() * 4)).max(1)
}

/// Sketches every row of `x` (rows of `h.len()` features) into `out` (rows
/// of `out_dim` buckets) under `req` (`write` or `add`), summing in f64.
fn sketch<T: Element>(x: &[T], h: &[usize], s: &[T], out_dim: usize, out: &mut [T], req: Req) {
    let in_dim = h.len();
    if out.is_empty() {
        return;
    }
    let per_task = rows_per_task(out.len() / out_dim, in_dim);
    let signs: Vec<f64> = s.iter().map(|v| v.to_f64()).collect();
    parallel::for_each_chunk_mut(out, per_task * out_dim, |task, block| {
        let mut sums = vec![0.0f64; out_dim];
        for (r, dst) in block.chunks_exact_mut(out_dim).enumerate() {
            let row = task * per_task + r;
            sums.fill(0.0);
            for ((&b, &sign), v) in h.iter().zip(&signs).zip(&x[row * in_dim..(row + 1) * in_dim]) {
                sums[b] += sign * v.to_f64();
            }
            for (slot, &v) in dst.iter_mut().zip(&sums) {
                let v = T::from_f64(v);
                *slot = if req == Req::Add { slot.add(v) } else { v };
            }
        }
    });
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let out_dim = out_dim(ctx.attrs)?;
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let (x, h, s, y) = (&ins[0], &ins[1], &ins[2], &outs[0]);
    let h = buckets(h, out_dim)?;
    if h.len() != x.shape().last().copied().unwrap_or(0) {
        return Err(Error::Shape(format!("`h` has {} entries for data of shape {:?}", h.len(), x.shape())));
    }
    match x.dtype() {
        DType::F64 => sketch::<f64>(x.as_slice()?, &h, s.as_slice()?, out_dim, y.as_mut_slice()?, req),
        DType::F32 => sketch::<f32>(x.as_slice()?, &h, s.as_slice()?, out_dim, y.as_mut_slice()?, req),
        other => return Err(Error::DType(format!("count_sketch takes float32 or float64, got {other}"))),
    }
    Ok(())
}

/// `d data[..., j] = s[j] · g[..., h[j]]`; nothing for `h` and `s`.
fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None, None, None]);
    }
    let (h, s) = (&g.inputs[1], &g.inputs[2]);
    let flat = |a: &NDArray| call("reshape", &[a], &[("shape", AttrValue::Ints(vec![-1]))]);
    let taken = call(
        "take",
        &[&g.out_grads[0], &flat(h)?],
        &[("axis", AttrValue::Int(-1)), ("mode", "clip".into())],
    )?;
    let dx = call("broadcast_mul", &[&taken, &flat(s)?], &[])?;
    Ok(vec![Some(dx), None, None])
}

/// Registers `_contrib_count_sketch`.
pub(super) fn register() {
    registry::register(
        OpDef::new("_contrib_count_sketch")
            .doc(
                "Count sketch of every row along the last axis: `data` (..., in_dim), of any rank >= 1 \
                 (MXNet took 2-d and 4-d data), with the bucket indices `h` and signs `s` of shape \
                 (1, in_dim), gives (..., out_dim) with out[..., h[j]] += s[j] * data[..., j]. `h` must \
                 hold whole numbers in [0, out_dim). float32 or float64, one dtype for all three inputs. \
                 The gradient towards `data` is s[j] * grad[..., h[j]]; `h` and `s` get none.",
            )
            .arguments(&ARGS)
            .attr(AttrSpec::required("out_dim", AttrKind::Int, "The output dimension."))
            .attr(AttrSpec::optional(
                "processing_batch_size",
                AttrKind::Int,
                32i64,
                "How many sketch vectors to process at one time (MXNet's GPU batching; checked to be \
                 positive, no other effect here).",
            ))
            .infer_shape(infer_shape)
            .infer_type(|_, ins, outs| infer_type(ins, outs))
            .forward(forward)
            .grad_rule(grad),
    );
}

#[cfg(test)]
#[path = "count_sketch_tests.rs"]
mod tests;
