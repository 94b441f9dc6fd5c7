//! concat, stack, split: joining arrays along an axis and cutting one apart.

use super::{reshape_grad, set_shape};
use crate::partial_shape::{merge, show};
use oxnet_core::op::OpContext;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Element, Error, NDArray, OpDef, Req, Result,
};

/// Copies `srcs[i]`, seen as (outer, extents[i] * inner), side by side into
/// `dst`, seen as (outer, sum(extents) * inner).
fn join_blocks<T: Element>(
    req: Req,
    srcs: &[&[T]],
    extents: &[usize],
    outer: usize,
    inner: usize,
    dst: &mut [T],
) {
    let total: usize = extents.iter().sum();
    let mut off = 0;
    for (src, &n) in srcs.iter().zip(extents) {
        let blk = n * inner;
        if blk > 0 {
            for b in 0..outer {
                let at = (b * total + off) * inner;
                store_slice(req, &mut dst[at..at + blk], &src[b * blk..(b + 1) * blk]);
            }
        }
        off += n;
    }
}

/// The inverse of [`join_blocks`]: cuts `src` into `dsts` (one request each).
fn split_blocks<T: Element>(
    reqs: &[Req],
    src: &[T],
    extents: &[usize],
    outer: usize,
    inner: usize,
    dsts: &mut [&mut [T]],
) {
    let total: usize = extents.iter().sum();
    let mut off = 0;
    for ((dst, &n), &req) in dsts.iter_mut().zip(extents).zip(reqs) {
        let blk = n * inner;
        if blk > 0 && req != Req::Null {
            for b in 0..outer {
                let at = (b * total + off) * inner;
                store_slice(req, &mut dst[b * blk..(b + 1) * blk], &src[at..at + blk]);
            }
        }
        off += n;
    }
}

/// Joins the (contiguous) inputs: `extents[i]` is input i's extent on the
/// joined axis, `outer`/`inner` the sizes before and after it.
fn join_kernel(
    ctx: &OpContext,
    inputs: &[NDArray],
    out: &NDArray,
    extents: &[usize],
    outer: usize,
    inner: usize,
) -> Result<()> {
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_dtype!(out.dtype(), T => {
        let srcs = inputs.iter().map(|x| x.as_slice::<T>()).collect::<Result<Vec<_>>>()?;
        join_blocks(ctx.req[0], &srcs, extents, outer, inner, out.as_mut_slice::<T>()?);
    });
    Ok(())
}

fn names(prefix: &str, n: i64, what: &str) -> Result<Vec<String>> {
    if n < 1 {
        return Err(Error::attr(what, format!("must be at least 1, got {n}")));
    }
    Ok((0..n).map(|i| format!("{prefix}{i}")).collect())
}

/// The output shape of `concat`, filling one unknown input from the output.
fn concat_infer(dim: i64, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some((first, proto)) = ins.iter().enumerate().find_map(|(i, s)| s.clone().map(|s| (i, s))) else {
        return Ok(());
    };
    if proto.is_empty() {
        return Err(Error::Shape(format!("concat needs inputs of rank at least 1, input {first} is 0-d")));
    }
    let axis = normalize_axis(dim, proto.len())?;
    let mut total = 0;
    let mut unknown = Vec::new();
    for (i, s) in ins.iter().enumerate() {
        let Some(s) = s else {
            unknown.push(i);
            continue;
        };
        let same = s.len() == proto.len() && (0..s.len()).all(|k| k == axis || s[k] == proto[k]);
        if !same {
            return Err(Error::Shape(format!(
                "concat: input {i} has shape {:?}, which does not match input {first}'s shape {:?} on the axes other than {axis}",
                s.as_slice(),
                proto.as_slice()
            )));
        }
        total += s[axis];
    }
    match unknown.as_slice() {
        [] => {
            let mut o = proto.clone();
            o[axis] = total;
            set_shape(&mut outs[0], o, "the output of concat")
        }
        [only] => {
            if let Some(o) = outs[0].clone() {
                if o.len() != proto.len() || o[axis] < total {
                    return Err(Error::Shape(format!(
                        "concat: the output shape {:?} cannot hold the inputs",
                        o.as_slice()
                    )));
                }
                let mut s = o.clone();
                s[axis] = o[axis] - total;
                ins[*only] = Some(s);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `concat` over partial shapes (0 = unknown extent): the axes other than
/// `dim` agree across the inputs and the output; the output's extent on
/// `dim` is the inputs' sum, and one input's unknown extent is what the
/// output has left.
fn concat_infer_partial(dim: i64, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(rank) = ins.iter().chain(outs.iter()).flatten().map(|s| s.len()).next() else {
        return Ok(());
    };
    if rank == 0 {
        return Err(Error::Shape("concat needs inputs of rank at least 1, got a 0-d shape".into()));
    }
    let axis = normalize_axis(dim, rank)?;
    let mut common: Shape = Shape::from_elem(0, rank);
    for (i, s) in ins.iter().chain(outs.iter()).enumerate() {
        let Some(s) = s else { continue };
        let what = if i < ins.len() { format!("concat: input {i}") } else { "concat: the output".into() };
        let mut want = common.clone();
        want[axis] = s.get(axis).copied().unwrap_or(0);
        let mut slot = Some(s.clone());
        merge(&mut slot, &want, &what)?;
        common = slot.unwrap();
        common[axis] = 0;
    }
    let mut extents: Vec<usize> = ins.iter().map(|s| s.as_ref().map_or(0, |s| s[axis])).collect();
    let total = outs[0].as_ref().map_or(0, |o| o[axis]);
    let known: usize = extents.iter().sum();
    let unknown: Vec<usize> = (0..extents.len()).filter(|&i| extents[i] == 0).collect();
    let out_extent = match unknown.as_slice() {
        [] => known,
        [only] if total != 0 => {
            if total < known {
                return Err(Error::Shape(format!(
                    "concat: the output's extent {total} on axis {axis} cannot hold inputs of {known}"
                )));
            }
            extents[*only] = total - known;
            total
        }
        _ => 0,
    };
    for (slot, &n) in ins.iter_mut().zip(&extents) {
        let mut want = common.clone();
        want[axis] = n;
        merge(slot, &want, "concat: an input")?;
    }
    let mut want = common;
    want[axis] = out_extent;
    merge(&mut outs[0], &want, "concat: the output")
}

/// `split` over partial shapes: every piece has one shape, the input's with
/// the cut axis divided (or dropped under `squeeze_axis`), and back.
fn split_infer_partial(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let n = outs.len();
    let squeeze = attrs.bool("squeeze_axis")?;
    let mut piece: Option<Shape> = None;
    for (j, o) in outs.iter().enumerate() {
        if let Some(o) = o {
            merge(&mut piece, o, &format!("split: output {j}"))?;
        }
    }
    // the input's rank, from itself or from a piece
    let rank = match (&ins[0], &piece) {
        (Some(x), _) => x.len(),
        (None, Some(p)) if squeeze => p.len() + 1,
        (None, Some(p)) => p.len(),
        (None, None) => return Ok(()),
    };
    if rank == 0 {
        return Err(Error::Shape("split needs an input of rank at least 1, got a 0-d array".into()));
    }
    let axis = normalize_axis(attrs.int("axis")?, rank)?;
    let mut x: Shape = ins[0].clone().unwrap_or_else(|| Shape::from_elem(0, rank));
    if let Some(p) = &piece {
        let mut from_piece = p.clone();
        if squeeze {
            if rank == 1 {
                from_piece.clear();
            }
            from_piece.insert(axis, n);
        } else {
            from_piece[axis] *= n;
        }
        let mut slot = Some(x);
        merge(&mut slot, &from_piece, "split: the input")?;
        x = slot.unwrap();
    }
    if x[axis] % n != 0 {
        return Err(Error::Shape(format!(
            "split: axis {axis} of shape {} (extent {}) cannot be cut into {n} equal pieces",
            show(&x),
            x[axis]
        )));
    }
    let mut p = x.clone();
    p[axis] = x[axis] / n;
    if squeeze {
        if p[axis] != 1 && p[axis] != 0 {
            return Err(Error::Shape(format!(
                "split with squeeze_axis: axis {axis} of shape {} must have extent num_outputs = {n}",
                show(&x)
            )));
        }
        p.remove(axis);
        if p.is_empty() {
            p.push(1);
        }
    }
    ins[0] = Some(x);
    for (j, o) in outs.iter_mut().enumerate() {
        merge(o, &p, &format!("split: output {j}"))?;
    }
    Ok(())
}

fn prod(s: &[usize]) -> usize {
    s.iter().product()
}

pub(super) fn register() {
    registry::register(
        OpDef::new("concat")
            .alias("Concat")
            .alias("_rnn_param_concat")
            .doc("Joins `num_args` arrays along axis `dim`; they must agree on every other axis.")
            .attr(AttrSpec::required("num_args", AttrKind::Int, "number of inputs"))
            .attr(AttrSpec::optional("dim", AttrKind::Int, 1i64, "the axis to join along"))
            .arguments_fn(|attrs| names("arg", attrs.int("num_args")?, "num_args"))
            .infer_shape(|attrs, ins, outs| concat_infer(attrs.int("dim")?, ins, outs))
            .infer_shape_partial(|attrs, ins, outs| concat_infer_partial(attrs.int("dim")?, ins, outs))
            .forward(|ctx, inputs, outputs| {
                let out = &outputs[0];
                let axis = normalize_axis(ctx.attrs.int("dim")?, out.ndim())?;
                let extents: Vec<usize> = inputs.iter().map(|x| x.shape()[axis]).collect();
                join_kernel(
                    ctx,
                    inputs,
                    out,
                    &extents,
                    prod(&out.shape()[..axis]),
                    prod(&out.shape()[axis + 1..]),
                )
            })
            .grad_rule(|g| {
                let gy = &g.out_grads[0];
                let axis = normalize_axis(g.attrs.int("dim")?, gy.ndim())?;
                let mut off = 0i64;
                let mut grads = Vec::with_capacity(g.inputs.len());
                for (x, need) in g.inputs.iter().zip(g.needs_grad) {
                    let n = x.shape()[axis] as i64;
                    grads.push(if *need {
                        Some(crate::util::call(
                            "slice_axis",
                            &[gy],
                            &[
                                ("axis", AttrValue::Int(axis as i64)),
                                ("begin", AttrValue::Int(off)),
                                ("end", AttrValue::Int(off + n)),
                            ],
                        )?)
                    } else {
                        None
                    });
                    off += n;
                }
                Ok(grads)
            }),
    );

    registry::register(
        OpDef::new("stack")
            .doc("Joins `num_args` arrays of one shape along a new axis `axis`.")
            .attr(AttrSpec::required("num_args", AttrKind::Int, "number of inputs"))
            .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, "position of the new axis in the result"))
            .arguments_fn(|attrs| names("arg", attrs.int("num_args")?, "num_args"))
            .infer_shape(|attrs, ins, outs| {
                let Some((first, proto)) =
                    ins.iter().enumerate().find_map(|(i, s)| s.clone().map(|s| (i, s)))
                else {
                    return Ok(());
                };
                for (i, s) in ins.iter_mut().enumerate() {
                    match s {
                        Some(have) if *have != proto => {
                            return Err(Error::Shape(format!(
                                "stack: input {i} has shape {:?}, input {first} has {:?}; all must be equal",
                                have.as_slice(),
                                proto.as_slice()
                            )))
                        }
                        _ => *s = Some(proto.clone()),
                    }
                }
                let axis = normalize_axis(attrs.int("axis")?, proto.len() + 1)?;
                let mut o = proto.clone();
                o.insert(axis, ins.len());
                set_shape(&mut outs[0], o, "the output of stack")
            })
            .forward(|ctx, inputs, outputs| {
                let out = &outputs[0];
                let axis = normalize_axis(ctx.attrs.int("axis")?, out.ndim())?;
                let extents = vec![1; inputs.len()];
                join_kernel(
                    ctx,
                    inputs,
                    out,
                    &extents,
                    prod(&out.shape()[..axis]),
                    prod(&out.shape()[axis + 1..]),
                )
            })
            .grad_rule(|g| {
                let gy = &g.out_grads[0];
                let axis = normalize_axis(g.attrs.int("axis")?, gy.ndim())?;
                let parts = oxnet_core::invoke(
                    "split",
                    &[gy],
                    &[
                        ("num_outputs", AttrValue::Int(g.inputs.len() as i64)),
                        ("axis", AttrValue::Int(axis as i64)),
                        ("squeeze_axis", AttrValue::Bool(true)),
                    ],
                )?;
                // `split` keeps (1,) where squeezing would leave a 0-d piece
                parts
                    .iter()
                    .zip(g.inputs)
                    .zip(g.needs_grad)
                    .map(|((p, x), need)| if *need { reshape_grad(p, x.shape()).map(Some) } else { Ok(None) })
                    .collect()
            }),
    );

    registry::register(
        OpDef::new("split")
            .alias("SliceChannel")
            .doc("Cuts the input into `num_outputs` equal pieces along `axis`; with `squeeze_axis` (pieces of extent 1) that axis is dropped.")
            .attr(AttrSpec::required("num_outputs", AttrKind::Int, "number of pieces"))
            .attr(AttrSpec::optional("axis", AttrKind::Int, 1i64, "the axis to cut"))
            .attr(AttrSpec::optional("squeeze_axis", AttrKind::Bool, false, "drop the cut axis (each piece must have extent 1 there)"))
            .outputs_fn(|attrs| names("output", attrs.int("num_outputs")?, "num_outputs"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let n = outs.len();
                if x.is_empty() {
                    return Err(Error::Shape("split needs an input of rank at least 1, got a 0-d array".into()));
                }
                let axis = normalize_axis(attrs.int("axis")?, x.len())?;
                if x[axis] % n != 0 {
                    return Err(Error::Shape(format!(
                        "split: axis {axis} of shape {:?} (extent {}) cannot be cut into {n} equal pieces",
                        x.as_slice(),
                        x[axis]
                    )));
                }
                let mut piece = x.clone();
                piece[axis] = x[axis] / n;
                if attrs.bool("squeeze_axis")? {
                    if piece[axis] != 1 {
                        return Err(Error::Shape(format!(
                            "split with squeeze_axis: axis {axis} of shape {:?} must have extent num_outputs = {n}",
                            x.as_slice()
                        )));
                    }
                    piece.remove(axis);
                    if piece.is_empty() {
                        piece.push(1);
                    }
                }
                for (j, o) in outs.iter_mut().enumerate() {
                    set_shape(o, piece.clone(), &format!("output {j} of split"))?;
                }
                Ok(())
            })
            .infer_shape_partial(split_infer_partial)
            .forward(|ctx, inputs, outputs| {
                let x = &inputs[0];
                let axis = normalize_axis(ctx.attrs.int("axis")?, x.ndim())?;
                let n = outputs.len();
                let extents = vec![x.shape()[axis] / n; n];
                let (outer, inner) = (prod(&x.shape()[..axis]), prod(&x.shape()[axis + 1..]));
                oxnet_core::with_dtype!(x.dtype(), T => {
                    let mut dsts = outputs.iter().map(|o| o.as_mut_slice::<T>()).collect::<Result<Vec<_>>>()?;
                    split_blocks(ctx.req, x.as_slice::<T>()?, &extents, outer, inner, &mut dsts);
                });
                Ok(())
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let axis = normalize_axis(g.attrs.int("axis")?, x.ndim())?;
                let n = g.out_grads.len() as i64;
                let refs: Vec<&NDArray> = g.out_grads.iter().collect();
                let dx = if g.attrs.bool("squeeze_axis")? {
                    let pieces: Vec<NDArray> = {
                        let mut piece = Shape::from_slice(x.shape());
                        piece[axis] = 1;
                        refs.iter().map(|p| reshape_grad(p, &piece)).collect::<Result<_>>()?
                    };
                    let prefs: Vec<&NDArray> = pieces.iter().collect();
                    crate::util::call("concat", &prefs, &[("num_args", AttrValue::Int(n)), ("dim", AttrValue::Int(axis as i64))])?
                } else {
                    crate::util::call("concat", &refs, &[("num_args", AttrValue::Int(n)), ("dim", AttrValue::Int(axis as i64))])?
                };
                Ok(vec![Some(dx)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke, invoke1, DType, NDArray};

    /// Concatenation along `axis` with plain loops over multi-indices.
    fn concat_ref(xs: &[NDArray], axis: usize) -> Vec<f64> {
        let shape0 = xs[0].shape().to_vec();
        let outer: usize = shape0[..axis].iter().product();
        let inner: usize = shape0[axis + 1..].iter().product();
        let mut out = vec![];
        for o in 0..outer {
            for x in xs {
                let v = vals(x);
                let n = x.shape()[axis];
                out.extend_from_slice(&v[o * n * inner..(o + 1) * n * inner]);
            }
        }
        out
    }

    #[test]
    fn concat_forward_and_checks() {
        let a = iota(&[2, 1, 3]);
        let b = sample(&[2, 2, 3]);
        let c = iota(&[2, 3, 3]);
        let y = invoke1("concat", &[&a, &b, &c], &[("num_args", 3i64.into())]).unwrap();
        assert_eq!(y.shape(), &[2, 6, 3]);
        assert_eq!(vals(&y), concat_ref(&[a.clone(), b.clone(), c.clone()], 1));
        // the first rows by hand: a[0,0,:], b[0,0,:], b[0,1,:]
        assert_eq!(vals(&y)[..9], [0.0, 1.0, 2.0, 0.25, -0.25, -0.75, 1.75, 1.25, 0.75]);
        let z = invoke1(
            "Concat",
            &[&iota(&[1, 2]), &iota(&[2, 2])],
            &[("num_args", 2i64.into()), ("dim", 0i64.into())],
        )
        .unwrap();
        assert_eq!(vals(&z), vec![0., 1., 0., 1., 2., 3.]);
        let n = invoke1(
            "concat",
            &[&iota(&[2, 2]), &iota(&[2, 1])],
            &[("num_args", 2i64.into()), ("dim", (-1i64).into())],
        )
        .unwrap();
        assert_eq!(vals(&n), vec![0., 1., 0., 2., 3., 1.]);
        let i =
            invoke1("concat", &[&cast(&a, DType::I32), &cast(&b, DType::I32)], &[("num_args", 2i64.into())])
                .unwrap();
        assert_eq!(i.dtype(), DType::I32);
        assert_eq!(i.to_vec::<i32>().unwrap()[3..6], [0, 0, 0]);
        OpChecker::new("concat", &[a.clone(), b.clone(), c.clone()])
            .attr("num_args", 3i64)
            .skip_error_checks()
            .run()
            .unwrap();
        OpChecker::new("concat", &[sample(&[3, 2]), sample(&[1, 2])])
            .attr("num_args", 2i64)
            .attr("dim", 0i64)
            .skip_error_checks()
            .run()
            .unwrap();
        check_second_order("concat", &[sample(&[2, 2]), sample(&[2, 3])], &[("num_args", 2i64.into())]);
    }

    #[test]
    fn concat_errors_name_the_problem() {
        let e = err_msg(invoke1("concat", &[&iota(&[2, 3]), &iota(&[3, 3])], &[("num_args", 2i64.into())]));
        assert!(
            e.contains("concat")
                && e.contains("input 1")
                && e.contains("[3, 3]")
                && e.contains("does not match"),
            "{e}"
        );
        let e =
            err_msg(invoke1("concat", &[&iota(&[2, 3]), &iota(&[2, 3, 1])], &[("num_args", 2i64.into())]));
        assert!(e.contains("does not match"), "{e}");
        let e = err_msg(invoke1(
            "concat",
            &[&iota(&[2, 3]), &iota(&[2, 3])],
            &[("num_args", 2i64.into()), ("dim", 2i64.into())],
        ));
        assert!(e.contains("axis 2") && e.contains("out of range"), "{e}");
        let e = err_msg(invoke1("concat", &[&iota(&[2, 3])], &[("num_args", 2i64.into())]));
        assert!(e.contains("expects 2 inputs"), "{e}");
        assert!(err_msg(invoke1("concat", &[], &[("num_args", 0i64.into())])).contains("num_args"));
        let e = err_msg(invoke1(
            "concat",
            &[&iota(&[2]), &cast(&iota(&[2]), DType::F32)],
            &[("num_args", 2i64.into()), ("dim", 0i64.into())],
        ));
        assert!(e.contains("float32") && e.contains("float64"), "{e}");
    }

    #[test]
    fn stack_forward_and_checks() {
        let a = iota(&[2, 3]);
        let b = sample(&[2, 3]);
        let y = invoke1("stack", &[&a, &b], &[("num_args", 2i64.into()), ("axis", 1i64.into())]).unwrap();
        assert_eq!(y.shape(), &[2, 2, 3]);
        let (va, vb) = (vals(&a), vals(&b));
        let mut want = vec![];
        for i in 0..2 {
            want.extend_from_slice(&va[i * 3..i * 3 + 3]);
            want.extend_from_slice(&vb[i * 3..i * 3 + 3]);
        }
        assert_eq!(vals(&y), want);
        let y0 = invoke1("stack", &[&a, &b], &[("num_args", 2i64.into())]).unwrap();
        assert_eq!(vals(&y0), [va.clone(), vb.clone()].concat());
        let yl = invoke1("stack", &[&a, &b], &[("num_args", 2i64.into()), ("axis", (-1i64).into())]).unwrap();
        assert_eq!(yl.shape(), &[2, 3, 2]);
        assert_eq!(vals(&yl)[..4], [va[0], vb[0], va[1], vb[1]]);
        let e = err_msg(invoke1("stack", &[&a, &iota(&[3, 2])], &[("num_args", 2i64.into())]));
        assert!(e.contains("stack") && e.contains("must be equal"), "{e}");
        OpChecker::new("stack", &[a.clone(), b.clone(), sample(&[2, 3])])
            .attr("num_args", 3i64)
            .attr("axis", 1i64)
            .skip_error_checks()
            .run()
            .unwrap();
        OpChecker::new("stack", &[sample(&[3]), sample(&[3])])
            .attr("num_args", 2i64)
            .attr("axis", 1i64)
            .skip_error_checks()
            .run()
            .unwrap();
        check_second_order(
            "stack",
            &[sample(&[2, 3]), sample(&[2, 3])],
            &[("num_args", 2i64.into()), ("axis", 2i64.into())],
        );
    }

    #[test]
    fn split_forward_and_checks() {
        let x = iota(&[2, 4, 3]);
        let outs = invoke("SliceChannel", &[&x], &[("num_outputs", 2i64.into())]).unwrap();
        assert_eq!(outs.len(), 2);
        for (j, o) in outs.iter().enumerate() {
            assert_eq!(o.shape(), &[2, 2, 3]);
            let mut want = vec![];
            for i in 0..2 {
                for k in 2 * j..2 * j + 2 {
                    for l in 0..3 {
                        want.push((i * 12 + k * 3 + l) as f64);
                    }
                }
            }
            assert_eq!(vals(o), want);
        }
        let sq = invoke(
            "split",
            &[&x],
            &[("num_outputs", 3i64.into()), ("axis", (-1i64).into()), ("squeeze_axis", true.into())],
        )
        .unwrap();
        assert_eq!(sq[2].shape(), &[2, 4]);
        assert_eq!(vals(&sq[2]), (0..8).map(|i| (i * 3 + 2) as f64).collect::<Vec<_>>());
        let one = invoke(
            "split",
            &[&iota(&[2])],
            &[("num_outputs", 2i64.into()), ("axis", 0i64.into()), ("squeeze_axis", true.into())],
        )
        .unwrap();
        assert_eq!((one[1].shape(), vals(&one[1])), (&[1usize][..], vec![1.0]));
        let e = err_msg(invoke("split", &[&x], &[("num_outputs", 3i64.into())]));
        assert!(e.contains("cannot be cut into 3"), "{e}");
        let e =
            err_msg(invoke("split", &[&x], &[("num_outputs", 2i64.into()), ("squeeze_axis", true.into())]));
        assert!(e.contains("squeeze_axis"), "{e}");
        let e = err_msg(invoke("split", &[&x], &[("num_outputs", 2i64.into()), ("axis", 3i64.into())]));
        assert!(e.contains("axis 3") && e.contains("out of range"), "{e}");
        let i = invoke("split", &[&cast(&x, DType::U8)], &[("num_outputs", 4i64.into())]).unwrap();
        assert_eq!(i[3].to_vec::<u8>().unwrap(), vec![9, 10, 11, 21, 22, 23]);
        OpChecker::new("split", &[sample(&[2, 4, 3])]).attr("num_outputs", 2i64).run().unwrap();
        OpChecker::new("split", &[sample(&[2, 3])])
            .attr("num_outputs", 3i64)
            .attr("axis", 1i64)
            .attr("squeeze_axis", true)
            .run()
            .unwrap();
        OpChecker::new("split", &[sample(&[2])])
            .attr("num_outputs", 2i64)
            .attr("axis", 0i64)
            .attr("squeeze_axis", true)
            .run()
            .unwrap();
        check_second_order(
            "split",
            &[sample(&[4, 2])],
            &[("num_outputs", 1i64.into()), ("axis", 0i64.into())],
        );
    }
}
