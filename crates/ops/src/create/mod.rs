//! Array-creation operators without inputs: `_zeros`, `_ones` and `_full`
//! (MXNet's `mx.sym.zeros`, `mx.sym.ones`, `mx.sym.full`), which let
//! constant arrays appear in graphs; `_arange` (`mx.sym.arange`), `_eye`
//! and `_linspace` (`mx.sym.eye`, `mx.sym.linspace`).

mod arange;
mod eye_linspace;

use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, DType, Error, OpDef, Result, Shape};

/// The `shape` attribute (`None` when unset or empty: the graph infers it);
/// with `unknown_as_zero`, an extent of -1 is unknown and comes back as 0
/// (a partial shape, for a graph to complete from the array's consumers:
/// `mx.sym.ones(shape=(-1, -1))`), otherwise it is an error.
fn shape_of(attrs: &Attrs, unknown_as_zero: bool) -> Result<Option<Shape>> {
    let Some(dims) = attrs.opt_ints("shape")? else { return Ok(None) };
    if dims.is_empty() {
        return Ok(None);
    }
    dims.iter()
        .map(|&d| match d {
            -1 if unknown_as_zero => Ok(0),
            -1 => Err(Error::attr(
                "shape",
                "an extent of -1 is unknown; only a graph can infer it from the consumers",
            )),
            d => usize::try_from(d).map_err(|_| Error::attr("shape", format!("extent {d} is negative"))),
        })
        .collect::<Result<Shape>>()
        .map(Some)
}

fn register_fill(name: &'static str, what: &str, value: Option<f64>) {
    let mut op = OpDef::new(name)
        .doc(&format!(
            "An array of `shape` (and `dtype`, float32 by default) filled with {what}; without a \
             `shape` a graph infers it from the array's consumers."
        ))
        .arguments(&[])
        .attr(AttrSpec::optional("shape", AttrKind::OptInts, AttrValue::None, "The shape of the output."))
        .attr(AttrSpec::optional(
            "ctx",
            AttrKind::Str,
            "",
            "Context of the output (accepted; oxnet computes on the CPU).",
        ))
        .attr(AttrSpec::optional("dtype", AttrKind::DType, DType::F32, "The output's dtype."));
    if value.is_none() {
        op = op.attr(AttrSpec::required("value", AttrKind::Float, "The value to fill with."));
    }
    registry::register(
        op.infer_shape(|attrs, _ins, outs| match shape_of(attrs, false)? {
            Some(s) => crate::shape_ops::set_shape(&mut outs[0], s, "the output"),
            None => Ok(()),
        })
        .infer_shape_partial(|attrs, _ins, outs| match shape_of(attrs, true)? {
            Some(s) => crate::partial_shape::merge(&mut outs[0], &s, "the output"),
            None => Ok(()),
        })
        .infer_type(|attrs, _ins, outs| {
            outs[0] = Some(attrs.dtype("dtype")?.unwrap_or(DType::F32));
            Ok(())
        })
        .forward(move |ctx, _inputs, outputs| {
            let v = match value {
                Some(v) => v,
                None => ctx.attrs.float("value")?,
            };
            let out = &outputs[0];
            match ctx.req[0] {
                oxnet_core::Req::Null => Ok(()),
                oxnet_core::Req::Add => {
                    let filled = oxnet_core::NDArray::full(out.shape(), v, out.dtype(), out.device())?;
                    oxnet_core::store::store(oxnet_core::Req::Add, out, &filled)
                }
                _ => out.fill(v),
            }
        }),
    );
}

/// Registers `_zeros`, `_ones` and `_full`.
pub(crate) fn register() {
    register_fill("_zeros", "zeros", Some(0.0));
    register_fill("_ones", "ones", Some(1.0));
    register_fill("_full", "`value`", None);
    arange::register();
    eye_linspace::register();
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, AttrValue, DType};

    #[test]
    fn fills_shape_and_dtype() {
        let z = invoke1("_zeros", &[], &[("shape", AttrValue::Ints(vec![2, 3]))]).unwrap();
        assert_eq!(
            (z.shape(), z.dtype(), z.to_vec::<f64>().unwrap()),
            (&[2usize, 3][..], DType::F32, vec![0.0; 6])
        );
        let o =
            invoke1("_ones", &[], &[("shape", AttrValue::Ints(vec![4])), ("dtype", "int64".into())]).unwrap();
        assert_eq!((o.dtype(), o.to_vec::<i64>().unwrap()), (DType::I64, vec![1; 4]));
        let f = invoke1("_full", &[], &[("shape", AttrValue::Ints(vec![2])), ("value", 2.5.into())]).unwrap();
        assert_eq!(f.to_vec::<f32>().unwrap(), vec![2.5, 2.5]);
        let err = invoke1("_full", &[], &[("shape", AttrValue::Ints(vec![2]))]).unwrap_err().to_string();
        assert!(err.contains("_full") && err.contains("`value`"), "{err}");
        assert!(invoke1("_zeros", &[], &[]).unwrap_err().to_string().contains("shape"));
    }

    #[test]
    fn unknown_extents_are_left_to_the_graph() {
        let op = oxnet_core::registry::get("_ones").unwrap();
        let attrs = op.parse_attrs(&[("shape", AttrValue::Ints(vec![-1, 3]))]).unwrap();
        // a graph learns the unknown extent from a consumer ...
        let partial = op.infer_shape_partial.clone().unwrap();
        let mut outs = vec![Some(oxnet_core::shape::shape(&[2, 0]))];
        partial(&attrs, &mut [], &mut outs).unwrap();
        assert_eq!(outs[0].as_deref(), Some(&[2usize, 3][..]));
        let mut clash = vec![Some(oxnet_core::shape::shape(&[2, 4]))];
        assert!(partial(&attrs, &mut [], &mut clash).is_err());
        // ... an imperative call cannot
        let err = invoke1("_ones", &[], &[("shape", AttrValue::Ints(vec![-1, 3]))]).unwrap_err().to_string();
        assert!(err.contains("_ones") && err.contains("-1"), "{err}");
    }
}
