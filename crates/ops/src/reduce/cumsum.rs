//! `_np_cumsum` (MXNet 1.9.1's `mx.nd.cumsum`, alias `cumsum`): running
//! sums along one axis, or over the flattened array without `axis`, as
//! numpy's `cumsum`.
//!
//! The sums accumulate in the output dtype (the input's, or `dtype`), as
//! numpy's do; integers wrap. The gradient is a rule of operators: the
//! running sums of the reversed head gradient, reversed back (then reshaped
//! and cast to the input's shape and dtype), so it differentiates again.

use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Element, Error, GradCtx, NDArray, OpDef, Result};

const OP: &str = "_np_cumsum";

/// The summed axis of an input of `ndim` axes (`None`: the flattened array).
fn axis_of(attrs: &Attrs, ndim: usize) -> Result<Option<usize>> {
    attrs
        .opt_int("axis")?
        .map(|a| normalize_axis(a, ndim).map_err(|e| Error::attr("axis", format!("{OP}: {e}"))))
        .transpose()
}

/// Running sums of the contiguous `x` viewed as (outer, n, inner) along the
/// middle axis.
fn running_sums<T: Element>(x: &[T], n: usize, inner: usize) -> Vec<T> {
    let mut out = x.to_vec();
    if n == 0 || inner == 0 {
        return out;
    }
    for block in out.chunks_mut(n * inner) {
        for j in 1..n {
            let (done, rest) = block.split_at_mut(j * inner);
            let prev = &done[(j - 1) * inner..];
            for (o, p) in rest[..inner].iter_mut().zip(prev) {
                *o = o.add(*p);
            }
        }
    }
    out
}

fn forward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let out = &outputs[0];
    let x = inputs[0].astype(out.dtype())?;
    let x = if x.is_contiguous() { x } else { x.copy()? };
    let shape = inputs[0].shape();
    let (n, inner) = match axis_of(ctx.attrs, shape.len())? {
        None => (x.size(), 1),
        Some(a) => (shape[a], shape[a + 1..].iter().product()),
    };
    let sums = oxnet_core::with_dtype!(out.dtype(), T => {
        NDArray::from_vec(running_sums(x.as_slice::<T>()?, n, inner), out.shape())?
    });
    oxnet_core::store::store(ctx.req[0], out, &sums)
}

/// `d x = reverse(cumsum(reverse(g)))` along the axis, in `x`'s shape and dtype.
fn grad(c: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (g, x) = (&c.out_grads[0], &c.inputs[0]);
    let axis = match axis_of(c.attrs, x.ndim())? {
        None => 0i64,
        Some(a) => a as i64,
    };
    let flip = |a: &NDArray| crate::util::call("reverse", &[a], &[("axis", AttrValue::Ints(vec![axis]))]);
    let sums = crate::util::call(OP, &[&flip(g)?], &[("axis", AttrValue::Int(axis))])?;
    let back = flip(&sums)?;
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let back = crate::util::call("reshape", &[&back], &[("shape", AttrValue::Ints(shape))])?;
    let back = if back.dtype() == x.dtype() {
        back
    } else {
        crate::util::call("cast", &[&back], &[("dtype", AttrValue::DType(x.dtype()))])?
    };
    Ok(vec![Some(back)])
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .alias("cumsum")
            .doc(
                "Cumulative sums along `axis` (over the flattened array, giving a 1-D result, when \
                 `axis` is None), as numpy's cumsum; accumulated in `dtype` (default: the input's).",
            )
            .arguments(&["a"])
            .attr(AttrSpec::optional(
                "axis",
                AttrKind::OptInt,
                AttrValue::None,
                "The axis to sum along; None: the flattened array.",
            ))
            .attr(AttrSpec::optional(
                "dtype",
                AttrKind::Str,
                "None",
                "The dtype of the result and of the sums; None: the input's.",
            ))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let s: Shape = match axis_of(attrs, x.len())? {
                    None => Shape::from_slice(&[x.iter().product::<usize>()]),
                    Some(_) => x.clone(),
                };
                crate::shape_ops::set_shape(&mut outs[0], s, "the output")
            })
            .infer_type(|attrs, ins, outs| {
                let given = match attrs.str("dtype")?.trim() {
                    "None" | "none" | "" => None,
                    name => Some(
                        oxnet_core::DType::from_name(name)
                            .map_err(|_| Error::attr("dtype", format!("{OP}: unknown dtype `{name}`")))?,
                    ),
                };
                if let Some(d) = given.or(ins[0]) {
                    outs[0] = Some(d);
                }
                Ok(())
            })
            .forward(forward)
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    #[test]
    fn running_sums_along_an_axis_or_flattened() {
        let x = NDArray::from_vec((1..=6).map(|v| v as f64).collect(), &[2, 3]).unwrap();
        let all = invoke1("cumsum", &[&x], &[]).unwrap();
        assert_eq!(
            (all.shape(), all.to_vec::<f64>().unwrap()),
            (&[6usize][..], vec![1., 3., 6., 10., 15., 21.])
        );
        let rows = invoke1("_np_cumsum", &[&x], &[("axis", AttrValue::Int(0))]).unwrap();
        assert_eq!(rows.to_vec::<f64>().unwrap(), vec![1., 2., 3., 5., 7., 9.]);
        let cols = invoke1("_np_cumsum", &[&x], &[("axis", AttrValue::Int(-1))]).unwrap();
        assert_eq!(cols.to_vec::<f64>().unwrap(), vec![1., 3., 6., 4., 9., 15.]);
        // a transposed (strided) input
        let t = x.transpose(Some(&[1, 0])).unwrap();
        let tc = invoke1("cumsum", &[&t], &[("axis", AttrValue::Int(1))]).unwrap();
        assert_eq!(tc.to_vec::<f64>().unwrap(), vec![1., 5., 2., 7., 3., 9.]);
    }

    #[test]
    fn dtypes_follow_numpy() {
        // the input's dtype, integers wrapping; or the given one
        let i = NDArray::from_vec(vec![100i8, 100, 1], &[3]).unwrap();
        let y = invoke1("cumsum", &[&i], &[]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i8>().unwrap()), (DType::I8, vec![100, -56, -55]));
        let y = invoke1("cumsum", &[&i], &[("dtype", "int32".into())]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![100, 200, 201]));
        let e = invoke1("cumsum", &[&i], &[("axis", AttrValue::Int(1))]).unwrap_err().to_string();
        assert!(e.contains("_np_cumsum") && e.contains("axis"), "{e}");
    }

    #[test]
    fn gradients_are_reversed_running_sums() {
        let x = NDArray::from_vec(vec![0.3, -1.2, 2.0, 0.7, 1.1, -0.4], &[2, 3]).unwrap();
        for axis in [AttrValue::None, AttrValue::Int(0), AttrValue::Int(1)] {
            OpChecker::new("cumsum", &[x.clone()]).attr("axis", axis).run().unwrap();
        }
        let f = x.astype(DType::F32).unwrap();
        OpChecker::new("cumsum", &[f]).attr("dtype", "float64").eps(1e-2).tol(1e-3, 1e-3).run().unwrap();
    }
}
