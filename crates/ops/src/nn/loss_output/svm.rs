//! `SVMOutput`: identity forward; the backward pass ignores the head
//! gradient and gives data the gradient of the L2- (or, with `use_linear`,
//! L1-) SVM hinge loss against class-id labels.

use super::{
    class_of, label_drops_last_axis, label_drops_last_axis_partial, needed, store_f64, uniform_float_dtype,
    zero_label_grad,
};
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, NDArray, OpContext, OpDef, Result,
};

const OP: &str = "SVMOutput";

fn backward(ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]) -> Result<()> {
    zero_label_grad(OP, ctx.req[1], &in_grads[1])?;
    if ctx.req[0] == oxnet_core::Req::Null {
        return Ok(());
    }
    let margin = ctx.attrs.float("margin")?;
    let reg = ctx.attrs.float("regularization_coefficient")?;
    let linear = ctx.attrs.bool("use_linear")?;
    let out_arr = needed(OP, "output", args.outputs[0].as_ref())?;
    let out = out_arr.to_vec::<f64>()?;
    let labels = needed(OP, "label", args.inputs[1].as_ref())?.to_vec::<f64>()?;
    // the output viewed as (rows, classes)
    let classes = out_arr.shape().last().copied().unwrap_or(1);
    let rows = out.len().checked_div(classes).unwrap_or(0);
    if labels.len() < rows {
        return Err(Error::Shape(format!(
            "{OP}: label has {} elements, data of shape {:?} needs {rows}",
            labels.len(),
            out_arr.shape()
        )));
    }
    let mut grad = vec![0.0; out.len()];
    for r in 0..rows {
        let k = class_of(labels[r]);
        for c in 0..classes {
            let o = out[r * classes + c];
            grad[r * classes + c] = match (c as i64 == k, linear) {
                (true, true) => -f64::from(u8::from(margin > o)) * reg,
                (false, true) => f64::from(u8::from(margin > -o)) * reg,
                (true, false) => -(if margin > o { 2.0 * (margin - o) } else { 0.0 }) * reg,
                (false, false) => -(if margin > -o { -2.0 * (margin + o) } else { 0.0 }) * reg,
            };
        }
    }
    store_f64(OP, ctx.req[0], &in_grads[0], &grad)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Support-vector-machine head: the forward pass is the identity; the backward \
                 pass ignores the head gradient and gives data the gradient of the squared \
                 hinge loss (L2-SVM; the hinge loss, L1-SVM, with use_linear) of each row \
                 against its class id in `label` (shape data.shape[:-1]), scaled by \
                 regularization_coefficient. The label takes no gradient.",
            )
            .arguments(&["data", "label"])
            .attr(AttrSpec::optional(
                "margin",
                AttrKind::Float,
                1.0,
                "The loss function penalizes outputs that lie outside this margin.",
            ))
            .attr(AttrSpec::optional(
                "regularization_coefficient",
                AttrKind::Float,
                1.0,
                "Regularization parameter: balances coefficient size against error.",
            ))
            .attr(AttrSpec::optional(
                "use_linear",
                AttrKind::Bool,
                false,
                "Use the L1-SVM objective (the L2-SVM objective otherwise).",
            ))
            .infer_shape(|_, ins, outs| label_drops_last_axis(OP, false, ins, outs))
            .infer_shape_partial(|_, ins, outs| label_drops_last_axis_partial(OP, false, ins, outs))
            .infer_type(uniform_float_dtype(OP))
            .forward(|ctx, inputs, outputs| store(ctx.req[0], &outputs[0], &inputs[0]))
            .backward(|_| BackwardDeps { inputs: vec![1], outputs: vec![0], ..Default::default() }, backward),
    );
}
