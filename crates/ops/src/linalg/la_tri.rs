//! Triangular operands: `_linalg_trmm` (`alpha·op(A)·B` or `alpha·B·op(A)`),
//! `_linalg_trsm` (the solve of that product for B) and
//! `_linalg_sumlogdiag` (the sum of the logarithms of the diagonal).
//!
//! Only the triangle that `lower` names is read from A; the other one is
//! taken as zero, and gradients with respect to A are zero there too, as
//! in MXNet.

use super::fmt_shape;
use super::la_common::{
    batch_of, infer_float, leading, out_grad, per_item, read, saved, set_out, square_of, write,
};
use super::la_dense::{matmul, op_triangle, transpose, triangle, trsm};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, NDArray, OpContext, OpDef, Result,
};

/// The parsed attributes of trmm and trsm.
#[derive(Debug, Clone, Copy)]
struct TriParams {
    transpose: bool,
    rightside: bool,
    lower: bool,
    alpha: f64,
}

fn params(attrs: &Attrs) -> Result<TriParams> {
    Ok(TriParams {
        transpose: attrs.bool("transpose")?,
        rightside: attrs.bool("rightside")?,
        lower: attrs.bool("lower")?,
        alpha: attrs.float("alpha")?,
    })
}

/// Checks A (square matrices) against B; returns `(batch, n, rows, cols)`
/// with B's matrices `rows x cols`.
fn check(op: &str, p: &TriParams, a: &[usize], b: &[usize]) -> Result<(usize, usize, usize, usize)> {
    let (batch, n) = square_of(op, "A", a)?;
    let bb = batch_of(op, "B", b)?;
    if a.len() != b.len() || a[..a.len() - 2] != b[..b.len() - 2] {
        return Err(Error::Shape(format!(
            "{op}: A {} and B {} must have the same batch axes",
            fmt_shape(a),
            fmt_shape(b)
        )));
    }
    let k = if p.rightside { bb.cols } else { bb.rows };
    if k != n {
        return Err(Error::Shape(format!(
            "{op}: A {} does not fit B {} (rightside={}): B's {} must be {n}",
            fmt_shape(a),
            fmt_shape(b),
            p.rightside,
            if p.rightside { "columns" } else { "rows" }
        )));
    }
    Ok((batch, n, bb.rows, bb.cols))
}

fn shape_rule(op: &'static str) -> impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> {
    move |attrs, ins, outs| {
        let p = params(attrs)?;
        let (Some(a), Some(b)) = (&ins[0], &ins[1]) else { return Ok(()) };
        check(op, &p, a, b)?;
        let b = b.clone();
        set_out(op, outs, 0, b)
    }
}

/// Forward of trmm (`solve` false) and trsm (`solve` true).
fn forward(op: &str, solve: bool, ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let (batch, n, rows, cols) = check(op, &p, inputs[0].shape(), inputs[1].shape())?;
    let (a, b) = (read(&inputs[0])?, read(&inputs[1])?);
    let [out] = per_item(batch, |i| {
        let t = op_triangle(&a[i * n * n..][..n * n], n, p.lower, p.transpose);
        let bi = &b[i * rows * cols..][..rows * cols];
        Ok([if solve {
            trsm((&t.0, t.1), n, (bi, rows, cols), p.rightside, p.alpha)
        } else if p.rightside {
            matmul((bi, rows, cols), false, (&t.0, n, n), false, p.alpha)
        } else {
            matmul((&t.0, n, n), false, (bi, rows, cols), false, p.alpha)
        }])
    })?;
    write(ctx.req[0], &outputs[0], &out)
}

/// `dT` (the gradient with respect to `op(A)`) as the gradient with
/// respect to A: transposed back when `transpose`, zero outside the
/// triangle read.
fn to_a_grad(p: &TriParams, dt: Vec<f64>, n: usize) -> Vec<f64> {
    let d = if p.transpose { transpose(&dt, n, n) } else { dt };
    triangle(&d, n, p.lower)
}

/// Backward of trmm: `dB = alpha·op(A)ᵀ·dC` (`dC·op(A)ᵀ` on the right
/// side) and `d op(A) = alpha·dC·Bᵀ` (`alpha·Bᵀ·dC` on the right side).
fn trmm_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_trmm";
    let p = params(ctx.attrs)?;
    let (a_arr, b_arr) = (saved(OP, args.inputs, 0, "input")?, saved(OP, args.inputs, 1, "input")?);
    let (batch, n, rows, cols) = check(OP, &p, a_arr.shape(), b_arr.shape())?;
    let (a, b) = (read(a_arr)?, read(b_arr)?);
    let g = out_grad(args, 0, b.len())?;
    let [da, db] = per_item(batch, |i| {
        let (t, _) = op_triangle(&a[i * n * n..][..n * n], n, p.lower, p.transpose);
        let (bi, gi) = (&b[i * rows * cols..][..rows * cols], &g[i * rows * cols..][..rows * cols]);
        let (dt, db) = if p.rightside {
            (
                matmul((bi, rows, cols), true, (gi, rows, cols), false, p.alpha),
                matmul((gi, rows, cols), false, (&t, n, n), true, p.alpha),
            )
        } else {
            (
                matmul((gi, rows, cols), false, (bi, rows, cols), true, p.alpha),
                matmul((&t, n, n), true, (gi, rows, cols), false, p.alpha),
            )
        };
        Ok([to_a_grad(&p, dt, n), db])
    })?;
    write(ctx.req[0], &grads[0], &da)?;
    write(ctx.req[1], &grads[1], &db)
}

/// Backward of trsm (`C = alpha·op(A)⁻¹·B` or `alpha·B·op(A)⁻¹`): with
/// `Y = op(A)⁻ᵀ·dC` (`dC·op(A)⁻ᵀ`), `dB = alpha·Y` and
/// `d op(A) = -Y·Cᵀ` (`-Cᵀ·Y`).
fn trsm_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_trsm";
    let p = params(ctx.attrs)?;
    let (a_arr, b_arr) = (saved(OP, args.inputs, 0, "input")?, saved(OP, args.inputs, 1, "input")?);
    let (batch, n, rows, cols) = check(OP, &p, a_arr.shape(), b_arr.shape())?;
    let a = read(a_arr)?;
    let c = read(saved(OP, args.outputs, 0, "output")?)?;
    let g = out_grad(args, 0, c.len())?;
    let [da, db] = per_item(batch, |i| {
        let (tt, tt_lower) = op_triangle(&a[i * n * n..][..n * n], n, p.lower, !p.transpose);
        let (ci, gi) = (&c[i * rows * cols..][..rows * cols], &g[i * rows * cols..][..rows * cols]);
        let y = trsm((&tt, tt_lower), n, (gi, rows, cols), p.rightside, 1.0);
        let dt = if p.rightside {
            matmul((ci, rows, cols), true, (&y, rows, cols), false, -1.0)
        } else {
            matmul((&y, rows, cols), false, (ci, rows, cols), true, -1.0)
        };
        let db = y.iter().map(|v| v * p.alpha).collect();
        Ok([to_a_grad(&p, dt, n), db])
    })?;
    write(ctx.req[0], &grads[0], &da)?;
    write(ctx.req[1], &grads[1], &db)
}

/// The shape of a per-matrix scalar: the leading axes, or `(1,)` for a
/// single matrix (as MXNet).
pub(super) fn scalar_shape(a: &[usize]) -> Shape {
    let s = leading(a, 2);
    if s.is_empty() {
        Shape::from_slice(&[1])
    } else {
        s
    }
}

fn sumlogdiag_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (batch, n) = square_of("_linalg_sumlogdiag", "A", inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let out: Vec<f64> = (0..batch).map(|b| (0..n).map(|i| a[b * n * n + i * n + i].ln()).sum()).collect();
    write(ctx.req[0], &outputs[0], &out)
}

/// `dA = diag(dB / diag(A))`.
fn sumlogdiag_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_sumlogdiag";
    let a_arr = saved(OP, args.inputs, 0, "input")?;
    let (batch, n) = square_of(OP, "A", a_arr.shape())?;
    let a = read(a_arr)?;
    let g = out_grad(args, 0, batch)?;
    let mut da = vec![0.0; a.len()];
    for (b, gb) in g.iter().enumerate().take(batch) {
        for i in 0..n {
            let j = b * n * n + i * n + i;
            da[j] = gb / a[j];
        }
    }
    write(ctx.req[0], &grads[0], &da)
}

fn tri_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional("transpose", AttrKind::Bool, false, "Use the transpose of the triangular A."))
        .attr(AttrSpec::optional("rightside", AttrKind::Bool, false, "A multiplies from the right side."))
        .attr(AttrSpec::optional(
            "lower",
            AttrKind::Bool,
            true,
            "A is lower triangular (its lower triangle is read); false: upper triangular.",
        ))
        .attr(AttrSpec::optional("alpha", AttrKind::Float, 1.0, "Scalar factor."))
        .arguments(&["A", "B"])
}

fn deps_all(_: &Attrs) -> BackwardDeps {
    BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![0] }
}

pub(super) fn register() {
    registry::register(
        tri_attrs(OpDef::new("_linalg_trmm").alias("linalg_trmm"))
            .doc(
                "Triangular matrix multiplication: out = alpha·op(A)·B, or alpha·B·op(A) with `rightside`, \
                 where A is triangular and op transposes it with `transpose`. Batches over leading axes; \
                 float32 and float64 only.",
            )
            .infer_shape(shape_rule("_linalg_trmm"))
            .infer_type(infer_float("_linalg_trmm"))
            .forward(|ctx, i, o| forward("_linalg_trmm", false, ctx, i, o))
            .backward(deps_all, trmm_backward),
    );
    registry::register(
        tri_attrs(OpDef::new("_linalg_trsm").alias("linalg_trsm"))
            .doc(
                "Solves a triangular system: out = alpha·op(A)⁻¹·B, or alpha·B·op(A)⁻¹ with `rightside`, \
                 where A is triangular and op transposes it with `transpose`. Batches over leading axes; \
                 float32 and float64 only.",
            )
            .infer_shape(shape_rule("_linalg_trsm"))
            .infer_type(infer_float("_linalg_trsm"))
            .forward(|ctx, i, o| forward("_linalg_trsm", true, ctx, i, o))
            .backward(deps_all, trsm_backward),
    );
    registry::register(
        OpDef::new("_linalg_sumlogdiag")
            .alias("linalg_sumlogdiag")
            .doc(
                "The sum of the natural logarithms of the diagonal of each square matrix (over the trailing \
                 two axes). float32 and float64 only.",
            )
            .arguments(&["A"])
            .infer_shape(|_, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                square_of("_linalg_sumlogdiag", "A", a)?;
                set_out("_linalg_sumlogdiag", outs, 0, scalar_shape(a))
            })
            .infer_type(infer_float("_linalg_sumlogdiag"))
            .forward(sumlogdiag_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![] },
                sumlogdiag_backward,
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    /// A well-conditioned batch of matrices (diagonal away from zero).
    fn tri_input(batch: usize, n: usize) -> NDArray {
        let x = NDArray::random_uniform(-0.5, 0.5, &[batch, n, n], DType::F64).unwrap();
        let mut v = x.to_vec::<f64>().unwrap();
        for b in 0..batch {
            for i in 0..n {
                v[b * n * n + i * n + i] += 2.0;
            }
        }
        arr(&v, &[batch, n, n])
    }

    #[test]
    fn values_match_mxnet() {
        // MXNet 1.9.1 on a full A: only the named triangle is read
        let t = arr(&[1., 5., 2., 3.], &[2, 2]);
        let b = arr(&[1., 2., 3., 4.], &[2, 2]);
        let r = invoke1("_linalg_trmm", &[&t, &b], &[]).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![1., 2., 11., 16.]);
        let r = invoke1("_linalg_trmm", &[&t, &b], &[("lower", false.into())]).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![16., 22., 9., 12.]);
        let r = invoke1("_linalg_trsm", &[&t, &b], &[]).unwrap();
        compare("_linalg_trsm", "lower", &r.to_vec::<f64>().unwrap(), &[1., 2., 1. / 3., 0.], 1e-12, 1e-12)
            .unwrap();
        let attrs = [
            ("lower", false.into()),
            ("transpose", true.into()),
            ("rightside", true.into()),
            ("alpha", AttrValue::Float(2.0)),
        ];
        let r = invoke1("_linalg_trsm", &[&t, &b], &attrs).unwrap();
        let want = [-4.66666667, 1.33333333, -7.33333333, 2.66666667];
        compare("_linalg_trsm", "upper", &r.to_vec::<f64>().unwrap(), &want, 1e-8, 1e-8).unwrap();
        let s = arr(&[2., 1., 0.5, 1., 3., 0.2, 0.5, 0.2, 1.], &[3, 3]);
        let r = invoke1("_linalg_sumlogdiag", &[&s], &[]).unwrap();
        assert_eq!(r.shape(), &[1]);
        compare("_linalg_sumlogdiag", "value", &r.to_vec::<f64>().unwrap(), &[1.791759], 1e-6, 1e-6).unwrap();
    }

    #[test]
    fn gradients_match_central_differences() {
        for (transpose, rightside, lower) in [
            (false, false, true),
            (true, false, true),
            (false, true, false),
            (true, true, false),
            (true, false, false),
            (false, true, true),
        ] {
            for op in ["_linalg_trmm", "_linalg_trsm"] {
                let b = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 3], DType::F64).unwrap();
                let b = if rightside { b.reshape(&[2, 3, 3]).unwrap() } else { b };
                OpChecker::new(op, &[tri_input(2, 3), b])
                    .attr("transpose", transpose)
                    .attr("rightside", rightside)
                    .attr("lower", lower)
                    .attr("alpha", 0.8)
                    .run()
                    .unwrap();
            }
        }
        let b = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 4], DType::F64).unwrap();
        OpChecker::new("_linalg_trsm", &[tri_input(2, 3), b]).run().unwrap();
        OpChecker::new("_linalg_sumlogdiag", &[tri_input(3, 3)]).run().unwrap();
    }

    #[test]
    fn errors_name_the_op_and_shapes() {
        let a = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let e = invoke1("_linalg_sumlogdiag", &[&a], &[]).unwrap_err().to_string();
        assert!(e.contains("_linalg_sumlogdiag") && e.contains("(2, 3)"), "{e}");
        let sq = arr(&[1., 0., 0., 1.], &[2, 2]);
        let e = invoke1("_linalg_trmm", &[&sq, &arr(&[1., 2., 3.], &[3, 1])], &[]).unwrap_err().to_string();
        assert!(e.contains("_linalg_trmm") && e.contains("(3, 1)"), "{e}");
    }
}
