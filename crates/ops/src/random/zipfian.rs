//! `_sample_unique_zipfian`: for each row of `shape = (batch, n)`, `n`
//! distinct classes from the approximately Zipfian (log-uniform)
//! distribution over `[0, range_max)`, with the number of draws it took.

use super::shape_attr;
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, DType, Error, NDArray, OpDef, Result, Shape};
use rand::Rng;
use std::collections::HashSet;
use std::sync::Arc;

/// `(range_max, batch, n)`, checked.
fn params(attrs: &Attrs) -> Result<(i64, usize, usize)> {
    let range_max = attrs.int("range_max")?;
    if range_max <= 0 {
        return Err(Error::attr("range_max", format!("must be positive, got {range_max}")));
    }
    let shape = shape_attr(attrs)?.unwrap_or_default();
    let [batch, n] = shape[..] else {
        return Err(Error::attr(
            "shape",
            format!("must be (batch_size, num_sampled), got {:?}", shape.as_slice()),
        ));
    };
    if n as i64 > range_max {
        return Err(Error::attr(
            "shape",
            format!("cannot draw {n} distinct classes from range_max={range_max}"),
        ));
    }
    Ok((range_max, batch, n))
}

fn forward(ctx: &oxnet_core::OpContext, _inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (range_max, batch, n) = params(ctx.attrs)?;
    let log_range = ((range_max + 1) as f64).ln();
    let mut classes = Vec::with_capacity(batch * n);
    let mut trials = Vec::with_capacity(batch);
    ctx.with_rng(|rng| {
        let mut seen = HashSet::with_capacity(n);
        for _ in 0..batch {
            seen.clear();
            let mut tries = 0i64;
            while seen.len() < n {
                tries += 1;
                let u: f64 = rng.random();
                let v = ((u * log_range).exp() as i64 - 1).clamp(0, range_max - 1);
                if seen.insert(v) {
                    classes.push(v);
                }
            }
            trials.push(tries);
        }
    });
    oxnet_core::store::store_slice(ctx.req[0], outputs[0].as_mut_slice::<i64>()?, &classes);
    oxnet_core::store::store_slice(ctx.req[1], outputs[1].as_mut_slice::<i64>()?, &trials);
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_sample_unique_zipfian")
            .doc(
                "Draws, for each of the `shape[0]` rows, `shape[1]` distinct classes in \
                 [0, range_max) from the log-uniform distribution P(c) = (log(c+2) - log(c+1)) / \
                 log(range_max+1) by rejecting repeats; the second output counts the draws each row \
                 took. Both outputs are int64. Draws come from oxnet's global generator.",
            )
            .arguments(&[])
            .outputs(&["output", "num_trials"])
            .attr(AttrSpec::required("range_max", AttrKind::Int, "Classes are drawn from [0, range_max)."))
            .attr(AttrSpec::optional(
                "shape",
                AttrKind::OptInts,
                AttrValue::None,
                "(batch_size, num_sampled): the shape of the output.",
            ))
            .prepare(|attrs| {
                params(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(|attrs, _ins, outs| {
                let (_, batch, n) = params(attrs)?;
                super::set_shape(&mut outs[0], Shape::from_slice(&[batch, n]), "the output")?;
                super::set_shape(&mut outs[1], Shape::from_slice(&[batch]), "num_trials")
            })
            .infer_type(|_attrs, _ins, outs| {
                outs[0] = Some(DType::I64);
                outs[1] = Some(DType::I64);
                Ok(())
            })
            .resource(oxnet_core::Resource::Random)
            .forward(forward),
    );
}
