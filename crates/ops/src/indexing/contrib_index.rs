//! MXNet's contrib indexing operators: `_contrib_index_array`,
//! `_contrib_index_copy` and `_contrib_boolean_mask`.
//!
//! boolean_mask's output shape depends on the mask's values, so it has a
//! dynamic kernel: it runs imperatively (and under autograd), not inside
//! symbolic graphs, whose shapes are inferred before any value exists.
//! Its kernel and gradient are `take` / `_backward_take` at the positions of
//! the mask's non-zero entries. index_copy's gradients are operator calls
//! too: the old tensor's is the output gradient with the copied rows zeroed
//! (index_copy of zeros), the new tensor's the copied rows (take).

use crate::shape_ops::{check_size, ints_attr, set_shape};
use crate::util::call;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Element, Error, NDArray, OpDef, Req, Result,
};

/// index_array's axes, normalised.
fn index_axes(x: &[usize], attrs: &Attrs) -> Result<Vec<usize>> {
    match attrs.opt_ints("axes")? {
        None => Ok((0..x.len()).collect()),
        Some(a) => a
            .iter()
            .map(|ax| {
                normalize_axis(*ax, x.len()).map_err(|e| Error::attr("axes", format!("index_array: {e}")))
            })
            .collect(),
    }
}

/// The rows of index_copy's index vector, checked against `n` rows.
fn copy_rows(index: &NDArray, n: usize) -> Result<Vec<usize>> {
    index
        .to_vec::<f64>()?
        .into_iter()
        .map(|v| {
            if v.is_nan() || v < 0.0 || v >= n as f64 {
                Err(Error::Invalid(format!(
                    "index_copy: index {v} is out of range for the old tensor's {n} rows"
                )))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

fn copy_kernel<T: Element>(req: Req, old: &[T], new: &[T], rows: &[usize], inner: usize, out: &mut [T]) {
    if req == Req::Add {
        let mut tmp = old.to_vec();
        for (j, &r) in rows.iter().enumerate() {
            tmp[r * inner..(r + 1) * inner].copy_from_slice(&new[j * inner..(j + 1) * inner]);
        }
        for (o, t) in out.iter_mut().zip(tmp) {
            *o = o.add(t);
        }
        return;
    }
    out.copy_from_slice(old);
    for (j, &r) in rows.iter().enumerate() {
        out[r * inner..(r + 1) * inner].copy_from_slice(&new[j * inner..(j + 1) * inner]);
    }
}

/// The positions of the non-zero entries of a 1-D mask, as float64 indices.
fn mask_positions(index: &NDArray, extent: usize) -> Result<NDArray> {
    if index.ndim() != 1 || index.size() != extent {
        return Err(Error::Shape(format!(
            "boolean_mask: the mask must be 1-D with as many entries as the masked axis ({extent}), got shape {:?}",
            index.shape()
        )));
    }
    let pos: Vec<f64> = index
        .to_vec::<f64>()?
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .map(|(i, _)| i as f64)
        .collect();
    let n = pos.len();
    NDArray::from_vec(pos, &[n])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_contrib_index_array")
            .doc("An array of the indices of each element of the data: shape data.shape + (len(axes),), out[..., j] the index along axes[j] (all axes when None); int64. Zero gradient.")
            .attr(AttrSpec::optional("axes", AttrKind::OptInts, AttrValue::None, "The axes to include in the index array. Supports negative values."))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let axes = index_axes(x, attrs)?;
                let s: Shape = x.iter().copied().chain(std::iter::once(axes.len())).collect();
                check_size(&s, "index_array")?;
                set_shape(&mut outs[0], s, "the output of index_array")
            })
            .infer_type(|_, _, outs| {
                outs[0] = Some(DType::I64);
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let shape = ins[0].shape();
                let axes = index_axes(shape, ctx.attrs)?;
                let n = ins[0].size();
                let mut out = Vec::with_capacity(n * axes.len());
                let mut idx = vec![0usize; shape.len()];
                for _ in 0..n {
                    out.extend(axes.iter().map(|a| idx[*a] as i64));
                    for j in (0..shape.len()).rev() {
                        idx[j] += 1;
                        if idx[j] < shape[j] {
                            break;
                        }
                        idx[j] = 0;
                    }
                }
                let r = NDArray::from_vec(out, outs[0].shape())?;
                oxnet_core::store::store(ctx.req[0], &outs[0], &r.astype(outs[0].dtype())?)
            })
            .zero_grad(),
    );

    registry::register(
        OpDef::new("_contrib_index_copy")
            .doc("A copy of old_tensor whose rows (along the first axis) at index_vector are replaced by the rows of new_tensor.")
            .arguments(&["old_tensor", "index_vector", "new_tensor"])
            .infer_shape(|_, ins, outs| {
                let Some(old) = ins[0].clone() else { return Ok(()) };
                if old.is_empty() {
                    return Err(Error::Shape("index_copy: old_tensor must have at least one axis".into()));
                }
                if let Some(idx) = &ins[1] {
                    if idx.len() != 1 {
                        return Err(Error::Shape(format!(
                            "index_copy: index_vector must be 1-D, got shape {:?}",
                            idx.as_slice()
                        )));
                    }
                    let want: Shape = std::iter::once(idx[0]).chain(old[1..].iter().copied()).collect();
                    set_shape(&mut ins[2], want, "new_tensor of index_copy")?;
                }
                set_shape(&mut outs[0], old, "the output of index_copy")
            })
            .infer_type(|_, ins, outs| {
                if let Some(t) = ins[0].or(outs[0]) {
                    ins[0] = Some(t);
                    outs[0] = Some(t);
                    if ins[2].is_none() {
                        ins[2] = Some(t);
                    }
                }
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let (old, new, out) = (&ins[0], &ins[2], &outs[0]);
                let rows = copy_rows(&ins[1], old.shape()[0])?;
                let inner: usize = old.shape()[1..].iter().product();
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                let new = if new.dtype() == old.dtype() { new.clone() } else { new.astype(old.dtype())? };
                oxnet_core::with_dtype!(old.dtype(), T => copy_kernel(ctx.req[0], old.as_slice::<T>()?, new.as_slice::<T>()?, &rows, inner, out.as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let (gy, index, new) = (&g.out_grads[0], &g.inputs[1], &g.inputs[2]);
                let zeros = NDArray::zeros(new.shape(), gy.dtype(), gy.device())?;
                let d_old = call("_contrib_index_copy", &[gy, index, &zeros], &[])?;
                let d_new = call("take", &[gy, index], &[])?;
                Ok(vec![Some(d_old), None, Some(d_new)])
            }),
    );

    registry::register(
        OpDef::new("_contrib_boolean_mask")
            .doc("The slices of the data along `axis` where the 1-D mask `index` is non-zero. The output's shape depends on the mask's values: imperative (and autograd) use only, not in symbolic graphs.")
            .arguments(&["data", "index"])
            .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, "An integer that represents the axis in NDArray to mask from."))
            .infer_type(|_, ins, outs| {
                if let Some(t) = ins[0] {
                    outs[0] = Some(t);
                }
                Ok(())
            })
            .forward_dynamic(|ctx, ins| {
                let (data, index) = (&ins[0], &ins[1]);
                if data.ndim() == 0 {
                    return Err(Error::Shape("boolean_mask: the data must have at least one axis".into()));
                }
                let axis = normalize_axis(ctx.attrs.int("axis")?, data.ndim())?;
                let pos = mask_positions(index, data.shape()[axis])?;
                Ok(vec![call("take", &[data, &pos], &[("axis", AttrValue::Int(axis as i64))])?])
            })
            .grad_rule(|g| {
                let (data, index) = (&g.inputs[0], &g.inputs[1]);
                let axis = normalize_axis(g.attrs.int("axis")?, data.ndim())?;
                let pos = mask_positions(index, data.shape()[axis])?;
                let d = call(
                    "_backward_take",
                    &[&g.out_grads[0], &pos],
                    &[("axis", AttrValue::Int(axis as i64)), ("shape", ints_attr(data.shape()))],
                )?;
                Ok(vec![Some(d), None])
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, NDArray, Req};

    fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn index_array_values() {
        let y = invoke1("_contrib_index_array", &[&iota(&[2, 3])], &[]).unwrap();
        assert_eq!(y.shape(), &[2, 3, 2]);
        assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2]);
        let y = invoke1("_contrib_index_array", &[&iota(&[2, 3])], &[("axes", "(-1,)".into())]).unwrap();
        assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 1, 2, 0, 1, 2]);
        let y = invoke1("_contrib_index_array", &[&NDArray::scalar(1.0f64)], &[]).unwrap();
        assert_eq!(y.shape(), &[0]);
    }

    #[test]
    fn index_copy_values_and_gradients() {
        let old = iota(&[4, 2]);
        let y = invoke1(
            "_contrib_index_copy",
            &[&old, &arr(&[3., 0.], &[2]), &arr(&[9., 8., 7., 6.], &[2, 2])],
            &[],
        )
        .unwrap();
        assert_eq!(vals(&y), vec![7., 6., 2., 3., 4., 5., 9., 8.]);
        let e = err_msg(invoke1(
            "_contrib_index_copy",
            &[&old, &arr(&[4.], &[1]), &arr(&[1., 1.], &[1, 2])],
            &[],
        ));
        assert!(e.contains("index_copy") && e.contains("out of range"), "{e}");
        OpChecker::new("_contrib_index_copy", &[sample(&[4, 2]), arr(&[3., 1.], &[2]), sample(&[2, 2])])
            .no_grad(&[1])
            .run()
            .unwrap();
    }

    #[test]
    fn boolean_mask_values_and_gradient() {
        let d = iota(&[3, 2]);
        d.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke1("_contrib_boolean_mask", &[&d, &arr(&[1., 0., 1.], &[3])], &[]).unwrap()
        };
        assert_eq!((y.shape(), vals(&y)), (&[2usize, 2][..], vec![0., 1., 4., 5.]));
        y.backward().unwrap();
        assert_eq!(vals(&d.grad().unwrap()), vec![1., 1., 0., 0., 1., 1.]);
        let y =
            invoke1("_contrib_boolean_mask", &[&d, &arr(&[0., 1.], &[2])], &[("axis", 1i64.into())]).unwrap();
        assert_eq!(vals(&y), vec![1., 3., 5.]);
        let y = invoke1("_contrib_boolean_mask", &[&d, &arr(&[0., 0., 0.], &[3])], &[]).unwrap();
        assert_eq!(y.shape(), &[0, 2]);
        let e = err_msg(invoke1("_contrib_boolean_mask", &[&d, &arr(&[1., 0.], &[2])], &[]));
        assert!(e.contains("boolean_mask") && e.contains("mask"), "{e}");
    }
}
