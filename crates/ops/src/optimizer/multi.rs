//! Multi-tensor SGD: `multi_sgd_update`, `multi_sgd_mom_update`,
//! `multi_mp_sgd_update`, `multi_mp_sgd_mom_update` — one call updates
//! `num_weights` weights, each with its own learning rate and weight decay
//! (the tuples `lrs` and `wds`), as MXNet's aggregated SGD does.
//!
//! Inputs come in groups, one per weight: `weight_i, grad_i` (plus `mom_i`
//! with momentum, plus the float32 master copy `weight32_i` in the `mp_`
//! forms); output `i` is the new weight `i`. The formulas are those of
//! `sgd_mom_update` (without momentum: `w = w - lr*wd*w - lr*g`), in the
//! weight's precision or, for `mp_`, on the float32 master copy.

use super::multi_tensor::{prepare_tuples, tuple_attr, tuples, Groups, Tail};
use super::sgd::{run, Momentum, Sgd};
use super::{clip_attr, rescale_attr};
use oxnet_core::{registry, Error, NDArray, OpContext, OpDef, Result};

/// The parsed per-weight learning rates and weight decays (for the GPU kernels).
#[cfg(feature = "cuda")]
pub(crate) struct PerWeight {
    pub(crate) lrs: Vec<f64>,
    pub(crate) wds: Vec<f64>,
}

/// The attributes holding one value per weight.
const RATES: [&str; 2] = ["lrs", "wds"];

/// The `lrs` and `wds` attributes, one value per weight (for the GPU kernels).
#[cfg(feature = "cuda")]
pub(crate) fn per_weight(attrs: &oxnet_core::attrs::Attrs) -> Result<PerWeight> {
    let [lrs, wds] = super::multi_tensor::per_tensor(attrs, "num_weights", RATES)?;
    Ok(PerWeight { lrs, wds })
}

/// The group layout of each operator of the SGD family.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub(super) momentum: bool,
    pub(super) mp: bool,
}

impl Layout {
    /// The groups of this layout, followed by the inputs `tail`.
    pub(super) fn groups(self, tail: &'static [Tail]) -> Groups {
        let (names, low, mutated): (&'static [&'static str], usize, &'static [usize]) =
            match (self.momentum, self.mp) {
                (false, false) => (&["weight", "grad"], 2, &[]),
                (true, false) => (&["weight", "grad", "mom"], 3, &[2]),
                (false, true) => (&["weight", "grad", "weight32"], 2, &[2]),
                (true, true) => (&["weight", "grad", "mom", "weight32"], 2, &[2, 3]),
            };
        Groups { count: "num_weights", names, low, mutated, tail }
    }

    /// The operator skeleton of this layout: groups, `momentum` (with one),
    /// `rescale_grad` and `clip_gradient`.
    pub(super) fn def(self, name: &str, doc: &str, tail: &'static [Tail]) -> OpDef {
        let def = self.groups(tail).def(name, doc);
        let def = if self.momentum { def.attr(super::momentum_attr()) } else { def };
        def.attr(rescale_attr()).attr(clip_attr())
    }
}

/// Updates every group of `ins` into `outs` with weight `i`'s learning rate
/// `lrs[i]` and weight decay `wds[i]`: the formula of `sgd_mom_update`
/// (with a zero momentum when the layout has none).
pub(super) fn run_groups(
    layout: Layout,
    ctx: &OpContext,
    ins: &[NDArray],
    outs: &[NDArray],
    lrs: &[f64],
    wds: &[f64],
) -> Result<()> {
    let a = ctx.attrs;
    let (rescale, clip) = (a.float("rescale_grad")?, a.float("clip_gradient")?);
    let momentum = if layout.momentum { a.float("momentum")? } else { 0.0 };
    let stride = layout.groups(&[]).stride();
    for (i, out) in outs.iter().enumerate() {
        let g = &ins[i * stride..(i + 1) * stride];
        let p = Sgd { lr: lrs[i], wd: wds[i], rescale, clip, momentum };
        let mom = layout.momentum.then(|| &g[2]);
        let w32 = layout.mp.then(|| &g[stride - 1]);
        run::<Momentum>(p, ctx.req[i], &g[0], &g[1], mom, w32, out)
            .map_err(|e| Error::Invalid(format!("weight {i}: {e}")))?;
    }
    Ok(())
}

fn forward(layout: Layout, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let rates = tuples(ctx.attrs, "num_weights", RATES)?;
    let [lrs, wds] = &*rates;
    run_groups(layout, ctx, ins, outs, lrs, wds)
}

fn multi_op(name: &str, doc: &str, layout: Layout) -> OpDef {
    layout
        .def(name, doc, &[])
        .attr(tuple_attr("lrs", "Learning rates"))
        .attr(tuple_attr("wds", "Weight decays"))
        .prepare(prepare_tuples("num_weights", RATES))
        .forward(move |ctx, ins, outs| forward(layout, ctx, ins, outs))
}

pub(super) fn register() {
    registry::register(multi_op(
        "multi_sgd_update",
        "SGD over several weights in one call: weight_i = weight_i - lrs[i]*wds[i]*weight_i - \
         lrs[i]*clip(rescale_grad*grad_i). Inputs weight_0, grad_0, weight_1, grad_1, ...; output i is \
         the new weight i.",
        Layout { momentum: false, mp: false },
    ));
    registry::register(multi_op(
        "multi_sgd_mom_update",
        "SGD with momentum over several weights in one call: mom_i = momentum*mom_i - lrs[i]*wds[i]*weight_i \
         - lrs[i]*clip(rescale_grad*grad_i); weight_i += mom_i. Inputs weight_i, grad_i, mom_i per weight.",
        Layout { momentum: true, mp: false },
    ));
    registry::register(multi_op(
        "multi_mp_sgd_update",
        "Multi-precision multi_sgd_update: each weight's float32 master copy weight32_i is updated in place \
         and rounded into the output. Inputs weight_i, grad_i, weight32_i per weight.",
        Layout { momentum: false, mp: true },
    ));
    registry::register(multi_op(
        "multi_mp_sgd_mom_update",
        "Multi-precision multi_sgd_mom_update: float32 mom_i and master copy weight32_i are updated in place; \
         the output is the new weight rounded to its dtype. Inputs weight_i, grad_i, mom_i, weight32_i.",
        Layout { momentum: true, mp: true },
    ));
}

#[cfg(test)]
mod tests {
    use crate::util::parse_floats;

    #[test]
    fn float_tuples_parse_as_python_prints_them() {
        assert_eq!(parse_floats("lrs", "(0.1, 0.2)").unwrap(), vec![0.1, 0.2]);
        assert_eq!(parse_floats("lrs", "[1e-3]").unwrap(), vec![1e-3]);
        assert_eq!(parse_floats("lrs", "0.5").unwrap(), vec![0.5]);
        assert_eq!(parse_floats("lrs", "[np.float64(0.25), np.float32(2.0)]").unwrap(), vec![0.25, 2.0]);
        let e = parse_floats("wds", "(0.1, x)").unwrap_err().to_string();
        assert!(e.contains("wds") && e.contains("numbers"), "{e}");
    }
}
