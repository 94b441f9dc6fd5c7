//! `_arange` (MXNet's `mx.sym.arange`): evenly spaced values in
//! `[start, stop)` (`[0, start)` without `stop`), each repeated `repeat`
//! times, as a graph node without inputs; `_contrib_arange_like`: the
//! same shaped like an input.

use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, DType, Error, NDArray, OpDef, Result, Shape};

/// `(start, step, repeat, count)`: the first value, the spacing, the
/// repeats of each value and the number of distinct values.
fn range_of(attrs: &Attrs) -> Result<(f64, f64, usize, usize)> {
    let start = attrs.float("start")?;
    let stop =
        match attrs.get("stop")? {
            AttrValue::Str(s) if matches!(s.trim(), "None" | "none" | "") => None,
            AttrValue::Str(s) => Some(s.trim().parse::<f64>().map_err(|_| {
                Error::attr("stop", format!("_arange: expected a number or None, got `{s}`"))
            })?),
            AttrValue::Float(x) => Some(*x),
            AttrValue::Int(i) => Some(*i as f64),
            AttrValue::None => None,
            v => return Err(Error::attr("stop", format!("_arange: expected a number or None, holds `{v}`"))),
        };
    let (begin, end) = match stop {
        Some(s) => (start, s),
        // the length comes from the graph: values start at `start`
        None if attrs.bool("infer_range")? => (start, start),
        None => (0.0, start),
    };
    let step = attrs.float("step")?;
    if step == 0.0 {
        return Err(Error::attr("step", "_arange: the step must not be 0"));
    }
    let repeat = attrs.int("repeat")?;
    if repeat < 1 {
        return Err(Error::attr("repeat", format!("_arange: must be at least 1, got {repeat}")));
    }
    let count = ((end - begin) / step).ceil().max(0.0) as usize;
    Ok((begin, step, repeat as usize, count))
}

/// Whether the output's length is left to the graph (MXNet's deprecated
/// `infer_range` without `stop`: a consumer's shape gives it).
fn inferred_length(attrs: &Attrs) -> Result<bool> {
    let no_stop = match attrs.get("stop")? {
        AttrValue::Str(s) => matches!(s.trim(), "None" | "none" | ""),
        AttrValue::None => true,
        _ => false,
    };
    Ok(no_stop && attrs.bool("infer_range")?)
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_arange")
            .doc(
                "Evenly spaced values in [start, stop) (or [0, start) without `stop`) with spacing `step`, \
                 each repeated `repeat` times, in `dtype` (float32 by default).",
            )
            .arguments(&[])
            .attr(AttrSpec::required(
                "start",
                AttrKind::Float,
                "Start of the interval (its end without `stop`).",
            ))
            .attr(AttrSpec::optional(
                "stop",
                AttrKind::Str,
                "None",
                "End of the interval (excluded), or None.",
            ))
            .attr(AttrSpec::optional("step", AttrKind::Float, 1.0, "Spacing between values."))
            .attr(AttrSpec::optional("repeat", AttrKind::Int, 1i64, "Times each value is repeated."))
            .attr(AttrSpec::optional(
                "infer_range",
                AttrKind::Bool,
                false,
                "Without `stop`: the output's length comes from the graph (a consumer's shape), \
                 its values starting at `start` (MXNet's deprecated range inference).",
            ))
            .attr(AttrSpec::optional(
                "ctx",
                AttrKind::Str,
                "",
                "Context of the output (accepted; oxnet computes on the CPU).",
            ))
            .attr(AttrSpec::optional("dtype", AttrKind::DType, DType::F32, "The output's dtype."))
            .infer_shape(|attrs, _ins, outs| {
                if inferred_length(attrs)? {
                    return Ok(()); // a consumer's shape gives it
                }
                let (_, _, repeat, count) = range_of(attrs)?;
                crate::shape_ops::set_shape(&mut outs[0], Shape::from_slice(&[count * repeat]), "the output")
            })
            .infer_type(|attrs, _ins, outs| {
                outs[0] = Some(attrs.dtype("dtype")?.unwrap_or(DType::F32));
                Ok(())
            })
            .forward(|ctx, _inputs, outputs| {
                let (start, step, repeat, count) = range_of(ctx.attrs)?;
                let out = &outputs[0];
                let n = if inferred_length(ctx.attrs)? { out.size() } else { count * repeat };
                // as MXNet 1.9.1: an integer dtype takes start and step cast to it
                let (start, step) =
                    if out.dtype().is_float() { (start, step) } else { (start.trunc(), step.trunc()) };
                let values: Vec<f64> = (0..n).map(|i| start + step * (i / repeat) as f64).collect();
                let v = NDArray::from_vec(values, &[n])?.astype(out.dtype())?;
                oxnet_core::store::store(ctx.req[0], out, &v)
            }),
    );
    register_like();
}

/// The output shape of `_contrib_arange_like`: the data's, or the extent
/// of `axis` alone.
fn like_shape(attrs: &Attrs, data: &[usize]) -> Result<Shape> {
    match attrs.opt_int("axis")? {
        None => Ok(Shape::from_slice(data)),
        Some(a) => {
            let axis = oxnet_core::shape::normalize_axis(a, data.len())
                .map_err(|e| Error::attr("axis", format!("_contrib_arange_like: {e}")))?;
            Ok(Shape::from_slice(&[data[axis]]))
        }
    }
}

fn register_like() {
    registry::register(
        OpDef::new("_contrib_arange_like")
            .doc(
                "Evenly spaced values shaped like the data (or, with `axis`, as long as that axis): \
                 start, start + step, ... in the data's dtype, each repeated `repeat` times, filled in \
                 row-major order. Zero gradient.",
            )
            .attr(AttrSpec::optional("start", AttrKind::Float, 0.0, "The first value."))
            .attr(AttrSpec::optional("step", AttrKind::Float, 1.0, "Spacing between values."))
            .attr(AttrSpec::optional("repeat", AttrKind::Int, 1i64, "Times each value is repeated."))
            .attr(AttrSpec::optional(
                "ctx",
                AttrKind::Str,
                "",
                "Context of the output (accepted; the data's device is used).",
            ))
            .attr(AttrSpec::optional(
                "axis",
                AttrKind::OptInt,
                AttrValue::None,
                "The axis whose length the output takes; None: the whole data shape.",
            ))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                crate::shape_ops::set_shape(&mut outs[0], like_shape(attrs, x)?, "the output")
            })
            .forward(|ctx, _inputs, outputs| {
                let (start, step) = (ctx.attrs.float("start")?, ctx.attrs.float("step")?);
                let repeat = ctx.attrs.int("repeat")?;
                if repeat < 1 {
                    return Err(Error::attr(
                        "repeat",
                        format!("_contrib_arange_like: must be at least 1, got {repeat}"),
                    ));
                }
                let out = &outputs[0];
                let values: Vec<f64> =
                    (0..out.size()).map(|i| start + step * (i / repeat as usize) as f64).collect();
                let v = NDArray::from_vec(values, out.shape())?.astype(out.dtype())?;
                oxnet_core::store::store(ctx.req[0], out, &v)
            })
            .zero_grad(),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, AttrValue, DType};

    #[test]
    fn ranges_repeats_and_dtypes() {
        let a = invoke1("_arange", &[], &[("start", AttrValue::Float(3.0))]).unwrap();
        assert_eq!((a.dtype(), a.to_vec::<f64>().unwrap()), (DType::F32, vec![0., 1., 2.]));
        let attrs = [
            ("start", AttrValue::Float(1.0)),
            ("stop", "2".into()),
            ("step", AttrValue::Float(0.5)),
            ("repeat", AttrValue::Int(2)),
            ("dtype", "int32".into()),
        ];
        let b = invoke1("_arange", &[], &attrs).unwrap();
        assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, 1, 1, 1]);
        let c = invoke1(
            "_arange",
            &[],
            &[("start", AttrValue::Float(5.0)), ("stop", "1".into()), ("step", AttrValue::Float(-2.0))],
        )
        .unwrap();
        assert_eq!(c.to_vec::<f32>().unwrap(), vec![5., 3.]);
        let e = invoke1("_arange", &[], &[("start", AttrValue::Float(1.0)), ("step", AttrValue::Float(0.0))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("step"), "{e}");
    }

    #[test]
    fn arange_like_follows_the_data_or_one_axis() {
        let x = oxnet_core::NDArray::zeros(&[2, 3], DType::F64, oxnet_core::Device::Cpu).unwrap();
        let y =
            invoke1("_contrib_arange_like", &[&x], &[("start", 1.0.into()), ("repeat", 2.into())]).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[2usize, 3][..], DType::F64));
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![1., 1., 2., 2., 3., 3.]);
        let y =
            invoke1("_contrib_arange_like", &[&x], &[("axis", (-1).into()), ("step", 0.5.into())]).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![0.0, 0.5, 1.0]);
        let e = invoke1("_contrib_arange_like", &[&x], &[("axis", 2.into())]).unwrap_err().to_string();
        assert!(e.contains("_contrib_arange_like") && e.contains("axis"), "{e}");
    }

    #[test]
    fn an_inferred_range_takes_its_length_from_the_graph() {
        let op = oxnet_core::registry::get("_arange").unwrap();
        let attrs = op
            .parse_attrs(&[
                ("start", AttrValue::Float(2.0)),
                ("step", AttrValue::Float(0.5)),
                ("repeat", AttrValue::Int(2)),
                ("infer_range", true.into()),
            ])
            .unwrap();
        // no length of its own (tests/python/test_partial_shapes.py runs it in a graph) ...
        let mut outs = vec![None];
        (op.infer_shape)(&attrs, &mut [], &mut outs).unwrap();
        assert_eq!(outs[0], None);
        // an imperative call has nothing to take it from
        let e = invoke1("_arange", &[], &[("start", AttrValue::Float(0.0)), ("infer_range", true.into())]);
        assert!(e.unwrap_err().to_string().contains("_arange"));
    }
}
