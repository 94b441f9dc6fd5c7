//! `_contrib_div_sqrt_dim`, `_contrib_quadratic` and
//! `_contrib_gradientmultiplier`.

use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, GradCtx, NDArray, OpDef, Result};

fn scalar(name: &str, x: &NDArray, s: f64) -> Result<NDArray> {
    call(name, &[x], &[("scalar", AttrValue::Float(s))])
}

/// `1 / sqrt(d)` for the last extent `d` of `x`.
fn inv_sqrt_last(op: &str, x: &NDArray) -> Result<f64> {
    match x.shape().last() {
        Some(&d) if d > 0 => Ok(1.0 / (d as f64).sqrt()),
        _ => Err(Error::Shape(format!(
            "`{op}` needs a last axis of length 1 or more, got shape {:?}",
            x.shape()
        ))),
    }
}

fn coefficients(attrs: &Attrs) -> Result<(f64, f64, f64)> {
    Ok((attrs.float("a")?, attrs.float("b")?, attrs.float("c")?))
}

/// `x (a x + b) + c`.
fn quadratic(x: &NDArray, (a, b, c): (f64, f64, f64)) -> Result<NDArray> {
    let inner = scalar("_plus_scalar", &scalar("_mul_scalar", x, a)?, b)?;
    scalar("_plus_scalar", &call("elemwise_mul", &[x, &inner], &[])?, c)
}

fn one_input_grad(
    g: &GradCtx,
    f: impl Fn(&NDArray, &NDArray) -> Result<NDArray>,
) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    Ok(vec![Some(f(&g.out_grads[0], &g.inputs[0])?)])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_contrib_gradientmultiplier")
            .doc(
                "The identity forward; backward multiplies the gradient by `scalar` (a negative scalar \
                 makes a gradient reversal layer).",
            )
            .attr(AttrSpec::optional("scalar", AttrKind::Float, 1.0f64, "The gradient's multiplier."))
            .accepts_strided()
            .forward(|ctx, ins, outs| store(ctx.req[0], &outs[0], &ins[0]))
            .grad_rule(|g| {
                let s = g.attrs.float("scalar")?;
                one_input_grad(g, |dy, _| scalar("_mul_scalar", dy, s))
            }),
    );
    registry::register(
        OpDef::new("_contrib_div_sqrt_dim")
            .doc("Rescales by the square root of the last extent: data / sqrt(data.shape[-1]).")
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                let y = scalar("_mul_scalar", x, inv_sqrt_last(ctx.op_name, x)?)?;
                store(ctx.req[0], &outs[0], &y)
            })
            .grad_rule(|g| {
                one_input_grad(g, |dy, x| {
                    scalar("_mul_scalar", dy, inv_sqrt_last("_contrib_div_sqrt_dim", x)?)
                })
            }),
    );
    registry::register(
        OpDef::new("_contrib_quadratic")
            .doc("a * x^2 + b * x + c, element-wise.")
            .attr(AttrSpec::optional("a", AttrKind::Float, 0.0f64, "Coefficient of the quadratic term."))
            .attr(AttrSpec::optional("b", AttrKind::Float, 0.0f64, "Coefficient of the linear term."))
            .attr(AttrSpec::optional("c", AttrKind::Float, 0.0f64, "Constant term."))
            .forward(|ctx, ins, outs| {
                let y = quadratic(&ins[0], coefficients(ctx.attrs)?)?;
                store(ctx.req[0], &outs[0], &y)
            })
            .grad_rule(|g| {
                let (a, b, _) = coefficients(g.attrs)?;
                one_input_grad(g, |dy, x| {
                    let d = scalar("_plus_scalar", &scalar("_mul_scalar", x, 2.0 * a)?, b)?;
                    call("elemwise_mul", &[dy, &d], &[])
                })
            }),
    );
}
