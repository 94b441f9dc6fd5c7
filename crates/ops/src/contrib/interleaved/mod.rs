//! MXNet 1.9.1's multi-head attention helpers on interleaved projections:
//!
//! - `_contrib_interleaved_matmul_selfatt_qk(queries_keys_values)`: per
//!   head, `(q / sqrt(head_dim)) · kᵀ`, shape `(batch·heads, seq, seq)`;
//! - `_contrib_interleaved_matmul_selfatt_valatt(queries_keys_values,
//!   attention)`: per head, `attention · v`, laid out as
//!   `(seq, batch, heads·head_dim)`;
//! - `_contrib_interleaved_matmul_encdec_qk(queries, keys_values)` and
//!   `_contrib_interleaved_matmul_encdec_valatt(keys_values, attention)`:
//!   the same with separate queries and interleaved keys and values.
//!
//! The layouts are in [`dims`]; the forward products read the heads in
//! place through strided GEMM views ([`kernel`]); the gradients are
//! operator-composed rules ([`grad`]), so higher orders work.

mod dims;
mod grad;
mod kernel;
#[cfg(test)]
mod tests;

use crate::partial_shape::merge;
use dims::{heads, Kind};
use kernel::Product;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, with_float_dtype, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpContext, OpDef, Req,
    Result,
};

fn forward(kind: Kind, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let shapes: Vec<&[usize]> = ins.iter().map(|x| x.shape()).collect();
    let d = kind.dims(heads(ctx.attrs)?, &shapes)?;
    let p = Product::of(kind, &d);
    let (a, b, out) = (&ins[p.operands.0], &ins[p.operands.1], &outs[0]);
    with_float_dtype!(out.dtype(), T => p.run::<T>(
        &d,
        a.as_slice::<T>()?,
        b.as_slice::<T>()?,
        out.as_mut_slice::<T>()?,
        req == Req::Add,
    ))
}

fn infer_shape(
    kind: Kind,
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let known: Option<Vec<&[usize]>> = ins.iter().map(|s| s.as_ref().map(|s| s.as_slice())).collect();
    let Some(shapes) = known else {
        return Ok(());
    };
    let d = kind.dims(heads(attrs)?, &shapes)?;
    merge(&mut outs[0], &kind.out_shape(&d), "the output")
}

/// One dtype for every input and the output, a floating-point one.
fn infer_type(kind: Kind, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let names = kind.arguments().iter().copied().chain(["output"]);
    let slots: Vec<(&str, Option<DType>)> = names.zip(ins.iter().chain(outs.iter()).copied()).collect();
    let Some(&(first, dt)) = slots.iter().find(|(_, d)| d.is_some()) else {
        return Err(Error::DType("no input dtype is known".into()));
    };
    let dt = dt.expect("found a known dtype");
    if !dt.is_float() {
        return Err(Error::DType(format!(
            "`{first}` has dtype {dt}; the attention products take floating-point arrays"
        )));
    }
    if let Some((name, other)) = slots.iter().find(|(_, d)| d.is_some_and(|d| d != dt)) {
        return Err(Error::DType(format!(
            "`{name}` has dtype {}, `{first}` has {dt}: they must be equal",
            other.expect("known")
        )));
    }
    for slot in ins.iter_mut().chain(outs.iter_mut()) {
        *slot = Some(dt);
    }
    Ok(())
}

fn doc(kind: Kind) -> &'static str {
    match kind {
        Kind::SelfAttQk => {
            "Attention scores of multi-head self-attention from interleaved projections \
             `queries_keys_values` of shape (seq_len, batch, 3·heads·head_dim), each head's \
             query, key and value chunks side by side: per head, (q / sqrt(head_dim)) · kᵀ, \
             output (batch·heads, seq_len, seq_len)."
        }
        Kind::SelfAttValAtt => {
            "Attended values of multi-head self-attention: per head, `attention` \
             (batch·heads, seq_len, seq_len) times the value chunks of the interleaved \
             `queries_keys_values` (seq_len, batch, 3·heads·head_dim); output \
             (seq_len, batch, heads·head_dim)."
        }
        Kind::EncDecQk => {
            "Attention scores of multi-head encoder-decoder attention: `queries` \
             (q_len, batch, heads·head_dim) against the key chunks of the interleaved \
             `keys_values` (kv_len, batch, 2·heads·head_dim), each head's key then value: per \
             head, (q / sqrt(head_dim)) · kᵀ, output (batch·heads, q_len, kv_len)."
        }
        Kind::EncDecValAtt => {
            "Attended values of multi-head encoder-decoder attention: per head, `attention` \
             (batch·heads, q_len, kv_len) times the value chunks of the interleaved \
             `keys_values` (kv_len, batch, 2·heads·head_dim); output \
             (q_len, batch, heads·head_dim)."
        }
    }
}

fn def(kind: Kind) -> OpDef {
    OpDef::new(kind.name())
        .doc(doc(kind))
        .arguments(kind.arguments())
        .attr(AttrSpec::required("heads", AttrKind::Int, "Set number of heads"))
        .infer_shape(move |attrs, ins, outs| infer_shape(kind, attrs, ins, outs))
        .infer_type(move |_, ins, outs| infer_type(kind, ins, outs))
        .forward(move |ctx, ins, outs| forward(kind, ctx, ins, outs))
        .grad_rule(move |g| grad::rule(kind, g))
}

/// Registers the four interleaved attention products.
pub(crate) fn register() {
    for kind in [Kind::SelfAttQk, Kind::SelfAttValAtt, Kind::EncDecQk, Kind::EncDecValAtt] {
        registry::register(def(kind));
    }
}
