//! `_sample_multinomial`: draws category indices from the discrete
//! distributions in the last axis of `data`, and optionally the log
//! probabilities of the draws, whose gradient flows back into `data`.

use super::{set_shape, shape_attr, store_f64, values_f64};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, NDArray, OpDef, Result, Shape};
use rand::Rng;
use std::sync::Arc;

/// The dtypes the drawn indices may take.
const INDEX_DTYPES: [DType; 5] = [DType::U8, DType::I32, DType::F16, DType::F32, DType::F64];

fn out_dtype(attrs: &Attrs) -> Result<DType> {
    match attrs.dtype("dtype")? {
        None => Ok(DType::I32),
        Some(dt) if INDEX_DTYPES.contains(&dt) => Ok(dt),
        Some(other) => Err(Error::attr(
            "dtype",
            format!("must be one of uint8, int32, float16, float32, float64, got {other}"),
        )),
    }
}

/// Largest category count whose indices `dtype` holds exactly.
fn max_categories(dtype: DType) -> u64 {
    match dtype {
        DType::U8 => 1 << 8,
        DType::F16 => 1 << 11,
        DType::F32 => 1 << 24,
        _ => 1 << 31,
    }
}

/// Output shape: `data.shape[:-1] + shape`.
fn output_shape(data: &[usize], attrs: &Attrs) -> Result<Shape> {
    let Some((&k, batch)) = data.split_last() else {
        return Err(Error::Shape("data must have at least one axis (the categories)".into()));
    };
    let dt = out_dtype(attrs)?;
    if k as u64 > max_categories(dt) {
        return Err(Error::attr(
            "dtype",
            format!("{dt} cannot represent the indices of {k} categories exactly; use a wider dtype"),
        ));
    }
    let mut s: Shape = batch.iter().copied().collect();
    s.extend(shape_attr(attrs)?.unwrap_or_default());
    Ok(s)
}

fn forward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let data = &inputs[0];
    let k = *data.shape().last().unwrap_or(&1);
    let probs = values_f64(data)?;
    let n_dist = probs.len().checked_div(k).unwrap_or(0);
    let per = outputs[0].size().checked_div(n_dist).unwrap_or(0);
    if k == 0 && outputs[0].size() > 0 {
        return Err(Error::Shape("data has no categories to draw from".into()));
    }
    let mut idx = vec![0usize; outputs[0].size()];
    ctx.with_rng(|rng| {
        for (d, chunk) in idx.chunks_mut(per.max(1)).enumerate().take(n_dist) {
            let row = &probs[d * k..(d + 1) * k];
            let mut cum = Vec::with_capacity(k);
            let mut acc = 0.0;
            for &p in row {
                acc += p;
                cum.push(acc);
            }
            for slot in chunk.iter_mut() {
                let u: f64 = rng.random();
                *slot = cum.partition_point(|&c| c <= u).min(k - 1);
            }
        }
    });
    let as_f64: Vec<f64> = idx.iter().map(|&i| i as f64).collect();
    store_f64(&outputs[0], ctx.req[0], &as_f64)?;
    if outputs.len() > 1 {
        let logp: Vec<f64> =
            idx.iter().enumerate().map(|(j, &i)| probs[(j / per.max(1)) * k + i].ln()).collect();
        store_f64(&outputs[1], ctx.req[1], &logp)?;
    }
    Ok(())
}

/// `_backward_sample_multinomial`: `d data[y] += d logp / data[y]` for
/// every draw `y`.
fn backward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (ograd, data, samples) = (&inputs[0], &inputs[1], &inputs[2]);
    let k = *data.shape().last().unwrap_or(&1);
    let probs = values_f64(data)?;
    let g = values_f64(ograd)?;
    let ys = values_f64(samples)?;
    let n_dist = probs.len().checked_div(k).unwrap_or(0);
    let per = ys.len().checked_div(n_dist).unwrap_or(0);
    let mut dx = vec![0.0; probs.len()];
    for (j, (&y, &gj)) in ys.iter().zip(&g).enumerate() {
        let at = (j / per.max(1)) * k + y as usize;
        dx[at] += gj / probs[at];
    }
    store_f64(&outputs[0], ctx.req[0], &dx)
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_sample_multinomial")
            .doc(
                "Draws category indices from the discrete distributions in the last axis of `data` \
                 (probabilities, each row summing to 1): the output has data's shape without its \
                 last axis, followed by `shape`. With `get_prob`, a second output holds the log \
                 probability of each draw; its gradient flows into `data` (a REINFORCE-style \
                 estimator). Draws come from oxnet's global generator.",
            )
            .alias("sample_multinomial")
            .arguments(&["data"])
            .attr(AttrSpec::optional(
                "shape",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Shape of the draws per distribution.",
            ))
            .attr(AttrSpec::optional(
                "get_prob",
                AttrKind::Bool,
                false,
                "Also output the log probability of each draw.",
            ))
            .attr(AttrSpec::optional(
                "dtype",
                AttrKind::DType,
                DType::I32,
                "Dtype of the indices: uint8, int32, float16, float32 or float64.",
            ))
            .outputs_fn(|attrs| {
                Ok(if attrs.bool("get_prob")? {
                    vec!["output".into(), "prob".into()]
                } else {
                    vec!["output".into()]
                })
            })
            .arity_fn(|attrs| Ok([1, 0, if attrs.bool("get_prob")? { 2 } else { 1 }]))
            .prepare(|attrs| {
                out_dtype(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(|attrs, ins, outs| {
                let Some(data) = ins[0].clone() else { return Ok(()) };
                let s = output_shape(&data, attrs)?;
                for o in outs.iter_mut() {
                    set_shape(o, s.clone(), "the output")?;
                }
                Ok(())
            })
            .infer_type(|attrs, ins, outs| {
                let dt = *ins[0].get_or_insert(DType::F32);
                if !dt.is_float() {
                    return Err(Error::DType(format!("data must hold float probabilities, got {dt}")));
                }
                outs[0] = Some(out_dtype(attrs)?);
                if outs.len() > 1 {
                    outs[1] = Some(dt);
                }
                Ok(())
            })
            .resource(oxnet_core::Resource::Random)
            .forward(forward)
            .grad_rule(|g| {
                if !g.needs_grad[0] || g.outputs.len() < 2 {
                    return Ok(vec![None]);
                }
                let dx = crate::util::call(
                    "_backward_sample_multinomial",
                    &[&g.out_grads[1], &g.inputs[0], &g.outputs[0]],
                    &[],
                )?;
                Ok(vec![Some(dx)])
            }),
    );
    registry::register(
        OpDef::new("_backward_sample_multinomial")
            .doc("Gradient of _sample_multinomial's log probabilities: adds d logp / data[y] at each draw y.")
            .arguments(&["ograd", "data", "samples"])
            .infer_shape(|_attrs, ins, outs| {
                let Some(data) = ins[1].clone() else { return Ok(()) };
                set_shape(&mut outs[0], data, "the gradient")
            })
            .infer_type(|_attrs, ins, outs| {
                outs[0] = ins[1].or(Some(DType::F32));
                Ok(())
            })
            .forward(backward),
    );
}
