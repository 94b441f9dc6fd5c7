//! Built-in operators: reductions.
//!
//! `sum` (alias `sum_axis`), `mean`, `prod`, `nansum`, `nanprod` (NaN
//! skipped), `max` (`max_axis`), `min`
//! (`min_axis`) take MXNet's `axis` (int, tuple or None = all axes; negative
//! counts from the end), `keepdims` and `exclude` (reduce over every axis
//! except the given ones). As in MXNet 1.x, reducing every axis without
//! `keepdims` gives shape `(1,)`, and an empty `axis` tuple means all axes.
//! `argmax`/`argmin` (`axis` int or None = flattened, `keepdims`;
//! `argmax_channel` is argmax over the last axis) return
//! indices in the input's dtype for floats and in int64 for integers.
//! `norm` (`ord` 1 or 2, `axis`, `keepdims`, `out_dtype`) is the L1/L2 norm.
//! `_np_cumsum` (`cumsum`) gives running sums ([`cumsum`]).
//!
//! Two hidden helpers make the gradients differentiable again:
//! `_backward_reshape_to` and `_backward_broadcast_to` (attribute `shape`),
//! a pair whose gradients are each other's adjoint (reshape back, and
//! [`sum_to_shape`]).

mod cumsum;
mod kernel;
#[cfg(test)]
mod nan_tests;
#[cfg(test)]
mod tests;

use crate::util::call;
use kernel::{Max, Min, Norm, Plan, Prod, RNum, Reducer, SkipNan, Sum};
use oxnet_core::shape::{broadcast_strides, contiguous_strides, normalize_axis, numel, Shape};
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Element, Error, NDArray, OpDef, Req, Result,
};

/// Which reduction a forward kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
    Norm1,
    Norm2,
    NanSum,
    NanProd,
}

/// The reduced axes (`true` where reduced) of an array of rank `ndim` under
/// `axis` and, when declared, `exclude`.
pub(crate) fn reduce_mask(attrs: &Attrs, ndim: usize) -> Result<Vec<bool>> {
    let exclude = match attrs.get("exclude") {
        Ok(AttrValue::Bool(b)) => *b,
        _ => false,
    };
    let axes = match attrs.opt_ints("axis")? {
        None => return Ok(vec![true; ndim]),
        Some([]) => return Ok(vec![true; ndim]),
        Some(a) => a,
    };
    let mut mask = vec![false; ndim];
    for &a in axes {
        let n = normalize_axis(a, ndim)?;
        if mask[n] {
            return Err(Error::Shape(format!("axis {a} appears more than once in {axes:?}")));
        }
        mask[n] = true;
    }
    if exclude {
        mask.iter_mut().for_each(|m| *m = !*m);
    }
    Ok(mask)
}

/// The input shape with reduced axes set to 1.
fn keep_shape(shape: &[usize], mask: &[bool]) -> Vec<usize> {
    shape.iter().zip(mask).map(|(d, m)| if *m { 1 } else { *d }).collect()
}

/// The output shape of a reduction (MXNet 1.x: `(1,)` when nothing is left).
fn reduced_shape(shape: &[usize], mask: &[bool], keepdims: bool) -> Shape {
    if keepdims {
        return Shape::from_slice(&keep_shape(shape, mask));
    }
    let out: Shape = shape.iter().zip(mask).filter(|(_, m)| !**m).map(|(d, _)| *d).collect();
    if out.is_empty() {
        Shape::from_slice(&[1])
    } else {
        out
    }
}

fn ints_attr(v: &[usize]) -> AttrValue {
    AttrValue::Ints(v.iter().map(|d| *d as i64).collect())
}

/// Sums `g` down to `target`, a shape that broadcasts to `g`'s shape (the
/// gradient of a broadcasting operation with respect to a smaller operand).
/// Built from operators, so it is differentiable again.
pub(crate) fn sum_to_shape(g: &NDArray, target: &[usize]) -> Result<NDArray> {
    if g.shape() == target {
        return Ok(g.clone());
    }
    let nd = g.ndim();
    if target.len() > nd {
        return Err(Error::Shape(format!(
            "cannot sum a gradient of shape {:?} to shape {target:?}",
            g.shape()
        )));
    }
    let lead = nd - target.len();
    let mut axes: Vec<i64> = (0..lead as i64).collect();
    for (i, &t) in target.iter().enumerate() {
        let d = g.shape()[lead + i];
        if t == 1 && d != 1 {
            axes.push((lead + i) as i64);
        } else if t != d {
            return Err(Error::Shape(format!(
                "cannot sum a gradient of shape {:?} to shape {target:?}",
                g.shape()
            )));
        }
    }
    let summed = if axes.is_empty() {
        g.clone()
    } else {
        call("sum", &[g], &[("axis", AttrValue::Ints(axes)), ("keepdims", true.into())])?
    };
    if summed.shape() == target {
        Ok(summed)
    } else {
        call("_backward_reshape_to", &[&summed], &[("shape", ints_attr(target))])
    }
}

/// Broadcasts a reduction's output gradient `g` back to the input shape.
fn broadcast_back(g: &NDArray, x_shape: &[usize], mask: &[bool]) -> Result<NDArray> {
    let keep = keep_shape(x_shape, mask);
    let gk = if g.shape() == keep.as_slice() {
        g.clone()
    } else {
        call("_backward_reshape_to", &[g], &[("shape", ints_attr(&keep))])?
    };
    if keep.as_slice() == x_shape {
        Ok(gk)
    } else {
        call("_backward_broadcast_to", &[&gk], &[("shape", ints_attr(x_shape))])
    }
}

fn reduce_infer(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(x) = &ins[0] else { return Ok(()) };
    let mask = reduce_mask(attrs, x.len())?;
    let out = reduced_shape(x, &mask, attrs.bool("keepdims")?);
    match &outs[0] {
        Some(have) if *have != out => Err(Error::Shape(format!(
            "the output of reducing {:?} must have shape {:?}, got {:?}",
            x.as_slice(),
            out.as_slice(),
            have.as_slice()
        ))),
        _ => {
            outs[0] = Some(out);
            Ok(())
        }
    }
}

fn run_kind<T: RNum>(kind: Kind, x: &[T], plan: &Plan, out: &mut [T], req: Req) -> Result<()> {
    fn go<T: RNum, R: Reducer<T>>(r: R, x: &[T], plan: &Plan, out: &mut [T], req: Req) -> Result<()> {
        kernel::reduce(&r, x, plan, out, req)
    }
    match kind {
        Kind::Sum => go(Sum::<false>, x, plan, out, req),
        Kind::Mean => go(Sum::<true>, x, plan, out, req),
        Kind::Prod => go(Prod, x, plan, out, req),
        Kind::Max => go(Max, x, plan, out, req),
        Kind::Min => go(Min, x, plan, out, req),
        Kind::Norm1 => go(Norm::<1>, x, plan, out, req),
        Kind::Norm2 => go(Norm::<2>, x, plan, out, req),
        Kind::NanSum => go(SkipNan(Sum::<false>), x, plan, out, req),
        Kind::NanProd => go(SkipNan(Prod), x, plan, out, req),
    }
}

fn norm_kind(attrs: &Attrs) -> Result<Kind> {
    match attrs.int("ord")? {
        1 => Ok(Kind::Norm1),
        2 => Ok(Kind::Norm2),
        o => Err(Error::attr("ord", format!("only ord=1 and ord=2 are supported, got {o}"))),
    }
}

fn reduce_forward(
    kind: Option<Kind>,
) -> impl Fn(&oxnet_core::OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync {
    move |ctx, ins, outs| {
        let req = ctx.req[0];
        if req == Req::Null {
            return Ok(());
        }
        let x = &ins[0];
        let mask = reduce_mask(ctx.attrs, x.ndim())?;
        let plan = Plan::new(x.shape(), &mask);
        match kind {
            Some(k) => oxnet_core::with_numeric_dtype!(x.dtype(), T => {
                run_kind::<T>(k, x.as_slice::<T>()?, &plan, outs[0].as_mut_slice::<T>()?, req)
            }),
            None => {
                let k = norm_kind(ctx.attrs)?;
                oxnet_core::with_float_dtype!(x.dtype(), T => {
                    run_kind::<T>(k, x.as_slice::<T>()?, &plan, outs[0].as_mut_slice::<T>()?, req)
                })
            }
        }
    }
}

fn reduce_def(name: &str, doc: &str) -> OpDef {
    OpDef::new(name)
        .doc(doc)
        .attr(AttrSpec::optional(
            "axis",
            AttrKind::OptInts,
            AttrValue::None,
            "Axis or axes to reduce (negative counts from the end); None or () reduces all axes.",
        ))
        .attr(AttrSpec::optional("keepdims", AttrKind::Bool, false, "Keep reduced axes with length 1."))
        .attr(AttrSpec::optional(
            "exclude",
            AttrKind::Bool,
            false,
            "Reduce over every axis except those in `axis`.",
        ))
        .infer_shape(reduce_infer)
}

/// Numeric inputs only (bool rejected), output of the input's dtype.
fn numeric_dtype(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let dt = ins[0].or(outs[0]).ok_or_else(|| Error::DType("no input dtype is known".into()))?;
    if dt == DType::Bool {
        return Err(Error::DType("reductions are not defined for bool".into()));
    }
    oxnet_core::op::same_dtype(&Attrs::empty(), ins, outs)
}

/// Float inputs only, output of the input's dtype.
fn float_dtype(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let dt = ins[0].or(outs[0]).ok_or_else(|| Error::DType("no input dtype is known".into()))?;
    if !dt.is_float() {
        return Err(Error::DType(format!("norm expects a floating-point input, got {dt}")));
    }
    oxnet_core::op::same_dtype(&Attrs::empty(), ins, outs)
}

/// `norm`'s dtypes: a float input; the output has `out_dtype` when given.
fn norm_dtype(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let Some(want) = norm_out_dtype(attrs)? else {
        return float_dtype(attrs, ins, outs);
    };
    if let Some(dt) = ins[0] {
        if !dt.is_float() {
            return Err(Error::DType(format!("norm expects a floating-point input, got {dt}")));
        }
    }
    match outs[0] {
        Some(have) if have != want => {
            Err(Error::DType(format!("norm: the output must have out_dtype {want}, got {have}")))
        }
        _ => {
            outs[0] = Some(want);
            Ok(())
        }
    }
}

fn norm_out_dtype(attrs: &Attrs) -> Result<Option<DType>> {
    let dt = attrs.dtype("out_dtype")?;
    match dt {
        None | Some(DType::F16 | DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::I8) => Ok(dt),
        Some(d) => Err(Error::attr("out_dtype", format!("norm cannot give {d}"))),
    }
}

/// `norm`'s attributes without `out_dtype`.
fn norm_plain_attrs(attrs: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("ord", attrs.get("ord")?.clone()),
        ("axis", attrs.get("axis")?.clone()),
        ("keepdims", attrs.get("keepdims")?.clone()),
    ])
}

/// `norm`: computed in the wider of the input's dtype and a float
/// `out_dtype`, then converted to the output's dtype.
fn norm_forward(ctx: &oxnet_core::OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, out) = (&ins[0], &outs[0]);
    if x.dtype() == out.dtype() {
        return reduce_forward(None)(ctx, ins, outs);
    }
    let wider = out.dtype().is_float() && out.dtype().size() > x.dtype().size();
    let xc = if wider { x.astype(out.dtype())? } else { x.clone() };
    let y = call("norm", &[&xc], &norm_plain_attrs(ctx.attrs)?)?;
    let y = if y.dtype() == out.dtype() { y } else { y.astype(out.dtype())? };
    oxnet_core::store::store(ctx.req[0], out, &y)
}

/// `norm`'s gradient; with an `out_dtype`, computed in the output's float
/// dtype (else the input's) and returned in the input's.
fn norm_grad(g: &oxnet_core::GradCtx) -> Result<Vec<Option<NDArray>>> {
    let kind = norm_kind(g.attrs)?;
    let (x, y, dy) = (&g.inputs[0], &g.outputs[0], &g.out_grads[0]);
    if x.dtype() == y.dtype() || !g.needs_grad[0] {
        return reduce_grad(kind, g);
    }
    let cast = |a: &NDArray, dt: DType| -> Result<NDArray> {
        if a.dtype() == dt {
            Ok(a.clone())
        } else {
            call("cast", &[a], &[("dtype", AttrValue::DType(dt))])
        }
    };
    let dt = if y.dtype().is_float() { y.dtype() } else { x.dtype() };
    let (xs, ys, dys) = ([cast(x, dt)?], [cast(y, dt)?], [cast(dy, dt)?]);
    let inner = oxnet_core::GradCtx { inputs: &xs, outputs: &ys, out_grads: &dys, ..*g };
    let dx = reduce_grad(kind, &inner)?;
    Ok(vec![dx[0].as_ref().map(|d| cast(d, x.dtype())).transpose()?])
}

/// The gradient rules of the reductions, composed of operators.
fn reduce_grad(kind: Kind, g: &oxnet_core::GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let x = &g.inputs[0];
    let y = &g.outputs[0];
    let dy = &g.out_grads[0];
    let mask = reduce_mask(g.attrs, x.ndim())?;
    let back = |a: &NDArray| broadcast_back(a, x.shape(), &mask);
    let dx = match kind {
        Kind::Sum => back(dy)?,
        Kind::Mean => {
            let count: usize = x.shape().iter().zip(&mask).filter(|(_, m)| **m).map(|(d, _)| *d).product();
            back(&call("_div_scalar", &[dy], &[("scalar", (count as f64).into())])?)?
        }
        Kind::Prod => call("elemwise_div", &[&back(&call("elemwise_mul", &[dy, y], &[])?)?, x], &[])?,
        Kind::Max | Kind::Min => {
            let hit = call("_equal", &[x, &back(y)?], &[])?;
            call("elemwise_mul", &[&back(dy)?, &hit], &[])?
        }
        Kind::Norm2 => call("elemwise_mul", &[x, &back(&call("elemwise_div", &[dy, y], &[])?)?], &[])?,
        Kind::Norm1 => {
            let pos = call("_greater_scalar", &[x], &[("scalar", 0.0.into())])?;
            let neg = call("_lesser_scalar", &[x], &[("scalar", 0.0.into())])?;
            let sign = call("elemwise_sub", &[&pos, &neg], &[])?;
            call("elemwise_mul", &[&back(dy)?, &sign], &[])?
        }
        Kind::NanSum | Kind::NanProd => {
            // as sum's and prod's, with NaN inputs (which the forward skipped) getting 0
            let d = if kind == Kind::NanSum {
                back(dy)?
            } else {
                call("elemwise_div", &[&back(&call("elemwise_mul", &[dy, y], &[])?)?, x], &[])?
            };
            let present = call("_equal", &[x, x], &[])?;
            call("where", &[&present, &d, &call("zeros_like", &[&d], &[])?], &[])?
        }
    };
    Ok(vec![Some(dx)])
}

fn register_reductions() {
    let plain: [(&str, &[&str], Kind, &str); 7] = [
        ("sum", &["sum_axis"], Kind::Sum, "Sum of the elements over the given axes."),
        (
            "mean",
            &[],
            Kind::Mean,
            "Mean of the elements over the given axes (integer division for integers).",
        ),
        ("prod", &[], Kind::Prod, "Product of the elements over the given axes."),
        (
            "nansum",
            &[],
            Kind::NanSum,
            "Sum over the given axes with NaN treated as zero (NaN inputs get a zero gradient).",
        ),
        (
            "nanprod",
            &[],
            Kind::NanProd,
            "Product over the given axes with NaN treated as one (NaN inputs get a zero gradient).",
        ),
        (
            "max",
            &["max_axis"],
            Kind::Max,
            "Maximum over the given axes (NaN propagates; empty axes are an error).",
        ),
        (
            "min",
            &["min_axis"],
            Kind::Min,
            "Minimum over the given axes (NaN propagates; empty axes are an error).",
        ),
    ];
    for (name, aliases, kind, doc) in plain {
        let mut def = reduce_def(name, doc)
            .infer_type(numeric_dtype)
            .forward(reduce_forward(Some(kind)))
            .grad_rule(move |g| reduce_grad(kind, g));
        for a in aliases {
            def = def.alias(a);
        }
        registry::register(def);
    }

    registry::register(
        OpDef::new("norm")
            .doc("The L2 (ord=2, default) or L1 (ord=1) norm over the given axes (all by default).")
            .attr(AttrSpec::optional("ord", AttrKind::Int, 2i64, "Order of the norm: 1 or 2."))
            .attr(AttrSpec::optional(
                "axis",
                AttrKind::OptInts,
                AttrValue::None,
                "Axis or axes to reduce (negative counts from the end); None reduces all axes.",
            ))
            .attr(AttrSpec::optional(
                "out_dtype",
                AttrKind::DType,
                AttrValue::None,
                "The output's dtype (None: the input's): float16, float32, float64, int32, int64 or int8.",
            ))
            .attr(AttrSpec::optional("keepdims", AttrKind::Bool, false, "Keep reduced axes with length 1."))
            .infer_shape(|attrs, ins, outs| {
                norm_kind(attrs)?;
                reduce_infer(attrs, ins, outs)
            })
            .infer_type(norm_dtype)
            .forward(norm_forward)
            .grad_rule(norm_grad),
    );
}

/// `(pre, n, post)` of an argmax over `axis` (None: the flattened array).
fn arg_layout(shape: &[usize], axis: Option<i64>) -> Result<(usize, usize, usize, Option<usize>)> {
    match axis {
        None => Ok((1, numel(shape), 1, None)),
        Some(a) => {
            let ax = normalize_axis(a, shape.len())?;
            Ok((numel(&shape[..ax]), shape[ax], numel(&shape[ax + 1..]), Some(ax)))
        }
    }
}

fn arg_infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(x) = &ins[0] else { return Ok(()) };
    let keepdims = attrs.bool("keepdims")?;
    let out: Shape = match arg_layout(x, attrs.opt_int("axis")?)?.3 {
        None if keepdims => Shape::from_slice(&vec![1; x.len()]),
        None => Shape::from_slice(&[1]),
        Some(ax) => {
            let mut mask = vec![false; x.len()];
            mask[ax] = true;
            reduced_shape(x, &mask, keepdims)
        }
    };
    outs[0] = Some(out);
    Ok(())
}

fn arg_infer_type(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let Some(dt) = ins[0] else {
        return Err(Error::DType("no input dtype is known".into()));
    };
    outs[0] = Some(match dt {
        d if d.is_float() => d,
        d if d.is_int() => DType::I64,
        d => return Err(Error::DType(format!("argmax/argmin are not defined for {d}"))),
    });
    Ok(())
}

fn register_arg(name: &str, is_max: bool) {
    let what = if is_max { "largest" } else { "smallest" };
    registry::register(
        OpDef::new(name)
            .doc(&format!(
                "Index of the {what} element along `axis` (None: of the flattened array); \
                 ties go to the first. Indices have the input's dtype for floats, int64 for integers."
            ))
            .attr(AttrSpec::optional(
                "axis",
                AttrKind::OptInt,
                AttrValue::None,
                "The axis to search (None: the flattened array).",
            ))
            .attr(AttrSpec::optional("keepdims", AttrKind::Bool, false, "Keep the reduced axis with length 1."))
            .infer_shape(arg_infer_shape)
            .infer_type(arg_infer_type)
            .forward(move |ctx, ins, outs| {
                let req = ctx.req[0];
                if req == Req::Null {
                    return Ok(());
                }
                let x = &ins[0];
                let (pre, n, post, _) = arg_layout(x.shape(), ctx.attrs.opt_int("axis")?)?;
                let idx = oxnet_core::with_numeric_dtype!(x.dtype(), T => {
                    kernel::arg_reduce::<T>(x.as_slice::<T>()?, pre, n, post, is_max)?
                });
                let out = &outs[0];
                oxnet_core::with_dtype!(out.dtype(), O => {
                    let o = out.as_mut_slice::<O>()?;
                    if o.len() != idx.len() {
                        return Err(Error::Shape(format!("argmax output holds {} elements, expected {}", o.len(), idx.len())));
                    }
                    for (d, i) in o.iter_mut().zip(&idx) {
                        let v = O::from_f64(*i as f64);
                        *d = if req == Req::Add { Element::add(*d, v) } else { v };
                    }
                });
                Ok(())
            })
            .zero_grad(),
    );
}

fn shape_attr(attrs: &Attrs) -> Result<Vec<usize>> {
    attrs
        .ints("shape")?
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| Error::attr("shape", format!("extents must be non-negative, got {d}")))
        })
        .collect()
}

fn register_helpers() {
    registry::register(
        OpDef::new("_backward_reshape_to")
            .doc(
                "Hidden gradient helper: reshapes to exactly `shape` (no codes). Its gradient reshapes back.",
            )
            .attr(AttrSpec::required("shape", AttrKind::Ints, "The target shape."))
            .infer_shape(|attrs, ins, outs| {
                let shape = shape_attr(attrs)?;
                if let Some(x) = &ins[0] {
                    if numel(x) != numel(&shape) {
                        return Err(Error::Shape(format!("cannot reshape {:?} to {shape:?}", x.as_slice())));
                    }
                }
                outs[0] = Some(Shape::from_slice(&shape));
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let v = ins[0].reshape_to(outs[0].shape())?;
                store(ctx.req[0], &outs[0], &v)
            })
            .grad_rule(|g| {
                let back = call(
                    "_backward_reshape_to",
                    &[&g.out_grads[0]],
                    &[("shape", ints_attr(g.inputs[0].shape()))],
                )?;
                Ok(vec![Some(back)])
            }),
    );
    registry::register(
        OpDef::new("_backward_broadcast_to")
            .doc("Hidden gradient helper: broadcasts to `shape` (numpy rules). Its gradient sums back.")
            .attr(AttrSpec::required("shape", AttrKind::Ints, "The target shape."))
            .infer_shape(|attrs, ins, outs| {
                let shape = shape_attr(attrs)?;
                if let Some(x) = &ins[0] {
                    broadcast_strides(x, &contiguous_strides(x), &shape)?;
                }
                outs[0] = Some(Shape::from_slice(&shape));
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let v = ins[0].broadcast_to(outs[0].shape())?;
                store(ctx.req[0], &outs[0], &v)
            })
            .grad_rule(|g| Ok(vec![Some(sum_to_shape(&g.out_grads[0], g.inputs[0].shape())?)])),
    );
}

/// Registers this module's operators.
/// `argmax`'s attributes for the last axis, which `argmax_channel` uses.
fn last_axis_attrs() -> Result<Attrs> {
    registry::get("argmax")?.parse_attrs(&[("axis", AttrValue::Int(-1))])
}

/// `argmax_channel`: `argmax` over the last axis.
fn register_argmax_channel() {
    registry::register(
        OpDef::new("argmax_channel")
            .doc(
                "Index of the largest element along the last axis (argmax with axis=-1); ties go \
                 to the first. Indices have the input's dtype for floats, int64 for integers.",
            )
            .infer_shape(|_, ins, outs| arg_infer_shape(&last_axis_attrs()?, ins, outs))
            .infer_type(arg_infer_type)
            .forward(|ctx, ins, outs| {
                let op = registry::get("argmax")?;
                oxnet_core::invoke_into(&op, &[&ins[0]], &last_axis_attrs()?, outs, ctx.req)
            })
            .zero_grad(),
    );
}

pub(crate) fn register() {
    register_reductions();
    register_arg("argmax", true);
    register_arg("argmin", false);
    register_argmax_channel();
    register_helpers();
    cumsum::register();
}
