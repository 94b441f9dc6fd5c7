//! reshape, reshape_like, flatten, expand_dims, squeeze, transpose, cast.

use super::{reshape_grad, set_shape, store_view};
use crate::partial_shape::merge;
use oxnet_core::op::OpContext;
use oxnet_core::shape::{normalize_axis, resolve_reshape, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, DType, Error, NDArray, OpDef, Result};

/// MXNet's reshape with `reverse`: the codes are matched against the input
/// shape from the right. `-4, a, b` groups keep their meaning.
pub(super) fn reshape_shape(input: &[usize], spec: &[i64], reverse: bool) -> Result<Shape> {
    if !reverse {
        return resolve_reshape(input, spec);
    }
    let mut groups: Vec<Vec<i64>> = Vec::new();
    let mut i = 0;
    while i < spec.len() {
        if spec[i] == -4 && i + 2 < spec.len() {
            groups.push(vec![-4, spec[i + 2], spec[i + 1]]);
            i += 3;
        } else {
            groups.push(vec![spec[i]]);
            i += 1;
        }
    }
    groups.reverse();
    let rspec: Vec<i64> = groups.concat();
    let rin: Vec<usize> = input.iter().rev().copied().collect();
    let out = resolve_reshape(&rin, &rspec)
        .map_err(|e| Error::Shape(format!("reshape {input:?} with {spec:?} (reverse=True): {}", e.root())))?;
    Ok(out.iter().rev().copied().collect())
}

/// Copies the (contiguous) input into the output, whose shape has as many
/// elements: the kernel of every pure reshaping operator.
fn flat_copy(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let view = inputs[0].reshape_to(outputs[0].shape())?;
    store_view(ctx.req[0], &outputs[0], &view)
}

/// The permutation `transpose` applies for `axes` (empty: reverse).
/// The permutation swapping axes `dim1` and `dim2` of SwapAxis.
fn swap_permutation(attrs: &oxnet_core::Attrs, ndim: usize) -> Result<Vec<usize>> {
    let a = normalize_axis(attrs.int("dim1")?, ndim).map_err(|e| Error::attr("dim1", e.to_string()))?;
    let b = normalize_axis(attrs.int("dim2")?, ndim).map_err(|e| Error::attr("dim2", e.to_string()))?;
    let mut perm: Vec<usize> = (0..ndim).collect();
    perm.swap(a, b);
    Ok(perm)
}

fn permutation(axes: &[i64], ndim: usize) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..ndim).rev().collect());
    }
    let bad = || {
        Error::Shape(format!("transpose axes {axes:?} are not a permutation of the {ndim} axes of the input"))
    };
    if axes.len() != ndim {
        return Err(bad());
    }
    let mut seen = vec![false; ndim];
    let mut perm = Vec::with_capacity(ndim);
    for a in axes {
        let a = normalize_axis(*a, ndim).map_err(|_| bad())?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(bad());
        }
        perm.push(a);
    }
    Ok(perm)
}

/// The shape `squeeze` leaves (MXNet 1.x keeps `(1,)` rather than a 0-d shape).
fn squeeze_shape(shape: &[usize], axes: Option<&[i64]>) -> Result<Shape> {
    let nd = shape.len();
    let mut drop = vec![false; nd];
    match axes {
        None => {
            for (d, s) in drop.iter_mut().zip(shape) {
                *d = *s == 1;
            }
        }
        Some(list) => {
            for a in list {
                let ax = normalize_axis(*a, nd)?;
                if shape[ax] != 1 {
                    return Err(Error::Shape(format!(
                        "cannot squeeze axis {a} of shape {shape:?}: its extent is {}, not 1",
                        shape[ax]
                    )));
                }
                drop[ax] = true;
            }
        }
    }
    let mut out: Shape = (0..nd).filter(|i| !drop[*i]).map(|i| shape[i]).collect();
    if out.is_empty() && nd > 0 {
        out.push(1);
    }
    Ok(out)
}

/// The output shape of `reshape_like` for the given ranges.
fn reshape_like_shape(lhs: &[usize], rhs: &[usize], attrs: &oxnet_core::Attrs) -> Result<Shape> {
    let range = |begin: Option<i64>, end: Option<i64>, n: usize, what: &str| -> Result<(usize, usize)> {
        let norm = |v: i64| -> Result<usize> {
            let w = if v < 0 { v + n as i64 } else { v };
            if w < 0 || w > n as i64 {
                return Err(Error::Shape(format!(
                    "reshape_like: {what} index {v} is out of range for rank {n}"
                )));
            }
            Ok(w as usize)
        };
        let b = begin.map(norm).transpose()?.unwrap_or(0);
        let e = end.map(norm).transpose()?.unwrap_or(n);
        if b > e {
            return Err(Error::Shape(format!("reshape_like: {what} range {b}..{e} is empty")));
        }
        Ok((b, e))
    };
    let (lb, le) = range(attrs.opt_int("lhs_begin")?, attrs.opt_int("lhs_end")?, lhs.len(), "lhs")?;
    let (rb, re) = range(attrs.opt_int("rhs_begin")?, attrs.opt_int("rhs_end")?, rhs.len(), "rhs")?;
    let out: Shape = lhs[..lb].iter().chain(&rhs[rb..re]).chain(&lhs[le..]).copied().collect();
    if oxnet_core::shape::numel(&out) != oxnet_core::shape::numel(lhs) {
        return Err(Error::Shape(format!(
            "reshape_like: cannot reshape {lhs:?} to {:?} (from {rhs:?}): the sizes differ",
            out.as_slice()
        )));
    }
    Ok(out)
}

/// The output shape of a `reshape` call: `shape` with its codes, or the
/// deprecated `target_shape` (MXNet 1.x's old API: one 0 extent is
/// inferred, and `keep_highest` keeps the input's first extent).
fn reshape_target(x: &[usize], attrs: &oxnet_core::Attrs) -> Result<Shape> {
    let shape = attrs.ints("shape")?;
    let target = attrs.ints("target_shape")?;
    if !shape.is_empty() || target.is_empty() {
        return reshape_shape(x, shape, attrs.bool("reverse")?);
    }
    let mut spec: Vec<i64> = target.iter().map(|&d| if d == 0 { -1 } else { d }).collect();
    if attrs.bool("keep_highest")? {
        spec[0] =
            *x.first().ok_or_else(|| Error::Shape("reshape: keep_highest needs an input axis".into()))?
                as i64;
    }
    resolve_reshape(x, &spec)
}

/// Partial inference of `reshape`: a complete input gives the output; a
/// complete output gives the one unknown extent of the input (as MXNet
/// 1.9.1, which learns a held-out batch size from the consumer's shape).
fn reshape_partial(
    attrs: &oxnet_core::Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(x) = ins[0].as_ref().filter(|x| oxnet_core::shape::is_known(x)) {
        let s = reshape_target(x, attrs)?;
        return merge(&mut outs[0], &s, "reshape: the output");
    }
    let (Some(x), Some(out)) = (ins[0].clone(), outs[0].as_ref()) else { return Ok(()) };
    let unknown: Vec<usize> = (0..x.len()).filter(|&i| x[i] == 0).collect();
    if unknown.len() != 1 || !oxnet_core::shape::is_known(out) {
        return Ok(());
    }
    let known: usize = x.iter().filter(|&&d| d != 0).product();
    let total: usize = out.iter().product();
    if known == 0 || total % known != 0 {
        return Err(Error::Shape(format!(
            "reshape: no extent completes the input {x:?} to the {total} elements of the output {out:?}"
        )));
    }
    let mut full = x;
    full[unknown[0]] = total / known;
    merge(&mut ins[0], &full, "reshape: data")
}

pub(super) fn register() {
    registry::register(
        OpDef::new("reshape")
            .alias("Reshape")
            .doc("Reshapes the input without changing its data. `shape` may use MXNet's codes: 0 copies an input extent, -1 infers one extent, -2 copies all remaining extents, -3 merges two consecutive extents, -4 a b splits one extent into a and b. With `reverse`, codes are matched from the right.")
            .attr(AttrSpec::optional("shape", AttrKind::Ints, AttrValue::Ints(vec![]), "target shape, with codes 0/-1/-2/-3/-4"))
            .attr(AttrSpec::optional("reverse", AttrKind::Bool, false, "match the codes against the input shape from the right"))
            .attr(AttrSpec::optional("target_shape", AttrKind::Ints, AttrValue::Ints(vec![]), "(deprecated: use `shape`) target shape; one 0 extent is inferred"))
            .attr(AttrSpec::optional("keep_highest", AttrKind::Bool, false, "(deprecated: use `shape`) keep the input's first extent over target_shape's"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let s = reshape_target(x, attrs)?;
                set_shape(&mut outs[0], s, "the output of reshape")
            })
            .infer_shape_partial(reshape_partial)
            .forward(flat_copy)
            .grad_rule(|g| Ok(vec![Some(reshape_grad(&g.out_grads[0], g.inputs[0].shape())?)])),
    );

    registry::register(
        OpDef::new("reshape_like")
            .doc("Reshapes `lhs` to the shape of `rhs` (or replaces the axes lhs_begin..lhs_end of lhs by the axes rhs_begin..rhs_end of rhs).")
            .arguments(&["lhs", "rhs"])
            .attr(AttrSpec::optional("lhs_begin", AttrKind::OptInt, AttrValue::None, "first axis of lhs to replace"))
            .attr(AttrSpec::optional("lhs_end", AttrKind::OptInt, AttrValue::None, "end of the axes of lhs to replace"))
            .attr(AttrSpec::optional("rhs_begin", AttrKind::OptInt, AttrValue::None, "first axis of rhs to use"))
            .attr(AttrSpec::optional("rhs_end", AttrKind::OptInt, AttrValue::None, "end of the axes of rhs to use"))
            .infer_shape(|attrs, ins, outs| {
                let (Some(l), Some(r)) = (&ins[0], &ins[1]) else { return Ok(()) };
                let s = reshape_like_shape(l, r, attrs)?;
                set_shape(&mut outs[0], s, "the output of reshape_like")
            })
            .infer_type(lhs_dtype)
            .forward(flat_copy)
            .grad_rule(|g| Ok(vec![Some(reshape_grad(&g.out_grads[0], g.inputs[0].shape())?), None])),
    );

    registry::register(
        OpDef::new("flatten")
            .alias("Flatten")
            .doc("Flattens the input to two dimensions: (d0, d1 * d2 * ...).")
            .infer_shape(|_, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let s: Shape = match x.split_first() {
                    Some((d0, rest)) => Shape::from_slice(&[*d0, rest.iter().product()]),
                    None => Shape::from_slice(&[1, 1]),
                };
                set_shape(&mut outs[0], s, "the output of flatten")
            })
            .forward(flat_copy)
            .grad_rule(|g| Ok(vec![Some(reshape_grad(&g.out_grads[0], g.inputs[0].shape())?)])),
    );

    registry::register(
        OpDef::new("expand_dims")
            .doc("Inserts an axis of length 1 at position `axis` (negative counts from the end of the result).")
            .attr(AttrSpec::required("axis", AttrKind::Int, "position of the new axis"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let axis = normalize_axis(attrs.int("axis")?, x.len() + 1)?;
                let mut s = x.clone();
                s.insert(axis, 1);
                set_shape(&mut outs[0], s, "the output of expand_dims")
            })
            .forward(flat_copy)
            .grad_rule(|g| Ok(vec![Some(reshape_grad(&g.out_grads[0], g.inputs[0].shape())?)])),
    );

    registry::register(
        OpDef::new("squeeze")
            .doc("Removes axes of length 1: those in `axis`, or all of them. As in MXNet 1.x, squeezing every axis leaves shape (1,).")
            .attr(AttrSpec::optional("axis", AttrKind::OptInts, AttrValue::None, "axes to remove (None: every axis of length 1)"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let s = squeeze_shape(x, attrs.opt_ints("axis")?)?;
                set_shape(&mut outs[0], s, "the output of squeeze")
            })
            .forward(flat_copy)
            .grad_rule(|g| Ok(vec![Some(reshape_grad(&g.out_grads[0], g.inputs[0].shape())?)])),
    );

    registry::register(
        OpDef::new("transpose")
            .doc("Permutes the axes: output axis i is input axis axes[i]; empty `axes` reverses them.")
            .attr(AttrSpec::optional(
                "axes",
                AttrKind::Ints,
                AttrValue::Ints(vec![]),
                "the permutation (empty: reverse)",
            ))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let perm = permutation(attrs.ints("axes")?, x.len())?;
                let s: Shape = perm.iter().map(|a| x[*a]).collect();
                set_shape(&mut outs[0], s, "the output of transpose")
            })
            .infer_shape_partial(|attrs, ins, outs| {
                // partial shapes: the output's known extents flow back too
                let Some(rank) = ins[0].as_ref().or(outs[0].as_ref()).map(|s| s.len()) else { return Ok(()) };
                let perm = permutation(attrs.ints("axes")?, rank)?;
                if let Some(o) = outs[0].clone() {
                    let mut back = Shape::from_elem(0, rank);
                    for (i, &a) in perm.iter().enumerate() {
                        back[a] = *o.get(i).unwrap_or(&0);
                    }
                    merge(&mut ins[0], &back, "transpose: data")?;
                }
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let s: Shape = perm.iter().map(|a| x[*a]).collect();
                merge(&mut outs[0], &s, "transpose: the output")
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                let perm = permutation(ctx.attrs.ints("axes")?, inputs[0].ndim())?;
                store_view(ctx.req[0], &outputs[0], &inputs[0].transpose(Some(&perm))?)
            })
            .grad_rule(|g| {
                let perm = permutation(g.attrs.ints("axes")?, g.inputs[0].ndim())?;
                let mut inv = vec![0i64; perm.len()];
                for (i, p) in perm.iter().enumerate() {
                    inv[*p] = i as i64;
                }
                let dx =
                    crate::util::call("transpose", &[&g.out_grads[0]], &[("axes", AttrValue::Ints(inv))])?;
                Ok(vec![Some(dx)])
            }),
    );

    registry::register(
        OpDef::new("SwapAxis")
            .alias("swapaxes")
            .doc("Swaps axes `dim1` and `dim2` (negative values count from the last axis).")
            .attr(AttrSpec::optional("dim1", AttrKind::Int, 0, "the first axis"))
            .attr(AttrSpec::optional("dim2", AttrKind::Int, 0, "the second axis"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let perm = swap_permutation(attrs, x.len())?;
                let s: Shape = perm.iter().map(|a| x[*a]).collect();
                set_shape(&mut outs[0], s, "the output of SwapAxis")
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                let perm = swap_permutation(ctx.attrs, inputs[0].ndim())?;
                store_view(ctx.req[0], &outputs[0], &inputs[0].transpose(Some(&perm))?)
            })
            .grad_rule(|g| {
                // a swap undoes itself
                Ok(vec![Some(crate::util::call_parsed("SwapAxis", &[&g.out_grads[0]], g.attrs)?)])
            }),
    );

    registry::register(
        OpDef::new("cast")
            .alias("Cast")
            .doc("Converts the elements to `dtype`.")
            .attr(AttrSpec::required("dtype", AttrKind::DType, "the target dtype"))
            .infer_type(|attrs, _ins, outs| {
                let dt = attrs.dtype("dtype")?.ok_or_else(|| Error::attr("dtype", "required"))?;
                match outs[0] {
                    Some(have) if have != dt => {
                        Err(Error::DType(format!("the output of cast must have dtype {dt}, got {have}")))
                    }
                    _ => {
                        outs[0] = Some(dt);
                        Ok(())
                    }
                }
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| store_view(ctx.req[0], &outputs[0], &inputs[0]))
            .grad_rule(|g| {
                let dt = g.inputs[0].dtype();
                let dx = crate::util::call("cast", &[&g.out_grads[0]], &[("dtype", AttrValue::DType(dt))])?;
                Ok(vec![Some(dx)])
            }),
    );
}

/// Dtype inference: the output has the first input's dtype; the other
/// inputs may have any dtype.
pub(crate) fn lhs_dtype(
    _: &oxnet_core::Attrs,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    match (ins[0], outs[0]) {
        (Some(a), Some(o)) if a != o => Err(Error::DType(format!("dtypes {a} and {o} must be equal"))),
        (Some(a), _) => {
            outs[0] = Some(a);
            Ok(())
        }
        (None, Some(o)) => {
            ins[0] = Some(o);
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn shape_of(x: &NDArray, spec: &[i64]) -> Vec<usize> {
        invoke1("reshape", &[x], &[("shape", spec.to_vec().into())]).unwrap().shape().to_vec()
    }

    #[test]
    fn reshape_codes_through_the_operator() {
        let x = iota(&[2, 3, 4]);
        assert_eq!(shape_of(&x, &[4, 0, 2]), vec![4, 3, 2]);
        assert_eq!(shape_of(&x, &[6, 1, -1]), vec![6, 1, 4]);
        assert_eq!(shape_of(&x, &[-2, 1, 1]), vec![2, 3, 4, 1, 1]);
        assert_eq!(shape_of(&x, &[-3, 4]), vec![6, 4]);
        assert_eq!(shape_of(&x, &[-4, 1, 2, -2]), vec![1, 2, 3, 4]);
        assert_eq!(shape_of(&x, &[2, -4, -1, 3, -2]), vec![2, 1, 3, 4]);
        let y = invoke1("Reshape", &[&x], &[("shape", "(0, -1)".into())]).unwrap();
        assert_eq!(y.shape(), &[2, 12]);
        assert_eq!(vals(&y), vals(&x)); // same row-major order
                                        // reverse: codes matched from the right (MXNet's documented example)
        let z = NDArray::zeros(&[10, 5, 4], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let r =
            invoke1("reshape", &[&z], &[("shape", "(-1, 0)".into()), ("reverse", "True".into())]).unwrap();
        assert_eq!(r.shape(), &[50, 4]);
        let r = invoke1("reshape", &[&z], &[("shape", "(-1, 0)".into())]).unwrap();
        assert_eq!(r.shape(), &[40, 5]);
        // a strided input goes through a contiguous copy
        let t = x.transpose(None).unwrap();
        let f = invoke1("reshape", &[&t], &[("shape", "(-1,)".into())]).unwrap();
        let want: Vec<f64> = (0..4)
            .flat_map(|k| (0..3).flat_map(move |j| (0..2).map(move |i| (i * 12 + j * 4 + k) as f64)))
            .collect();
        assert_eq!(vals(&f), want);
        // integer dtype
        let xi = cast(&x, DType::I32);
        let yi = invoke1("reshape", &[&xi], &[("shape", "(4, -1)".into())]).unwrap();
        assert_eq!((yi.dtype(), yi.to_vec::<i32>().unwrap()), (DType::I32, (0..24).collect::<Vec<i32>>()));
    }

    #[test]
    fn reshape_errors_name_the_problem() {
        let x = iota(&[2, 3]);
        let e = err_msg(invoke1("reshape", &[&x], &[("shape", "(4, -1)".into())]));
        assert!(e.contains("reshape") && e.contains("[2, 3]") && e.contains("infer"), "{e}");
        let e = err_msg(invoke1("reshape", &[&x], &[("shape", "(5,)".into())]));
        assert!(e.contains("does not match") && e.contains("6 elements"), "{e}");
        let e = err_msg(invoke1("reshape", &[&x], &[("shape", "(-1, -1)".into())]));
        assert!(e.contains("more than one -1"), "{e}");
        let e =
            err_msg(invoke1("reshape", &[&x], &[("shape", "(2, 3)".into()), ("reverse", "maybe".into())]));
        assert!(e.contains("reverse"), "{e}");
    }

    #[test]
    fn reshape_family_op_checks() {
        OpChecker::new("reshape", &[sample(&[2, 3, 2])]).attr("shape", "(-1, 0)").run().unwrap();
        OpChecker::new("reshape", &[sample(&[2, 3, 2])]).attr("shape", "(-4, 1, 2, -2)").run().unwrap();
        OpChecker::new("reshape", &[sample(&[6, 2])])
            .attr("shape", "(3, -1)")
            .attr("reverse", true)
            .run()
            .unwrap();
        OpChecker::new("flatten", &[sample(&[2, 3, 2])]).run().unwrap();
        OpChecker::new("expand_dims", &[sample(&[2, 3])]).attr("axis", -1i64).run().unwrap();
        OpChecker::new("squeeze", &[sample(&[2, 1, 3, 1])]).attr("axis", "(1,)").run().unwrap();
        OpChecker::new("squeeze", &[sample(&[2, 1, 3, 1])]).run().unwrap();
        OpChecker::new("reshape_like", &[sample(&[2, 3]), sample(&[3, 2])]).no_grad(&[1]).run().unwrap();
        check_second_order("reshape", &[sample(&[2, 3])], &[("shape", "(3, 2)".into())]);
    }

    #[test]
    fn flatten_expand_squeeze_shapes() {
        let x = iota(&[2, 3, 4]);
        let f = invoke1("Flatten", &[&x], &[]).unwrap();
        assert_eq!((f.shape(), vals(&f)), (&[2usize, 12][..], vals(&x)));
        assert_eq!(invoke1("flatten", &[&iota(&[5])], &[]).unwrap().shape(), &[5, 1]);
        assert_eq!(invoke1("expand_dims", &[&x], &[("axis", 1i64.into())]).unwrap().shape(), &[2, 1, 3, 4]);
        assert_eq!(
            invoke1("expand_dims", &[&x], &[("axis", (-1i64).into())]).unwrap().shape(),
            &[2, 3, 4, 1]
        );
        let e = err_msg(invoke1("expand_dims", &[&x], &[("axis", 5i64.into())]));
        assert!(e.contains("axis 5") && e.contains("out of range"), "{e}");
        let s = iota(&[1, 3, 1]);
        assert_eq!(invoke1("squeeze", &[&s], &[]).unwrap().shape(), &[3]);
        assert_eq!(invoke1("squeeze", &[&s], &[("axis", (-1i64).into())]).unwrap().shape(), &[1, 3]);
        assert_eq!(invoke1("squeeze", &[&iota(&[1, 1])], &[]).unwrap().shape(), &[1]);
        let e = err_msg(invoke1("squeeze", &[&s], &[("axis", 1i64.into())]));
        assert!(e.contains("cannot squeeze axis 1") && e.contains("not 1"), "{e}");
        let rl = invoke1("reshape_like", &[&x, &iota(&[4, 6])], &[]).unwrap();
        assert_eq!(rl.shape(), &[4, 6]);
        let rl = invoke1(
            "reshape_like",
            &[&x, &iota(&[6, 12])],
            &[("lhs_begin", 1i64.into()), ("rhs_begin", 1i64.into())],
        )
        .unwrap();
        assert_eq!(rl.shape(), &[2, 12]);
        assert!(invoke1("reshape_like", &[&x, &iota(&[5])], &[]).is_err());
    }

    #[test]
    fn transpose_values_and_gradient() {
        let (a, b, c) = (2, 3, 4);
        let x = iota(&[a, b, c]);
        let y = invoke1("transpose", &[&x], &[("axes", "(1, 2, 0)".into())]).unwrap();
        assert_eq!(y.shape(), &[b, c, a]);
        let mut want = vec![];
        for j in 0..b {
            for k in 0..c {
                for i in 0..a {
                    want.push((i * b * c + j * c + k) as f64);
                }
            }
        }
        assert_eq!(vals(&y), want);
        let r = invoke1("transpose", &[&x], &[]).unwrap();
        assert_eq!(r.shape(), &[c, b, a]);
        assert_eq!(vals(&r)[1], 12.0);
        // f16 and int
        let h = invoke1("transpose", &[&cast(&iota(&[2, 3]), DType::F16)], &[]).unwrap();
        assert_eq!((h.dtype(), vals(&h)), (DType::F16, vec![0., 3., 1., 4., 2., 5.]));
        let i = invoke1("transpose", &[&cast(&iota(&[2, 3]), DType::I64)], &[]).unwrap();
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
        OpChecker::new("transpose", &[sample(&[2, 3, 4])]).attr("axes", "(1, 2, 0)").run().unwrap();
        OpChecker::new("transpose", &[sample(&[2, 3])]).run().unwrap();
        check_second_order("transpose", &[sample(&[2, 3, 4])], &[("axes", "(2, 0, 1)".into())]);
        let e = err_msg(invoke1("transpose", &[&x], &[("axes", "(0, 0, 1)".into())]));
        assert!(e.contains("not a permutation"), "{e}");
        assert!(invoke1("transpose", &[&x], &[("axes", "(0, 1)".into())]).is_err());
    }

    #[test]
    fn swapaxis_values_gradient_and_errors() {
        let (a, b, c) = (2, 3, 4);
        let x = iota(&[a, b, c]);
        let y = invoke1("SwapAxis", &[&x], &[("dim1", 0.into()), ("dim2", 2.into())]).unwrap();
        assert_eq!(y.shape(), &[c, b, a]);
        let mut want = vec![];
        for k in 0..c {
            for j in 0..b {
                for i in 0..a {
                    want.push((i * b * c + j * c + k) as f64);
                }
            }
        }
        assert_eq!(vals(&y), want);
        // the alias, negative axes, and the default (0, 0): the identity
        let z = invoke1("swapaxes", &[&x], &[("dim1", (-1).into()), ("dim2", 1.into())]).unwrap();
        assert_eq!(z.shape(), &[a, c, b]);
        assert_eq!(vals(&invoke1("swapaxes", &[&x], &[]).unwrap()), vals(&x));
        OpChecker::new("SwapAxis", &[sample(&[2, 3, 4])]).attr("dim1", 1).attr("dim2", 2).run().unwrap();
        check_second_order("SwapAxis", &[sample(&[2, 3, 4])], &[("dim1", 0.into()), ("dim2", 1.into())]);
        let e = err_msg(invoke1("SwapAxis", &[&x], &[("dim2", 3.into())]));
        assert!(e.contains("SwapAxis") && e.contains("dim2"), "{e}");
    }

    #[test]
    fn cast_converts_and_differentiates() {
        let x = NDArray::from_vec(vec![1.7f64, -2.5, 3.0, 250.0], &[2, 2]).unwrap();
        let i = invoke1("cast", &[&x], &[("dtype", "int32".into())]).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, -2, 3, 250]);
        let u = invoke1("Cast", &[&x], &[("dtype", AttrValue::DType(DType::U8))]).unwrap();
        // truncated toward zero, then wrapped: -2.5 -> -2 -> 254 (C's casts, numpy's astype)
        assert_eq!(u.to_vec::<u8>().unwrap(), vec![1, 254, 3, 250]);
        let h = invoke1("cast", &[&x], &[("dtype", "float16".into())]).unwrap();
        let want: Vec<f64> =
            [1.7f64, -2.5, 3.0, 250.0].iter().map(|v| half::f16::from_f64(*v).to_f64()).collect();
        assert_eq!((h.dtype(), vals(&h)), (DType::F16, want));
        let b = invoke1("cast", &[&cast(&x, DType::F32)], &[("dtype", "bfloat16".into())]).unwrap();
        assert_eq!(b.dtype(), DType::BF16);
        OpChecker::new("cast", &[sample(&[2, 3])]).attr("dtype", "float64").run().unwrap();
        OpChecker::new("cast", &[sample(&[2, 3])])
            .attr("dtype", "float32")
            .eps(1e-2)
            .tol(1e-3, 1e-3)
            .run()
            .unwrap();
        let e = err_msg(invoke1("cast", &[&x], &[]));
        assert!(e.contains("dtype") && e.contains("missing"), "{e}");
        assert!(err_msg(invoke1("cast", &[&x], &[("dtype", "complex64".into())])).contains("complex64"));
    }
}
