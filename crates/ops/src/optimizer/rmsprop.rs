//! RMSProp: `rmsprop_update` (Tieleman & Hinton) and `rmspropalex_update`
//! (Graves' centered form).
//!
//! With `g = clip(rescale_grad*grad + wd*w)`:
//! - `rmsprop_update`: `n = (1-gamma1)*g² + gamma1*n`,
//!   `w = w - lr * g / sqrt(n + epsilon)`;
//! - `rmspropalex_update`: `n = (1-gamma1)*g² + gamma1*n`,
//!   `gbar = (1-gamma1)*g + gamma1*gbar`,
//!   `delta = gamma2*delta - lr * g / sqrt(n - gbar² + epsilon)`, `w = w + delta`.
//!
//! `clip_weights >= 0` clips the new weight to `[-clip_weights, clip_weights]`.

use super::kernel::{clip, cst, floats, update_elementwise};
use super::{decay_attrs, lr_attr, update_op};
use num_traits::{Float, One};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, FloatElement, NDArray, OpContext, Result};

/// The hyper-parameters both operators share, in compute type `C`.
#[derive(Clone, Copy)]
struct Hyper<C> {
    lr: C,
    gamma1: C,
    epsilon: C,
    wd: C,
    rescale: C,
    clip_gradient: C,
    clip_weights: C,
}

impl<C: Float> Hyper<C> {
    fn from_attrs(a: &Attrs) -> Result<Hyper<C>> {
        let names = ["lr", "gamma1", "epsilon", "wd", "rescale_grad", "clip_gradient", "clip_weights"];
        let [lr, gamma1, epsilon, wd, rescale, clip_gradient, clip_weights] = floats(a, names)?;
        Ok(Hyper { lr, gamma1, epsilon, wd, rescale, clip_gradient, clip_weights })
    }

    /// The rescaled, decayed and clipped gradient.
    #[inline(always)]
    fn grad(&self, w: C, g: C) -> C {
        let gr = self.rescale * g + self.wd * w;
        if self.clip_gradient >= C::zero() {
            clip(gr, self.clip_gradient)
        } else {
            gr
        }
    }

    /// The new weight, clipped when `clip_weights >= 0`.
    #[inline(always)]
    fn weight(&self, w: C) -> C {
        if self.clip_weights >= C::zero() {
            clip(w, self.clip_weights)
        } else {
            w
        }
    }
}

fn rmsprop(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let h = Hyper::<C>::from_attrs(ctx.attrs)?;
        let one = C::one();
        update_elementwise::<T, T, 1>(ctx.req[0], &ins[0], &ins[1], [&ins[2]], ["n"], &outs[0], move |w, g, s| {
            let gr = h.grad(w, g);
            s[0] = (one - h.gamma1) * (gr * gr) + h.gamma1 * s[0];
            h.weight(w - h.lr * (gr / (s[0] + h.epsilon).sqrt()))
        })
    })
}

fn rmspropalex(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let h = Hyper::<C>::from_attrs(ctx.attrs)?;
        let gamma2: C = cst(ctx.attrs.float("gamma2")?);
        let one = C::one();
        update_elementwise::<T, T, 3>(
            ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3], &ins[4]], ["n", "g", "delta"], &outs[0],
            move |w, g, s| {
                let gr = h.grad(w, g);
                let [n, gbar, delta] = s;
                *n = (one - h.gamma1) * gr * gr + h.gamma1 * *n;
                *gbar = (one - h.gamma1) * gr + h.gamma1 * *gbar;
                *delta = gamma2 * *delta - h.lr * gr / (*n - *gbar * *gbar + h.epsilon).sqrt();
                h.weight(w + *delta)
            },
        )
    })
}

/// `lr`, `gamma1`, then `gamma2` (the centered form's), `epsilon`, `wd`,
/// `rescale_grad`, `clip_gradient`, `clip_weights`.
fn rmsprop_attrs(gamma2: Option<AttrSpec>) -> Vec<AttrSpec> {
    let mut attrs = vec![
        lr_attr(),
        AttrSpec::optional("gamma1", AttrKind::Float, 0.95, "The decay rate of the moving averages."),
    ];
    attrs.extend(gamma2);
    attrs.push(AttrSpec::optional(
        "epsilon",
        AttrKind::Float,
        1e-8,
        "A small constant for numerical stability.",
    ));
    attrs.extend(decay_attrs());
    attrs.push(AttrSpec::optional(
        "clip_weights",
        AttrKind::Float,
        -1.0,
        "Clip the updated weight to [-clip_weights, clip_weights]; a negative value turns it off.",
    ));
    attrs
}

pub(super) fn register() {
    registry::register(
        update_op(
            "rmsprop_update",
            "RMSProp update (Tieleman & Hinton): g = clip(rescale_grad*grad + wd*weight); \
             n = (1-gamma1)*g^2 + gamma1*n; weight = weight - lr*g/sqrt(n + epsilon), clipped to \
             clip_weights when that is >= 0. Updates `n` in place and returns the new weight.",
            &["weight", "grad", "n"],
            &[2],
            rmsprop_attrs(None),
        )
        .forward(rmsprop),
    );
    registry::register(
        update_op(
            "rmspropalex_update",
            "Centered RMSProp update (Graves): g = clip(rescale_grad*grad + wd*weight); \
             n = (1-gamma1)*g^2 + gamma1*n; gbar = (1-gamma1)*g + gamma1*gbar; \
             delta = gamma2*delta - lr*g/sqrt(n - gbar^2 + epsilon); weight = weight + delta (clipped to \
             clip_weights when that is >= 0). Updates `n`, `g` and `delta` in place.",
            &["weight", "grad", "n", "g", "delta"],
            &[2, 3, 4],
            rmsprop_attrs(Some(AttrSpec::optional(
                "gamma2",
                AttrKind::Float,
                0.9,
                "The decay rate of the momentum `delta`.",
            ))),
        )
        .forward(rmspropalex),
    );
}
