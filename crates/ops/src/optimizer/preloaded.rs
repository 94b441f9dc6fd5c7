//! Multi-tensor SGD with the learning rates and weight decays as arrays:
//! `preloaded_multi_sgd_update`, `preloaded_multi_sgd_mom_update`,
//! `preloaded_multi_mp_sgd_update`, `preloaded_multi_mp_sgd_mom_update`.
//!
//! The same groups and formulas as the `multi_*sgd*` operators
//! ([`super::multi`]), but instead of the `lrs` and `wds` attributes the
//! last two inputs are float32 vectors `lrs` and `wds` of `num_weights`
//! values, so that a schedule can change them without new attributes.

use super::multi::{run_groups, Layout};
use super::multi_tensor::Tail;
use oxnet_core::{registry, Error, NDArray, OpContext, OpDef, Result};

/// The trailing inputs of every preloaded operator.
const TAIL: &[Tail] = &[Tail::PerTensor("lrs"), Tail::PerTensor("wds")];

fn forward(layout: Layout, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let n = outs.len();
    let (lrs, wds) = (ins[ins.len() - 2].to_vec::<f64>()?, ins[ins.len() - 1].to_vec::<f64>()?);
    for (name, v) in [("lrs", &lrs), ("wds", &wds)] {
        if v.len() != n {
            return Err(Error::Shape(format!("`{name}` holds {} values for num_weights = {n}", v.len())));
        }
    }
    run_groups(layout, ctx, &ins[..ins.len() - 2], outs, &lrs, &wds)
}

fn preloaded_op(name: &str, doc: &str, layout: Layout) -> OpDef {
    layout.def(name, doc, TAIL).forward(move |ctx, ins, outs| forward(layout, ctx, ins, outs))
}

pub(super) fn register() {
    registry::register(preloaded_op(
        "preloaded_multi_sgd_update",
        "SGD over several weights in one call, rates from arrays: weight_i = weight_i - lrs[i]*wds[i]*weight_i \
         - lrs[i]*clip(rescale_grad*grad_i). Inputs weight_0, grad_0, weight_1, grad_1, ..., then the float32 \
         vectors lrs and wds (num_weights values each); output i is the new weight i.",
        Layout { momentum: false, mp: false },
    ));
    registry::register(preloaded_op(
        "preloaded_multi_sgd_mom_update",
        "SGD with momentum over several weights in one call, rates from arrays: mom_i = momentum*mom_i - \
         lrs[i]*wds[i]*weight_i - lrs[i]*clip(rescale_grad*grad_i); weight_i += mom_i. Inputs weight_i, grad_i, \
         mom_i per weight, then the float32 vectors lrs and wds; mom_i is updated in place.",
        Layout { momentum: true, mp: false },
    ));
    registry::register(preloaded_op(
        "preloaded_multi_mp_sgd_update",
        "Multi-precision preloaded_multi_sgd_update: each weight's float32 master copy weight32_i is updated in \
         place and rounded into the output. Inputs weight_i, grad_i, weight32_i per weight, then lrs and wds.",
        Layout { momentum: false, mp: true },
    ));
    registry::register(preloaded_op(
        "preloaded_multi_mp_sgd_mom_update",
        "Multi-precision preloaded_multi_sgd_mom_update: float32 mom_i and master copy weight32_i are updated in \
         place; the output is the new weight rounded to its dtype. Inputs weight_i, grad_i, mom_i, weight32_i \
         per weight, then lrs and wds.",
        Layout { momentum: true, mp: true },
    ));
}
