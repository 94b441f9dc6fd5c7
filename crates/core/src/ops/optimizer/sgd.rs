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
use super::{
    clip_attr, lazy_attr, lr_attr, momentum_attr, mp_dtype, rescale_attr, update_op, wd_attr, with_mp_dtype,
};
use crate::{registry, FloatElement, NDArray, OpContext, Result};
use num_traits::Float;

/// The hyper-parameters of the SGD family in compute type `C`.
#[derive(Clone, Copy)]
pub(super) struct Sgd<C> {
    pub(super) lr: C,
    pub(super) wd: C,
    pub(super) rescale: C,
    pub(super) clip: C,
    pub(super) momentum: C,
}

impl<C: Float> Sgd<C> {
    /// Reads the attributes (`momentum` is 0 for operators without one).
    fn from_ctx(ctx: &OpContext) -> Result<Sgd<C>> {
        let a = ctx.attrs;
        let momentum = if a.get("momentum").is_ok() { a.float("momentum")? } else { 0.0 };
        Ok(Sgd::new(
            a.float("lr")?,
            a.float("wd")?,
            a.float("rescale_grad")?,
            a.float("clip_gradient")?,
            momentum,
        ))
    }

    /// From values in `f64`.
    pub(super) fn new(lr: f64, wd: f64, rescale: f64, clip: f64, momentum: f64) -> Sgd<C> {
        Sgd { lr: cst(lr), wd: cst(wd), rescale: cst(rescale), clip: cst(clip), momentum: cst(momentum) }
    }

    /// One plain step: returns the new weight.
    #[inline(always)]
    pub(super) fn step(&self, w: C, g: C) -> C {
        (C::one() - self.lr * self.wd) * w - self.lr * rescaled(g, self.rescale, self.clip)
    }

    /// One momentum step: updates `mom`, returns the new weight.
    #[inline(always)]
    pub(super) fn mom_step(&self, w: C, g: C, mom: &mut C) -> C {
        *mom = self.momentum * *mom - self.lr * self.wd * w - self.lr * rescaled(g, self.rescale, self.clip);
        w + *mom
    }

    /// One Nesterov step: updates `mom`, returns the new weight.
    #[inline(always)]
    fn nag_step(&self, w: C, g: C, mom: &mut C) -> C {
        let d = rescaled(g, self.rescale, self.clip) + self.wd * w;
        let m = self.momentum * *mom;
        *mom = m - self.lr * d;
        w - m + (self.momentum + C::one()) * (m - self.lr * d)
    }
}

fn sgd(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    crate::with_float_dtype!(ins[0].dtype(), T => {
        let p = Sgd::<<T as FloatElement>::Compute>::from_ctx(ctx)?;
        update_elementwise::<T, T, 0>(ctx.req[0], &ins[0], &ins[1], [], [], &outs[0], |w, g, _| p.step(w, g))
    })
}

fn sgd_mom(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    crate::with_float_dtype!(ins[0].dtype(), T => {
        let p = Sgd::<<T as FloatElement>::Compute>::from_ctx(ctx)?;
        update_elementwise::<T, T, 1>(ctx.req[0], &ins[0], &ins[1], [&ins[2]], ["mom"], &outs[0], |w, g, s| {
            p.mom_step(w, g, &mut s[0])
        })
    })
}

fn nag_mom(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    crate::with_float_dtype!(ins[0].dtype(), T => {
        let p = Sgd::<<T as FloatElement>::Compute>::from_ctx(ctx)?;
        update_elementwise::<T, T, 1>(ctx.req[0], &ins[0], &ins[1], [&ins[2]], ["mom"], &outs[0], |w, g, s| {
            p.nag_step(w, g, &mut s[0])
        })
    })
}

fn mp_sgd(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = Sgd::<f32>::from_ctx(ctx)?;
    with_mp_dtype!(ins[0].dtype(), T => {
        update_elementwise::<T, f32, 1>(ctx.req[0], &ins[0], &ins[1], [&ins[2]], ["weight32"], &outs[0], |_, g, s| {
            s[0] = p.step(s[0], g);
            s[0]
        })
    })
}

fn mp_sgd_mom(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = Sgd::<f32>::from_ctx(ctx)?;
    with_mp_dtype!(ins[0].dtype(), T => {
        update_elementwise::<T, f32, 2>(
            ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3]], ["mom", "weight32"], &outs[0],
            |_, g, s| {
                let [mom, w32] = s;
                *w32 = p.mom_step(*w32, g, mom);
                *w32
            },
        )
    })
}

fn mp_nag_mom(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = Sgd::<f32>::from_ctx(ctx)?;
    with_mp_dtype!(ins[0].dtype(), T => {
        update_elementwise::<T, f32, 2>(
            ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3]], ["mom", "weight32"], &outs[0],
            |_, g, s| {
                let [mom, w32] = s;
                *w32 = p.nag_step(*w32, g, mom);
                *w32
            },
        )
    })
}

pub(super) fn register() {
    registry::register(
        update_op(
            "sgd_update",
            "SGD update: weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad). Returns the new weight \
             (pass the weight as `out` to update it in place).",
            &["weight", "grad"],
            &[],
        )
        .attr(lr_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .attr(lazy_attr())
        .forward(sgd),
    );
    registry::register(
        update_op(
            "sgd_mom_update",
            "SGD with momentum: mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); \
             weight = weight + mom. Updates `mom` in place and returns the new weight.",
            &["weight", "grad", "mom"],
            &[2],
        )
        .attr(lr_attr())
        .attr(momentum_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .attr(lazy_attr())
        .forward(sgd_mom),
    );
    registry::register(
        update_op(
            "nag_mom_update",
            "Nesterov momentum: with d = clip(rescale_grad*grad) + wd*weight and m = momentum*mom, \
             weight = weight - m + (momentum+1)*(m - lr*d) and mom = m - lr*d. Updates `mom` in place \
             and returns the new weight.",
            &["weight", "grad", "mom"],
            &[2],
        )
        .attr(lr_attr())
        .attr(momentum_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .forward(nag_mom),
    );
    registry::register(
        update_op(
            "mp_sgd_update",
            "Multi-precision SGD: sgd_update's formula applied to the float32 master copy `weight32` \
             (updated in place); returns it rounded to the weight's dtype.",
            &["weight", "grad", "weight32"],
            &[2],
        )
        .attr(lr_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .attr(lazy_attr())
        .infer_type(mp_dtype(&[2]))
        .forward(mp_sgd),
    );
    registry::register(
        update_op(
            "mp_sgd_mom_update",
            "Multi-precision SGD with momentum: sgd_mom_update's formula on the float32 master copy \
             `weight32` with a float32 `mom` (both updated in place); returns the new weight rounded \
             to the weight's dtype.",
            &["weight", "grad", "mom", "weight32"],
            &[2, 3],
        )
        .attr(lr_attr())
        .attr(momentum_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .attr(lazy_attr())
        .infer_type(mp_dtype(&[2, 3]))
        .forward(mp_sgd_mom),
    );
    registry::register(
        update_op(
            "mp_nag_mom_update",
            "Multi-precision Nesterov momentum: nag_mom_update's formula on the float32 master copy \
             `weight32` with a float32 `mom` (both updated in place); returns the new weight rounded \
             to the weight's dtype.",
            &["weight", "grad", "mom", "weight32"],
            &[2, 3],
        )
        .attr(lr_attr())
        .attr(momentum_attr())
        .attr(wd_attr())
        .attr(rescale_attr())
        .attr(clip_attr())
        .infer_type(mp_dtype(&[2, 3]))
        .forward(mp_nag_mom),
    );
}
