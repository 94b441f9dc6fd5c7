//! Adam: `adam_update`, and AdamW with decoupled weight decay:
//! `_adamw_update`, `_mp_adamw_update` (MXNet's contrib operators, which
//! take `rescale_grad` as a one-element array so that a loss scaler can
//! change it without rebuilding attributes).
//!
//! - `adam_update`: `g = clip(rescale_grad*grad + wd*w)`,
//!   `mean = beta1*mean + (1-beta1)*g`, `var = beta2*var + (1-beta2)*g²`,
//!   `w = w - lr * mean / (sqrt(var) + epsilon)` (bias correction is the
//!   caller's: it folds it into `lr`).
//! - `_adamw_update`: `g = clip(rescale_grad*grad)`, the same moments, and
//!   `w = w - eta * (lr * mean / (sqrt(var) + epsilon) + wd*w)`. When the
//!   `rescale_grad` array holds 0, NaN or an infinity the step is skipped:
//!   weight and states stay as they are.
//! - `_mp_adamw_update`: the same on the float32 master copy `weight32`
//!   with float32 moments.

use super::kernel::{clip, cst, floats, rescaled, update_elementwise};
use super::with_mp_dtype;
use super::{clip_attr, decay_attrs, lazy_attr, lr_attr, mp_dtype, shape_with_scalars, update_op, wd_attr};
use num_traits::{Float, Zero};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, FloatElement, NDArray, OpContext, Req, Result};

/// `beta1` (default 0.9).
pub(super) fn beta1_attr() -> AttrSpec {
    AttrSpec::optional("beta1", AttrKind::Float, 0.9, "The decay rate of the first moment estimates.")
}

/// `beta2` (default 0.999).
pub(super) fn beta2_attr() -> AttrSpec {
    AttrSpec::optional("beta2", AttrKind::Float, 0.999, "The decay rate of the second moment estimates.")
}

/// `epsilon` (default 1e-8).
pub(super) fn epsilon_attr() -> AttrSpec {
    AttrSpec::optional("epsilon", AttrKind::Float, 1e-8, "A small constant for numerical stability.")
}

/// Adam's hyper-parameters in compute type `C`.
#[derive(Clone, Copy)]
struct Moments<C> {
    beta1: C,
    beta2: C,
    epsilon: C,
}

impl<C: Float> Moments<C> {
    fn from_attrs(a: &Attrs) -> Result<Moments<C>> {
        let [beta1, beta2, epsilon] = floats(a, ["beta1", "beta2", "epsilon"])?;
        Ok(Moments { beta1, beta2, epsilon })
    }

    /// Updates the moments with gradient `g`; returns `mean / (sqrt(var) + epsilon)`.
    #[inline(always)]
    fn step(&self, g: C, mean: &mut C, var: &mut C) -> C {
        *mean = self.beta1 * *mean + (C::one() - self.beta1) * g;
        *var = self.beta2 * *var + (C::one() - self.beta2) * g * g;
        *mean / (var.sqrt() + self.epsilon)
    }
}

fn adam(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let m = Moments::<C>::from_attrs(a)?;
        let [lr, wd, rs, cg]: [C; 4] = floats(a, ["lr", "wd", "rescale_grad", "clip_gradient"])?;
        update_elementwise::<T, T, 2>(ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3]], ["mean", "var"], &outs[0], move |w, g, s| {
            let mut gr = g * rs + w * wd;
            if cg >= C::zero() {
                gr = clip(gr, cg);
            }
            let [mean, var] = s;
            w - lr * m.step(gr, mean, var)
        })
    })
}

/// The value of an AdamW `rescale_grad` array, or `None` when the step must
/// be skipped (0, NaN, infinite).
pub(super) fn adamw_scale(scale: &NDArray) -> Result<Option<f64>> {
    let s = scale.to_scalar()?;
    Ok((s.is_finite() && s != 0.0).then_some(s))
}

/// A skipped step: weight and states stay as they are, and an output that
/// is not the weight itself receives the weight.
pub(super) fn skip_step(req: Req, weight: &NDArray, out: &NDArray) -> Result<()> {
    if matches!(req, Req::Write | Req::Inplace) && weight.raw_ptr() != out.raw_ptr() {
        out.assign_from(weight)?;
    }
    Ok(())
}

/// AdamW's rates for one tensor.
#[derive(Clone, Copy)]
pub(super) struct Rates {
    /// The learning rate `lr`.
    pub(super) lr: f64,
    /// The weight decay `wd`.
    pub(super) wd: f64,
    /// The schedule multiplier `eta`.
    pub(super) eta: f64,
}

/// One AdamW step of `group` (`weight, grad, mean, var`, then the float32
/// master copy `weight32` in the multi-precision form) into `out` under
/// `req`, with the valid rescale factor `scale`; `beta1`, `beta2`,
/// `epsilon` and `clip_gradient` come from the attributes `a`.
pub(super) fn adamw_step(
    a: &Attrs,
    r: Rates,
    scale: f64,
    req: Req,
    group: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let bound = a.float("clip_gradient")?;
    let (weight, grad, mean, var) = (&group[0], &group[1], &group[2], &group[3]);
    if let Some(w32) = group.get(4) {
        let m = Moments::<f32>::from_attrs(a)?;
        let [lr, wd, eta, rs, cg]: [f32; 5] = [r.lr, r.wd, r.eta, scale, bound].map(cst);
        return with_mp_dtype!(weight.dtype(), T => {
            update_elementwise::<T, f32, 3>(
                req, weight, grad, [mean, var, w32], ["mean", "var", "weight32"], out,
                move |_, g, s| {
                    let [mean, var, w32] = s;
                    *w32 = *w32 - eta * (lr * m.step(rescaled(g, rs, cg), mean, var) + wd * *w32);
                    *w32
                },
            )
        });
    }
    oxnet_core::with_float_dtype!(weight.dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let m = Moments::<C>::from_attrs(a)?;
        let [lr, wd, eta, rs, cg]: [C; 5] = [r.lr, r.wd, r.eta, scale, bound].map(cst);
        update_elementwise::<T, T, 2>(req, weight, grad, [mean, var], ["mean", "var"], out, move |w, g, s| {
            let [mean, var] = s;
            w - eta * (lr * m.step(rescaled(g, rs, cg), mean, var) + wd * w)
        })
    })
}

/// `_adamw_update` (4 group inputs) and `_mp_adamw_update` (5): the group,
/// then the `rescale_grad` array.
fn adamw(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (group, scale) = ins.split_at(ins.len() - 1);
    let Some(scale) = adamw_scale(&scale[0])? else { return skip_step(ctx.req[0], &ins[0], &outs[0]) };
    let a = ctx.attrs;
    let r = Rates { lr: a.float("lr")?, wd: a.float("wd")?, eta: a.float("eta")? };
    adamw_step(a, r, scale, ctx.req[0], group, &outs[0])
}

/// Dtypes of `_adamw_update`: weight, grad, mean, var and the output share
/// one; `rescale_grad` is any float type (float32 when unknown).
fn adamw_dtype(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let last = ins.len() - 1;
    match ins[last] {
        Some(d) if !d.is_float() => {
            return Err(Error::DType(format!("rescale_grad must be a floating-point array, got {d}")))
        }
        Some(_) => {}
        None => ins[last] = Some(DType::F32),
    }
    oxnet_core::op::same_dtype(attrs, &mut ins[..last], outs)
}

/// The attributes of the AdamW operators.
fn adamw_attrs() -> [AttrSpec; 7] {
    let eta = AttrSpec::required("eta", AttrKind::Float, "Learning-rate schedule multiplier.");
    [lr_attr(), beta1_attr(), beta2_attr(), epsilon_attr(), wd_attr(), eta, clip_attr()]
}

pub(super) fn register() {
    registry::register(
        update_op(
            "adam_update",
            "Adam update: g = clip(rescale_grad*grad + wd*weight); mean = beta1*mean + (1-beta1)*g; \
             var = beta2*var + (1-beta2)*g^2; weight = weight - lr*mean/(sqrt(var) + epsilon). Updates \
             `mean` and `var` in place and returns the new weight.",
            &["weight", "grad", "mean", "var"],
            &[2, 3],
            [lr_attr(), beta1_attr(), beta2_attr(), epsilon_attr()]
                .into_iter()
                .chain(decay_attrs())
                .chain([lazy_attr()]),
        )
        .forward(adam),
    );
    registry::register(
        update_op(
            "_adamw_update",
            "AdamW update (decoupled weight decay): g = clip(rescale_grad*grad); the moments as in \
             adam_update; weight = weight - eta*(lr*mean/(sqrt(var) + epsilon) + wd*weight). \
             `rescale_grad` is a one-element array; when it holds 0, NaN or an infinity the step is \
             skipped.",
            &["weight", "grad", "mean", "var", "rescale_grad"],
            &[2, 3],
            adamw_attrs(),
        )
        .alias("_contrib_adamw_update")
        .infer_shape(shape_with_scalars(&[4]))
        .infer_type(adamw_dtype)
        .forward(adamw),
    );
    registry::register(
        update_op(
            "_mp_adamw_update",
            "Multi-precision AdamW: _adamw_update's formula on the float32 master copy `weight32` with \
             float32 `mean` and `var` (all updated in place); returns the new weight rounded to its dtype.",
            &["weight", "grad", "mean", "var", "weight32", "rescale_grad"],
            &[2, 3, 4],
            adamw_attrs(),
        )
        .alias("_contrib_mp_adamw_update")
        .infer_shape(shape_with_scalars(&[5]))
        .infer_type(mp_dtype(&[2, 3, 4, 5]))
        .forward(adamw),
    );
}
