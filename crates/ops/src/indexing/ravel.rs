//! `_ravel_multi_index` (`ravel_multi_index`) and `_unravel_index`
//! (`unravel_index`): between multi-indices, stacked along the first axis,
//! and flat indices into an array of `shape` (row-major; a leading -1 in
//! `shape` leaves the first extent open). Values keep the input's dtype; the
//! gradient is zero, as in MXNet.

use crate::shape_ops::set_shape;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result};

/// The extents of `shape` (None for a leading -1) and their row-major strides.
fn geometry(op: &str, attrs: &Attrs) -> Result<(Vec<Option<i64>>, Vec<i64>)> {
    let Some(shape) = attrs.opt_ints("shape")? else {
        return Err(Error::attr("shape", format!("{op}: the shape is required")));
    };
    if shape.is_empty() {
        return Err(Error::attr("shape", format!("{op}: the shape must have at least one axis")));
    }
    let mut dims = Vec::with_capacity(shape.len());
    for (i, &d) in shape.iter().enumerate() {
        dims.push(match d {
            -1 if i == 0 => None,
            d if d > 0 => Some(d),
            d => {
                return Err(Error::attr(
                    "shape",
                    format!("{op}: extent {d} at axis {i} of {shape:?} is invalid (positive, or -1 first)"),
                ))
            }
        });
    }
    let mut strides = vec![1i64; dims.len()];
    for i in (0..dims.len() - 1).rev() {
        strides[i] = strides[i + 1]
            .checked_mul(dims[i + 1].unwrap_or(1))
            .ok_or_else(|| Error::attr("shape", format!("{op}: {shape:?} is too large")))?;
    }
    Ok((dims, strides))
}

fn shape_attr() -> AttrSpec {
    AttrSpec::optional(
        "shape",
        AttrKind::OptInts,
        AttrValue::None,
        "Shape of the array into which the multi-indices apply.",
    )
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_ravel_multi_index")
            .alias("ravel_multi_index")
            .doc("Converts a batch of multi-indices, stacked along the first axis (shape (M, ...)), into flat indices into an array of `shape` (M axes; a leading -1 leaves the first extent open).")
            .attr(shape_attr())
            .infer_shape(|attrs, ins, outs| {
                let (dims, _) = geometry("ravel_multi_index", attrs)?;
                let Some(x) = &ins[0] else { return Ok(()) };
                if x.first() != Some(&dims.len()) {
                    return Err(Error::Shape(format!(
                        "ravel_multi_index: the first axis of the data must be the rank of shape ({}), got shape {:?}",
                        dims.len(),
                        x.as_slice()
                    )));
                }
                set_shape(&mut outs[0], Shape::from_slice(&x[1..]), "the output of ravel_multi_index")
            })
            .forward(|ctx, ins, outs| {
                let (_, strides) = geometry("ravel_multi_index", ctx.attrs)?;
                let v = ins[0].to_vec::<f64>()?;
                let n = outs[0].size();
                let flat: Vec<f64> = (0..n)
                    .map(|j| strides.iter().enumerate().map(|(m, s)| v[m * n + j] * *s as f64).sum())
                    .collect();
                let r = NDArray::from_vec(flat, outs[0].shape())?.astype(outs[0].dtype())?;
                oxnet_core::store::store(ctx.req[0], &outs[0], &r)
            })
            .zero_grad(),
    );

    registry::register(
        OpDef::new("_unravel_index")
            .alias("unravel_index")
            .doc("Converts flat indices into an array of `shape` into multi-indices, stacked along a new first axis (a leading -1 in shape leaves the first extent open).")
            .attr(shape_attr())
            .infer_shape(|attrs, ins, outs| {
                let (dims, _) = geometry("unravel_index", attrs)?;
                let Some(x) = &ins[0] else { return Ok(()) };
                let s: Shape = std::iter::once(dims.len()).chain(x.iter().copied()).collect();
                set_shape(&mut outs[0], s, "the output of unravel_index")
            })
            .forward(|ctx, ins, outs| {
                let (dims, _) = geometry("unravel_index", ctx.attrs)?;
                let v = ins[0].to_vec::<f64>()?;
                let n = v.len();
                let mut out = vec![0.0f64; dims.len() * n];
                for (j, &x) in v.iter().enumerate() {
                    let mut rest = x.trunc() as i64;
                    for m in (0..dims.len()).rev() {
                        match dims[m] {
                            Some(d) if m > 0 || dims.len() == 1 => {
                                out[m * n + j] = rest.rem_euclid(d) as f64;
                                rest = rest.div_euclid(d);
                            }
                            _ => out[m * n + j] = rest as f64,
                        }
                    }
                }
                let r = NDArray::from_vec(out, outs[0].shape())?.astype(outs[0].dtype())?;
                oxnet_core::store::store(ctx.req[0], &outs[0], &r)
            })
            .zero_grad(),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, NDArray};

    #[test]
    fn round_trip() {
        let m = NDArray::from_vec(vec![1.0f64, 2.0, 0.0, 3.0, 0.0, 1.0], &[2, 3]).unwrap();
        for shape in ["(3, 4)", "(-1, 4)"] {
            let f = invoke1("ravel_multi_index", &[&m], &[("shape", shape.into())]).unwrap();
            assert_eq!(f.to_vec::<f64>().unwrap(), vec![7., 8., 1.]);
            let back = invoke1("unravel_index", &[&f], &[("shape", shape.into())]).unwrap();
            assert_eq!(back.shape(), &[2, 3]);
            assert_eq!(back.to_vec::<f64>().unwrap(), m.to_vec::<f64>().unwrap());
        }
        let e =
            invoke1("ravel_multi_index", &[&m], &[("shape", "(3, 4, 5)".into())]).unwrap_err().to_string();
        assert!(e.contains("ravel_multi_index") && e.contains("rank"), "{e}");
        let e = invoke1("unravel_index", &[&m], &[("shape", "(3, 0)".into())]).unwrap_err().to_string();
        assert!(e.contains("shape") && e.contains("invalid"), "{e}");
    }
}
