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

use super::sgd::{run, Momentum, Sgd};
use super::{clip_attr, rescale_attr};
use crate::util::parse_floats;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, NDArray, OpContext, OpDef, Result};
use std::sync::Arc;

/// The parsed per-weight learning rates and weight decays.
pub(crate) struct PerWeight {
    pub(crate) lrs: Vec<f64>,
    pub(crate) wds: Vec<f64>,
}

fn num_weights(attrs: &Attrs) -> Result<usize> {
    let n = attrs.int("num_weights")?;
    if n < 1 {
        return Err(Error::attr("num_weights", format!("must be at least 1, got {n}")));
    }
    Ok(n as usize)
}

pub(crate) fn per_weight(attrs: &Attrs) -> Result<PerWeight> {
    let n = num_weights(attrs)?;
    let lrs = parse_floats("lrs", attrs.str("lrs")?)?;
    let wds = parse_floats("wds", attrs.str("wds")?)?;
    for (name, v) in [("lrs", &lrs), ("wds", &wds)] {
        if v.len() != n {
            return Err(Error::attr(name, format!("holds {} values for num_weights = {n}", v.len())));
        }
    }
    Ok(PerWeight { lrs, wds })
}

/// Per-group shape inference: each group's inputs and its output share a shape.
fn infer_shape(stride: usize) -> impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> {
    move |_, ins, outs| {
        for (i, out) in outs.iter_mut().enumerate() {
            let group = &mut ins[i * stride..(i + 1) * stride];
            if group.iter().all(|s| s.is_none()) && out.is_none() {
                continue;
            }
            oxnet_core::op::same_shape(&Attrs::empty(), group, std::slice::from_mut(out))
                .map_err(|e| Error::Shape(format!("weight {i}: {e}")))?;
        }
        Ok(())
    }
}

/// Per-group dtype inference: the first `low` inputs of a group and its
/// output share a dtype; the rest of the group is float32.
fn infer_type(
    stride: usize,
    low: usize,
) -> impl Fn(&Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> {
    move |_, ins, outs| {
        for (i, out) in outs.iter_mut().enumerate() {
            let group = &mut ins[i * stride..(i + 1) * stride];
            for (j, d) in group.iter_mut().enumerate().skip(low) {
                match d {
                    Some(have) if *have != DType::F32 => {
                        return Err(Error::DType(format!(
                            "weight {i}: input {} is a float32 state or master copy, got {have}",
                            i * stride + j
                        )))
                    }
                    _ => *d = Some(DType::F32),
                }
            }
            if group[..low].iter().all(|d| d.is_none()) && out.is_none() {
                continue;
            }
            oxnet_core::op::same_dtype(&Attrs::empty(), &mut group[..low], std::slice::from_mut(out))
                .map_err(|e| Error::DType(format!("weight {i}: {e}")))?;
        }
        Ok(())
    }
}

/// The group layout of each operator.
#[derive(Clone, Copy)]
struct Layout {
    momentum: bool,
    mp: bool,
}

impl Layout {
    fn stride(self) -> usize {
        2 + self.momentum as usize + self.mp as usize
    }

    fn names(self) -> Vec<&'static str> {
        let mut v = vec!["weight", "grad"];
        if self.momentum {
            v.push("mom");
        }
        if self.mp {
            v.push("weight32");
        }
        v
    }

    fn mutated(self) -> Vec<usize> {
        (2..self.stride()).collect()
    }
}

fn forward(layout: Layout, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let parsed;
    let pw = match ctx.attrs.prepared::<PerWeight>() {
        Some(p) => p,
        None => {
            parsed = per_weight(ctx.attrs)?;
            &parsed
        }
    };
    let a = ctx.attrs;
    let (rescale, clip) = (a.float("rescale_grad")?, a.float("clip_gradient")?);
    let momentum = if layout.momentum { a.float("momentum")? } else { 0.0 };
    let stride = layout.stride();
    for (i, out) in outs.iter().enumerate() {
        let g = &ins[i * stride..(i + 1) * stride];
        let p = Sgd { lr: pw.lrs[i], wd: pw.wds[i], rescale, clip, momentum };
        let mom = layout.momentum.then(|| &g[2]);
        let w32 = layout.mp.then(|| &g[stride - 1]);
        run::<Momentum>(p, ctx.req[i], &g[0], &g[1], mom, w32, out)
            .map_err(|e| Error::Invalid(format!("weight {i}: {e}")))?;
    }
    Ok(())
}

/// Weights of one multi-tensor call whose output may be the weight's own
/// buffer without a temporary (the in-place pairs are declared up front,
/// while `num_weights` is an attribute); later ones still work, through a
/// temporary. MXNet's Trainer aggregates at most 60 weights per call.
const IN_PLACE_WEIGHTS: usize = 64;

fn multi_op(name: &str, doc: &str, layout: Layout) -> OpDef {
    let stride = layout.stride();
    let in_place: Vec<(usize, usize)> = (0..IN_PLACE_WEIGHTS).map(|i| (i * stride, i)).collect();
    let names = layout.names();
    let mut def = OpDef::new(name)
        .doc(doc)
        .attr(AttrSpec::required("lrs", AttrKind::Str, "Learning rates, one per weight (a tuple of floats)."))
        .attr(AttrSpec::required("wds", AttrKind::Str, "Weight decays, one per weight (a tuple of floats)."));
    if layout.momentum {
        def = def.attr(super::momentum_attr());
    }
    def.attr(rescale_attr())
        .attr(clip_attr())
        .attr(AttrSpec::optional("num_weights", AttrKind::Int, 1i64, "Number of updated weights."))
        .inplace(&in_place)
        .arguments_fn(move |attrs| {
            let n = num_weights(attrs)?;
            Ok((0..n).flat_map(|i| names.iter().map(move |s| format!("{s}_{i}"))).collect())
        })
        .outputs_fn(|attrs| Ok((0..num_weights(attrs)?).map(|i| format!("output_{i}")).collect()))
        .arity_fn(move |attrs| {
            let n = num_weights(attrs)?;
            Ok([n * stride, 0, n])
        })
        .mutate_inputs(move |attrs| {
            let n = num_weights(attrs).unwrap_or(0);
            (0..n).flat_map(|i| layout.mutated().into_iter().map(move |j| i * stride + j)).collect()
        })
        .prepare(|attrs| Ok(Arc::new(per_weight(attrs)?)))
        .infer_shape(infer_shape(stride))
        .infer_type(infer_type(stride, if layout.mp { 2 } else { stride }))
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
