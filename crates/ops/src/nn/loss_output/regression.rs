//! `LinearRegressionOutput`, `LogisticRegressionOutput` and
//! `MAERegressionOutput`: identity (sigmoid for logistic) forward; the
//! backward pass ignores the head gradient and gives data
//! `grad_scale / outputs_per_example * f(output, label)`, with `f` the
//! difference (linear, logistic) or its sign (MAE).

use super::{needed, store_f64, uniform_float_dtype, zero_label_grad};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, NDArray, OpContext, OpDef, Result,
};

/// One of the three regression heads.
#[derive(Clone, Copy)]
enum Kind {
    Linear,
    Logistic,
    Mae,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Linear => "LinearRegressionOutput",
            Kind::Logistic => "LogisticRegressionOutput",
            Kind::Mae => "MAERegressionOutput",
        }
    }

    /// The per-element gradient before scaling.
    fn grad(self, out: f64, label: f64) -> f64 {
        match self {
            Kind::Linear | Kind::Logistic => out - label,
            // MXNet's sign: equal values count as negative
            Kind::Mae => {
                if out - label > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            }
        }
    }
}

/// MXNet's rule: an unknown label takes data's shape ((batch,) for data of
/// shape (batch, 1)); a known one needs data's batch size and size.
fn infer_shape(op: &str, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(d) = ins[0].clone() else { return Ok(()) };
    match &ins[1] {
        None => {
            ins[1] = Some(if d.len() == 2 && d[1] == 1 { Shape::from_slice(&d[..1]) } else { d.clone() });
        }
        Some(l) => {
            let size = |s: &[usize]| s.iter().product::<usize>();
            if l.first() != d.first() || size(l) != size(&d) {
                return Err(Error::Shape(format!(
                    "{op}: label has shape {:?}, data of shape {:?} needs the same batch size and \
                     number of elements",
                    l.as_slice(),
                    d.as_slice()
                )));
            }
        }
    }
    outs[0] = Some(d);
    Ok(())
}

fn backward(kind: Kind, ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]) -> Result<()> {
    let op = kind.name();
    zero_label_grad(op, ctx.req[1], &in_grads[1])?;
    if ctx.req[0] == oxnet_core::Req::Null {
        return Ok(());
    }
    let out = needed(op, "output", args.outputs[0].as_ref())?.to_vec::<f64>()?;
    let label_arr = needed(op, "label", args.inputs[1].as_ref())?;
    let label = label_arr.to_vec::<f64>()?;
    if label.len() != out.len() {
        return Err(Error::Shape(format!(
            "{op}: label has {} elements, the output {}",
            label.len(),
            out.len()
        )));
    }
    // MXNet divides by the number of outputs per example
    let batch = label_arr.shape().first().copied().unwrap_or(1).max(1);
    let per_example = (label.len() / batch).max(1);
    let scale = ctx.attrs.float("grad_scale")? / per_example as f64;
    let grad: Vec<f64> = out.iter().zip(&label).map(|(&o, &l)| kind.grad(o, l) * scale).collect();
    store_f64(op, ctx.req[0], &in_grads[0], &grad)
}

fn def(kind: Kind, doc: &str) -> OpDef {
    let op = kind.name();
    let def = OpDef::new(op)
        .doc(doc)
        .arguments(&["data", "label"])
        .attr(AttrSpec::optional("grad_scale", AttrKind::Float, 1.0, "Scale the gradient by a float factor."))
        .infer_shape(move |_: &Attrs, ins, outs| infer_shape(op, ins, outs))
        .infer_type(uniform_float_dtype(op))
        .backward(
            |_| BackwardDeps { inputs: vec![1], outputs: vec![0], ..Default::default() },
            move |ctx, args, grads| backward(kind, ctx, args, grads),
        );
    match kind {
        Kind::Logistic => def.forward(|ctx, inputs, outputs| {
            super::super::map_float(
                &inputs[0],
                &outputs[0],
                ctx.req[0],
                |v| 1.0 / (1.0 + (-v).exp()),
                |v| 1.0 / (1.0 + (-v).exp()),
            )
        }),
        _ => def.forward(|ctx, inputs, outputs| store(ctx.req[0], &outputs[0], &inputs[0])),
    }
}

pub(super) fn register() {
    registry::register(def(
        Kind::Linear,
        "Least-squares regression head: the forward pass is the identity; the backward pass \
         ignores the head gradient and gives data (output - label) * grad_scale / m, m the \
         number of outputs per example. The label takes no gradient.",
    ));
    registry::register(def(
        Kind::Logistic,
        "Logistic regression head: the forward pass is the sigmoid; the backward pass ignores \
         the head gradient and gives data (output - label) * grad_scale / m, m the number of \
         outputs per example. The label takes no gradient.",
    ));
    registry::register(def(
        Kind::Mae,
        "Mean-absolute-error regression head: the forward pass is the identity; the backward \
         pass ignores the head gradient and gives data sign(output - label) * grad_scale / m \
         (equal values count as -1, as in MXNet), m the number of outputs per example. The \
         label takes no gradient.",
    ));
}
