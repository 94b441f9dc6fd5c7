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

use super::kernel::{cst, floats, rescaled, update_elementwise};
use super::{clip_attr, lr_attr, rescale_attr, shape_with_scalars};
use num_traits::One;
use oxnet_core::{registry, AttrKind, AttrSpec, FloatElement, NDArray, OpContext, OpDef, Result};

fn phase1(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    let t = a.int("t")?;
    let correct = a.bool("bias_correction")?;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [beta1, beta2, eps, wd, rs, cg]: [C; 6] =
            floats(a, ["beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_gradient"])?;
        let t = t.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let (c1, c2): (C, C) = if correct {
            (C::one() - beta1.powi(t), C::one() - beta2.powi(t))
        } else {
            (C::one(), C::one())
        };
        update_elementwise::<T, T, 2>(ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3]], ["mean", "var"], &outs[0], move |w, g, s| {
            let gr = rescaled(g, rs, cg);
            let [mean, var] = s;
            *mean = beta1 * *mean + (C::one() - beta1) * gr;
            *var = beta2 * *var + (C::one() - beta2) * gr * gr;
            (*mean / c1) / ((*var / c2).sqrt() + eps) + wd * w
        })
    })
}

fn phase2(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    let (mut r1, r2) = (ins[2].to_scalar()?, ins[3].to_scalar()?);
    let (lower, upper) = (a.float("lower_bound")?, a.float("upper_bound")?);
    if lower >= 0.0 {
        r1 = r1.max(lower);
    }
    if upper >= 0.0 {
        r1 = r1.min(upper);
    }
    let ratio = if r1 == 0.0 || r2 == 0.0 { 1.0 } else { r1 / r2 };
    let step = a.float("lr")? * ratio;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        let step: <T as FloatElement>::Compute = cst(step);
        update_elementwise::<T, T, 0>(ctx.req[0], &ins[0], &ins[1], [], [], &outs[0], move |w, g, _| w - step * g)
    })
}

pub(super) fn register() {
    registry::register(
        OpDef::new("lamb_update_phase1")
            .doc(
                "LAMB, phase 1: g = clip(rescale_grad*grad); mean = beta1*mean + (1-beta1)*g; \
                 var = beta2*var + (1-beta2)*g^2; returns mean'/(sqrt(var') + epsilon) + wd*weight, where \
                 mean' and var' are bias-corrected by 1-beta^t when bias_correction is set. Updates `mean` \
                 and `var` in place.",
            )
            .arguments(&["weight", "grad", "mean", "var"])
            .outputs(&["output"])
            .mutate_inputs(|_| vec![2, 3])
            .attr(AttrSpec::optional("beta1", AttrKind::Float, 0.9, "The decay rate of the first moment."))
            .attr(AttrSpec::optional("beta2", AttrKind::Float, 0.999, "The decay rate of the second moment."))
            .attr(AttrSpec::optional(
                "epsilon",
                AttrKind::Float,
                1e-6,
                "A small constant for numerical stability.",
            ))
            .attr(AttrSpec::required(
                "t",
                AttrKind::Int,
                "Index of this update (from 1), for bias correction.",
            ))
            .attr(AttrSpec::optional(
                "bias_correction",
                AttrKind::Bool,
                true,
                "Whether to correct the moments' bias.",
            ))
            .attr(AttrSpec::required("wd", AttrKind::Float, "Weight decay, added to the normalised step."))
            .attr(rescale_attr())
            .attr(clip_attr())
            .forward(phase1),
    );
    registry::register(
        OpDef::new("lamb_update_phase2")
            .doc(
                "LAMB, phase 2: weight = weight - lr*(r1/r2)*g, where g is phase 1's output, r1 the weight's \
                 norm (limited to [lower_bound, upper_bound] where those are >= 0) and r2 g's norm; the ratio \
                 is 1 when either norm is 0. Returns the new weight.",
            )
            .arguments(&["weight", "g", "r1", "r2"])
            .outputs(&["output"])
            .inplace(&[(0, 0)])
            .attr(lr_attr())
            .attr(AttrSpec::optional("lower_bound", AttrKind::Float, -1.0, "Lower limit of r1 (off when negative)."))
            .attr(AttrSpec::optional("upper_bound", AttrKind::Float, -1.0, "Upper limit of r1 (off when negative)."))
            .infer_shape(shape_with_scalars(&[2, 3]))
            .forward(phase2),
    );
}
