//! How optimizers reach the engine: every update is a call of a core
//! operator through the dispatcher — a fused update operator writing into
//! the weight (`sgd_mom_update` with `out = weight`), or, for optimizers
//! MXNet has no fused operator for, element-wise operators composed here.

use super::{OptimizerBase, State};
use oxnet_core::{autograd, invoke1, invoke_into, registry, AttrValue, DType, Error, NDArray, Req, Result};

/// Runs update operator `op` on `inputs`, writing the new weights into
/// `outs` (the weights themselves) in place.
pub(crate) fn fused(
    op: &str,
    inputs: &[&NDArray],
    attrs: &[(&str, AttrValue)],
    outs: &[NDArray],
) -> Result<()> {
    let _no_tape = autograd::pause();
    let handle = registry::get(op)?;
    let parsed = handle.parse_attrs(attrs)?;
    let reqs = vec![Req::Inplace; outs.len()];
    invoke_into(&handle, inputs, &parsed, outs, &reqs)
}

/// Runs update operator `op` on `weight`, `grad` and then `rest` (the
/// state's arrays, and whatever else the operator takes), writing the new
/// weight into `weight`.
pub(crate) fn fused_step(
    op: &str,
    weight: &NDArray,
    grad: &NDArray,
    rest: &[NDArray],
    attrs: &[(&str, AttrValue)],
) -> Result<()> {
    let mut inputs = vec![weight, grad];
    inputs.extend(rest);
    fused(op, &inputs, attrs, std::slice::from_ref(weight))
}

/// The attributes every update operator takes about the gradient:
/// `rescale_grad` and `clip_gradient`.
pub(crate) fn grad_attrs(base: &OptimizerBase) -> Vec<(&'static str, AttrValue)> {
    vec![
        ("rescale_grad", AttrValue::Float(base.rescale_grad)),
        ("clip_gradient", AttrValue::Float(base.clip_attr())),
    ]
}

/// `lr` and `wd`, then [`grad_attrs`].
pub(crate) fn step_attrs(base: &OptimizerBase, lr: f64, wd: f64) -> Vec<(&'static str, AttrValue)> {
    let mut attrs = vec![("lr", AttrValue::Float(lr)), ("wd", AttrValue::Float(wd))];
    attrs.extend(grad_attrs(base));
    attrs
}

/// Runs operator `op` and returns its first output.
pub(crate) fn call(op: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<NDArray> {
    let _no_tape = autograd::pause();
    invoke1(op, inputs, attrs)
}

/// `a * s`.
pub(crate) fn mul_s(a: &NDArray, s: f64) -> Result<NDArray> {
    call("_mul_scalar", &[a], &[("scalar", AttrValue::Float(s))])
}

/// `a / s`.
pub(crate) fn div_s(a: &NDArray, s: f64) -> Result<NDArray> {
    call("_div_scalar", &[a], &[("scalar", AttrValue::Float(s))])
}

/// `a + s`.
pub(crate) fn add_s(a: &NDArray, s: f64) -> Result<NDArray> {
    call("_plus_scalar", &[a], &[("scalar", AttrValue::Float(s))])
}

/// `a + b` (same shapes).
pub(crate) fn add(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call("elemwise_add", &[a, b], &[])
}

/// `a - b` (same shapes).
pub(crate) fn sub(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call("elemwise_sub", &[a, b], &[])
}

/// `a * b` (same shapes).
pub(crate) fn mul(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call("elemwise_mul", &[a, b], &[])
}

/// `a / b` (same shapes).
pub(crate) fn div(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call("elemwise_div", &[a, b], &[])
}

/// `max(a, b)` element-wise.
pub(crate) fn maximum(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call("_maximum", &[a, b], &[])
}

/// A one-input element-wise operator (`sqrt`, `square`, `abs`).
pub(crate) fn unary(op: &str, a: &NDArray) -> Result<NDArray> {
    call(op, &[a], &[])
}

/// `a` limited to `[-c, c]`.
pub(crate) fn clip(a: &NDArray, c: f64) -> Result<NDArray> {
    call("clip", &[a], &[("a_min", AttrValue::Float(-c)), ("a_max", AttrValue::Float(c))])
}

/// `beta * a + (1 - beta) * b`.
pub(crate) fn blend(a: &NDArray, b: &NDArray, beta: f64) -> Result<NDArray> {
    add(&mul_s(a, beta)?, &mul_s(b, 1.0 - beta)?)
}

/// `g` clipped to the base's `[-clip_gradient, clip_gradient]`, if any.
fn clipped(base: &OptimizerBase, g: NDArray) -> Result<NDArray> {
    match base.clip_attr() {
        c if c > 0.0 => clip(&g, c),
        _ => Ok(g),
    }
}

/// The gradient as the optimizer sees it: `grad * rescale_grad`, clipped.
pub(crate) fn rescaled_grad(base: &OptimizerBase, grad: &NDArray) -> Result<NDArray> {
    clipped(base, mul_s(grad, base.rescale_grad)?)
}

/// The gradient with weight decay: `grad * rescale_grad + wd * weight`, clipped.
pub(crate) fn decayed_grad(
    base: &OptimizerBase,
    grad: &NDArray,
    weight: &NDArray,
    wd: f64,
) -> Result<NDArray> {
    clipped(base, add(&mul_s(grad, base.rescale_grad)?, &mul_s(weight, wd)?)?)
}

/// The L2 norm of `a`, computed in float32 (as MXNet's optimizers take it).
pub(crate) fn norm(a: &NDArray) -> Result<f64> {
    let a = if a.dtype() == DType::F32 { a.clone() } else { a.astype(DType::F32)? };
    call("norm", &[&a], &[])?.to_scalar()
}

/// Overwrites state or weight `dst` with `src`.
pub(crate) fn assign(dst: &NDArray, src: &NDArray) -> Result<()> {
    dst.assign_from(src)
}

/// A zero array shaped like `weight`, of `dtype`.
pub(crate) fn zeros(weight: &NDArray, dtype: DType) -> Result<NDArray> {
    NDArray::zeros(weight.shape(), dtype, weight.device())
}

/// A state of `n` zero arrays shaped like `weight`, of its dtype.
pub(crate) fn zeros_state(weight: &NDArray, n: usize) -> Result<State> {
    (0..n).map(|_| zeros(weight, weight.dtype())).collect()
}

/// Formats floats as the tuple text the multi-tensor operators take.
pub(crate) fn tuple(values: &[f64]) -> AttrValue {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    AttrValue::Str(format!("({})", parts.join(", ")))
}

/// Checks that a state holds `n` arrays.
pub(crate) fn expect_state(opt: &str, index: usize, state: &[NDArray], n: usize) -> Result<()> {
    if state.len() != n {
        return Err(Error::Invalid(format!(
            "optimizer `{opt}`: the state of parameter {index} holds {} arrays, this configuration needs {n} \
             (states saved with other settings?)",
            state.len()
        )));
    }
    Ok(())
}
