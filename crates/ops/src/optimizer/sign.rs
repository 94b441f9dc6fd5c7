//! Sign-based updates (Bernstein et al., "signSGD"): `signsgd_update` and
//! `signum_update`.
//!
//! - `signsgd_update`: `w = (1 - lr*wd)*w - lr*sign(grad)` (the sign of the
//!   raw gradient: rescaling and clipping cannot change it).
//! - `signum_update`: with `g = clip(rescale_grad*grad)`,
//!   `mom = momentum*mom - (1-momentum)*(wd*w + g)`,
//!   `w = (1 - lr*wd_lh)*w + lr*sign(mom)`.

use super::kernel::{floats, rescaled, sign, update_elementwise};
use super::{decay_attrs, lr_attr, momentum_attr, update_op};
use num_traits::One;
use oxnet_core::{registry, AttrKind, AttrSpec, FloatElement, NDArray, OpContext, Result};

fn signsgd(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [lr, wd]: [C; 2] = floats(a, ["lr", "wd"])?;
        update_elementwise::<T, T, 0>(ctx.req[0], &ins[0], &ins[1], [], [], &outs[0], move |w, g, _| {
            (C::one() - lr * wd) * w - lr * sign(g)
        })
    })
}

fn signum(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [lr, mu, wd, rs, cg, wd_lh]: [C; 6] =
            floats(a, ["lr", "momentum", "wd", "rescale_grad", "clip_gradient", "wd_lh"])?;
        update_elementwise::<T, T, 1>(ctx.req[0], &ins[0], &ins[1], [&ins[2]], ["mom"], &outs[0], move |w, g, s| {
            s[0] = mu * s[0] - (C::one() - mu) * wd * w - (C::one() - mu) * rescaled(g, rs, cg);
            (C::one() - lr * wd_lh) * w + lr * sign(s[0])
        })
    })
}

pub(super) fn register() {
    registry::register(
        update_op(
            "signsgd_update",
            "SignSGD update: weight = (1 - lr*wd)*weight - lr*sign(grad). Returns the new weight.",
            &["weight", "grad"],
            &[],
            [lr_attr()].into_iter().chain(decay_attrs()),
        )
        .forward(signsgd),
    );
    registry::register(
        update_op(
            "signum_update",
            "Signum update: mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad)); \
             weight = (1 - lr*wd_lh)*weight + lr*sign(mom). Updates `mom` in place and returns the new weight.",
            &["weight", "grad", "mom"],
            &[2],
            [lr_attr(), momentum_attr()].into_iter().chain(decay_attrs()).chain([AttrSpec::optional(
                "wd_lh",
                AttrKind::Float,
                0.0,
                "Decoupled weight decay (Loshchilov & Hutter), applied to the weight directly.",
            )]),
        )
        .forward(signum),
    );
}
