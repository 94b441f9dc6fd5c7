//! The helpers of MXNet 1.9.1's LARS optimizer: `multi_sum_sq` (the sum of
//! squares of each of several arrays, in float32), `multi_lars` (layer-wise
//! learning rates from those sums) and `reset_arrays` (sets several arrays
//! to zero in place). None is differentiable.

use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, NDArray, OpDef, Result};

/// `num_arrays`, at least 1.
fn num_arrays(attrs: &Attrs) -> Result<usize> {
    match attrs.int("num_arrays")? {
        n if n >= 1 => Ok(n as usize),
        n => Err(Error::attr("num_arrays", format!("must be at least 1, got {n}"))),
    }
}

fn num_arrays_spec() -> AttrSpec {
    AttrSpec::required("num_arrays", AttrKind::Int, "Number of input arrays.")
}

/// Input names `array_0`, `array_1`, ... (MXNet's).
fn array_names(attrs: &Attrs) -> Result<Vec<String>> {
    Ok((0..num_arrays(attrs)?).map(|i| format!("array_{i}")).collect())
}

/// The sum of squares of `x`, accumulated in float64.
pub(super) fn sum_sq(x: &NDArray) -> Result<f64> {
    Ok(x.to_vec::<f64>()?.iter().map(|v| v * v).sum())
}

fn register_multi_sum_sq() {
    const OP: &str = "multi_sum_sq";
    registry::register(
        OpDef::new(OP)
            .doc(
                "The sum of squares of each of `num_arrays` arrays of one float dtype: a float32 \
                 vector of `num_arrays` values.",
            )
            .attr(num_arrays_spec())
            .arguments_fn(array_names)
            .arity_fn(|attrs| Ok([num_arrays(attrs)?, 0, 1]))
            .infer_shape(|attrs, _, outs| {
                let n = num_arrays(attrs)?;
                crate::shape_ops::set_shape(&mut outs[0], Shape::from_slice(&[n]), "the output")
            })
            .infer_type(|_, ins, outs| {
                let mut known = ins.iter().enumerate().filter_map(|(i, d)| d.map(|d| (i, d)));
                if let Some((_, first)) = known.next() {
                    if !first.is_float() {
                        return Err(Error::DType(format!("{OP}: expects float arrays, got {first}")));
                    }
                    if let Some((i, other)) = known.find(|(_, d)| *d != first) {
                        return Err(Error::DType(format!(
                            "{OP}: every array must have one dtype, array_{i} is {other} and array_0 {first}"
                        )));
                    }
                }
                outs[0] = Some(DType::F32);
                Ok(())
            })
            .forward(|ctx, inputs, outputs| {
                let sums =
                    inputs.iter().map(|x| sum_sq(x).map(|s| s as f32)).collect::<Result<Vec<f32>>>()?;
                let n = sums.len();
                oxnet_core::store::store(ctx.req[0], &outputs[0], &NDArray::from_vec(sums, &[n])?)
            })
            .zero_grad(),
    );
}

fn register_multi_lars() {
    const OP: &str = "multi_lars";
    registry::register(
        OpDef::new(OP)
            .doc(
                "LARS learning rates, one per layer: lrs·eta·|w| / (|g|·rescale_grad + wds·|w| + eps) \
                 with |w| = sqrt(weights_sum_sq) and |g| = sqrt(grads_sum_sq), or lrs unchanged where \
                 either sum is 0. Float32 vectors of one length.",
            )
            .attr(AttrSpec::required("eta", AttrKind::Float, "LARS eta."))
            .attr(AttrSpec::required("eps", AttrKind::Float, "LARS eps."))
            .attr(AttrSpec::optional("rescale_grad", AttrKind::Float, 1.0, "Gradient rescaling factor."))
            .arguments(&["lrs", "weights_sum_sq", "grads_sum_sq", "wds"])
            .infer_shape(|_, ins, outs| {
                let Some(s) = ins.iter().flatten().next().cloned() else { return Ok(()) };
                for (i, slot) in ins.iter_mut().enumerate() {
                    let what = ["lrs", "weights_sum_sq", "grads_sum_sq", "wds"][i];
                    crate::shape_ops::set_shape(slot, s.clone(), what)?;
                }
                crate::shape_ops::set_shape(&mut outs[0], s, "the output")
            })
            .infer_type(|_, ins, outs| {
                if let Some(d) = ins.iter().flatten().find(|d| **d != DType::F32) {
                    return Err(Error::DType(format!("{OP}: supports float32 only, got {d}")));
                }
                outs[0] = Some(DType::F32);
                Ok(())
            })
            .forward(|ctx, inputs, outputs| {
                let (eta, eps) = (ctx.attrs.float("eta")? as f32, ctx.attrs.float("eps")? as f32);
                let rescale = ctx.attrs.float("rescale_grad")? as f32;
                let v = |i: usize| inputs[i].to_vec::<f32>();
                let (lrs, w2, g2, wds) = (v(0)?, v(1)?, v(2)?, v(3)?);
                let out: Vec<f32> = (0..lrs.len())
                    .map(|i| {
                        let w = w2[i].sqrt();
                        if w > 0.0 && g2[i] > 0.0 {
                            lrs[i] * eta * w / (g2[i].sqrt() * rescale + wds[i] * w + eps)
                        } else {
                            lrs[i]
                        }
                    })
                    .collect();
                let out = NDArray::from_vec(out, outputs[0].shape())?;
                oxnet_core::store::store(ctx.req[0], &outputs[0], &out)
            })
            .zero_grad(),
    );
}

fn register_reset_arrays() {
    registry::register(
        OpDef::new("reset_arrays")
            .doc("Sets each of `num_arrays` arrays (of any dtypes) to zero in place; no outputs.")
            .attr(num_arrays_spec())
            .arguments_fn(array_names)
            .outputs(&[])
            .arity_fn(|attrs| Ok([num_arrays(attrs)?, 0, 0]))
            .mutate_inputs(|attrs| (0..num_arrays(attrs).unwrap_or(0)).collect())
            .infer_shape(|_, _, _| Ok(()))
            .infer_type(|_, _, _| Ok(()))
            .forward(|_, inputs, _| inputs.iter().try_for_each(|x| x.fill(0.0)))
            .zero_grad(),
    );
}

/// Registers `multi_sum_sq`, `multi_lars` and `reset_arrays`.
pub(super) fn register() {
    register_multi_sum_sq();
    register_multi_lars();
    register_reset_arrays();
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray};

    fn f32s(v: &[f32]) -> NDArray {
        NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn sums_of_squares_per_array() {
        let a = f32s(&[1.0, 2.0, 3.0]);
        let b = NDArray::from_vec(vec![1.0f32, 1.0, 2.0, 2.0], &[2, 2]).unwrap();
        let y = invoke1("multi_sum_sq", &[&a, &b], &[("num_arrays", AttrValue::Int(2))]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<f32>().unwrap()), (DType::F32, vec![14.0, 10.0]));
        let d = NDArray::from_vec(vec![3.0f64], &[1]).unwrap();
        let e =
            invoke1("multi_sum_sq", &[&a, &d], &[("num_arrays", AttrValue::Int(2))]).unwrap_err().to_string();
        assert!(e.contains("multi_sum_sq") && e.contains("array_1"), "{e}");
    }

    #[test]
    fn lars_rates_follow_the_norms() {
        // MXNet 1.9.1 gives [0.04950495, 0.2, 0.3]: 0.1·0.5·2 / (1·2 + 0.01·2 + 1e-8)
        let attrs = [("eta", AttrValue::Float(0.5)), ("eps", 1e-8.into()), ("rescale_grad", 2.0.into())];
        let y = invoke1(
            "multi_lars",
            &[&f32s(&[0.1, 0.2, 0.3]), &f32s(&[4.0, 0.0, 9.0]), &f32s(&[1.0, 1.0, 0.0]), &f32s(&[0.01; 3])],
            &attrs,
        )
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
        assert!(
            (y[0] - 0.1 * 0.5 * 2.0 / (2.0 + 0.02 + 1e-8)).abs() < 1e-8 && y[1] == 0.2 && y[2] == 0.3,
            "{y:?}"
        );
    }

    #[test]
    fn reset_arrays_zeroes_its_inputs() {
        let a = f32s(&[1.0, 2.0]);
        let b = NDArray::from_vec(vec![5i32, 6, 7], &[3]).unwrap();
        let outs = invoke("reset_arrays", &[&a, &b], &[("num_arrays", AttrValue::Int(2))]).unwrap();
        assert!(outs.is_empty());
        assert_eq!((a.to_vec::<f32>().unwrap(), b.to_vec::<i32>().unwrap()), (vec![0.0; 2], vec![0; 3]));
    }
}
