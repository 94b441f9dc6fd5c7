//! tile, repeat, broadcast_to, broadcast_like.
//!
//! tile and repeat read the input through a broadcast view of an
//! "interleaved" shape (a length-1 axis next to each tiled or repeated axis)
//! and write the output seen with that shape; their gradients reshape the
//! output gradient the same way and sum over the inserted axes.

use super::reshape::lhs_dtype;
use super::{check_size, reshape_grad, set_shape, store_view, sum_to};
use crate::reduce::sum_to_shape;
use oxnet_core::op::OpContext;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result};

/// How an input is copied: the input seen as `src` (length-1 axes inserted)
/// is broadcast to `full`, which is the output's layout; the gradient sums
/// over `sum_axes` of `full`.
struct Plan {
    src: Shape,
    full: Shape,
    out: Shape,
    sum_axes: Vec<usize>,
}

fn tile_plan(x: &[usize], reps: &[i64]) -> Result<Plan> {
    if let Some(r) = reps.iter().find(|r| **r < 0) {
        return Err(Error::attr("reps", format!("repetitions must be non-negative, got {r} in {reps:?}")));
    }
    let m = x.len().max(reps.len());
    let xs: Vec<usize> = std::iter::repeat_n(1, m - x.len()).chain(x.iter().copied()).collect();
    let rs: Vec<usize> =
        std::iter::repeat_n(1, m - reps.len()).chain(reps.iter().map(|r| *r as usize)).collect();
    let mut plan = Plan { src: Shape::new(), full: Shape::new(), out: Shape::new(), sum_axes: Vec::new() };
    for i in 0..m {
        plan.src.extend([1, xs[i]]);
        plan.full.extend([rs[i], xs[i]]);
        plan.out.push(
            rs[i].checked_mul(xs[i]).ok_or_else(|| Error::attr("reps", format!("{reps:?} is too large")))?,
        );
        if rs[i] != 1 {
            plan.sum_axes.push(2 * i);
        }
    }
    check_size(&plan.out, "tile")?;
    Ok(plan)
}

fn repeat_plan(x: &[usize], attrs: &Attrs) -> Result<Plan> {
    let r = attrs.int("repeats")?;
    let r =
        usize::try_from(r).map_err(|_| Error::attr("repeats", format!("must be non-negative, got {r}")))?;
    let (pre, d, post): (Vec<usize>, usize, Vec<usize>) = match attrs.opt_int("axis")? {
        None => (vec![], x.iter().product(), vec![]),
        Some(a) => {
            let a = normalize_axis(a, x.len())?;
            (x[..a].to_vec(), x[a], x[a + 1..].to_vec())
        }
    };
    let build = |mid: &[usize]| -> Shape { pre.iter().chain(mid).chain(&post).copied().collect() };
    let dr = d.checked_mul(r).ok_or_else(|| Error::attr("repeats", format!("{r} is too large")))?;
    check_size(&build(&[dr]), "repeat")?;
    Ok(Plan {
        src: build(&[d, 1]),
        full: build(&[d, r]),
        out: build(&[dr]),
        sum_axes: if r == 1 { vec![] } else { vec![pre.len() + 1] },
    })
}

/// The kernel of tile and repeat.
fn plan_copy(ctx: &OpContext, x: &NDArray, out: &NDArray, plan: &Plan) -> Result<()> {
    let view = x.reshape_to(&plan.src)?.broadcast_to(&plan.full)?;
    store_view(ctx.req[0], &out.reshape_to(&plan.full)?, &view)
}

/// The gradient of tile and repeat.
fn plan_grad(g: &NDArray, x: &NDArray, plan: &Plan) -> Result<NDArray> {
    if g.size() == 0 {
        return NDArray::zeros(x.shape(), g.dtype(), g.device());
    }
    let gf = reshape_grad(g, &plan.full)?;
    sum_to(&gf, &plan.sum_axes, x.shape())
}

/// The target of `broadcast_to`: `shape` with 0 keeping the input's extent.
fn broadcast_target(x: &[usize], shape: &[i64]) -> Result<Shape> {
    let bad = || Error::Shape(format!("cannot broadcast shape {x:?} to {shape:?}"));
    if shape.len() < x.len() {
        return Err(bad());
    }
    let lead = shape.len() - x.len();
    let mut out = Shape::new();
    for (i, &t) in shape.iter().enumerate() {
        let have = if i >= lead { Some(x[i - lead]) } else { None };
        let d = match (t, have) {
            (0, Some(h)) => h,
            (t, _) if t > 0 => t as usize,
            _ => return Err(bad()),
        };
        if let Some(h) = have {
            if h != d && h != 1 {
                return Err(bad());
            }
        }
        out.push(d);
    }
    check_size(&out, "broadcast_to")?;
    Ok(out)
}

/// The output shape of `broadcast_like`.
fn broadcast_like_shape(lhs: &[usize], rhs: &[usize], attrs: &Attrs) -> Result<Shape> {
    match (attrs.opt_ints("lhs_axes")?, attrs.opt_ints("rhs_axes")?) {
        (None, None) => {
            let ok = lhs.len() <= rhs.len()
                && lhs.iter().zip(&rhs[rhs.len() - lhs.len()..]).all(|(l, r)| l == r || *l == 1);
            if !ok {
                return Err(Error::Shape(format!(
                    "broadcast_like: cannot broadcast lhs of shape {lhs:?} to rhs's shape {rhs:?}"
                )));
            }
            Ok(Shape::from_slice(rhs))
        }
        (Some(la), Some(_)) if la.is_empty() => {
            // as MXNet: given axes must name at least one
            Err(Error::attr("lhs_axes", "broadcast_like: an empty axes tuple is not allowed"))
        }
        (Some(la), Some(ra)) if la.len() == ra.len() => {
            let mut out = Shape::from_slice(lhs);
            for (l, r) in la.iter().zip(ra) {
                let l = normalize_axis(*l, lhs.len())?;
                let r = normalize_axis(*r, rhs.len())?;
                if lhs[l] != 1 && lhs[l] != rhs[r] {
                    return Err(Error::Shape(format!(
                        "broadcast_like: axis {l} of lhs {lhs:?} has extent {}, which cannot broadcast to {} (axis {r} of rhs {rhs:?})",
                        lhs[l], rhs[r]
                    )));
                }
                out[l] = rhs[r];
            }
            Ok(out)
        }
        _ => Err(Error::attr("rhs_axes", "lhs_axes and rhs_axes must both be given, with as many entries")),
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new("tile")
            .doc("Repeats the whole array `reps` times along each axis (numpy's tile: the shorter of shape and reps is padded with leading 1s).")
            .attr(AttrSpec::required("reps", AttrKind::Ints, "repetitions per axis"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], tile_plan(x, attrs.ints("reps")?)?.out, "the output of tile")
            })
            .forward(|ctx, inputs, outputs| {
                let plan = tile_plan(inputs[0].shape(), ctx.attrs.ints("reps")?)?;
                plan_copy(ctx, &inputs[0], &outputs[0], &plan)
            })
            .grad_rule(|g| {
                let plan = tile_plan(g.inputs[0].shape(), g.attrs.ints("reps")?)?;
                Ok(vec![Some(plan_grad(&g.out_grads[0], &g.inputs[0], &plan)?)])
            }),
    );

    registry::register(
        OpDef::new("repeat")
            .doc("Repeats each element `repeats` times along `axis` (None: of the flattened array).")
            .attr(AttrSpec::required("repeats", AttrKind::Int, "repetitions of each element"))
            .attr(AttrSpec::optional(
                "axis",
                AttrKind::OptInt,
                AttrValue::None,
                "the axis (None: flatten first)",
            ))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], repeat_plan(x, attrs)?.out, "the output of repeat")
            })
            .forward(|ctx, inputs, outputs| {
                let plan = repeat_plan(inputs[0].shape(), ctx.attrs)?;
                plan_copy(ctx, &inputs[0], &outputs[0], &plan)
            })
            .grad_rule(|g| {
                let plan = repeat_plan(g.inputs[0].shape(), g.attrs)?;
                Ok(vec![Some(plan_grad(&g.out_grads[0], &g.inputs[0], &plan)?)])
            }),
    );

    registry::register(
        OpDef::new("broadcast_to")
            .doc("Broadcasts the input to `shape` (0 keeps the input's extent; leading axes may be added).")
            .attr(AttrSpec::required("shape", AttrKind::Ints, "the target shape"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(
                    &mut outs[0],
                    broadcast_target(x, attrs.ints("shape")?)?,
                    "the output of broadcast_to",
                )
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                store_view(ctx.req[0], &outputs[0], &inputs[0].broadcast_to(outputs[0].shape())?)
            })
            .grad_rule(|g| {
                let (x, gy) = (&g.inputs[0], &g.out_grads[0]);
                Ok(vec![Some(sum_to_shape(gy, x.shape())?)])
            }),
    );

    registry::register(
        OpDef::new("broadcast_like")
            .doc("Broadcasts `lhs` to the shape of `rhs` (or only the axes lhs_axes to the extents of the axes rhs_axes of rhs).")
            .arguments(&["lhs", "rhs"])
            .attr(AttrSpec::optional("lhs_axes", AttrKind::OptInts, AttrValue::None, "axes of lhs to broadcast"))
            .attr(AttrSpec::optional("rhs_axes", AttrKind::OptInts, AttrValue::None, "axes of rhs giving the extents"))
            .infer_shape(|attrs, ins, outs| {
                let (Some(l), Some(r)) = (&ins[0], &ins[1]) else { return Ok(()) };
                set_shape(&mut outs[0], broadcast_like_shape(l, r, attrs)?, "the output of broadcast_like")
            })
            .infer_type(lhs_dtype)
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                store_view(ctx.req[0], &outputs[0], &inputs[0].broadcast_to(outputs[0].shape())?)
            })
            .grad_rule(|g| {
                let (x, gy) = (&g.inputs[0], &g.out_grads[0]);
                Ok(vec![Some(sum_to_shape(gy, x.shape())?), None])
            }),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

    #[test]
    fn zero_size_and_huge() {
        // gradients through empty results are zeros of the input's shape
        let x = sample(&[2, 3]);
        x.attach_grad(Req::Write).unwrap();
        let (t, r) = {
            let _r = autograd::record();
            (
                invoke1("tile", &[&x], &[("reps", "(0, 1)".into())]).unwrap(),
                invoke1("repeat", &[&x], &[("repeats", 0i64.into()), ("axis", 1i64.into())]).unwrap(),
            )
        };
        assert_eq!((t.shape(), r.shape()), (&[0usize, 3][..], &[2usize, 0][..]));
        t.backward().unwrap();
        assert_eq!(vals(&x.grad().unwrap()), vec![0.0; 6]);
        r.backward().unwrap();
        assert_eq!(vals(&x.grad().unwrap()), vec![0.0; 6]);
        let z = NDArray::zeros(&[0, 2], DType::F32, oxnet_core::Device::Cpu).unwrap();
        assert_eq!(
            invoke1("broadcast_to", &[&z], &[("shape", "(3, 0, 2)".into())]).unwrap().shape(),
            &[3, 0, 2]
        );
        let e = err_msg(invoke1("tile", &[&x], &[("reps", AttrValue::Ints(vec![1 << 62, 1 << 62]))]));
        assert!(e.contains("too large"), "{e}");
        let e = err_msg(invoke1("repeat", &[&x], &[("repeats", (1i64 << 62).into())]));
        assert!(e.contains("too large"), "{e}");
    }

    #[test]
    fn tile_forward_and_checks() {
        let x = iota(&[2, 3]);
        let y = invoke1("tile", &[&x], &[("reps", "(2,)".into())]).unwrap();
        assert_eq!(y.shape(), &[2, 6]);
        assert_eq!(vals(&y), vec![0., 1., 2., 0., 1., 2., 3., 4., 5., 3., 4., 5.]);
        let y = invoke1("tile", &[&x], &[("reps", "(2, 1, 2)".into())]).unwrap();
        assert_eq!(y.shape(), &[2, 2, 6]);
        let mut want = vec![];
        for _ in 0..2 {
            for i in 0..2 {
                for _ in 0..2 {
                    for j in 0..3 {
                        want.push((i * 3 + j) as f64);
                    }
                }
            }
        }
        assert_eq!(vals(&y), want);
        let yi = invoke1("tile", &[&cast(&x, DType::I64)], &[("reps", "(2, 1)".into())]).unwrap();
        assert_eq!(yi.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]);
        assert_eq!(invoke1("tile", &[&x], &[("reps", "(0, 2)".into())]).unwrap().shape(), &[0, 6]);
        let e = err_msg(invoke1("tile", &[&x], &[("reps", "(-1,)".into())]));
        assert!(e.contains("reps") && e.contains("non-negative"), "{e}");
        OpChecker::new("tile", &[sample(&[2, 3])]).attr("reps", "(2, 1, 2)").run().unwrap();
        OpChecker::new("tile", &[sample(&[3, 1])]).attr("reps", "(1,)").run().unwrap();
        check_second_order("tile", &[sample(&[2, 3])], &[("reps", "(3, 2)".into())]);
    }

    #[test]
    fn repeat_forward_and_checks() {
        let x = iota(&[2, 3]);
        let y = invoke1("repeat", &[&x], &[("repeats", 2i64.into())]).unwrap();
        assert_eq!(y.shape(), &[12]);
        assert_eq!(vals(&y), (0..12).map(|i| (i / 2) as f64).collect::<Vec<_>>());
        let y = invoke1("repeat", &[&x], &[("repeats", 2i64.into()), ("axis", 0i64.into())]).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 2., 0., 1., 2., 3., 4., 5., 3., 4., 5.]);
        let y = invoke1(
            "repeat",
            &[&cast(&x, DType::F32)],
            &[("repeats", 3i64.into()), ("axis", (-1i64).into())],
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 9]);
        assert_eq!(y.to_vec::<f32>().unwrap()[..6], [0., 0., 0., 1., 1., 1.]);
        let e = err_msg(invoke1("repeat", &[&x], &[("repeats", 2i64.into()), ("axis", 2i64.into())]));
        assert!(e.contains("axis 2") && e.contains("out of range"), "{e}");
        assert!(err_msg(invoke1("repeat", &[&x], &[("repeats", (-2i64).into())])).contains("repeats"));
        OpChecker::new("repeat", &[sample(&[2, 3])]).attr("repeats", 3i64).attr("axis", 1i64).run().unwrap();
        OpChecker::new("repeat", &[sample(&[2, 2])]).attr("repeats", 2i64).run().unwrap();
        check_second_order("repeat", &[sample(&[2, 3])], &[("repeats", 2i64.into()), ("axis", 0i64.into())]);
    }

    #[test]
    fn broadcast_to_and_like() {
        let x = iota(&[3, 1]);
        let y = invoke1("broadcast_to", &[&x], &[("shape", "(0, 4)".into())]).unwrap();
        assert_eq!(y.shape(), &[3, 4]);
        assert_eq!(vals(&y), (0..12).map(|i| (i / 4) as f64).collect::<Vec<_>>());
        let y = invoke1("broadcast_to", &[&x], &[("shape", "(2, 3, 2)".into())]).unwrap();
        assert_eq!(vals(&y), vec![0., 0., 1., 1., 2., 2., 0., 0., 1., 1., 2., 2.]);
        let yb = invoke1("broadcast_to", &[&cast(&x, DType::BF16)], &[("shape", "(3, 2)".into())]).unwrap();
        assert_eq!((yb.dtype(), vals(&yb)), (DType::BF16, vec![0., 0., 1., 1., 2., 2.]));
        let e = err_msg(invoke1("broadcast_to", &[&x], &[("shape", "(4, 4)".into())]));
        assert!(e.contains("cannot broadcast shape [3, 1]"), "{e}");
        assert!(
            invoke1("broadcast_to", &[&x], &[("shape", "(0, 4)".into()), ("reverse", true.into())]).is_err()
        );
        OpChecker::new("broadcast_to", &[sample(&[3, 1])]).attr("shape", "(2, 0, 4)").run().unwrap();
        OpChecker::new("broadcast_to", &[sample(&[1, 2])]).attr("shape", "(3, 2)").run().unwrap();
        check_second_order("broadcast_to", &[sample(&[3, 1])], &[("shape", "(2, 3, 2)".into())]);

        let l = iota(&[1, 3]);
        let y = invoke1("broadcast_like", &[&l, &iota(&[2, 3])], &[]).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 2., 0., 1., 2.]);
        let y = invoke1(
            "broadcast_like",
            &[&l, &iota(&[5, 4])],
            &[("lhs_axes", "(0,)".into()), ("rhs_axes", "(1,)".into())],
        )
        .unwrap();
        assert_eq!(y.shape(), &[4, 3]);
        // MXNet 1.9.1 refuses empty axes tuples
        let e = err_msg(invoke1(
            "broadcast_like",
            &[&l, &iota(&[5, 4])],
            &[("lhs_axes", "()".into()), ("rhs_axes", "()".into())],
        ));
        assert!(e.contains("lhs_axes") && e.contains("empty axes"), "{e}");
        let e = err_msg(invoke1("broadcast_like", &[&l, &iota(&[2, 4])], &[]));
        assert!(e.contains("broadcast_like") && e.contains("[1, 3]"), "{e}");
        assert!(invoke1("broadcast_like", &[&l, &iota(&[2, 4])], &[("lhs_axes", "(0,)".into())]).is_err());
        OpChecker::new("broadcast_like", &[sample(&[1, 3]), sample(&[2, 2, 3])]).no_grad(&[1]).run().unwrap();
        let e = err_msg(invoke1(
            "broadcast_to",
            &[&x],
            &[("shape", AttrValue::Ints(vec![1 << 40, 1 << 40, 3, 1]))],
        ));
        assert!(e.contains("too large"), "{e}");
        check_second_order(
            "broadcast_like",
            &[sample(&[2, 1]), sample(&[2, 3])],
            &[("lhs_axes", AttrValue::Ints(vec![1])), ("rhs_axes", AttrValue::Ints(vec![-1]))],
        );
    }
}
