//! Multi-tensor AdamW: `_multi_adamw_update` and `_multi_mp_adamw_update`
//! (MXNet's contrib operators; Python's `mx.nd.contrib.multi_adamw_update`
//! and `multi_mp_adamw_update` wrap them).
//!
//! Inputs `weight_i, grad_i, mean_i, var_i` (plus the float32 master copy
//! `weight32_i` in the `mp_` form, whose `mean_i` and `var_i` are float32)
//! per weight, then one `rescale_grad` array shared by all; the tuples
//! `lrs`, `wds` and `etas` hold each weight's rates. Each weight follows
//! `_adamw_update`'s formula ([`super::adam`]); when `rescale_grad` holds 0,
//! NaN or an infinity no weight is updated.

use super::adam::{adamw_scale, adamw_step, beta1_attr, beta2_attr, epsilon_attr, skip_step, Rates};
use super::clip_attr;
use super::multi_tensor::{prepare_tuples, tuple_attr, tuples, Groups, Tail};
use oxnet_core::{registry, Error, NDArray, OpContext, OpDef, Result};

/// The attributes holding one value per weight.
const RATES: [&str; 3] = ["lrs", "wds", "etas"];

/// The trailing input.
const TAIL: &[Tail] = &[Tail::Scale("rescale_grad")];

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (groups, scale) = ins.split_at(ins.len() - 1);
    let stride = groups.len() / outs.len();
    let Some(scale) = adamw_scale(&scale[0])? else {
        for (i, out) in outs.iter().enumerate() {
            skip_step(ctx.req[i], &groups[i * stride], out)?;
        }
        return Ok(());
    };
    let rates = tuples(ctx.attrs, "num_weights", RATES)?;
    let [lrs, wds, etas] = &*rates;
    for (i, out) in outs.iter().enumerate() {
        let r = Rates { lr: lrs[i], wd: wds[i], eta: etas[i] };
        adamw_step(ctx.attrs, r, scale, ctx.req[i], &groups[i * stride..(i + 1) * stride], out)
            .map_err(|e| Error::Invalid(format!("weight {i}: {e}")))?;
    }
    Ok(())
}

fn multi_adamw_op(name: &str, doc: &str, groups: Groups) -> OpDef {
    groups
        .def(name, doc)
        .attr(tuple_attr("lrs", "Learning rates"))
        .attr(beta1_attr())
        .attr(beta2_attr())
        .attr(epsilon_attr())
        .attr(tuple_attr("wds", "Weight decays"))
        .attr(tuple_attr("etas", "Learning-rate schedule multipliers"))
        .attr(clip_attr())
        .prepare(prepare_tuples("num_weights", RATES))
        .forward(forward)
}

pub(super) fn register() {
    registry::register(multi_adamw_op(
        "_multi_adamw_update",
        "AdamW over several weights in one call: with g = clip(rescale_grad*grad_i), mean_i = beta1*mean_i + \
         (1-beta1)*g, var_i = beta2*var_i + (1-beta2)*g^2 and weight_i = weight_i - etas[i]*(lrs[i]*mean_i/\
         (sqrt(var_i) + epsilon) + wds[i]*weight_i). Inputs weight_i, grad_i, mean_i, var_i per weight, then \
         the one-element rescale_grad array; when it holds 0, NaN or an infinity nothing is updated.",
        Groups {
            count: "num_weights",
            names: &["weight", "grad", "mean", "var"],
            low: 4,
            mutated: &[2, 3],
            tail: TAIL,
        },
    ));
    registry::register(multi_adamw_op(
        "_multi_mp_adamw_update",
        "Multi-precision _multi_adamw_update: the formula runs on each weight's float32 master copy weight32_i \
         with float32 mean_i and var_i (all updated in place); output i is the new weight rounded to its dtype. \
         Inputs weight_i, grad_i, mean_i, var_i, weight32_i per weight, then rescale_grad.",
        Groups {
            count: "num_weights",
            names: &["weight", "grad", "mean", "var", "weight32"],
            low: 2,
            mutated: &[2, 3, 4],
            tail: TAIL,
        },
    ));
}
