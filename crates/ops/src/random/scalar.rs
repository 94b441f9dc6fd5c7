//! Samplers with scalar parameters: `_random_<dist>` draws an array of the
//! attribute `shape`, `_random_<dist>_like` one shaped like its input, and
//! `_random_randint` integers in `[low, high)`.

use super::dists::{Dist, Family, Strictness, FAMILIES};
use super::{float_dtype, float_dtype_spec, infer_out_dtype, set_shape, shape_attr, store_f64};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, DType, Error, OpDef, Req, Result};
use rand::Rng;
use std::sync::Arc;

/// The distribution the attributes of a scalar sampler describe, checked.
fn dist_of(family: &Family, attrs: &Attrs) -> Result<Dist> {
    let mut values = Vec::with_capacity(family.scalar_params.len());
    for (i, name) in family.scalar_params.iter().enumerate() {
        values.push(if i == 0 && family.int_first { attrs.int(name)? as f64 } else { attrs.float(name)? });
    }
    let dist = (family.build)(&values);
    dist.check(family.scalar_params, Strictness::Scalar)?;
    Ok(dist)
}

fn param_specs(family: &Family) -> Vec<AttrSpec> {
    family
        .scalar_params
        .iter()
        .zip(family.defaults)
        .enumerate()
        .map(|(i, (name, default))| {
            if i == 0 && family.int_first {
                AttrSpec::optional(name, AttrKind::Int, *default as i64, "Parameter of the distribution.")
            } else {
                AttrSpec::optional(name, AttrKind::Float, *default, "Parameter of the distribution.")
            }
        })
        .collect()
}

fn shape_spec() -> AttrSpec {
    AttrSpec::optional(
        "shape",
        AttrKind::OptInts,
        AttrValue::None,
        "Shape of the output (None: the shape the graph expects).",
    )
}

fn ctx_spec() -> AttrSpec {
    AttrSpec::optional(
        "ctx",
        AttrKind::Str,
        "",
        "Context of the output (accepted; oxnet computes on the CPU).",
    )
}

/// Output shape inference of a zero-input sampler: `shape`, else what the
/// output already holds (a graph may infer it from the sampler's
/// consumers; an imperative call without `shape` fails in inference).
fn infer_shape_from_attr(attrs: &Attrs, outs: &mut [Option<oxnet_core::Shape>]) -> Result<()> {
    match shape_attr(attrs)? {
        Some(s) if !s.is_empty() => set_shape(&mut outs[0], s, "the output"),
        _ => Ok(()),
    }
}

fn prepared(attrs: &Attrs) -> Result<&Dist> {
    attrs
        .prepared::<Dist>()
        .ok_or_else(|| Error::Invalid("the sampler's parameters were not prepared".into()))
}

fn register_family(family: &'static Family) {
    let name: &'static str = Box::leak(format!("_random_{}", family.name).into_boxed_str());
    let mut op = OpDef::new(name)
        .doc(&format!(
            "Draws samples from {}, with scalar parameters, into an array of `shape` (float32 unless \
             `dtype` says otherwise). Draws come from oxnet's global generator (reproducible after \
             `mx.random.seed`).",
            family.about
        ))
        .arguments(&[])
        .alias(&format!("random_{}", family.name));
    if matches!(family.name, "uniform" | "normal") {
        op = op.alias(family.name);
    }
    for spec in param_specs(family) {
        op = op.attr(spec);
    }
    let op = op
        .attr(shape_spec())
        .attr(ctx_spec())
        .attr(float_dtype_spec())
        .prepare(move |attrs| {
            float_dtype(attrs)?;
            Ok(Arc::new(dist_of(family, attrs)?))
        })
        .infer_shape(|attrs, _ins, outs| infer_shape_from_attr(attrs, outs))
        .infer_type(|attrs, _ins, outs| infer_out_dtype(outs, float_dtype(attrs)?, DType::F32))
        .resource(oxnet_core::Resource::Random)
        .forward(|ctx, _inputs, outputs| {
            let sampler = prepared(ctx.attrs)?.sampler();
            let mut draws = vec![0.0; outputs[0].size()];
            ctx.with_rng(|rng| sampler.fill(rng, &mut draws));
            store_f64(&outputs[0], ctx.req[0], &draws)
        });
    registry::register(op);

    let like: &'static str = Box::leak(format!("_random_{}_like", family.name).into_boxed_str());
    let mut op = OpDef::new(like).doc(&format!(
        "Draws samples from {}, with scalar parameters, into an array of the shape and dtype of \
         `data` (whose values are not read). Draws come from oxnet's global generator.",
        family.about
    ));
    for spec in param_specs(family) {
        op = op.attr(spec);
    }
    registry::register(
        op.prepare(move |attrs| Ok(Arc::new(dist_of(family, attrs)?)))
            .infer_type(|_attrs, ins, outs| {
                let dt = ins[0].or(outs[0]).unwrap_or(DType::F32);
                if !dt.is_float() {
                    return Err(Error::DType(format!("data must have a float dtype, got {dt}")));
                }
                ins[0] = Some(dt);
                infer_out_dtype(outs, Some(dt), dt)
            })
            .resource(oxnet_core::Resource::Random)
            .forward(|ctx, _inputs, outputs| {
                let sampler = prepared(ctx.attrs)?.sampler();
                let mut draws = vec![0.0; outputs[0].size()];
                ctx.with_rng(|rng| sampler.fill(rng, &mut draws));
                store_f64(&outputs[0], ctx.req[0], &draws)
            })
            .zero_grad(),
    );
}

/// `[low, high)` of `_random_randint`, checked.
fn int_bounds(attrs: &Attrs) -> Result<(i64, i64)> {
    let (low, high) = (attrs.int("low")?, attrs.int("high")?);
    if low > high {
        return Err(Error::attr("low", format!("must not exceed `high`, got {low} > {high}")));
    }
    if let Some(DType::I32) | None = attrs.dtype("dtype")? {
        let range = i32::MIN as i64..=i32::MAX as i64;
        if !range.contains(&low) || !range.contains(&high) {
            return Err(Error::attr(
                "dtype",
                format!("int32 cannot hold the bounds [{low}, {high}); use dtype='int64'"),
            ));
        }
    }
    Ok((low, high))
}

fn register_randint() {
    registry::register(
        OpDef::new("_random_randint")
            .doc(
                "Draws integers uniformly from [low, high) into an array of `shape` (int32 unless \
                 `dtype` is int64). Draws come from oxnet's global generator.",
            )
            .alias("random_randint")
            .arguments(&[])
            .attr(AttrSpec::required("low", AttrKind::Int, "Lower bound (inclusive)."))
            .attr(AttrSpec::required("high", AttrKind::Int, "Upper bound (exclusive)."))
            .attr(shape_spec())
            .attr(ctx_spec())
            .attr(AttrSpec::optional("dtype", AttrKind::DType, AttrValue::None, "int32 (None) or int64."))
            .prepare(|attrs| {
                match attrs.dtype("dtype")? {
                    None | Some(DType::I32 | DType::I64) => {}
                    Some(other) => {
                        return Err(Error::attr("dtype", format!("must be int32 or int64, got {other}")))
                    }
                }
                Ok(Arc::new(int_bounds(attrs)?))
            })
            .infer_shape(|attrs, _ins, outs| infer_shape_from_attr(attrs, outs))
            .infer_type(|attrs, _ins, outs| infer_out_dtype(outs, attrs.dtype("dtype")?, DType::I32))
            .resource(oxnet_core::Resource::Random)
            .forward(|ctx, _inputs, outputs| {
                let (low, high) = int_bounds(ctx.attrs)?;
                let out = &outputs[0];
                let draws: Vec<i64> = ctx.with_rng(|rng| {
                    (0..out.size())
                        .map(|_| if low < high { rng.random_range(low..high) } else { low })
                        .collect()
                });
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                match out.dtype() {
                    DType::I64 => {
                        oxnet_core::store::store_slice(ctx.req[0], out.as_mut_slice::<i64>()?, &draws)
                    }
                    DType::I32 => {
                        let v: Vec<i32> = draws.iter().map(|&d| d as i32).collect();
                        oxnet_core::store::store_slice(ctx.req[0], out.as_mut_slice::<i32>()?, &v)
                    }
                    _ => {
                        let v: Vec<f64> = draws.iter().map(|&d| d as f64).collect();
                        store_f64(out, ctx.req[0], &v)?;
                    }
                }
                Ok(())
            }),
    );
}

/// Registers `_random_<dist>`, `_random_<dist>_like` and `_random_randint`.
pub(super) fn register() {
    for family in FAMILIES.iter() {
        register_family(family);
    }
    register_randint();
}
