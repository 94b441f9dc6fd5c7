//! The operators `topk`, `sort` and `argsort`, and `_backward_topk`, the
//! scatter their value gradients go through.

use super::kernel::{scatter_grad, select, store_indices, store_mask, store_sorted_values, store_values};
use super::params::{axis_attrs, dtype_attr, fill, RetTyp, TopK};
use super::radix::few;
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, DType, Error, GradCtx, NDArray, OpContext, OpDef, Result, Shape,
};

/// The one input of a sorting call, with its layout.
fn input<'a>(ctx: &OpContext, ins: &'a [NDArray], p: &TopK) -> Result<(&'a NDArray, super::params::Layout)> {
    let [x] = ins else {
        return Err(Error::Invalid(format!("`{}` takes one input, got {}", ctx.op_name, ins.len())));
    };
    Ok((x, p.layout(x.shape(), ctx.op_name)?))
}

/// Runs a call described by `p`: values first (if any), then indices or the mask.
fn run(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], p: &TopK) -> Result<()> {
    let (x, l) = input(ctx, ins, p)?;
    if x.size() == 0 {
        return Ok(());
    }
    oxnet_core::with_numeric_dtype!(x.dtype(), T => {
        let xs = x.as_slice::<T>()?;
        if p.ret == RetTyp::Value && !few(l.k, l.n) {
            return store_sorted_values(xs, &l, p.ascend, ctx.req[0], &outs[0]);
        }
        let sel = select(xs, &l, p.ascend);
        match p.ret {
            RetTyp::Indices => store_indices(&sel, &l, ctx.req[0], &outs[0])?,
            RetTyp::Mask => store_mask::<T>(&sel, &l, ctx.req[0], &outs[0])?,
            RetTyp::Value | RetTyp::Both => {
                store_values(xs, &sel, &l, ctx.req[0], &outs[0])?;
                if let Some(out) = outs.get(1) {
                    store_indices(&sel, &l, ctx.req[1], out)?;
                }
            }
        }
    });
    Ok(())
}

/// Shapes of a call described by `p`: values and indices are kept-shaped,
/// the mask is input-shaped.
fn shapes(p: &TopK, op: &str, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(data) = ins[0].clone() else {
        return Ok(());
    };
    let l = p.layout(&data, op)?;
    let kept = l.kept_shape(&data);
    match p.ret {
        RetTyp::Mask => fill(&mut outs[0], data, "output", op),
        _ => {
            for (i, slot) in outs.iter_mut().enumerate() {
                fill(slot, kept.clone(), &format!("output {i}"), op)?;
            }
            Ok(())
        }
    }
}

/// Dtypes: values and the mask have the input's, indices `index` (the
/// `dtype` attribute, or int32 for `sort`'s hidden indices).
fn types(p: &TopK, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    if p.ret == RetTyp::Indices {
        outs[0] = Some(p.dtype);
        return Ok(());
    }
    match (ins[0], outs[0]) {
        (Some(d), _) => outs[0] = Some(d),
        (None, Some(d)) => ins[0] = Some(d),
        (None, None) => {}
    }
    if let Some(slot) = outs.get_mut(1) {
        *slot = Some(p.dtype);
    }
    Ok(())
}

/// The attributes `_backward_topk` needs from a call described by `p` on `data`.
fn scatter_attrs(p: &TopK, data: &NDArray) -> Result<Vec<(&'static str, AttrValue)>> {
    let l = p.layout(data.shape(), "topk")?;
    let axis = match p.axis {
        Some(a) => AttrValue::Int(a),
        None => AttrValue::None,
    };
    Ok(vec![("axis", axis), ("k", AttrValue::Int(l.k as i64))])
}

/// The largest index `dtype` holds exactly.
fn exact_limit(dtype: DType) -> f64 {
    match dtype {
        DType::U8 => u8::MAX as f64,
        DType::F16 => 2048.0,
        DType::F32 => 16_777_216.0,
        DType::I32 => i32::MAX as f64,
        _ => 9.0e15,
    }
}

/// The gradient of a call whose value output is output 0 and whose indices
/// are `indices` (or recomputed when `None`): `ograd` scattered back to
/// the chosen positions, zero elsewhere.
fn value_grad(g: &GradCtx, p: &TopK, indices: Option<&NDArray>) -> Result<NDArray> {
    let data = &g.inputs[0];
    let recomputed;
    let indices = match indices {
        Some(i) => i,
        None => {
            let axis = p.axis.map_or(AttrValue::None, AttrValue::Int);
            recomputed = call(
                "topk",
                &[data],
                &[
                    ("axis", axis),
                    ("k", AttrValue::Int(p.k)),
                    ("ret_typ", AttrValue::Str("indices".into())),
                    ("is_ascend", AttrValue::Bool(p.ascend)),
                    ("dtype", AttrValue::DType(DType::I64)),
                ],
            )?;
            &recomputed
        }
    };
    call("_backward_topk", &[&g.out_grads[0], indices, data], &scatter_attrs(p, data)?)
}

fn topk_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad.first().copied().unwrap_or(false) {
        return Ok(vec![None]);
    }
    let p = TopK::of_topk(g.attrs)?;
    let data = &g.inputs[0];
    let dx = match p.ret {
        RetTyp::Indices | RetTyp::Mask => call("zeros_like", &[data], &[])?,
        RetTyp::Value => value_grad(g, &p, None)?,
        RetTyp::Both => {
            let n = p.layout(data.shape(), "topk")?.n;
            let exact = n == 0 || (n - 1) as f64 <= exact_limit(p.dtype);
            value_grad(g, &p, if exact { Some(&g.outputs[1]) } else { None })?
        }
    };
    Ok(vec![Some(dx)])
}

fn sort_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad.first().copied().unwrap_or(false) {
        return Ok(vec![None]);
    }
    let p = TopK::of_sort(g.attrs)?;
    Ok(vec![Some(value_grad(g, &p, None)?)])
}

/// `topk`'s output names: two for value and both (MXNet numbers them even
/// when only the values are shown), one otherwise.
fn topk_outputs(attrs: &Attrs) -> Result<Vec<String>> {
    Ok(match TopK::of_topk(attrs)?.ret {
        RetTyp::Both => vec!["output0".into(), "output1".into()],
        RetTyp::Value => vec!["output0".into()],
        _ => vec!["output".into()],
    })
}

/// `_backward_topk`'s layout attributes as a [`TopK`].
fn scatter_params(attrs: &Attrs) -> Result<TopK> {
    Ok(TopK {
        axis: attrs.opt_int("axis")?,
        k: attrs.int("k")?,
        ret: RetTyp::Value,
        ascend: false,
        dtype: DType::I64,
    })
}

/// Registers the sorting operators.
pub(crate) fn register() {
    let topk = OpDef::new("topk")
        .alias("_npx_topk")
        .doc(
            "The top k elements of `data` along `axis` (the flattened array for axis=None): \
             their values, their positions (indices, in `dtype`), a mask of them, or values \
             and positions (`ret_typ`), largest first unless `is_ascend`. k < 1 keeps all. \
             Equal elements keep their order along the axis; NaN counts as above +inf. The value \
             gradient flows back to the chosen positions.",
        )
        .attr(AttrSpec::optional("k", AttrKind::Int, 1i64, "Number of elements to keep; k < 1 keeps all."))
        .attr(AttrSpec::optional(
            "ret_typ",
            AttrKind::Choice(vec!["both", "indices", "mask", "value"]),
            "indices",
            "What to return: value, indices, mask or both (values and indices).",
        ));
    let topk = dtype_attr(axis_attrs(topk, false, "choose the top k"))
        .outputs_fn(topk_outputs)
        .arity_fn(|attrs| Ok([1, 0, if TopK::of_topk(attrs)?.ret == RetTyp::Both { 2 } else { 1 }]))
        .prepare(|attrs| {
            TopK::of_topk(attrs)?;
            Ok(std::sync::Arc::new(()))
        })
        .infer_shape(|attrs, ins, outs| shapes(&TopK::of_topk(attrs)?, "topk", ins, outs))
        .infer_type(|attrs, ins, outs| types(&TopK::of_topk(attrs)?, ins, outs))
        .forward(|ctx, ins, outs| run(ctx, ins, outs, &TopK::of_topk(ctx.attrs)?))
        .grad_rule(topk_grad);
    registry::register(topk);

    let sort = axis_attrs(
        OpDef::new("sort").alias("_npi_sort").doc(
            "A sorted copy of `data` along `axis` (the flattened array for axis=None), \
             ascending unless `is_ascend` is false; NaN counts as above +inf. The gradient \
             flows back to the sorted positions (found again in the backward pass, \
             equal elements in their order along the axis).",
        ),
        true,
        "sort",
    )
    .outputs(&["output0"])
    .infer_shape(|attrs, ins, outs| shapes(&TopK::of_sort(attrs)?, "sort", ins, outs))
    .infer_type(|attrs, ins, outs| types(&TopK::of_sort(attrs)?, ins, outs))
    .forward(|ctx, ins, outs| run(ctx, ins, outs, &TopK::of_sort(ctx.attrs)?))
    .grad_rule(sort_grad);
    registry::register(sort);

    let argsort = axis_attrs(
        OpDef::new("argsort").alias("_npi_argsort").doc(
            "The positions that sort `data` along `axis` (the flattened array for \
             axis=None), in `dtype`; equal elements in their order along the axis, NaN \
             counted as above +inf. Zero gradient.",
        ),
        true,
        "sort",
    );
    let argsort = dtype_attr(argsort)
        .prepare(|attrs| {
            TopK::of_argsort(attrs)?;
            Ok(std::sync::Arc::new(()))
        })
        .infer_shape(|attrs, ins, outs| shapes(&TopK::of_argsort(attrs)?, "argsort", ins, outs))
        .infer_type(|attrs, ins, outs| types(&TopK::of_argsort(attrs)?, ins, outs))
        .forward(|ctx, ins, outs| run(ctx, ins, outs, &TopK::of_argsort(ctx.attrs)?))
        .zero_grad();
    registry::register(argsort);

    registry::register(
        OpDef::new("_backward_topk")
            .doc(
                "Gradient of `topk`/`sort` values: scatters `ograd` (shaped like the kept \
                 values) into zeros shaped like `data`, at the positions `indices` gives \
                 along `axis` (the flattened array for axis=None).",
            )
            .arguments(&["ograd", "indices", "data"])
            .attr(AttrSpec::optional("axis", AttrKind::OptInt, -1i64, "The sorted axis; None: flattened."))
            .attr(AttrSpec::required("k", AttrKind::Int, "How many elements were kept per line."))
            .infer_shape(|attrs, ins, outs| {
                let Some(data) = ins[2].clone() else {
                    return Ok(());
                };
                let p = scatter_params(attrs)?;
                let kept = p.layout(&data, "_backward_topk")?.kept_shape(&data);
                fill(&mut ins[0], kept.clone(), "ograd", "_backward_topk")?;
                fill(&mut ins[1], kept, "indices", "_backward_topk")?;
                fill(&mut outs[0], data, "output", "_backward_topk")
            })
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0].or(ins[2]);
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let [og, index, data] = ins else {
                    return Err(Error::Invalid("`_backward_topk` takes ograd, indices and data".into()));
                };
                let l = scatter_params(ctx.attrs)?.layout(data.shape(), ctx.op_name)?;
                oxnet_core::with_numeric_dtype!(og.dtype(), T => {
                    scatter_grad(og.as_slice::<T>()?, index, &l, ctx.req[0], &outs[0])
                })
            }),
    );
}
