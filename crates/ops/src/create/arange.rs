//! `_arange` (MXNet's `mx.sym.arange`): evenly spaced values in
//! `[start, stop)` (`[0, start)` without `stop`), each repeated `repeat`
//! times, as a graph node without inputs.

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
                "Accepted for compatibility (MXNet's deprecated range inference).",
            ))
            .attr(AttrSpec::optional(
                "ctx",
                AttrKind::Str,
                "",
                "Context of the output (accepted; oxnet computes on the CPU).",
            ))
            .attr(AttrSpec::optional("dtype", AttrKind::DType, DType::F32, "The output's dtype."))
            .infer_shape(|attrs, _ins, outs| {
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
                // as MXNet 1.9.1: an integer dtype takes start and step cast to it
                let (start, step) =
                    if out.dtype().is_float() { (start, step) } else { (start.trunc(), step.trunc()) };
                let values: Vec<f64> =
                    (0..count * repeat).map(|i| start + step * (i / repeat) as f64).collect();
                let v = NDArray::from_vec(values, &[count * repeat])?.astype(out.dtype())?;
                oxnet_core::store::store(ctx.req[0], out, &v)
            }),
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
}
