//! FTRL-Proximal (McMahan et al., "Ad Click Prediction"): `ftrl_update`.
//!
//! With `g = clip(rescale_grad*grad)`:
//! `z += g - (sqrt(n + g²) - sqrt(n)) * w / lr`, `n += g²`, and
//! `w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd)` where
//! `|z| > lamda1`, 0 elsewhere.

use super::kernel::{floats, rescaled, sign, update_elementwise};
use super::{decay_attrs, lr_attr, update_op};
use num_traits::Zero;
use oxnet_core::{registry, AttrKind, AttrSpec, FloatElement, NDArray, OpContext, Result};

fn ftrl(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [lr, lamda1, beta, wd, rs, cg]: [C; 6] =
            floats(a, ["lr", "lamda1", "beta", "wd", "rescale_grad", "clip_gradient"])?;
        update_elementwise::<T, T, 2>(ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3]], ["z", "n"], &outs[0], move |w, g, s| {
            let gr = rescaled(g, rs, cg);
            let [z, n] = s;
            *z += gr - ((*n + gr * gr).sqrt() - n.sqrt()) * w / lr;
            *n += gr * gr;
            if z.abs() > lamda1 {
                (sign(*z) * lamda1 - *z) / ((beta + n.sqrt()) / lr + wd)
            } else {
                C::zero()
            }
        })
    })
}

pub(super) fn register() {
    registry::register(
        update_op(
            "ftrl_update",
            "FTRL-Proximal update: g = clip(rescale_grad*grad); z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; \
             n += g^2; weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) where |z| > lamda1, else 0. \
             Updates `z` and `n` in place and returns the new weight.",
            &["weight", "grad", "z", "n"],
            &[2, 3],
            [
                lr_attr(),
                AttrSpec::optional("lamda1", AttrKind::Float, 0.01, "The L1 regularisation coefficient."),
                AttrSpec::optional("beta", AttrKind::Float, 1.0, "Per-coordinate learning-rate correlation."),
            ]
            .into_iter()
            .chain(decay_attrs()),
        )
        .forward(ftrl),
    );
}
