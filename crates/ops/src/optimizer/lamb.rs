//! LAMB (You et al., "Large Batch Optimization for Deep Learning"), in two
//! phases so that the caller can take the norms in between:
//!
//! - `lamb_update_phase1`: with `g = clip(rescale_grad*grad)`,
//!   `mean = beta1*mean + (1-beta1)*g`, `var = beta2*var + (1-beta2)*g²`,
//!   and the output is `mean' / (sqrt(var') + epsilon) + wd*w`, where
//!   `mean' = mean / (1 - beta1^t)` and `var' = var / (1 - beta2^t)` with
//!   `bias_correction`, the raw moments otherwise;
//! - `lamb_update_phase2`: with `r1 = ‖w‖` (limited to `[lower_bound,
//!   upper_bound]` where those are >= 0) and `r2 = ‖phase-1 output‖`,
//!   `w = w - lr * (r1/r2) * g` (ratio 1 when either norm is 0).
//!
//! The multi-precision forms keep float32 moments and a float32 master copy
//! `weight32`: `mp_lamb_update_phase1` runs phase 1 on the master copy (its
//! output is float32), `mp_lamb_update_phase2` steps the master copy in
//! place and returns its rounding to the weight's dtype. (MXNet 1.9.1
//! declares and documents that `weight32` update but its kernel forgets to
//! store it, so there the master copy never moves; the returned weight is
//! the same either way. Its multi-precision phase 1 also rounds
//! `rescale_grad*grad` to float16 before the float32 moments; oxnet keeps
//! that product in float32, as MXNet's documentation states, so the moments
//! differ by float16 rounding, about 1e-4 relative.)
//!
//! The building blocks ([`Phase1`], [`trust_ratio`], [`descend`],
//! [`descend_mp`]) also make the multi-tensor `_multi_lamb_update`.

use super::adam::{beta1_attr, beta2_attr};
use super::kernel::{cst, rescaled, update_elementwise};
use super::{clip_attr, lr_attr, mp_dtype, rescale_attr, shape_with_scalars};
use num_traits::One;
use oxnet_core::attrs::Attrs;
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, DType, Error, FloatElement, NDArray, OpContext, OpDef, Req, Result,
};

/// Phase 1's hyper-parameters for one tensor.
#[derive(Clone, Copy)]
pub(super) struct Phase1 {
    beta1: f64,
    beta2: f64,
    epsilon: f64,
    rescale: f64,
    clip: f64,
    bias_correction: bool,
    /// The weight decay.
    pub(super) wd: f64,
    /// The index of this update (from 1), for bias correction.
    pub(super) t: i64,
}

impl Phase1 {
    /// The attributes shared by every tensor of a call, with the given
    /// weight decay and update index.
    pub(super) fn new(a: &Attrs, wd: f64, t: i64) -> Result<Phase1> {
        Ok(Phase1 {
            beta1: a.float("beta1")?,
            beta2: a.float("beta2")?,
            epsilon: a.float("epsilon")?,
            rescale: a.float("rescale_grad")?,
            clip: a.float("clip_gradient")?,
            bias_correction: a.bool("bias_correction")?,
            wd,
            t,
        })
    }

    /// Phase 1 over `weight` and `grad` of one dtype (the weight, or the
    /// float32 master copy with a float32 gradient), with moments `mean`
    /// and `var` of that dtype (updated in place): stores the normalised
    /// step into `out` under `req`.
    pub(super) fn run(
        &self,
        req: Req,
        weight: &NDArray,
        grad: &NDArray,
        mean: &NDArray,
        var: &NDArray,
        out: &NDArray,
    ) -> Result<()> {
        let t = self.t.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        oxnet_core::with_float_dtype!(weight.dtype(), T => {
            type C = <T as FloatElement>::Compute;
            let [beta1, beta2, eps, wd, rs, cg]: [C; 6] =
                [self.beta1, self.beta2, self.epsilon, self.wd, self.rescale, self.clip].map(cst);
            let (c1, c2): (C, C) = if self.bias_correction {
                (C::one() - beta1.powi(t), C::one() - beta2.powi(t))
            } else {
                (C::one(), C::one())
            };
            update_elementwise::<T, T, 2>(req, weight, grad, [mean, var], ["mean", "var"], out, move |w, g, s| {
                let gr = rescaled(g, rs, cg);
                let [mean, var] = s;
                *mean = beta1 * *mean + (C::one() - beta1) * gr;
                *var = beta2 * *var + (C::one() - beta2) * gr * gr;
                (*mean / c1) / ((*var / c2).sqrt() + eps) + wd * w
            })
        })
    }

    /// Phase 1 of the multi-precision form: on the float32 master copy
    /// `weight32` with the gradient widened to float32.
    pub(super) fn run_mp(
        &self,
        req: Req,
        weight32: &NDArray,
        grad: &NDArray,
        mean: &NDArray,
        var: &NDArray,
        out: &NDArray,
    ) -> Result<()> {
        let grad = if grad.dtype() == DType::F32 { grad.clone() } else { grad.astype(DType::F32)? };
        self.run(req, weight32, &grad, mean, var, out)
    }
}

/// LAMB's trust ratio: the weight norm `r1` limited to `[lower, upper]`
/// (each bound where it is >= 0) over the step norm `r2`; 1 when either
/// norm is 0.
pub(super) fn trust_ratio(r1: f64, r2: f64, lower: f64, upper: f64) -> f64 {
    let mut r1 = r1;
    if lower >= 0.0 {
        r1 = r1.max(lower);
    }
    if upper >= 0.0 {
        r1 = r1.min(upper);
    }
    if r1 == 0.0 || r2 == 0.0 {
        1.0
    } else {
        r1 / r2
    }
}

/// Phase 2's step: `weight - step * g` into `out` under `req`, where `g`
/// has the weight's dtype.
pub(super) fn descend(step: f64, req: Req, weight: &NDArray, g: &NDArray, out: &NDArray) -> Result<()> {
    oxnet_core::with_float_dtype!(weight.dtype(), T => {
        let step: <T as FloatElement>::Compute = cst(step);
        update_elementwise::<T, T, 0>(req, weight, g, [], [], out, move |w, g, _| w - step * g)
    })
}

/// The multi-precision phase 2: the float32 master copy `weight32` steps
/// by `-step * g` in place (`g` float32), and `out` receives it rounded to
/// its own dtype under `req`.
pub(super) fn descend_mp(step: f64, req: Req, weight32: &NDArray, g: &NDArray, out: &NDArray) -> Result<()> {
    descend(step, Req::Inplace, weight32, g, weight32)?;
    store(req, out, weight32)
}

/// The norm limits `lower_bound` and `upper_bound` (off by default).
pub(super) fn bound_attrs() -> [AttrSpec; 2] {
    [
        AttrSpec::optional("lower_bound", AttrKind::Float, -1.0, "Lower limit of r1 (off when negative)."),
        AttrSpec::optional("upper_bound", AttrKind::Float, -1.0, "Upper limit of r1 (off when negative)."),
    ]
}

/// `beta1`, `beta2` and LAMB's `epsilon` (default 1e-6).
pub(super) fn moment_attrs() -> [AttrSpec; 3] {
    let eps =
        AttrSpec::optional("epsilon", AttrKind::Float, 1e-6, "A small constant for numerical stability.");
    [beta1_attr(), beta2_attr(), eps]
}

/// `bias_correction` (default true).
pub(super) fn bias_correction_attr() -> AttrSpec {
    AttrSpec::optional("bias_correction", AttrKind::Bool, true, "Whether to correct the moments' bias.")
}

/// The attributes of both phase-1 operators.
fn phase1_attrs() -> impl Iterator<Item = AttrSpec> {
    let t = AttrSpec::required("t", AttrKind::Int, "Index of this update (from 1), for bias correction.");
    let wd = AttrSpec::required("wd", AttrKind::Float, "Weight decay, added to the normalised step.");
    moment_attrs().into_iter().chain([t, bias_correction_attr(), wd, rescale_attr(), clip_attr()])
}

/// The attributes of both phase-2 operators.
fn phase2_attrs() -> impl Iterator<Item = AttrSpec> {
    [lr_attr()].into_iter().chain(bound_attrs())
}

fn phase1(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = Phase1::new(ctx.attrs, ctx.attrs.float("wd")?, ctx.attrs.int("t")?)?;
    match ins {
        [w, g, mean, var] => p.run(ctx.req[0], w, g, mean, var, &outs[0]),
        [_, g, mean, var, w32] => p.run_mp(ctx.req[0], w32, g, mean, var, &outs[0]),
        _ => Err(Error::Invalid(format!("expects 4 or 5 inputs, got {}", ins.len()))),
    }
}

/// The step of phase 2 from the attributes and the norm inputs `r1`, `r2`.
fn phase2_step(a: &Attrs, r1: &NDArray, r2: &NDArray) -> Result<f64> {
    let ratio =
        trust_ratio(r1.to_scalar()?, r2.to_scalar()?, a.float("lower_bound")?, a.float("upper_bound")?);
    Ok(a.float("lr")? * ratio)
}

fn phase2(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let step = phase2_step(ctx.attrs, &ins[2], &ins[3])?;
    descend(step, ctx.req[0], &ins[0], &ins[1], &outs[0])
}

fn mp_phase2(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let step = phase2_step(ctx.attrs, &ins[2], &ins[3])?;
    descend_mp(step, ctx.req[0], &ins[4], &ins[1], &outs[0])
}

/// Dtypes of `mp_lamb_update_phase1`: weight and grad share one dtype,
/// mean, var, weight32 and the output are float32.
fn mp_phase1_dtype(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    mp_dtype(&[2, 3, 4])(attrs, ins, &mut [None])?;
    match outs[0] {
        Some(d) if d != DType::F32 => Err(Error::DType(format!("the output is float32, got {d}"))),
        _ => {
            outs[0] = Some(DType::F32);
            Ok(())
        }
    }
}

/// An operator with fixed arguments and one output.
fn lamb_op(name: &str, doc: &str, args: &[&str], attrs: impl IntoIterator<Item = AttrSpec>) -> OpDef {
    let def = OpDef::new(name).doc(doc).arguments(args).outputs(&["output"]);
    attrs.into_iter().fold(def, OpDef::attr)
}

pub(super) fn register() {
    registry::register(
        lamb_op(
            "lamb_update_phase1",
            "LAMB, phase 1: g = clip(rescale_grad*grad); mean = beta1*mean + (1-beta1)*g; \
             var = beta2*var + (1-beta2)*g^2; returns mean'/(sqrt(var') + epsilon) + wd*weight, where \
             mean' and var' are bias-corrected by 1-beta^t when bias_correction is set. Updates `mean` \
             and `var` in place.",
            &["weight", "grad", "mean", "var"],
            phase1_attrs(),
        )
        .mutate_inputs(|_| vec![2, 3])
        .forward(phase1),
    );
    registry::register(
        lamb_op(
            "lamb_update_phase2",
            "LAMB, phase 2: weight = weight - lr*(r1/r2)*g, where g is phase 1's output, r1 the weight's \
             norm (limited to [lower_bound, upper_bound] where those are >= 0) and r2 g's norm; the ratio \
             is 1 when either norm is 0. Returns the new weight.",
            &["weight", "g", "r1", "r2"],
            phase2_attrs(),
        )
        .inplace(&[(0, 0)])
        .infer_shape(shape_with_scalars(&[2, 3]))
        .forward(phase2),
    );
    registry::register(
        lamb_op(
            "mp_lamb_update_phase1",
            "Multi-precision LAMB, phase 1: lamb_update_phase1's formula on the float32 master copy \
             `weight32` (for the wd term) with float32 `mean` and `var` (updated in place) and the gradient \
             widened to float32; returns the float32 step g. The weight itself is not read.",
            &["weight", "grad", "mean", "var", "weight32"],
            phase1_attrs(),
        )
        .mutate_inputs(|_| vec![2, 3])
        .infer_type(mp_phase1_dtype)
        .forward(phase1),
    );
    registry::register(
        lamb_op(
            "mp_lamb_update_phase2",
            "Multi-precision LAMB, phase 2: weight32 = weight32 - lr*(r1/r2)*g in place (float32 g, r1, r2 \
             and weight32; r1 limited to [lower_bound, upper_bound] where those are >= 0, ratio 1 when \
             either norm is 0); returns the new master copy rounded to the weight's dtype.",
            &["weight", "g", "r1", "r2", "weight32"],
            phase2_attrs(),
        )
        .mutate_inputs(|_| vec![4])
        .inplace(&[(0, 0)])
        .infer_shape(shape_with_scalars(&[2, 3]))
        .infer_type(mp_dtype(&[1, 2, 3, 4]))
        .forward(mp_phase2),
    );
}
