//! `hard_sigmoid`: `max(0, min(1, alpha · x + beta))`, element-wise, as
//! MXNet 1.9.1 defines it (alpha 0.2, beta 0.5). The forward pass is the
//! scaled, shifted input clipped to [0, 1]; the gradient is `alpha` where
//! the output lies strictly between 0 and 1 and 0 elsewhere, written with
//! operators so that it differentiates again.

use super::{mul, rule, with_scalar};
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, OpDef};

/// Registers `hard_sigmoid`.
pub(super) fn register() {
    registry::register(
        OpDef::new("hard_sigmoid")
            .doc("Hard sigmoid max(0, min(1, alpha * x + beta)), element-wise.")
            .attr(AttrSpec::optional("alpha", AttrKind::Float, 0.2, "Slope of the linear part."))
            .attr(AttrSpec::optional("beta", AttrKind::Float, 0.5, "Offset of the linear part."))
            .forward(|ctx, ins, outs| {
                let (Some(x), Some(out)) = (ins.first(), outs.first()) else {
                    return Err(Error::Invalid("hard_sigmoid takes one input and one output".into()));
                };
                let scaled = with_scalar("_mul_scalar", x, ctx.attrs.float("alpha")?)?;
                let shifted = with_scalar("_plus_scalar", &scaled, ctx.attrs.float("beta")?)?;
                let y = call(
                    "clip",
                    &[&shifted],
                    &[("a_min", AttrValue::Float(0.0)), ("a_max", AttrValue::Float(1.0))],
                )?;
                store(ctx.req[0], out, &y)
            })
            .grad_rule(rule(|g, _, y, attrs| {
                let inside =
                    mul(&with_scalar("_greater_scalar", y, 0.0)?, &with_scalar("_lesser_scalar", y, 1.0)?)?;
                with_scalar("_mul_scalar", &mul(g, &inside)?, attrs.float("alpha")?)
            })),
    );
}
