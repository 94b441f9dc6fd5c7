//! take and its scatter-add gradient `_backward_take`.

use crate::shape_ops::{check_size, ints_attr, lhs_dtype, set_shape};
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Element, Error, NDArray, OpDef, Req, Result,
};

const MODES: [&str; 3] = ["clip", "wrap", "raise"];

/// Resolves the index values for an axis of extent `n` under `mode`.
fn resolve_indices(indices: &NDArray, n: usize, axis: usize, mode: &str) -> Result<Vec<usize>> {
    let raw = indices.to_vec::<f64>()?;
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    if n == 0 {
        return Err(Error::Shape(format!("take: cannot take indices from axis {axis}, whose extent is 0")));
    }
    let n_i = n as i64;
    raw.iter()
        .map(|&v| {
            let i = v.trunc() as i64; // saturating; NaN becomes 0
            Ok(match mode {
                "wrap" => i.rem_euclid(n_i) as usize,
                "raise" => {
                    if v.is_nan() || i < -n_i || i >= n_i {
                        return Err(Error::Shape(format!(
                            "take: index {v} is out of range for axis {axis} of extent {n} (mode='raise')"
                        )));
                    }
                    i.rem_euclid(n_i) as usize
                }
                _ => i.clamp(0, n_i - 1) as usize,
            })
        })
        .collect()
}

/// (outer, n, inner) of `shape` around `axis`.
fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// The output shape of `take`: a[..axis] + indices + a[axis+1..].
fn take_shape(a: &[usize], idx: &[usize], attrs: &Attrs) -> Result<(usize, Shape)> {
    if a.is_empty() {
        return Err(Error::Shape("take: the data must have rank at least 1, got a 0-d array".into()));
    }
    let axis = normalize_axis(attrs.int("axis")?, a.len())?;
    let s: Shape = a[..axis].iter().chain(idx).chain(&a[axis + 1..]).copied().collect();
    Ok((axis, s))
}

/// out[o, j, :] = a[o, idx[j], :].
fn gather<T: Element>(req: Req, a: &[T], idx: &[usize], n: usize, inner: usize, out: &mut [T]) {
    let m = idx.len();
    if inner == 0 || m == 0 {
        return;
    }
    for (o, out_block) in out.chunks_exact_mut(m * inner).enumerate() {
        let a_block = &a[o * n * inner..(o + 1) * n * inner];
        for (j, &ix) in idx.iter().enumerate() {
            store_slice(
                req,
                &mut out_block[j * inner..(j + 1) * inner],
                &a_block[ix * inner..(ix + 1) * inner],
            );
        }
    }
}

/// out[o, idx[j], :] += g[o, j, :] (out already zeroed or accumulating).
fn scatter_add<T: Element>(g: &[T], idx: &[usize], n: usize, inner: usize, out: &mut [T]) {
    let m = idx.len();
    if inner == 0 || m == 0 || n == 0 {
        return;
    }
    for (o, out_block) in out.chunks_exact_mut(n * inner).enumerate() {
        let g_block = &g[o * m * inner..(o + 1) * m * inner];
        for (j, &ix) in idx.iter().enumerate() {
            let dst = &mut out_block[ix * inner..(ix + 1) * inner];
            for (d, s) in dst.iter_mut().zip(&g_block[j * inner..(j + 1) * inner]) {
                *d = d.add(*s);
            }
        }
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new("take")
            .doc("Takes elements of `a` along `axis` at `indices` (any numeric dtype; fractional values are truncated). mode: clip (clamp into range, the default), wrap (modulo the extent) or raise (error when out of range; negative indices count from the end). The gradient with respect to `a` adds up over repeated indices; `indices` is not differentiable.")
            .arguments(&["a", "indices"])
            .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, "the axis to take along"))
            .attr(AttrSpec::optional("mode", AttrKind::Choice(MODES.to_vec()), "clip", "out-of-range indices: clip, wrap or raise"))
            .infer_shape(|attrs, ins, outs| {
                let (Some(a), Some(idx)) = (&ins[0], &ins[1]) else { return Ok(()) };
                let (_, s) = take_shape(a, idx, attrs)?;
                set_shape(&mut outs[0], s, "the output of take")
            })
            .infer_type(lhs_dtype)
            .forward(|ctx, inputs, outputs| {
                let (a, out) = (&inputs[0], &outputs[0]);
                let axis = normalize_axis(ctx.attrs.int("axis")?, a.ndim())?;
                let (_, n, inner) = split_at_axis(a.shape(), axis);
                let idx = resolve_indices(&inputs[1], n, axis, ctx.attrs.str("mode")?)?;
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                oxnet_core::with_dtype!(a.dtype(), T => {
                    gather(ctx.req[0], a.as_slice::<T>()?, &idx, n, inner, out.as_mut_slice::<T>()?);
                });
                Ok(())
            })
            .grad_rule(|g| {
                let (a, indices) = (&g.inputs[0], &g.inputs[1]);
                let da = crate::util::call(
                    "_backward_take",
                    &[&g.out_grads[0], indices],
                    &[
                        ("axis", AttrValue::Int(g.attrs.int("axis")?)),
                        ("mode", AttrValue::Str(g.attrs.str("mode")?.to_string())),
                        ("shape", ints_attr(a.shape())),
                    ],
                )?;
                Ok(vec![Some(da), None])
            }),
    );

    registry::register(
        OpDef::new("_backward_take")
            .doc("Gradient helper of take: zeros of shape `shape` into which the rows of `ograd` are added at `indices` along `axis`.")
            .arguments(&["ograd", "indices"])
            .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, "the axis taken along"))
            .attr(AttrSpec::optional("mode", AttrKind::Choice(MODES.to_vec()), "clip", "out-of-range indices: clip, wrap or raise"))
            .attr(AttrSpec::required("shape", AttrKind::Ints, "the shape of take's data"))
            .infer_shape(|attrs, ins, outs| {
                let shape: Shape = attrs
                    .ints("shape")?
                    .iter()
                    .map(|d| usize::try_from(*d).map_err(|_| Error::attr("shape", format!("extent {d} is negative"))))
                    .collect::<Result<_>>()?;
                check_size(&shape, "_backward_take")?;
                if let Some(idx) = &ins[1] {
                    let (_, g) = take_shape(&shape, idx, attrs)?;
                    set_shape(&mut ins[0], g, "the output gradient of take")?;
                }
                set_shape(&mut outs[0], shape, "the output of _backward_take")
            })
            .infer_type(lhs_dtype)
            .forward(|ctx, inputs, outputs| {
                let (g, out) = (&inputs[0], &outputs[0]);
                let axis = normalize_axis(ctx.attrs.int("axis")?, out.ndim())?;
                let (_, n, inner) = split_at_axis(out.shape(), axis);
                let idx = resolve_indices(&inputs[1], n, axis, ctx.attrs.str("mode")?)?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add => {}
                    Req::Write | Req::Inplace => out.fill(0.0)?,
                }
                oxnet_core::with_numeric_dtype!(g.dtype(), T => {
                    scatter_add(g.as_slice::<T>()?, &idx, n, inner, out.as_mut_slice::<T>()?);
                });
                Ok(())
            })
            .grad_rule(|g| {
                let dg = crate::util::call(
                    "take",
                    &[&g.out_grads[0], &g.inputs[1]],
                    &[
                        ("axis", AttrValue::Int(g.attrs.int("axis")?)),
                        ("mode", AttrValue::Str(g.attrs.str("mode")?.to_string())),
                    ],
                )?;
                Ok(vec![Some(dg), None])
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

    fn idx(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn take_rows_and_columns() {
        let a = iota(&[4, 3]);
        let y = invoke1("take", &[&a, &idx(&[2., 0., 2.], &[3])], &[]).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(vals(&y), vec![6., 7., 8., 0., 1., 2., 6., 7., 8.]);
        // 2-d indices along axis 1: out[i, j, k] = a[i, idx[j, k]]
        let ix = idx(&[2., 1., 0., 0.], &[2, 2]);
        let y = invoke1("take", &[&a, &ix], &[("axis", 1i64.into())]).unwrap();
        assert_eq!(y.shape(), &[4, 2, 2]);
        let mut want = vec![];
        for i in 0..4 {
            for j in [2, 1, 0, 0] {
                want.push((i * 3 + j) as f64);
            }
        }
        assert_eq!(vals(&y), want);
        // a 0-d index drops the axis; integer indices and data work
        let y =
            invoke1("take", &[&cast(&a, DType::I32), &NDArray::scalar(1i64)], &[("axis", (-1i64).into())])
                .unwrap();
        assert_eq!((y.shape(), y.to_vec::<i32>().unwrap()), (&[4usize][..], vec![1, 4, 7, 10]));
        let y = invoke1("take", &[&cast(&a, DType::F16), &cast(&idx(&[3.], &[1]), DType::I32)], &[]).unwrap();
        assert_eq!((y.dtype(), vals(&y)), (DType::F16, vec![9., 10., 11.]));
    }

    #[test]
    fn take_modes() {
        let a = iota(&[4]);
        let i = idx(&[-1., 5., 4., 1.7, -5.], &[5]);
        let clip = invoke1("take", &[&a, &i], &[]).unwrap();
        assert_eq!(vals(&clip), vec![0., 3., 3., 1., 0.]);
        let wrap = invoke1("take", &[&a, &i], &[("mode", "wrap".into())]).unwrap();
        assert_eq!(vals(&wrap), vec![3., 1., 0., 1., 3.]);
        let e = err_msg(invoke1("take", &[&a, &i], &[("mode", "raise".into())]));
        assert!(e.contains("index 5") && e.contains("out of range") && e.contains("extent 4"), "{e}");
        let ok = invoke1("take", &[&a, &idx(&[-1., 3., -4.], &[3])], &[("mode", "raise".into())]).unwrap();
        assert_eq!(vals(&ok), vec![3., 3., 0.]);
        let e = err_msg(invoke1("take", &[&a, &i], &[("mode", "nearest".into())]));
        assert!(e.contains("mode") && e.contains("clip"), "{e}");
        let e = err_msg(invoke1("take", &[&a, &i], &[("axis", 1i64.into())]));
        assert!(e.contains("axis 1") && e.contains("out of range"), "{e}");
        let e = err_msg(invoke1("take", &[&iota(&[0, 2]), &i], &[]));
        assert!(e.contains("extent is 0"), "{e}");
    }

    #[test]
    fn take_gradient_accumulates_duplicates() {
        let a = iota(&[3, 2]);
        a.attach_grad(Req::Write).unwrap();
        let i = idx(&[2., 0., 2., 2.], &[4]);
        let y = {
            let _r = autograd::record();
            invoke1("take", &[&a, &i], &[]).unwrap()
        };
        y.backward().unwrap();
        assert_eq!(vals(&a.grad().unwrap()), vec![1., 1., 0., 0., 3., 3.]);
        OpChecker::new("take", &[sample(&[4, 3]), idx(&[2., 0., 2., 5.], &[2, 2])])
            .no_grad(&[1])
            .run()
            .unwrap();
        OpChecker::new("take", &[sample(&[2, 3, 2]), idx(&[1., -1., 1.], &[3])])
            .attr("axis", 1i64)
            .attr("mode", "wrap")
            .no_grad(&[1])
            .run()
            .unwrap();
        check_second_order("take", &[sample(&[4, 3]), idx(&[3., 3., 1.], &[3])], &[("axis", 0i64.into())]);
        let bt = [("axis", AttrValue::Int(1)), ("shape", "(2, 3)".into())];
        OpChecker::new("_backward_take", &[sample(&[2, 4]), idx(&[0., 2., 2., 1.], &[4])])
            .attr(bt[0].0, bt[0].1.clone())
            .attr(bt[1].0, bt[1].1.clone())
            .no_grad(&[1])
            .run()
            .unwrap();
        check_second_order("_backward_take", &[sample(&[2, 4]), idx(&[0., 2., 2., 1.], &[4])], &bt);
    }
}
