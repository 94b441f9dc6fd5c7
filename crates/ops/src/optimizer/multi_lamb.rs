//! Multi-tensor LAMB: `_multi_lamb_update` and `_multi_mp_lamb_update`
//! (Python's `mx.nd.contrib.multi_lamb_update` and `multi_mp_lamb_update`
//! wrap them).
//!
//! Inputs `weight_i, grad_i, mean_i, var_i` (plus the float32 master copy
//! `weight32_i` in the `mp_` form, whose `mean_i` and `var_i` are float32)
//! per tensor; the tuples `learning_rates`, `wds` and `step_count` hold
//! each tensor's rate, weight decay and update index. Each tensor takes
//! both LAMB phases ([`super::lamb`]) in one call: phase 1's step `g` goes
//! to a temporary, `r1` is the norm of the weight input (the low-precision
//! weight in the `mp_` form, as in MXNet), `r2` that of `g`, and the weight
//! (or master copy) descends by `learning_rates[i] * ratio * g`.
//!
//! Norms are accumulated in float64. (MXNet 1.9.1 sums the squares in
//! float32 and, for float16 weights, rounds each square to float16, so its
//! `r1` of the `mp_` form is off by up to ~1e-4 relative; it also caps a
//! call at 45 tensors, which oxnet does not.)

use super::lamb::{
    bias_correction_attr, bound_attrs, descend, descend_mp, moment_attrs, trust_ratio, Phase1,
};
use super::multi_tensor::{prepare_tuples, tuple_attr, tuples, Groups};
use super::{clip_attr, rescale_attr};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, NDArray, OpContext, OpDef, Req, Result};

/// The attributes holding one float per tensor.
const RATES: [&str; 2] = ["learning_rates", "wds"];

/// The `step_count` attribute, checked against `num_tensors`.
fn step_counts(a: &Attrs, n: usize) -> Result<&[i64]> {
    let steps = a.ints("step_count")?;
    if steps.len() != n {
        return Err(Error::attr("step_count", format!("holds {} values for num_tensors = {n}", steps.len())));
    }
    Ok(steps)
}

/// The Euclidean norm of `x`.
fn norm(x: &NDArray) -> Result<f64> {
    Ok(super::lars::sum_sq(x)?.sqrt())
}

/// Both phases for one tensor: `group` is `weight, grad, mean, var` (then
/// `weight32` in the multi-precision form).
fn update_one(a: &Attrs, p: Phase1, lr: f64, req: Req, group: &[NDArray], out: &NDArray) -> Result<()> {
    let (weight, grad, mean, var) = (&group[0], &group[1], &group[2], &group[3]);
    let master = group.get(4);
    let step_dtype = if master.is_some() { DType::F32 } else { weight.dtype() };
    let g = NDArray::empty(weight.shape(), step_dtype, weight.device())?;
    match master {
        Some(w32) => p.run_mp(Req::Write, w32, grad, mean, var, &g)?,
        None => p.run(Req::Write, weight, grad, mean, var, &g)?,
    }
    let ratio = trust_ratio(norm(weight)?, norm(&g)?, a.float("lower_bound")?, a.float("upper_bound")?);
    match master {
        Some(w32) => descend_mp(lr * ratio, req, w32, &g, out),
        None => descend(lr * ratio, req, weight, &g, out),
    }
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    let rates = tuples(a, "num_tensors", RATES)?;
    let [lrs, wds] = &*rates;
    let steps = step_counts(a, outs.len())?;
    let stride = ins.len() / outs.len();
    for (i, out) in outs.iter().enumerate() {
        let p = Phase1::new(a, wds[i], steps[i])?;
        update_one(a, p, lrs[i], ctx.req[i], &ins[i * stride..(i + 1) * stride], out)
            .map_err(|e| Error::Invalid(format!("tensor {i}: {e}")))?;
    }
    Ok(())
}

fn multi_lamb_op(name: &str, doc: &str, groups: Groups) -> OpDef {
    let steps =
        AttrSpec::required("step_count", AttrKind::Ints, "Index of this update (from 1) for each tensor.");
    let def = groups
        .def(name, doc)
        .attr(tuple_attr("learning_rates", "Learning rates"))
        .attr(tuple_attr("wds", "Weight decays, added to the normalised step"));
    moment_attrs()
        .into_iter()
        .chain([rescale_attr()])
        .chain(bound_attrs())
        .chain([clip_attr(), bias_correction_attr(), steps])
        .fold(def, OpDef::attr)
        .prepare(prepare_tuples("num_tensors", RATES))
        .forward(forward)
}

pub(super) fn register() {
    registry::register(multi_lamb_op(
        "_multi_lamb_update",
        "LAMB over several tensors in one call: per tensor i, phase 1 (lamb_update_phase1 with t = \
         step_count[i] and wd = wds[i]) gives g, then weight_i = weight_i - learning_rates[i]*(r1/r2)*g with \
         r1 = |weight_i| (limited to [lower_bound, upper_bound] where those are >= 0), r2 = |g| and ratio 1 \
         when either is 0. Inputs weight_i, grad_i, mean_i, var_i per tensor; mean_i and var_i are updated \
         in place.",
        Groups {
            count: "num_tensors",
            names: &["weight", "grad", "mean", "var"],
            low: 4,
            mutated: &[2, 3],
            tail: &[],
        },
    ));
    registry::register(multi_lamb_op(
        "_multi_mp_lamb_update",
        "Multi-precision _multi_lamb_update: phase 1 and the step run on each tensor's float32 master copy \
         weight32_i with float32 mean_i and var_i (all updated in place); output i is the new weight rounded \
         to its dtype. Inputs weight_i, grad_i, mean_i, var_i, weight32_i per tensor.",
        Groups {
            count: "num_tensors",
            names: &["weight", "grad", "mean", "var", "weight32"],
            low: 2,
            mutated: &[2, 3, 4],
            tail: &[],
        },
    ));
}
