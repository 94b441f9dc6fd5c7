//! Samplers with parameter arrays: `_sample_<dist>` draws, for every
//! element of its (equally shaped) parameter arrays, `shape` samples from
//! the distribution with those parameters; the output has the parameters'
//! shape followed by `shape`.

use super::dists::{Family, Strictness, FAMILIES};
use super::{float_dtype, float_dtype_spec, infer_out_dtype, set_shape, shape_attr, store_f64, values_f64};
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, OpDef, Result, Shape};
use std::sync::Arc;

fn register_family(family: &'static Family) {
    let name: &'static str = Box::leak(format!("_sample_{}", family.name).into_boxed_str());
    let n_params = family.array_params.len();
    registry::register(
        OpDef::new(name)
            .doc(&format!(
                "Draws samples from {} for every element of the parameter arrays ({}, all of one \
                 shape): the output has the parameters' shape followed by `shape` (float32 unless \
                 `dtype` says otherwise). Draws come from oxnet's global generator.",
                family.about,
                family.array_params.join(", ")
            ))
            .alias(&format!("sample_{}", family.name))
            .arguments(family.array_params)
            .attr(AttrSpec::optional(
                "shape",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Shape of the samples drawn per parameter element.",
            ))
            .attr(float_dtype_spec())
            .prepare(|attrs| {
                float_dtype(attrs)?;
                shape_attr(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(move |attrs, ins, outs| {
                let Some(params) = ins.iter().flatten().next().cloned() else {
                    return Ok(());
                };
                for (i, slot) in ins.iter_mut().enumerate() {
                    set_shape(slot, params.clone(), &format!("parameter `{}`", family.array_params[i]))?;
                }
                let mut out: Shape = params;
                out.extend(shape_attr(attrs)?.unwrap_or_default());
                set_shape(&mut outs[0], out, "the output")
            })
            .infer_type(move |attrs, ins, outs| {
                let known = ins.iter().flatten().next().copied().unwrap_or(DType::F32);
                for (i, slot) in ins.iter_mut().enumerate() {
                    let dt = *slot.get_or_insert(known);
                    if !dt.is_float() {
                        return Err(Error::DType(format!(
                            "parameter `{}` must have a float dtype, got {dt}",
                            family.array_params[i]
                        )));
                    }
                }
                infer_out_dtype(outs, float_dtype(attrs)?, DType::F32)
            })
            .resource(oxnet_core::Resource::Random)
            .forward(move |ctx, inputs, outputs| {
                let params = inputs.iter().map(values_f64).collect::<Result<Vec<_>>>()?;
                let n = inputs[0].size();
                let per = outputs[0].size().checked_div(n).unwrap_or(0);
                let mut dists = Vec::with_capacity(n);
                let mut values = vec![0.0; n_params];
                for i in 0..n {
                    for (v, p) in values.iter_mut().zip(&params) {
                        *v = p[i];
                    }
                    let dist = (family.build)(&values);
                    dist.check(family.array_params, Strictness::Array)?;
                    dists.push(dist.sampler());
                }
                let mut draws = vec![0.0; outputs[0].size()];
                ctx.with_rng(|rng| {
                    for (sampler, chunk) in dists.iter().zip(draws.chunks_mut(per.max(1))) {
                        sampler.fill(rng, chunk);
                    }
                });
                store_f64(&outputs[0], ctx.req[0], &draws)
            })
            .zero_grad(),
    );
}

/// Registers `_sample_<dist>` for every family.
pub(super) fn register() {
    for family in FAMILIES.iter() {
        register_family(family);
    }
}
