//! Stochastic gradient descent: `sgd_update`, `sgd_mom_update`,
//! `nag_mom_update` and their multi-precision forms `mp_sgd_update`,
//! `mp_sgd_mom_update`, `mp_nag_mom_update`.
//!
//! With `g = clip(rescale_grad * grad)`:
//! - `sgd_update`: `w = (1 - lr*wd) * w - lr * g`;
//! - `sgd_mom_update`: `mom = momentum*mom - lr*wd*w - lr*g; w = w + mom`;
//! - `nag_mom_update` (Nesterov): with `d = g + wd*w` and `m = momentum*mom`,
//!   `w = w - m + (momentum+1) * (m - lr*d)` and `mom = m - lr*d`.
//!
//! The `mp_` forms run the same formulas on the float32 master copy
//! `weight32` (updated in place) and store its rounding into the weight.
//! `mp_nag_mom_update` decays with the weight before the step, like
//! `nag_mom_update` (MXNet 1.9.1's multi-precision kernel used the already
//! updated weight in the momentum's decay term, a slip that only shows with
//! `wd > 0`).

use super::kernel::{cst, rescaled, update_elementwise};
use super::{decay_attrs, lazy_attr, lr_attr, momentum_attr, mp_dtype, update_op, with_mp_dtype};
use num_traits::{Float, Zero};
use oxnet_core::{registry, AttrSpec, FloatElement, NDArray, OpContext, Req, Result};

/// The hyper-parameters of the SGD family in compute type `C`.
#[derive(Clone, Copy)]
pub(super) struct Sgd<C> {
    pub(super) lr: C,
    pub(super) wd: C,
    pub(super) rescale: C,
    pub(super) clip: C,
    pub(super) momentum: C,
}

impl Sgd<f64> {
    /// Reads the attributes (`momentum` is 0 for operators without one).
    fn from_ctx(ctx: &OpContext) -> Result<Sgd<f64>> {
        let a = ctx.attrs;
        Ok(Sgd {
            lr: a.float("lr")?,
            wd: a.float("wd")?,
            rescale: a.float("rescale_grad")?,
            clip: a.float("clip_gradient")?,
            momentum: if a.get("momentum").is_ok() { a.float("momentum")? } else { 0.0 },
        })
    }

    /// The same values in compute type `C`.
    fn cast<C: Float>(&self) -> Sgd<C> {
        Sgd {
            lr: cst(self.lr),
            wd: cst(self.wd),
            rescale: cst(self.rescale),
            clip: cst(self.clip),
            momentum: cst(self.momentum),
        }
    }
}

/// How an SGD-family operator steps one element: [`Plain`], [`Momentum`]
/// or [`Nesterov`].
pub(super) trait Rule {
    /// Whether the operator has a momentum state.
    const MOMENTUM: bool;

    /// The new weight from weight `w` and gradient `g`; updates `mom`.
    fn apply<C: Float>(p: &Sgd<C>, w: C, g: C, mom: &mut C) -> C;
}

/// `sgd_update`: `w = (1 - lr*wd)*w - lr*g`.
pub(super) struct Plain;

impl Rule for Plain {
    const MOMENTUM: bool = false;

    #[inline(always)]
    fn apply<C: Float>(p: &Sgd<C>, w: C, g: C, _mom: &mut C) -> C {
        (C::one() - p.lr * p.wd) * w - p.lr * rescaled(g, p.rescale, p.clip)
    }
}

/// `sgd_mom_update`: `mom = momentum*mom - lr*wd*w - lr*g; w = w + mom`.
pub(super) struct Momentum;

impl Rule for Momentum {
    const MOMENTUM: bool = true;

    #[inline(always)]
    fn apply<C: Float>(p: &Sgd<C>, w: C, g: C, mom: &mut C) -> C {
        *mom = p.momentum * *mom - p.lr * p.wd * w - p.lr * rescaled(g, p.rescale, p.clip);
        w + *mom
    }
}

/// `nag_mom_update`: the Nesterov step.
pub(super) struct Nesterov;

impl Rule for Nesterov {
    const MOMENTUM: bool = true;

    #[inline(always)]
    fn apply<C: Float>(p: &Sgd<C>, w: C, g: C, mom: &mut C) -> C {
        let d = rescaled(g, p.rescale, p.clip) + p.wd * w;
        let m = p.momentum * *mom;
        *mom = m - p.lr * d;
        w - m + (p.momentum + C::one()) * (m - p.lr * d)
    }
}

/// One SGD-family update of `weight` into `out` under `req` with rule `R`:
/// `mom` is the momentum state (`None`: a zero momentum each step), `w32`
/// the float32 master copy (`None`: the weight's own precision).
#[allow(clippy::too_many_arguments)]
pub(super) fn run<R: Rule>(
    p: Sgd<f64>,
    req: Req,
    weight: &NDArray,
    grad: &NDArray,
    mom: Option<&NDArray>,
    w32: Option<&NDArray>,
    out: &NDArray,
) -> Result<()> {
    let Some(w32) = w32 else {
        return oxnet_core::with_float_dtype!(weight.dtype(), T => {
            let p = p.cast::<<T as FloatElement>::Compute>();
            match mom {
                Some(m) => update_elementwise::<T, T, 1>(req, weight, grad, [m], ["mom"], out, move |w, g, s| {
                    R::apply(&p, w, g, &mut s[0])
                }),
                None => update_elementwise::<T, T, 0>(req, weight, grad, [], [], out, move |w, g, _| {
                    R::apply(&p, w, g, &mut Zero::zero())
                }),
            }
        });
    };
    let p = p.cast::<f32>();
    with_mp_dtype!(weight.dtype(), T => match mom {
        Some(m) => update_elementwise::<T, f32, 2>(req, weight, grad, [m, w32], ["mom", "weight32"], out, move |_, g, s| {
            let [mom, w32] = s;
            *w32 = R::apply(&p, *w32, g, mom);
            *w32
        }),
        None => update_elementwise::<T, f32, 1>(req, weight, grad, [w32], ["weight32"], out, move |_, g, s| {
            s[0] = R::apply(&p, s[0], g, &mut 0.0);
            s[0]
        }),
    })
}

/// The kernel of a single-weight operator: inputs `weight, grad`, then
/// `mom` when `R` has one, then `weight32` when `MP`.
fn forward<R: Rule, const MP: bool>(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let mom = R::MOMENTUM.then(|| &ins[2]);
    let w32 = MP.then(|| &ins[2 + R::MOMENTUM as usize]);
    run::<R>(Sgd::from_ctx(ctx)?, ctx.req[0], &ins[0], &ins[1], mom, w32, &outs[0])
}

/// `lr`, `momentum` (with one), `wd`, `rescale_grad`, `clip_gradient` and
/// `lazy_update` (if `lazy`).
fn sgd_attrs(momentum: bool, lazy: bool) -> Vec<AttrSpec> {
    let mut attrs = vec![lr_attr()];
    attrs.extend(momentum.then(momentum_attr));
    attrs.extend(decay_attrs());
    attrs.extend(lazy.then(lazy_attr));
    attrs
}

pub(super) fn register() {
    registry::register(
        update_op(
            "sgd_update",
            "SGD update: weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad). Returns the new weight \
             (pass the weight as `out` to update it in place).",
            &["weight", "grad"],
            &[],
            sgd_attrs(false, true),
        )
        .forward(forward::<Plain, false>),
    );
    registry::register(
        update_op(
            "sgd_mom_update",
            "SGD with momentum: mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); \
             weight = weight + mom. Updates `mom` in place and returns the new weight.",
            &["weight", "grad", "mom"],
            &[2],
            sgd_attrs(true, true),
        )
        .forward(forward::<Momentum, false>),
    );
    registry::register(
        update_op(
            "nag_mom_update",
            "Nesterov momentum: with d = clip(rescale_grad*grad) + wd*weight and m = momentum*mom, \
             weight = weight - m + (momentum+1)*(m - lr*d) and mom = m - lr*d. Updates `mom` in place \
             and returns the new weight.",
            &["weight", "grad", "mom"],
            &[2],
            sgd_attrs(true, false),
        )
        .forward(forward::<Nesterov, false>),
    );
    registry::register(
        update_op(
            "mp_sgd_update",
            "Multi-precision SGD: sgd_update's formula applied to the float32 master copy `weight32` \
             (updated in place); returns it rounded to the weight's dtype.",
            &["weight", "grad", "weight32"],
            &[2],
            sgd_attrs(false, true),
        )
        .infer_type(mp_dtype(&[2]))
        .forward(forward::<Plain, true>),
    );
    registry::register(
        update_op(
            "mp_sgd_mom_update",
            "Multi-precision SGD with momentum: sgd_mom_update's formula on the float32 master copy \
             `weight32` with a float32 `mom` (both updated in place); returns the new weight rounded \
             to the weight's dtype.",
            &["weight", "grad", "mom", "weight32"],
            &[2, 3],
            sgd_attrs(true, true),
        )
        .infer_type(mp_dtype(&[2, 3]))
        .forward(forward::<Momentum, true>),
    );
    registry::register(
        update_op(
            "mp_nag_mom_update",
            "Multi-precision Nesterov momentum: nag_mom_update's formula on the float32 master copy \
             `weight32` with a float32 `mom` (both updated in place); returns the new weight rounded \
             to the weight's dtype.",
            &["weight", "grad", "mom", "weight32"],
            &[2, 3],
            sgd_attrs(true, false),
        )
        .infer_type(mp_dtype(&[2, 3]))
        .forward(forward::<Nesterov, true>),
    );
}
