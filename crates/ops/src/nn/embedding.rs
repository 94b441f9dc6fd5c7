//! `Embedding`: looks up rows of a `(input_dim, output_dim)` weight matrix
//! at integer indices, as MXNet 1.x's operator does.
//!
//! * `data` holds indices of any numeric dtype and any shape; fractional
//!   values are truncated toward zero and indices outside `[0, input_dim)`
//!   are clipped into it (MXNet clips, it does not raise).
//! * The output has shape `data.shape + (output_dim,)` and the weight's dtype.
//! * Shape inference fills the weight's shape `(input_dim, output_dim)` from
//!   the attributes (so a Gluon parameter of unknown shape learns it), and
//!   the data's shape from the output's. Dtype inference gives the weight
//!   and output the weight's (or output's) dtype when known, else `dtype`.
//! * The gradient with respect to the weight adds the output gradient's rows
//!   into the rows looked up (repeated indices add up; clipped indices count
//!   for the row they were clipped to); the indices get none. It goes through
//!   `_backward_take`, whose own gradient is `take`, so it differentiates
//!   again. `sparse_grad=True` is accepted for compatibility, but the
//!   gradient is always dense (oxnet has no row-sparse storage).

use crate::util::call;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Error, GradCtx, NDArray, OpContext, OpDef, Req,
    Result,
};
use std::sync::Arc;

/// `(input_dim, output_dim)`, both validated as positive.
fn dims(attrs: &Attrs) -> Result<(usize, usize)> {
    let get = |name: &str| -> Result<usize> {
        let v = attrs.int(name)?;
        usize::try_from(v)
            .ok()
            .filter(|d| *d > 0)
            .ok_or_else(|| Error::attr(name, format!("must be a positive integer, got {v}")))
    };
    Ok((get("input_dim")?, get("output_dim")?))
}

/// Fills `slot` with `want` or checks that it agrees.
/// (Partial shapes welcome: a dimension of 0 is unknown and learnt.)
fn fill(slot: &mut Option<Shape>, want: Shape, what: &str) -> Result<()> {
    let before = slot.clone();
    crate::partial_shape::merge(slot, &want, what).map_err(|_| {
        let have = before.unwrap_or_default();
        Error::Shape(format!(
            "Embedding: {what} has shape {:?}, expected {:?}",
            have.as_slice(),
            want.as_slice()
        ))
    })
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (input_dim, output_dim) = dims(attrs)?;
    fill(&mut ins[1], Shape::from_slice(&[input_dim, output_dim]), "weight (input_dim, output_dim)")?;
    if ins[0].is_none() {
        if let Some(out) = &outs[0] {
            if out.last() != Some(&output_dim) {
                return Err(Error::Shape(format!(
                    "Embedding: output has shape {:?}, whose last extent must be output_dim={output_dim}",
                    out.as_slice()
                )));
            }
            ins[0] = Some(Shape::from_slice(&out[..out.len() - 1]));
        }
    }
    if let Some(data) = &ins[0] {
        let mut out = data.clone();
        out.push(output_dim);
        fill(&mut outs[0], out, "output")?;
    }
    Ok(())
}

fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let dtype = match (ins[1], outs[0]) {
        (Some(w), Some(o)) if w != o => {
            return Err(Error::DType(format!("Embedding: weight has dtype {w} but output has {o}")))
        }
        (Some(w), _) => w,
        (None, Some(o)) => o,
        (None, None) => attrs.dtype("dtype")?.unwrap_or(DType::F32),
    };
    ins[1] = Some(dtype);
    outs[0] = Some(dtype);
    Ok(())
}

/// The row each index selects: truncated toward zero, then clipped into
/// `[0, rows)` (`rows > 0`); NaN selects row 0.
fn rows_of(data: &NDArray, rows: usize) -> Result<Vec<usize>> {
    let top = rows as i64 - 1;
    Ok(data.to_vec::<f64>()?.into_iter().map(|v| (v.trunc() as i64).clamp(0, top) as usize).collect())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (data, weight, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let (input_dim, output_dim) = dims(ctx.attrs)?;
    if weight.shape() != [input_dim, output_dim] {
        return Err(Error::Shape(format!(
            "Embedding: weight has shape {:?}, expected (input_dim, output_dim) = ({input_dim}, {output_dim})",
            weight.shape()
        )));
    }
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    let rows = rows_of(data, input_dim)?;
    oxnet_core::with_dtype!(weight.dtype(), T => {
        let w = weight.as_slice::<T>()?;
        let o = out.as_mut_slice::<T>()?;
        for (dst, &r) in o.chunks_exact_mut(output_dim).zip(&rows) {
            store_slice(ctx.req[0], dst, &w[r * output_dim..(r + 1) * output_dim]);
        }
    });
    Ok(())
}

fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[1] {
        return Ok(vec![None, None]);
    }
    let (data, weight) = (&g.inputs[0], &g.inputs[1]);
    let shape = AttrValue::Ints(weight.shape().iter().map(|&d| d as i64).collect());
    let dw = call(
        "_backward_take",
        &[&g.out_grads[0], data],
        &[("axis", AttrValue::Int(0)), ("mode", AttrValue::Str("clip".into())), ("shape", shape)],
    )?;
    Ok(vec![None, Some(dw)])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("Embedding")
            .doc(
                "Maps integer indices to rows of `weight` (input_dim, output_dim): the output has shape \
                 data.shape + (output_dim,). Indices of any numeric dtype are truncated toward zero and \
                 clipped into [0, input_dim). The weight's gradient adds up rows per index (repeated \
                 indices accumulate); the indices get no gradient. `sparse_grad` is accepted, but the \
                 gradient is always dense.",
            )
            .arguments(&["data", "weight"])
            .attr(AttrSpec::required("input_dim", AttrKind::Int, "Vocabulary size: rows of the weight."))
            .attr(AttrSpec::required("output_dim", AttrKind::Int, "Dimension of each embedding vector."))
            .attr(AttrSpec::optional(
                "dtype",
                AttrKind::DType,
                DType::F32,
                "Dtype of the weight and output when not known from the weight.",
            ))
            .attr(AttrSpec::optional(
                "sparse_grad",
                AttrKind::Bool,
                false,
                "Accepted for compatibility; the gradient is always dense.",
            ))
            .prepare(|attrs| {
                dims(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(infer_type)
            .forward(forward)
            .grad_rule(grad),
    );
}
