//! `MakeLoss` and `make_loss`: the identity, whose gradient is a constant
//! (the head gradient is ignored) — a user-built loss becomes a network head.

use super::{needed, store_f64};
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, NDArray, OpContext, OpDef, Result,
};

const OP: &str = "MakeLoss";

/// The gradient `MakeLoss` gives every element of `data`.
fn gradient_value(ctx: &OpContext, data: Option<&NDArray>, grad: &NDArray) -> Result<f64> {
    let scale = ctx.attrs.float("grad_scale")?;
    Ok(match ctx.attrs.str("normalization")? {
        "batch" => {
            // MXNet divides by the first extent of the array viewed as 2-d
            let rows = grad.shape().first().copied().unwrap_or(1);
            scale / rows.max(1) as f64
        }
        "valid" => {
            let data = needed(OP, "data", data)?;
            let thresh = ctx.attrs.float("valid_thresh")?;
            let valid = data.to_vec::<f64>()?.iter().filter(|&&v| v > thresh).count();
            scale / valid.max(1) as f64
        }
        _ => scale,
    })
}

fn backward(ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]) -> Result<()> {
    let g = &in_grads[0];
    let v = gradient_value(ctx, args.inputs[0].as_ref(), g)?;
    store_f64(OP, ctx.req[0], g, &vec![v; g.size()])
}

fn identity(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    store(ctx.req[0], &outputs[0], &inputs[0])
}

fn float_only(
    op: &'static str,
) -> impl Fn(&oxnet_core::Attrs, &mut [Option<oxnet_core::DType>], &mut [Option<oxnet_core::DType>]) -> Result<()>
{
    move |attrs, ins, outs| {
        if let Some(dt) = ins[0].or(outs[0]) {
            if !dt.is_float() {
                return Err(Error::DType(format!("{op}: data must be a floating-point array, got {dt}")));
            }
        }
        oxnet_core::op::same_dtype(attrs, ins, outs)
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Makes `data` (a loss built from other operators) a network head: the forward \
                 pass is the identity; the backward pass ignores the head gradient and gives \
                 `data` the gradient `grad_scale`, divided by the batch size (the first axis) \
                 under normalization='batch', or by the number of elements greater than \
                 `valid_thresh` (at least 1) under normalization='valid'.",
            )
            .attr(AttrSpec::optional(
                "grad_scale",
                AttrKind::Float,
                1.0,
                "Gradient scale as a supplement to unary and binary operators.",
            ))
            .attr(AttrSpec::optional(
                "valid_thresh",
                AttrKind::Float,
                0.0,
                "Elements not greater than this are not counted under normalization='valid'.",
            ))
            .attr(AttrSpec::optional(
                "normalization",
                AttrKind::Choice(vec!["null", "batch", "valid"]),
                "null",
                "Divide the gradient by nothing, the batch size, or the number of valid elements.",
            ))
            .infer_type(float_only(OP))
            .forward(identity)
            .backward(
                |attrs| BackwardDeps {
                    inputs: if attrs.str("normalization").is_ok_and(|n| n == "valid") {
                        vec![0]
                    } else {
                        vec![]
                    },
                    ..Default::default()
                },
                backward,
            ),
    );
    registry::register(
        OpDef::new("make_loss")
            .doc(
                "Makes `data` (a loss built from other operators) a network head: the forward \
                 pass is the identity; the gradient of `data` is ones, whatever the head \
                 gradient.",
            )
            .outputs(&["loss"])
            .forward(identity)
            .grad_rule(|g| {
                if !g.needs_grad[0] {
                    return Ok(vec![None]);
                }
                Ok(vec![Some(call("ones_like", &[&g.inputs[0]], &[])?)])
            }),
    );
}
