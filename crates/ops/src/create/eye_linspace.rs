//! `_eye` (MXNet's `mx.sym.eye`: an `N × M` matrix with ones on the `k`-th
//! diagonal) and `_linspace` (`mx.sym.linspace`: `num` evenly spaced values
//! from `start` to `stop`, the end included with `endpoint`), graph nodes
//! without inputs.

use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, DType, Error, NDArray, OpDef, Result, Shape};

/// `(rows, columns, diagonal)` of `_eye`.
fn eye_dims(attrs: &Attrs) -> Result<(usize, usize, i64)> {
    let n = attrs.int("N")?;
    let m = attrs.int("M")?;
    let rows =
        usize::try_from(n).map_err(|_| Error::attr("N", format!("_eye: must not be negative, got {n}")))?;
    let cols = match m {
        0 => rows,
        m => usize::try_from(m)
            .map_err(|_| Error::attr("M", format!("_eye: must not be negative, got {m}")))?,
    };
    Ok((rows, cols, attrs.int("k")?))
}

/// The `num` values of `_linspace`.
fn linspace_values(attrs: &Attrs) -> Result<Vec<f64>> {
    let (start, stop) = (attrs.float("start")?, attrs.float("stop")?);
    let num = attrs.int("num")?;
    let num = usize::try_from(num)
        .map_err(|_| Error::attr("num", format!("_linspace: must not be negative, got {num}")))?;
    let steps = if attrs.bool("endpoint")? { num.saturating_sub(1) } else { num };
    let step = if steps == 0 { 0.0 } else { (stop - start) / steps as f64 };
    Ok((0..num).map(|i| start + step * i as f64).collect())
}

fn ctx_attr() -> AttrSpec {
    AttrSpec::optional("ctx", AttrKind::Str, "", "Context of the output (accepted as in MXNet).")
}

fn dtype_attr() -> AttrSpec {
    AttrSpec::optional("dtype", AttrKind::DType, DType::F32, "The output's dtype.")
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_eye")
            .doc("An N × M matrix (M = N when 0) of zeros with ones on the k-th diagonal (k > 0 above the main one, k < 0 below), in `dtype`.")
            .arguments(&[])
            .attr(AttrSpec::required("N", AttrKind::Int, "Number of rows."))
            .attr(AttrSpec::optional("M", AttrKind::Int, 0i64, "Number of columns (0: N)."))
            .attr(AttrSpec::optional("k", AttrKind::Int, 0i64, "Which diagonal holds the ones."))
            .attr(ctx_attr())
            .attr(dtype_attr())
            .infer_shape(|attrs, _ins, outs| {
                let (rows, cols, _) = eye_dims(attrs)?;
                crate::shape_ops::set_shape(&mut outs[0], Shape::from_slice(&[rows, cols]), "the output")
            })
            .infer_type(|attrs, _ins, outs| {
                outs[0] = Some(attrs.dtype("dtype")?.unwrap_or(DType::F32));
                Ok(())
            })
            .forward(|ctx, _inputs, outputs| {
                let (rows, cols, k) = eye_dims(ctx.attrs)?;
                let mut values = vec![0f64; rows * cols];
                for r in 0..rows {
                    let c = r as i64 + k;
                    if (0..cols as i64).contains(&c) {
                        values[r * cols + c as usize] = 1.0;
                    }
                }
                let out = &outputs[0];
                let v = NDArray::from_vec(values, &[rows, cols])?.astype(out.dtype())?;
                oxnet_core::store::store(ctx.req[0], out, &v)
            }),
    );
    registry::register(
        OpDef::new("_linspace")
            .doc("`num` evenly spaced values from `start` to `stop` (included with `endpoint`, as numpy.linspace), in `dtype`.")
            .arguments(&[])
            .attr(AttrSpec::required("start", AttrKind::Float, "The first value."))
            .attr(AttrSpec::required("stop", AttrKind::Float, "The last value (with `endpoint`) or the end of the interval."))
            .attr(AttrSpec::required("num", AttrKind::Int, "How many values."))
            .attr(AttrSpec::optional("endpoint", AttrKind::Bool, true, "Whether `stop` is the last value."))
            .attr(ctx_attr())
            .attr(dtype_attr())
            .infer_shape(|attrs, _ins, outs| {
                let n = linspace_values(attrs)?.len();
                crate::shape_ops::set_shape(&mut outs[0], Shape::from_slice(&[n]), "the output")
            })
            .infer_type(|attrs, _ins, outs| {
                outs[0] = Some(attrs.dtype("dtype")?.unwrap_or(DType::F32));
                Ok(())
            })
            .forward(|ctx, _inputs, outputs| {
                let values = linspace_values(ctx.attrs)?;
                let n = values.len();
                let out = &outputs[0];
                let v = NDArray::from_vec(values, &[n])?.astype(out.dtype())?;
                oxnet_core::store::store(ctx.req[0], out, &v)
            }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, AttrValue};

    #[test]
    fn eye_puts_ones_on_the_kth_diagonal() {
        let a = invoke1(
            "_eye",
            &[],
            &[("N", AttrValue::Int(3)), ("M", AttrValue::Int(4)), ("k", AttrValue::Int(1))],
        )
        .unwrap();
        assert_eq!(a.shape(), &[3, 4]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.]);
        let b = invoke1("_eye", &[], &[("N", AttrValue::Int(2)), ("k", AttrValue::Int(-1))]).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![0., 0., 1., 0.]);
        let e = invoke1("_eye", &[], &[("N", AttrValue::Int(-2))]).unwrap_err().to_string();
        assert!(e.contains("_eye") && e.contains("negative"), "{e}");
    }

    #[test]
    fn linspace_matches_numpy() {
        let attrs = |endpoint: bool| {
            vec![
                ("start", AttrValue::Float(1.0)),
                ("stop", AttrValue::Float(2.0)),
                ("num", AttrValue::Int(5)),
                ("endpoint", AttrValue::Bool(endpoint)),
            ]
        };
        let a = invoke1("_linspace", &[], &attrs(true)).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 1.25, 1.5, 1.75, 2.0]);
        let b = invoke1("_linspace", &[], &attrs(false)).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 1.2, 1.4, 1.6, 1.8]);
    }
}
