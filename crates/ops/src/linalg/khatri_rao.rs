//! `khatri_rao`: the column-wise Khatri-Rao product of matrices
//! `A_1 (M_1, N), ..., A_n (M_n, N)`, a `(M_1 ··· M_n, N)` matrix whose
//! column k is the Kronecker product of the matrices' columns k (the first
//! matrix's row index varying slowest).
//!
//! MXNet 1.9.1 gives it no gradient; oxnet differentiates it with a rule of
//! operators: the head gradient, seen as `(M_1, ..., M_n, N)`, times the
//! other matrices broadcast along their axes, summed over those axes.

use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, GradCtx, NDArray, OpDef, Result};

const OP: &str = "khatri_rao";

fn num_args(attrs: &Attrs) -> Result<usize> {
    match attrs.int("num_args")? {
        n if n >= 1 => Ok(n as usize),
        n => Err(Error::attr("num_args", format!("{OP}: must be at least 1, got {n}"))),
    }
}

/// `(M_1 ··· M_n, N)` from the matrices' shapes, checking they are matrices
/// with one column count.
fn product_shape(shapes: &[&[usize]]) -> Result<Shape> {
    let mut rows = 1usize;
    let mut cols = None;
    for (i, s) in shapes.iter().enumerate() {
        let &[m, n] = *s else {
            return Err(Error::Shape(format!("{OP}: input {i} must be a matrix, got shape {s:?}")));
        };
        if *cols.get_or_insert(n) != n {
            return Err(Error::Shape(format!(
                "{OP}: every matrix needs the same number of columns, input {i} has {n}, input 0 {}",
                cols.unwrap_or(n)
            )));
        }
        rows *= m;
    }
    Ok(Shape::from_slice(&[rows, cols.unwrap_or(0)]))
}

/// Matrix `a` (M_i, N) reshaped to broadcast along the axes of
/// `(M_1, ..., M_n, N)` other than `i` and the last.
fn along_axis(a: &NDArray, i: usize, n: usize) -> Result<NDArray> {
    let mut shape = vec![1i64; n + 1];
    shape[i] = a.shape()[0] as i64;
    shape[n] = a.shape()[1] as i64;
    call("reshape", &[a], &[("shape", AttrValue::Ints(shape))])
}

fn forward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let n = inputs.len();
    let mut acc = along_axis(&inputs[0], 0, n)?;
    for (i, a) in inputs.iter().enumerate().skip(1) {
        acc = call("broadcast_mul", &[&acc, &along_axis(a, i, n)?], &[])?;
    }
    let shape: Vec<i64> = outputs[0].shape().iter().map(|&d| d as i64).collect();
    let y = call("reshape", &[&acc], &[("shape", AttrValue::Ints(shape))])?;
    oxnet_core::store::store(ctx.req[0], &outputs[0], &y)
}

fn grad(c: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let n = c.inputs.len();
    let mut full: Vec<i64> = c.inputs.iter().map(|a| a.shape()[0] as i64).collect();
    full.push(c.inputs[0].shape()[1] as i64);
    let g = call("reshape", &[&c.out_grads[0]], &[("shape", AttrValue::Ints(full))])?;
    (0..n)
        .map(|i| {
            if !c.needs_grad.get(i).copied().unwrap_or(false) {
                return Ok(None);
            }
            let mut t = g.clone();
            for (j, a) in c.inputs.iter().enumerate().filter(|(j, _)| *j != i) {
                t = call("broadcast_mul", &[&t, &along_axis(a, j, n)?], &[])?;
            }
            let others: Vec<i64> = (0..n as i64).filter(|&j| j != i as i64).collect();
            if others.is_empty() {
                return Ok(Some(t));
            }
            let summed = call("sum", &[&t], &[("axis", AttrValue::Ints(others))])?;
            let shape = vec![c.inputs[i].shape()[0] as i64, c.inputs[i].shape()[1] as i64];
            call("reshape", &[&summed], &[("shape", AttrValue::Ints(shape))]).map(Some)
        })
        .collect()
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "The column-wise Khatri-Rao product of `num_args` matrices A_i (M_i, N): a (M_1···M_n, N) \
                 matrix whose column k is the Kronecker product of the columns k. Differentiable.",
            )
            .attr(AttrSpec::required("num_args", AttrKind::Int, "Number of input matrices."))
            .arguments_fn(|attrs| Ok((0..num_args(attrs)?).map(|i| format!("arg{i}")).collect()))
            .arity_fn(|attrs| Ok([num_args(attrs)?, 0, 1]))
            .infer_shape(|_, ins, outs| {
                let shapes: Option<Vec<&[usize]>> = ins.iter().map(|s| s.as_deref()).collect();
                let Some(shapes) = shapes else { return Ok(()) };
                crate::shape_ops::set_shape(&mut outs[0], product_shape(&shapes)?, "the output")
            })
            .forward(forward)
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, NDArray};

    #[test]
    fn columns_are_kronecker_products() {
        // MXNet's documented example
        let a = NDArray::from_vec(vec![1.0f64, -1.0, 2.0, -3.0], &[2, 2]).unwrap();
        let b = NDArray::from_vec(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[3, 2]).unwrap();
        let c = invoke1("khatri_rao", &[&a, &b], &[("num_args", AttrValue::Int(2))]).unwrap();
        assert_eq!(c.shape(), &[6, 2]);
        let want = [1., -4., 2., -5., 3., -6., 2., -12., 4., -15., 6., -18.];
        assert_eq!(c.to_vec::<f64>().unwrap(), want);
        // one matrix is itself
        assert_eq!(
            invoke1("khatri_rao", &[&a], &[("num_args", AttrValue::Int(1))])
                .unwrap()
                .to_vec::<f64>()
                .unwrap(),
            a.to_vec::<f64>().unwrap()
        );
        let bad = NDArray::from_vec(vec![1.0f64; 3], &[1, 3]).unwrap();
        let e =
            invoke1("khatri_rao", &[&a, &bad], &[("num_args", AttrValue::Int(2))]).unwrap_err().to_string();
        assert!(e.contains("khatri_rao") && e.contains("columns"), "{e}");
    }

    #[test]
    fn gradients_against_differences() {
        let m = |v: &[f64], s: &[usize]| NDArray::from_vec(v.to_vec(), s).unwrap();
        let (a, b, c) = (
            m(&[0.3, -1.1, 0.8, 0.5], &[2, 2]),
            m(&[1.2, -0.4, 0.9, 2.0, -0.7, 0.1], &[3, 2]),
            m(&[0.6, -1.5], &[1, 2]),
        );
        OpChecker::new("khatri_rao", &[a, b, c]).attr("num_args", 3).run().unwrap();
    }
}
