//! `SoftmaxActivation` (MXNet's older softmax layer): `mode="instance"`
//! (default) normalises over the last axis, as MXNet's flattening to
//! `(rows, last)` does; `mode="channel"` over axis 1. The forward pass is
//! `softmax` along that axis; the gradient `y * (g - sum(g * y))` is
//! written with operators.

use super::{mul, sub, sum_keep};
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, OpDef, Result};

/// The axis `mode` normalises over, for an input of `ndim` axes.
fn axis(attrs: &Attrs, ndim: usize) -> Result<i64> {
    match attrs.str("mode")? {
        "instance" => Ok(-1),
        "channel" if ndim >= 2 => Ok(1),
        "channel" => Err(Error::attr("mode", format!("channel mode needs 2 or more axes, got {ndim}"))),
        m => Err(Error::attr("mode", format!("expected `instance` or `channel`, got `{m}`"))),
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new("SoftmaxActivation")
            .doc("Softmax over the last axis (mode `instance`) or over axis 1 (mode `channel`).")
            .attr(AttrSpec::optional(
                "mode",
                AttrKind::Choice(vec!["channel", "instance"]),
                "instance",
                "`instance`: over the last axis; `channel`: over axis 1.",
            ))
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                let a = axis(ctx.attrs, x.ndim())?;
                let y = call("softmax", &[x], &[("axis", AttrValue::Int(a))])?;
                store(ctx.req[0], &outs[0], &y)
            })
            .grad_rule(|g| {
                if !g.needs_grad[0] {
                    return Ok(vec![None]);
                }
                let (y, og) = (&g.outputs[0], &g.out_grads[0]);
                let a = axis(g.attrs, y.ndim())?;
                let s = sum_keep(&mul(og, y)?, a)?;
                Ok(vec![Some(mul(y, &sub(og, &s)?)?)])
            }),
    );
}
