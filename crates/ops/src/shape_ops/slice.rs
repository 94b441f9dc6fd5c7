//! slice, slice_axis and their scattering gradient `_backward_slice`.

use super::{check_size, ints_attr, set_shape, store_into_view, store_view};
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Req, Result, SliceSpec,
};
use std::sync::Arc;

/// Parses a tuple whose entries are integers or `None`: `(0, None)`,
/// `[1, -1]`, `(2,)`, `3`, `()`.
pub(super) fn parse_opt_tuple(s: &str, what: &str) -> Result<Vec<Option<i64>>> {
    let bad = || Error::attr(what, format!("expected a tuple of integers or None, got `{s}`"));
    let t = s.trim();
    let inner = if (t.starts_with('(') && t.ends_with(')')) || (t.starts_with('[') && t.ends_with(']')) {
        &t[1..t.len() - 1]
    } else {
        t
    };
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    parts
        .into_iter()
        .map(|p| match p {
            "None" | "none" | "null" => Ok(None),
            p => p.trim_end_matches('L').parse::<i64>().map(Some).map_err(|_| bad()),
        })
        .collect()
}

/// The string form [`parse_opt_tuple`] reads.
pub(super) fn format_opt_tuple(v: &[Option<i64>]) -> String {
    let parts: Vec<String> =
        v.iter().map(|x| x.map(|i| i.to_string()).unwrap_or_else(|| "None".into())).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// The parsed `begin`, `end` and `step` of a slice.
#[derive(Debug, Clone)]
pub(super) struct SliceParams {
    /// One spec per leading axis.
    pub(super) specs: Vec<SliceSpec>,
}

fn parse_params(attrs: &Attrs) -> Result<SliceParams> {
    let begin = parse_opt_tuple(attrs.str("begin")?, "begin")?;
    let end = parse_opt_tuple(attrs.str("end")?, "end")?;
    let step = parse_opt_tuple(attrs.str("step")?, "step")?;
    if begin.len() != end.len() {
        return Err(Error::attr(
            "end",
            format!("has {} entries but begin has {}; they must have as many", end.len(), begin.len()),
        ));
    }
    if !step.is_empty() && step.len() != begin.len() {
        return Err(Error::attr(
            "step",
            format!(
                "has {} entries but begin has {}; give one per entry of begin, or none",
                step.len(),
                begin.len()
            ),
        ));
    }
    if step.contains(&Some(0)) {
        return Err(Error::attr("step", "slice step cannot be zero"));
    }
    let specs = (0..begin.len())
        .map(|i| SliceSpec { begin: begin[i], end: end[i], step: step.get(i).copied().flatten() })
        .collect();
    Ok(SliceParams { specs })
}

/// The slice of a call (parsed once by `prepare`).
pub(super) fn params(attrs: &Attrs) -> Result<SliceParams> {
    match attrs.prepared::<SliceParams>() {
        Some(p) => Ok(p.clone()),
        None => parse_params(attrs),
    }
}

/// The shape `specs` cut out of `shape`.
pub(super) fn sliced_shape(shape: &[usize], specs: &[SliceSpec]) -> Result<Shape> {
    if specs.len() > shape.len() {
        return Err(Error::Shape(format!(
            "slice: {} entries in begin/end for an input of shape {shape:?} (rank {})",
            specs.len(),
            shape.len()
        )));
    }
    let mut out = Shape::from_slice(shape);
    for (axis, spec) in specs.iter().enumerate() {
        out[axis] = spec.resolve(shape[axis])?.1;
    }
    Ok(out)
}

/// [`sliced_shape`] of a partial shape: an unknown extent (0) stays unknown
/// on the output, whatever the slice (MXNet 1.9.1's partial inference).
fn sliced_partial(shape: &[usize], specs: &[SliceSpec]) -> Result<Shape> {
    let specs: Vec<SliceSpec> =
        specs.iter().zip(shape).map(|(s, &d)| if d == 0 { SliceSpec::all() } else { *s }).collect();
    sliced_shape(shape, &specs)
}

/// `slice_axis` as the per-axis specs of `slice`.
fn axis_specs(attrs: &Attrs, ndim: usize) -> Result<(usize, Vec<SliceSpec>)> {
    let axis = normalize_axis(attrs.int("axis")?, ndim)?;
    let mut specs = vec![SliceSpec::all(); axis + 1];
    specs[axis] = SliceSpec { begin: Some(attrs.int("begin")?), end: attrs.opt_int("end")?, step: None };
    Ok((axis, specs))
}

/// Scatters `g` into zeros of `shape` at the slice `specs`, through the
/// differentiable `_backward_slice` operator.
fn backward_slice(g: &NDArray, begin: String, end: String, step: String, shape: &[usize]) -> Result<NDArray> {
    crate::util::call(
        "_backward_slice",
        &[g],
        &[
            ("begin", AttrValue::Str(begin)),
            ("end", AttrValue::Str(end)),
            ("step", AttrValue::Str(step)),
            ("shape", ints_attr(shape)),
        ],
    )
}

/// Declares `begin`, `end` (when `begin_required`) and `step`, parsed once per call.
pub(super) fn slice_attrs(op: OpDef, begin_required: bool) -> OpDef {
    let op = if begin_required {
        op.attr(AttrSpec::required("begin", AttrKind::Str, "first index per axis, e.g. (0, None)"))
            .attr(AttrSpec::required("end", AttrKind::Str, "end index (exclusive) per axis, e.g. (None, -1)"))
    } else {
        op
    };
    op.attr(AttrSpec::optional(
        "step",
        AttrKind::Str,
        AttrValue::Str("()".into()),
        "step per axis (default 1), e.g. (1, -1)",
    ))
    .prepare(|attrs| Ok(Arc::new(parse_params(attrs)?)))
}

pub(super) fn register() {
    registry::register(
        slice_attrs(
            OpDef::new("slice").alias("crop").doc(
                "Slices the input as numpy does with begin:end:step per axis. Entries may be None (the whole range in the step's direction); negative indices count from the end; axes beyond the tuples are kept whole.",
            ),
            true,
        )
        .infer_shape(|attrs, ins, outs| {
            let Some(x) = &ins[0] else { return Ok(()) };
            let s = sliced_shape(x, &params(attrs)?.specs)?;
            set_shape(&mut outs[0], s, "the output of slice")
        })
        .infer_shape_partial(|attrs, ins, outs| {
            let Some(x) = &ins[0] else { return Ok(()) };
            let s = sliced_partial(x, &params(attrs)?.specs)?;
            crate::partial_shape::merge(&mut outs[0], &s, "the output of slice")
        })
        .accepts_strided()
        .forward(|ctx, inputs, outputs| {
            let view = inputs[0].slice(&params(ctx.attrs)?.specs)?;
            store_view(ctx.req[0], &outputs[0], &view)
        })
        .grad_rule(|g| {
            let a = g.attrs;
            let dx = backward_slice(
                &g.out_grads[0],
                a.str("begin")?.to_string(),
                a.str("end")?.to_string(),
                a.str("step")?.to_string(),
                g.inputs[0].shape(),
            )?;
            Ok(vec![Some(dx)])
        }),
    );

    registry::register(
        OpDef::new("slice_axis")
            .doc("Slices one axis: begin..end (end None: to the end; negative indices count from the end).")
            .attr(AttrSpec::required("axis", AttrKind::Int, "the axis to slice"))
            .attr(AttrSpec::required("begin", AttrKind::Int, "first index"))
            .attr(AttrSpec::required("end", AttrKind::OptInt, "end index (exclusive), or None"))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let (_, specs) = axis_specs(attrs, x.len())?;
                set_shape(&mut outs[0], sliced_shape(x, &specs)?, "the output of slice_axis")
            })
            .infer_shape_partial(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let (_, specs) = axis_specs(attrs, x.len())?;
                crate::partial_shape::merge(
                    &mut outs[0],
                    &sliced_partial(x, &specs)?,
                    "the output of slice_axis",
                )
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                let (_, specs) = axis_specs(ctx.attrs, inputs[0].ndim())?;
                store_view(ctx.req[0], &outputs[0], &inputs[0].slice(&specs)?)
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let (axis, _) = axis_specs(g.attrs, x.ndim())?;
                let mut begin = vec![None; axis + 1];
                let mut end = vec![None; axis + 1];
                begin[axis] = Some(g.attrs.int("begin")?);
                end[axis] = g.attrs.opt_int("end")?;
                let dx = backward_slice(
                    &g.out_grads[0],
                    format_opt_tuple(&begin),
                    format_opt_tuple(&end),
                    "()".into(),
                    x.shape(),
                )?;
                Ok(vec![Some(dx)])
            }),
    );

    registry::register(
        slice_attrs(
            OpDef::new("_backward_slice")
                .doc("Gradient helper of slice: zeros of shape `shape` with the input written at the slice begin:end:step.")
                .attr(AttrSpec::required("begin", AttrKind::Str, "first index per axis"))
                .attr(AttrSpec::required("end", AttrKind::Str, "end index per axis"))
                .attr(AttrSpec::required("shape", AttrKind::Ints, "the shape of the result (the sliced array's)")),
            false,
        )
        .infer_shape(|attrs, ins, outs| {
            let shape: Shape = attrs.ints("shape")?.iter().map(|d| usize::try_from(*d)).collect::<std::result::Result<_, _>>().map_err(|_| {
                Error::attr("shape", format!("extents must be non-negative, got {:?}", attrs.ints("shape").unwrap_or(&[])))
            })?;
            check_size(&shape, "_backward_slice")?;
            let piece = sliced_shape(&shape, &params(attrs)?.specs)?;
            set_shape(&mut ins[0], piece, "the input of _backward_slice")?;
            set_shape(&mut outs[0], shape, "the output of _backward_slice")
        })
        .accepts_strided()
        .forward(|ctx, inputs, outputs| {
            let out = &outputs[0];
            let req = ctx.req[0];
            if req == Req::Null {
                return Ok(());
            }
            if req != Req::Add {
                out.fill(0.0)?;
            }
            let view = out.slice(&params(ctx.attrs)?.specs)?;
            store_into_view(if req == Req::Add { Req::Add } else { Req::Write }, &view, &inputs[0])
        })
        .grad_rule(|g| {
            let a = g.attrs;
            let dy = crate::util::call(
                "slice",
                &[&g.out_grads[0]],
                &[
                    ("begin", AttrValue::Str(a.str("begin")?.to_string())),
                    ("end", AttrValue::Str(a.str("end")?.to_string())),
                    ("step", AttrValue::Str(a.str("step")?.to_string())),
                ],
            )?;
            Ok(vec![Some(dy)])
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::{format_opt_tuple, parse_opt_tuple};
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType};

    #[test]
    fn parses_tuples_with_none() {
        assert_eq!(parse_opt_tuple("(0, None)", "begin").unwrap(), vec![Some(0), None]);
        assert_eq!(parse_opt_tuple("[1,-1]", "begin").unwrap(), vec![Some(1), Some(-1)]);
        assert_eq!(parse_opt_tuple("(2,)", "begin").unwrap(), vec![Some(2)]);
        assert_eq!(parse_opt_tuple("3", "begin").unwrap(), vec![Some(3)]);
        assert_eq!(parse_opt_tuple("()", "begin").unwrap(), vec![]);
        assert_eq!(parse_opt_tuple("None", "begin").unwrap(), vec![None]);
        let e = parse_opt_tuple("(1, x)", "end").unwrap_err().to_string();
        assert!(e.contains("end") && e.contains("(1, x)"), "{e}");
        assert!(parse_opt_tuple("(1,,2)", "end").is_err());
        for v in [vec![Some(2)], vec![None, Some(-3)], vec![]] {
            assert_eq!(parse_opt_tuple(&format_opt_tuple(&v), "x").unwrap(), v);
        }
    }

    /// x[b0:e0:s0, b1:e1:s1] of a 2-d row-major array, with plain index loops.
    fn slice2(v: &[f64], cols: usize, rows: &[usize], keep: &[usize]) -> Vec<f64> {
        rows.iter().flat_map(|r| keep.iter().map(move |c| v[r * cols + c])).collect()
    }

    #[test]
    fn slice_with_none_and_negative_steps() {
        let x = iota(&[3, 4]);
        let v = vals(&x);
        let call = |b: &str, e: &str, s: Option<&str>| {
            let mut attrs = vec![("begin", AttrValue::from(b)), ("end", AttrValue::from(e))];
            if let Some(s) = s {
                attrs.push(("step", s.into()));
            }
            invoke1("slice", &[&x], &attrs).unwrap()
        };
        let y = call("(None, 3)", "(None, 0)", Some("(1, -1)"));
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(vals(&y), slice2(&v, 4, &[0, 1, 2], &[3, 2, 1]));
        let y = call("(None,)", "(None,)", Some("(-2,)"));
        assert_eq!((y.shape(), vals(&y)), (&[2usize, 4][..], slice2(&v, 4, &[2, 0], &[0, 1, 2, 3])));
        let y = call("(1, -3)", "(None, None)", None);
        assert_eq!(vals(&y), slice2(&v, 4, &[1, 2], &[1, 2, 3]));
        let y = call("(0, 1)", "(3, 4)", Some("(2, 2)"));
        assert_eq!(vals(&y), slice2(&v, 4, &[0, 2], &[1, 3]));
        let y = call("(-1, None)", "(-4, None)", Some("(-1, -3)"));
        assert_eq!(vals(&y), slice2(&v, 4, &[2, 1, 0], &[3, 0]));
        // typed tuples are accepted too
        let y = invoke1("slice", &[&x], &[("begin", vec![1i64].into()), ("end", vec![3i64].into())]).unwrap();
        assert_eq!(vals(&y), slice2(&v, 4, &[1, 2], &[0, 1, 2, 3]));
        // strided inputs are read in place
        let t = x.transpose(None).unwrap();
        let y = invoke1(
            "slice",
            &[&t],
            &[("begin", "(1, None)".into()), ("end", "(None, None)".into()), ("step", "(2, -1)".into())],
        )
        .unwrap();
        assert_eq!(vals(&y), vec![9., 5., 1., 11., 7., 3.]);
        let y = invoke1(
            "slice_axis",
            &[&t],
            &[("axis", 1i64.into()), ("begin", 1i64.into()), ("end", 2i64.into())],
        )
        .unwrap();
        assert_eq!(vals(&y), vec![4., 5., 6., 7.]);
        // an empty result
        assert_eq!(call("(2,)", "(1,)", None).shape(), &[0, 4]);
        // f32 and int
        let xf = cast(&x, DType::F32);
        let yf =
            invoke1("slice", &[&xf], &[("begin", "(None, 1)".into()), ("end", "(1, None)".into())]).unwrap();
        assert_eq!(yf.to_vec::<f32>().unwrap(), vec![1., 2., 3.]);
        let xi = cast(&x, DType::I32);
        let yi = invoke1(
            "slice",
            &[&xi],
            &[("begin", "(None, None)".into()), ("end", "(None, None)".into()), ("step", "(-1, -1)".into())],
        )
        .unwrap();
        assert_eq!(yi.to_vec::<i32>().unwrap(), (0..12).rev().collect::<Vec<i32>>());
    }

    #[test]
    fn slice_op_checks() {
        OpChecker::new("slice", &[sample(&[3, 4])])
            .attr("begin", "(None, 3)")
            .attr("end", "(None, 0)")
            .attr("step", "(1, -1)")
            .run()
            .unwrap();
        OpChecker::new("slice", &[sample(&[4, 3, 2])])
            .attr("begin", "(-1, 1)")
            .attr("end", "(None, None)")
            .attr("step", "(-2, 1)")
            .run()
            .unwrap();
        OpChecker::new("slice", &[sample(&[4, 3])]).attr("begin", "(1,)").attr("end", "(3,)").run().unwrap();
        check_second_order(
            "slice",
            &[sample(&[4, 3])],
            &[("begin", "(None, 2)".into()), ("end", "(None, None)".into()), ("step", "(-1, -2)".into())],
        );
        let slice_attrs = [
            ("begin", AttrValue::from("(None, 2)")),
            ("end", "(3, None)".into()),
            ("step", "(2, -1)".into()),
        ];
        let mut c = OpChecker::new("_backward_slice", &[sample(&[2, 3])]).attr("shape", "(4, 3)");
        for (k, v) in &slice_attrs {
            c = c.attr(k, v.clone());
        }
        c.run().unwrap();
        let mut attrs = slice_attrs.to_vec();
        attrs.push(("shape", "(4, 3)".into()));
        check_second_order("_backward_slice", &[sample(&[2, 3])], &attrs);
    }

    #[test]
    fn backward_slice_scatters_into_zeros() {
        let g = iota(&[2, 2]);
        let y = invoke1(
            "_backward_slice",
            &[&g],
            &[
                ("begin", "(None, 2)".into()),
                ("end", "(None, 0)".into()),
                ("step", "(2, -1)".into()),
                ("shape", "(3, 3)".into()),
            ],
        )
        .unwrap();
        // rows 0 and 2, columns 2 and 1
        assert_eq!(vals(&y), vec![0., 1., 0., 0., 0., 0., 0., 3., 2.]);
    }

    #[test]
    fn slice_errors_name_the_problem() {
        let x = iota(&[3, 4]);
        let e = err_msg(invoke1("slice", &[&x], &[("begin", "(0, 0)".into()), ("end", "(1,)".into())]));
        assert!(e.contains("end") && e.contains("as many"), "{e}");
        let e = err_msg(invoke1(
            "slice",
            &[&x],
            &[("begin", "(0,)".into()), ("end", "(1,)".into()), ("step", "(0,)".into())],
        ));
        assert!(e.contains("step") && e.contains("zero"), "{e}");
        let e =
            err_msg(invoke1("slice", &[&x], &[("begin", "(0, 0, 0)".into()), ("end", "(1, 1, 1)".into())]));
        assert!(e.contains("3 entries") && e.contains("rank 2"), "{e}");
        let e = err_msg(invoke1("slice", &[&x], &[("begin", "(a,)".into()), ("end", "(1,)".into())]));
        assert!(e.contains("begin"), "{e}");
        assert!(err_msg(invoke1("slice", &[&x], &[("end", "(1,)".into())])).contains("begin"));
        let e = err_msg(invoke1(
            "slice_axis",
            &[&x],
            &[("axis", 2i64.into()), ("begin", 0i64.into()), ("end", AttrValue::None)],
        ));
        assert!(e.contains("axis 2") && e.contains("out of range"), "{e}");
    }

    #[test]
    fn slice_axis_forward_and_checks() {
        let x = iota(&[3, 4]);
        let v = vals(&x);
        let y = invoke1(
            "slice_axis",
            &[&x],
            &[("axis", 1i64.into()), ("begin", 1i64.into()), ("end", 3i64.into())],
        )
        .unwrap();
        assert_eq!(vals(&y), slice2(&v, 4, &[0, 1, 2], &[1, 2]));
        let y = invoke1(
            "slice_axis",
            &[&x],
            &[("axis", (-2i64).into()), ("begin", (-2i64).into()), ("end", "None".into())],
        )
        .unwrap();
        assert_eq!(vals(&y), slice2(&v, 4, &[1, 2], &[0, 1, 2, 3]));
        let yh = invoke1(
            "slice_axis",
            &[&cast(&x, DType::BF16)],
            &[("axis", 0i64.into()), ("begin", 2i64.into()), ("end", AttrValue::None)],
        )
        .unwrap();
        assert_eq!((yh.dtype(), vals(&yh)), (DType::BF16, vec![8., 9., 10., 11.]));
        OpChecker::new("slice_axis", &[sample(&[3, 4])])
            .attr("axis", 1i64)
            .attr("begin", 1i64)
            .attr("end", 3i64)
            .run()
            .unwrap();
        OpChecker::new("slice_axis", &[sample(&[3, 4, 2])])
            .attr("axis", 0i64)
            .attr("begin", -2i64)
            .attr("end", AttrValue::None)
            .run()
            .unwrap();
        check_second_order(
            "slice_axis",
            &[sample(&[3, 4])],
            &[("axis", 1i64.into()), ("begin", 1i64.into()), ("end", (-1i64).into())],
        );
    }
}
