//! `softmax_cross_entropy`: summed cross-entropy of softmax(data) against
//! class-id labels.

use super::mul;
use super::softmax::{softmax_kernel, FastMath, Kind};
use crate::util::call;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrValue, Element, Error, FloatElement, GradCtx, NDArray, OpContext, OpDef, Result,
};

/// Labels as class positions, checked against `classes`.
fn class_ids(label: &NDArray, classes: usize) -> Result<Vec<usize>> {
    label
        .to_vec::<f64>()?
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v.is_finite() && v >= 0.0 && (v as usize) < classes {
                Ok(v as usize)
            } else {
                Err(Error::Invalid(format!(
                    "softmax_cross_entropy: label {i} is {v}, outside the {classes} classes [0, {classes})"
                )))
            }
        })
        .collect()
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (data, label, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let (batch, classes) = (data.shape()[0], data.shape()[1]);
    let ids = class_ids(label, classes)?;
    fn total<T: FloatElement>(x: &[T], ids: &[usize], batch: usize, classes: usize) -> f64
    where
        T::Compute: FastMath,
    {
        let mut logp = vec![T::zero(); x.len()];
        softmax_kernel(x, &mut logp, (batch, classes, 1), 1.0, Kind::LogSoftmax);
        ids.iter().enumerate().map(|(r, &c)| -logp[r * classes + c].to_f64()).sum()
    }
    oxnet_core::with_float_dtype!(data.dtype(), T => {
        let loss = total::<T>(data.as_slice::<T>()?, &ids, batch, classes);
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &[T::from_f64(loss)]);
    });
    Ok(())
}

fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None, None]);
    }
    let (data, label, og) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let classes = data.shape()[1];
    if !label.is_meta() {
        // (a traced gradient reads no values; the forward call checked the labels)
        class_ids(label, classes)?;
    }
    let p = call("softmax", &[data], &[("axis", AttrValue::Int(-1))])?;
    let target = call(
        "one_hot",
        &[label],
        &[("depth", AttrValue::Int(classes as i64)), ("dtype", AttrValue::DType(data.dtype()))],
    )?;
    let diff = call("elemwise_sub", &[&p, &target], &[])?;
    Ok(vec![Some(mul(&diff, og)?), None])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("softmax_cross_entropy")
            .doc(
                "Cross-entropy of softmax(data) against labels, summed over the batch: data is \
                 (batch, classes), label (batch,) holds class ids (floats or integers); the \
                 output has shape (1,). Labels outside [0, classes) are an error. Not \
                 differentiable with respect to label.",
            )
            .arguments(&["data", "label"])
            .infer_shape(|_, ins, outs| {
                if let Some(d) = &ins[0] {
                    if d.len() != 2 {
                        return Err(Error::Shape(format!(
                            "softmax_cross_entropy: data must be 2-d (batch, classes), got shape {:?}",
                            d.as_slice()
                        )));
                    }
                    let want = Shape::from_slice(&d[..1]);
                    match &ins[1] {
                        Some(l) if *l != want => {
                            return Err(Error::Shape(format!(
                                "softmax_cross_entropy: label has shape {:?}, data of shape {:?} needs {:?}",
                                l.as_slice(),
                                d.as_slice(),
                                want.as_slice()
                            )))
                        }
                        _ => ins[1] = Some(want),
                    }
                }
                outs[0] = Some(Shape::from_slice(&[1]));
                Ok(())
            })
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0];
                Ok(())
            })
            .forward(forward)
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, DType, NDArray};

    fn reference(x: &[f64], labels: &[usize], classes: usize) -> f64 {
        let mut total = 0.0;
        for (r, &c) in labels.iter().enumerate() {
            let row = &x[r * classes..(r + 1) * classes];
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            total += -(row[c] - m - s.ln());
        }
        total
    }

    #[test]
    fn values_and_gradient() {
        let x = NDArray::random_uniform(-2.0, 2.0, &[4, 5], DType::F64).unwrap();
        let labels = [3usize, 0, 4, 1];
        let l = NDArray::from_vec(labels.iter().map(|v| *v as f64).collect::<Vec<_>>(), &[4]).unwrap();
        let y = invoke1("softmax_cross_entropy", &[&x, &l], &[]).unwrap();
        assert_eq!(y.shape(), &[1]);
        let want = reference(&x.to_vec().unwrap(), &labels, 5);
        assert!((y.to_scalar().unwrap() - want).abs() < 1e-12);
        let y32 = invoke1(
            "softmax_cross_entropy",
            &[&x.astype(DType::F32).unwrap(), &l.astype(DType::I32).unwrap()],
            &[],
        )
        .unwrap();
        assert_eq!(y32.dtype(), DType::F32);
        assert!((y32.to_scalar().unwrap() - want).abs() < 1e-5);
        let yh = invoke1(
            "softmax_cross_entropy",
            &[&x.astype(DType::BF16).unwrap(), &l.astype(DType::F32).unwrap()],
            &[],
        )
        .unwrap();
        assert!((yh.to_scalar().unwrap() - want).abs() < 0.1);
        OpChecker::new("softmax_cross_entropy", &[x, l]).no_grad(&[1]).run().unwrap();
        // hand value: uniform logits over 4 classes give log(4) per row
        let u = NDArray::zeros(&[2, 4], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let ul = NDArray::from_vec(vec![1.0f32, 2.], &[2]).unwrap();
        let y = invoke1("softmax_cross_entropy", &[&u, &ul], &[]).unwrap().to_scalar().unwrap();
        assert!((y - 2.0 * 4f64.ln()).abs() < 1e-6);
    }

    #[test]
    fn bad_labels_and_shapes_are_errors() {
        let x = NDArray::zeros(&[2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        for bad in [3.0f32, -1.0, f32::NAN] {
            let l = NDArray::from_vec(vec![0.0f32, bad], &[2]).unwrap();
            let e = invoke1("softmax_cross_entropy", &[&x, &l], &[]).unwrap_err().to_string();
            assert!(e.contains("label 1"), "{e}");
        }
        let l3 = NDArray::zeros(&[3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let e = invoke1("softmax_cross_entropy", &[&x, &l3], &[]).unwrap_err().to_string();
        assert!(e.contains("[3]") && e.contains("[2, 3]"), "{e}");
        let x1 = NDArray::zeros(&[3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        assert!(invoke1("softmax_cross_entropy", &[&x1, &l3], &[]).unwrap_err().to_string().contains("2-d"));
    }
}
