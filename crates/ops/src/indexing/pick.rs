//! `pick`, `one_hot` and `where`.

use crate::nn::split_axis;
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, DType, Element, Error, GradCtx, NDArray, OpContext, OpDef,
    Result,
};

// ---------------------------------------------------------------- pick

pub(crate) fn pick_axis(attrs: &Attrs, ndim: usize) -> Result<usize> {
    match attrs.opt_int("axis")? {
        Some(a) => normalize_axis(a, ndim),
        None => Err(Error::attr("axis", "pick needs an axis (None is not supported)")),
    }
}

/// The output (and index) shape of `pick` on `data`.
fn pick_shape(data: &[usize], attrs: &Attrs) -> Result<Shape> {
    let axis = pick_axis(attrs, data.len())?;
    let mut s = Shape::from_slice(data);
    if attrs.bool("keepdims")? {
        s[axis] = 1;
    } else {
        s.remove(axis);
    }
    Ok(s)
}

/// Checks (or fills) the shape of `pick`'s index: the data's shape without
/// the picked axis, or, with `keepdims`, also with that axis kept as 1 (as
/// MXNet accepts both: Gluon's losses pass `(N,)` labels with `keepdims`).
fn check_index_slot(slot: &mut Option<Shape>, data: &[usize], attrs: &Attrs, op: &str) -> Result<()> {
    let axis = pick_axis(attrs, data.len())?;
    let mut reduced = Shape::from_slice(data);
    reduced.remove(axis);
    if let Some(have) = slot {
        if attrs.bool("keepdims")? && *have == pick_shape(data, attrs)? {
            return Ok(());
        }
    }
    check_slot(slot, reduced, "index", op)
}

/// Index values as positions along an axis of length `n` (clip or wrap).
fn positions(index: &NDArray, n: usize, wrap: bool) -> Result<Vec<usize>> {
    let vals = index.to_vec::<f64>()?;
    if n == 0 {
        if vals.is_empty() {
            return Ok(vec![]);
        }
        return Err(Error::Shape("cannot pick from an axis of length 0".into()));
    }
    let n_i = n as i64;
    Ok(vals
        .iter()
        .map(|&v| {
            let i = v as i64; // truncates toward zero; NaN gives 0
            (if wrap { i.rem_euclid(n_i) } else { i.clamp(0, n_i - 1) }) as usize
        })
        .collect())
}

fn pick_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, index, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let axis = pick_axis(ctx.attrs, x.ndim())?;
    let (outer, n, inner) = split_axis(x.shape(), axis);
    let pos = positions(index, n, ctx.attrs.str("mode")? == "wrap")?;
    oxnet_core::with_dtype!(x.dtype(), T => {
        let xs = x.as_slice::<T>()?;
        let mut y = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for j in 0..inner {
                y.push(xs[(o * n + pos[o * inner + j]) * inner + j]);
            }
        }
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

fn pick_attr_list(attrs: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("axis", attrs.get("axis")?.clone()),
        ("keepdims", attrs.get("keepdims")?.clone()),
        ("mode", attrs.get("mode")?.clone()),
    ])
}

fn pick_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None, None]);
    }
    let dx =
        call("_backward_pick", &[&g.out_grads[0], &g.inputs[1], &g.inputs[0]], &pick_attr_list(g.attrs)?)?;
    Ok(vec![Some(dx), None])
}

/// Scatters `ograd` into zeros shaped like `data` at the picked positions.
fn backward_pick_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (og, index, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let axis = pick_axis(ctx.attrs, out.ndim())?;
    let (outer, n, inner) = split_axis(out.shape(), axis);
    let pos = positions(index, n, ctx.attrs.str("mode")? == "wrap")?;
    oxnet_core::with_numeric_dtype!(out.dtype(), T => {
        let gs = og.as_slice::<T>()?;
        let mut dx = vec![T::zero(); out.size()];
        for o in 0..outer {
            for j in 0..inner {
                let k = (o * n + pos[o * inner + j]) * inner + j;
                dx[k] = dx[k].add(gs[o * inner + j]);
            }
        }
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &dx);
    });
    Ok(())
}

fn backward_pick_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None, None, None]);
    }
    let d = call("pick", &[&g.out_grads[0], &g.inputs[1]], &pick_attr_list(g.attrs)?)?;
    Ok(vec![Some(d), None, None])
}

fn pick_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional("axis", AttrKind::OptInt, -1i64, "The axis to pick along."))
        .attr(AttrSpec::optional("keepdims", AttrKind::Bool, false, "Keep the picked axis with length 1."))
        .attr(AttrSpec::optional(
            "mode",
            AttrKind::Choice(vec!["clip", "wrap"]),
            "clip",
            "Out-of-range indices: clip to the ends, or wrap around.",
        ))
}

fn check_slot(slot: &mut Option<Shape>, want: Shape, what: &str, op: &str) -> Result<()> {
    let before = slot.clone();
    crate::partial_shape::merge(slot, &want, what).map_err(|_| {
        let have = before.unwrap_or_default();
        Error::Shape(format!("{op}: {what} has shape {:?}, expected {:?}", have.as_slice(), want.as_slice()))
    })
}

/// `pick`'s shapes from data's (partial shapes welcome: 0 unknown).
fn pick_infer(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(data) = ins[0].clone() else {
        return Ok(());
    };
    check_index_slot(&mut ins[1], &data, attrs, "pick")?;
    check_slot(&mut outs[0], pick_shape(&data, attrs)?, "output", "pick")
}

/// `where` over partial shapes: x, y and the output share one shape; as in
/// MXNet nothing is inferred until the condition's shape is complete.
fn where_infer_partial(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(c) = ins[0].clone().filter(|c| oxnet_core::shape::is_known(c)) else {
        return Ok(());
    };
    let mut xy = [ins[1].take(), ins[2].take()];
    oxnet_core::op::same_shape_partial(&Attrs::empty(), &mut xy, outs)?;
    [ins[1], ins[2]] = xy;
    let s = match &ins[1] {
        Some(s) => s.clone(),
        None if c.len() > 1 => c.clone(),
        None => return Ok(()),
    };
    if c.len() == s.len() {
        let mut filled = Some(s);
        crate::partial_shape::merge(&mut filled, &c, "where: x (from the condition)")?;
        let mut xy = [filled.clone(), None];
        oxnet_core::op::same_shape_partial(&Attrs::empty(), &mut xy, outs)?;
        (ins[1], ins[2]) = (filled.clone(), filled);
    } else if c.len() == 1 && !s.is_empty() {
        crate::partial_shape::merge_dim(c[0], s[0], "where: the 1-d condition and x's first axis")?;
    } else {
        return Err(Error::Shape(format!(
            "where: condition has shape {:?}; it must have x's shape {} or be 1-d",
            c.as_slice(),
            crate::partial_shape::show(&s)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- one_hot

fn one_hot_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (idx, out) = (&inputs[0], &outputs[0]);
    let depth = ctx.attrs.usize("depth")?;
    let (on, off) = (ctx.attrs.float("on_value")?, ctx.attrs.float("off_value")?);
    let vals = idx.to_vec::<f64>()?;
    oxnet_core::with_dtype!(out.dtype(), T => {
        let (on, off) = (T::from_f64(on), T::from_f64(off));
        let mut y = vec![off; vals.len() * depth];
        for (row, v) in y.chunks_exact_mut(depth.max(1)).zip(&vals) {
            let j = *v as i64;
            if j >= 0 && (j as usize) < depth {
                row[j as usize] = on;
            }
        }
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

// ---------------------------------------------------------------- where

fn where_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (cond, x, y, out) = (&inputs[0], &inputs[1], &inputs[2], &outputs[0]);
    let c = cond.to_vec::<f64>()?;
    let rows =
        if cond.shape() == x.shape() { 1 } else { x.size() / x.shape().first().copied().unwrap_or(1).max(1) };
    oxnet_core::with_dtype!(x.dtype(), T => {
        let (xs, ys) = (x.as_slice::<T>()?, y.as_slice::<T>()?);
        let r: Vec<T> = (0..xs.len()).map(|i| if c[i / rows] != 0.0 { xs[i] } else { ys[i] }).collect();
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &r);
    });
    Ok(())
}

fn where_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (cond, og) = (&g.inputs[0], &g.out_grads[0]);
    let zeros = NDArray::zeros_like(og)?;
    let dx = if g.needs_grad[1] { Some(call("where", &[cond, og, &zeros], &[])?) } else { None };
    let dy = if g.needs_grad[2] { Some(call("where", &[cond, &zeros, og], &[])?) } else { None };
    Ok(vec![None, dx, dy])
}

pub(super) fn register() {
    registry::register(
        pick_attrs(OpDef::new("pick"))
            .alias("choose_element_0index")
            .doc(
                "Picks one element along `axis` for every position of the other axes: \
                 out[..., ...] = data[..., index[...], ...]. `index` has the output's shape and \
                 may hold floats or integers; out-of-range values are clipped or wrapped \
                 (`mode`). Not differentiable with respect to `index`.",
            )
            .arguments(&["data", "index"])
            .infer_shape(pick_infer)
            .infer_shape_partial(pick_infer)
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0];
                Ok(())
            })
            .forward(pick_forward)
            .grad_rule(pick_grad),
    );
    registry::register(
        pick_attrs(OpDef::new("_backward_pick"))
            .doc("Gradient of `pick`: scatters `ograd` into zeros shaped like `data`.")
            .arguments(&["ograd", "index", "data"])
            .infer_shape(|attrs, ins, outs| {
                let Some(data) = ins[2].clone() else {
                    return Ok(());
                };
                check_slot(&mut ins[0], pick_shape(&data, attrs)?, "ograd", "_backward_pick")?;
                check_index_slot(&mut ins[1], &data, attrs, "_backward_pick")?;
                check_slot(&mut outs[0], data, "output", "_backward_pick")
            })
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0];
                Ok(())
            })
            .forward(backward_pick_forward)
            .grad_rule(backward_pick_grad),
    );
    registry::register(
        OpDef::new("one_hot")
            .doc(
                "One-hot encoding: appends an axis of length `depth` holding `on_value` at the \
                 index and `off_value` elsewhere (a row of off_value where the index is out of \
                 range). Indices may be floats or integers. Zero gradient.",
            )
            .arguments(&["indices"])
            .attr(AttrSpec::required("depth", AttrKind::Int, "Length of the one-hot axis."))
            .attr(AttrSpec::optional("on_value", AttrKind::Float, 1.0, "Value at the index."))
            .attr(AttrSpec::optional("off_value", AttrKind::Float, 0.0, "Value elsewhere."))
            .attr(AttrSpec::optional("dtype", AttrKind::DType, DType::F32, "Output dtype."))
            .infer_shape(|attrs, ins, outs| {
                let Some(idx) = ins[0].clone() else {
                    return Ok(());
                };
                let mut s = idx;
                s.push(attrs.usize("depth")?);
                check_slot(&mut outs[0], s, "output", "one_hot")
            })
            .infer_type(|attrs, _, outs| {
                outs[0] = Some(attrs.dtype("dtype")?.unwrap_or(DType::F32));
                Ok(())
            })
            .forward(one_hot_forward)
            .zero_grad(),
    );
    registry::register(
        OpDef::new("where")
            .doc(
                "Element-wise choice: x where condition is non-zero, else y. `condition` has \
                 the shape of x, or is 1-d with x's first extent (choosing whole rows). The \
                 gradient flows to x or y, never to condition.",
            )
            .arguments(&["condition", "x", "y"])
            .infer_shape(|_, ins, outs| {
                let Some(s) = ins[1].clone().or_else(|| ins[2].clone()).or_else(|| outs[0].clone()) else {
                    return Ok(());
                };
                check_slot(&mut ins[1], s.clone(), "x", "where")?;
                check_slot(&mut ins[2], s.clone(), "y", "where")?;
                check_slot(&mut outs[0], s.clone(), "output", "where")?;
                match &ins[0] {
                    None => ins[0] = Some(s),
                    Some(c) if *c == s || (c.len() == 1 && !s.is_empty() && c[0] == s[0]) => {}
                    Some(c) => {
                        return Err(Error::Shape(format!(
                            "where: condition has shape {:?}; it must equal x's shape {:?} or be 1-d of length {}",
                            c.as_slice(),
                            s.as_slice(),
                            s.first().copied().unwrap_or(0)
                        )))
                    }
                }
                Ok(())
            })
            .infer_shape_partial(where_infer_partial)
            .infer_type(|_, ins, outs| {
                let mut xy = [ins[1], ins[2]];
                oxnet_core::op::same_dtype(&Attrs::empty(), &mut xy, outs)?;
                ins[1] = xy[0];
                ins[2] = xy[1];
                Ok(())
            })
            .forward(where_forward)
            .grad_rule(where_grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, Device};

    #[test]
    fn pick_values() {
        let x = NDArray::from_vec(vec![1.0f32, 2., 3., 4., 5., 6.], &[3, 2]).unwrap();
        let i = NDArray::from_vec(vec![0.0f32, 1., 0.], &[3]).unwrap();
        assert_eq!(invoke1("pick", &[&x, &i], &[]).unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 5.]);
        let i0 = NDArray::from_vec(vec![0i64, 2], &[2]).unwrap();
        let y = invoke1("pick", &[&x, &i0], &[("axis", 0i64.into())]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![1., 6.]);
        // clip and wrap
        let far = NDArray::from_vec(vec![5.0f32, -1., 3.], &[3]).unwrap();
        assert_eq!(invoke1("pick", &[&x, &far], &[]).unwrap().to_vec::<f32>().unwrap(), vec![2., 3., 6.]);
        let y = invoke1("pick", &[&x, &far], &[("mode", "wrap".into())]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![2., 4., 6.]);
        // keepdims
        let ik = NDArray::from_vec(vec![1.0f32, 1., 0.], &[3, 1]).unwrap();
        let y = invoke1("pick", &[&x, &ik], &[("keepdims", true.into())]).unwrap();
        assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[3usize, 1][..], vec![2., 4., 5.]));
        // 3-d middle axis, against loops
        let d = NDArray::random_uniform(-1.0, 1.0, &[2, 4, 3], DType::F64).unwrap();
        let idx = NDArray::from_vec(vec![3.0f64, 0., 2., 1., 1., 3.], &[2, 3]).unwrap();
        let y = invoke1("pick", &[&d, &idx], &[("axis", 1i64.into())]).unwrap().to_vec::<f64>().unwrap();
        let (dv, iv) = (d.to_vec::<f64>().unwrap(), idx.to_vec::<f64>().unwrap());
        for a in 0..2 {
            for c in 0..3 {
                assert_eq!(y[a * 3 + c], dv[a * 12 + (iv[a * 3 + c] as usize) * 3 + c]);
            }
        }
        OpChecker::new("pick", &[d, idx]).attr("axis", 1i64).no_grad(&[1]).run().unwrap();
        let xi = NDArray::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        let i2 = NDArray::from_vec(vec![1i32, 0], &[2]).unwrap();
        assert_eq!(invoke1("pick", &[&xi, &i2], &[]).unwrap().to_vec::<i32>().unwrap(), vec![2, 3]);
    }

    #[test]
    fn pick_gradient_scatters_and_second_order() {
        let x = NDArray::random_uniform(-1.0, 1.0, &[3, 4], DType::F64).unwrap();
        let idx = NDArray::from_vec(vec![2.0f64, 0., 3.], &[3]).unwrap();
        OpChecker::new("pick", &[x.clone(), idx.clone()]).no_grad(&[1]).run().unwrap();
        OpChecker::new("pick", &[x.clone(), NDArray::from_vec(vec![1.0f64, 7., -1., 2.], &[1, 4]).unwrap()])
            .attr("axis", 0i64)
            .attr("keepdims", true)
            .attr("mode", "wrap")
            .no_grad(&[1])
            .run()
            .unwrap();
        let g = NDArray::from_vec(vec![1.0f64, 2., 3.], &[3]).unwrap();
        OpChecker::new("_backward_pick", &[g, idx, x]).no_grad(&[1, 2]).run().unwrap();
    }

    #[test]
    fn pick_errors() {
        let x = NDArray::zeros(&[3, 2], DType::F32, Device::Cpu).unwrap();
        let i = NDArray::zeros(&[2], DType::F32, Device::Cpu).unwrap();
        let e = invoke1("pick", &[&x, &i], &[]).unwrap_err().to_string();
        assert!(e.contains("index") && e.contains("[2]") && e.contains("[3]"), "{e}");
        assert!(invoke1("pick", &[&x, &i], &[("axis", 2i64.into())])
            .unwrap_err()
            .to_string()
            .contains("axis"));
        assert!(invoke1("pick", &[&x, &i], &[("axis", AttrValue::None)]).is_err());
    }

    #[test]
    fn one_hot_values() {
        let i = NDArray::from_vec(vec![1.0f32, 0., 3., 2.], &[2, 2]).unwrap();
        let y = invoke1("one_hot", &[&i], &[("depth", 3i64.into())]).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[2usize, 2, 3][..], DType::F32));
        #[rustfmt::skip]
        let want = vec![0., 1., 0.,  1., 0., 0.,  0., 0., 0.,  0., 0., 1.];
        assert_eq!(y.to_vec::<f32>().unwrap(), want);
        let li = NDArray::from_vec(vec![2i64, -1], &[2]).unwrap();
        let y = invoke1(
            "one_hot",
            &[&li],
            &[
                ("depth", 3i64.into()),
                ("on_value", 5.0.into()),
                ("off_value", (-1.0).into()),
                ("dtype", "int32".into()),
            ],
        )
        .unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![-1, -1, 5, -1, -1, -1]));
        let f = NDArray::from_vec(vec![0.0f64, 2.], &[2]).unwrap();
        OpChecker::new("one_hot", std::slice::from_ref(&f))
            .attr("depth", 4i64)
            .attr("dtype", "float64")
            .no_grad(&[0])
            .run()
            .unwrap();
        assert!(invoke1("one_hot", &[&f], &[]).unwrap_err().to_string().contains("depth"));
        assert!(invoke1("one_hot", &[&f], &[("depth", (-2i64).into())]).is_err());
    }

    #[test]
    fn where_values_and_gradients() {
        let c = NDArray::from_vec(vec![1.0f32, 0., 0., 2.], &[2, 2]).unwrap();
        let x = NDArray::from_vec(vec![1.0f32, 2., 3., 4.], &[2, 2]).unwrap();
        let y = NDArray::from_vec(vec![-1.0f32, -2., -3., -4.], &[2, 2]).unwrap();
        assert_eq!(
            invoke1("where", &[&c, &x, &y], &[]).unwrap().to_vec::<f32>().unwrap(),
            vec![1., -2., -3., 4.]
        );
        let rows = NDArray::from_vec(vec![0i32, 1], &[2]).unwrap();
        assert_eq!(
            invoke1("where", &[&rows, &x, &y], &[]).unwrap().to_vec::<f32>().unwrap(),
            vec![-1., -2., 3., 4.]
        );
        let xi = NDArray::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
        let yi = NDArray::from_vec(vec![0i64; 4], &[2, 2]).unwrap();
        assert_eq!(
            invoke1("where", &[&c, &xi, &yi], &[]).unwrap().to_vec::<i64>().unwrap(),
            vec![1, 0, 0, 4]
        );
        let r = |s: &[usize]| NDArray::random_uniform(-1.0, 1.0, s, DType::F64).unwrap();
        let cond = NDArray::from_vec(vec![1.0f64, 0., 1., 0., 0., 1.], &[2, 3]).unwrap();
        OpChecker::new("where", &[cond, r(&[2, 3]), r(&[2, 3])]).no_grad(&[0]).run().unwrap();
        let cond1 = NDArray::from_vec(vec![0.0f64, 1.], &[2]).unwrap();
        OpChecker::new("where", &[cond1, r(&[2, 3]), r(&[2, 3])]).no_grad(&[0]).run().unwrap();
        // errors
        let e = invoke1("where", &[&c, &x, &r(&[3, 2]).astype(DType::F32).unwrap()], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("[3, 2]") && e.contains("[2, 2]"), "{e}");
        let bad = NDArray::zeros(&[3], DType::F32, Device::Cpu).unwrap();
        assert!(invoke1("where", &[&bad, &x, &y], &[]).unwrap_err().to_string().contains("condition"));
        assert!(invoke1("where", &[&c, &x, &y.astype(DType::F64).unwrap()], &[]).is_err());
    }
}
