//! `_linalg_inverse`, `_linalg_det` and `_linalg_slogdet` of square
//! matrices over the trailing two axes, by LU factorization with partial
//! pivoting.

use super::fmt_shape;
use super::la_common::{infer_float, out_grad, per_item, read, saved, set_out, square_of, write};
use super::la_dense::{inverse, slogdet, transpose};
use super::la_tri::scalar_shape;
use crate::util::call;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrValue, BackwardArgs, BackwardDeps, Error, GradCtx, NDArray, OpContext, OpDef, Result,
};

fn inverse_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_inverse";
    let (batch, n) = square_of(OP, "A", inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let [out] = per_item(batch, |b| {
        let inv = inverse(&a[b * n * n..][..n * n], n).ok_or_else(|| {
            Error::Invalid(format!(
                "{OP}: matrix {b} of A {} is singular (not invertible)",
                fmt_shape(inputs[0].shape())
            ))
        })?;
        Ok([inv])
    })?;
    write(ctx.req[0], &outputs[0], &out)
}

/// `dA = -Bᵀ·dB·Bᵀ` for `B = A⁻¹`, made of `_linalg_gemm2` calls.
fn inverse_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let (b, db) = (&g.outputs[0], &g.out_grads[0]);
    let gemm2 = |x: &NDArray, y: &NDArray, ta: bool, tb: bool, alpha: f64| {
        call(
            "_linalg_gemm2",
            &[x, y],
            &[("transpose_a", ta.into()), ("transpose_b", tb.into()), ("alpha", AttrValue::Float(alpha))],
        )
    };
    let t = gemm2(db, b, false, true, 1.0)?;
    Ok(vec![Some(gemm2(b, &t, true, false, -1.0)?)])
}

/// Per matrix `(sign, log|det|)`.
fn signs_and_logs(a: &NDArray, op: &str) -> Result<(usize, usize, Vec<f64>, Vec<f64>)> {
    let (batch, n) = square_of(op, "A", a.shape())?;
    let v = read(a)?;
    let [sign, log] = per_item(batch, |b| {
        let (s, l) = slogdet(&v[b * n * n..][..n * n], n);
        Ok([vec![s], vec![l]])
    })?;
    Ok((batch, n, sign, log))
}

fn det_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (_, _, sign, log) = signs_and_logs(&inputs[0], "_linalg_det")?;
    let det: Vec<f64> = sign.iter().zip(&log).map(|(s, l)| s * l.exp()).collect();
    write(ctx.req[0], &outputs[0], &det)
}

fn slogdet_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (_, _, sign, log) = signs_and_logs(&inputs[0], "_linalg_slogdet")?;
    write(ctx.req[0], &outputs[0], &sign)?;
    write(ctx.req[1], &outputs[1], &log)
}

/// `dA = scale_b · A⁻ᵀ` per matrix, zero where `keep(b)` is false (a
/// singular matrix: MXNet passes no gradient there).
fn jacobi_grad(
    op: &str,
    a: &NDArray,
    scale: impl Fn(usize) -> f64,
    keep: impl Fn(usize) -> bool,
) -> Result<Vec<f64>> {
    let (batch, n) = square_of(op, "A", a.shape())?;
    let v = read(a)?;
    let [da] = per_item(batch, |b| {
        let inv = if keep(b) { inverse(&v[b * n * n..][..n * n], n) } else { None };
        Ok([match inv {
            Some(inv) => transpose(&inv, n, n).into_iter().map(|x| x * scale(b)).collect(),
            None => vec![0.0; n * n],
        }])
    })?;
    Ok(da)
}

/// Backward of `det`: `dA = ddet·det·A⁻ᵀ` (zero for a zero determinant).
fn det_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_det";
    let a = saved(OP, args.inputs, 0, "input")?;
    let det = read(saved(OP, args.outputs, 0, "output")?)?;
    let g = out_grad(args, 0, det.len())?;
    let da = jacobi_grad(OP, a, |b| g[b] * det[b], |b| det[b] != 0.0)?;
    write(ctx.req[0], &grads[0], &da)
}

/// Backward of `slogdet`: `dA = dlogabsdet·A⁻ᵀ` (zero for a singular
/// matrix; the sign gets no gradient).
fn slogdet_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_slogdet";
    let a = saved(OP, args.inputs, 0, "input")?;
    let log = read(saved(OP, args.outputs, 1, "output")?)?;
    let g = out_grad(args, 1, log.len())?;
    let da = jacobi_grad(OP, a, |b| g[b], |b| log[b] != f64::NEG_INFINITY)?;
    write(ctx.req[0], &grads[0], &da)
}

fn scalar_rule(
    op: &'static str,
    n_out: usize,
) -> impl Fn(&oxnet_core::Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> {
    move |_, ins, outs| {
        let Some(a) = &ins[0] else { return Ok(()) };
        square_of(op, "A", a)?;
        let s = scalar_shape(a);
        (0..n_out).try_for_each(|i| set_out(op, outs, i, s.clone()))
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_linalg_inverse")
            .alias("linalg_inverse")
            .doc("Inverse of square matrices (over the trailing two axes). float32 and float64 only.")
            .arguments(&["A"])
            .infer_shape(|_, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                square_of("_linalg_inverse", "A", a)?;
                let a = a.clone();
                set_out("_linalg_inverse", outs, 0, a)
            })
            .infer_type(infer_float("_linalg_inverse"))
            .forward(inverse_forward)
            .grad_rule(inverse_grad),
    );
    registry::register(
        OpDef::new("_linalg_det")
            .alias("linalg_det")
            .doc(
                "Determinant of square matrices (over the trailing two axes); shape (1,) for one matrix. \
                 float32 and float64 only.",
            )
            .arguments(&["A"])
            .infer_shape(scalar_rule("_linalg_det", 1))
            .infer_type(infer_float("_linalg_det"))
            .forward(det_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![0] },
                det_backward,
            ),
    );
    registry::register(
        OpDef::new("_linalg_slogdet").alias("linalg_slogdet")
            .doc(
                "Sign and natural logarithm of the absolute value of the determinant of square matrices (over \
                 the trailing two axes): outputs sign and logabsdet (sign 0 and -inf for a singular matrix). \
                 float32 and float64 only.",
            )
            .arguments(&["A"])
            .outputs(&["output0", "output1"])
            .infer_shape(scalar_rule("_linalg_slogdet", 2))
            .infer_type(infer_float("_linalg_slogdet"))
            .forward(slogdet_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0, 1], inputs: vec![0], outputs: vec![1] },
                slogdet_backward,
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{autograd, invoke, invoke1, NDArray, Req};

    const T: [f64; 9] = [1.5, 0.7, 0.2, 0.3, 2., -0.5, -0.4, 0.6, 1.2];

    fn t() -> NDArray {
        NDArray::from_vec(T.to_vec(), &[3, 3]).unwrap()
    }

    fn grad(op: &str, out: usize) -> Vec<f64> {
        let x = t();
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke(op, &[&x], &[]).unwrap()
        };
        y[out].backward().unwrap();
        x.grad().unwrap().to_vec::<f64>().unwrap()
    }

    #[test]
    fn values_and_gradients_match_mxnet() {
        let d = invoke1("_linalg_det", &[&t()], &[]).unwrap();
        assert_eq!(d.shape(), &[1]);
        compare("_linalg_det", "det", &d.to_vec::<f64>().unwrap(), &[4.134], 1e-12, 1e-12).unwrap();
        #[rustfmt::skip]
        let want = [2.7, -0.16, 0.98, -0.72, 1.88, -1.18, -0.75, 0.81, 2.79];
        compare("_linalg_det", "dA", &grad("_linalg_det", 0), &want, 1e-9, 1e-12).unwrap();
        #[rustfmt::skip]
        let want = [0.6531204644412191, -0.03870343492985, 0.2370585389453314, -0.17416545718432505,
                    0.45476536042573773, -0.28543783260764394, -0.181422351233672, 0.19593613933236578,
                    0.6748911465892599];
        compare("_linalg_slogdet", "dA", &grad("_linalg_slogdet", 1), &want, 1e-9, 1e-12).unwrap();
        // singular: sign 0, log -inf, det 0, no error
        let s = NDArray::from_vec(vec![1.0f64, 2., 2., 4.], &[2, 2]).unwrap();
        let outs = invoke("_linalg_slogdet", &[&s], &[]).unwrap();
        assert_eq!(outs[0].to_vec::<f64>().unwrap(), vec![0.0]);
        assert_eq!(outs[1].to_vec::<f64>().unwrap(), vec![f64::NEG_INFINITY]);
        assert_eq!(invoke1("_linalg_det", &[&s], &[]).unwrap().to_vec::<f64>().unwrap(), vec![0.0]);
        let e = invoke1("_linalg_inverse", &[&s], &[]).unwrap_err().to_string();
        assert!(e.contains("_linalg_inverse") && e.contains("singular"), "{e}");
        let batch = NDArray::from_vec([T.to_vec(), T.to_vec()].concat(), &[1, 2, 3, 3]).unwrap();
        assert_eq!(invoke1("_linalg_det", &[&batch], &[]).unwrap().shape(), &[1, 2]);
    }

    #[test]
    fn gradients_match_central_differences() {
        OpChecker::new("_linalg_inverse", &[t()]).run().unwrap();
        OpChecker::new("_linalg_det", &[t()]).run().unwrap();
        OpChecker::new("_linalg_slogdet", &[t()]).run().unwrap();
    }
}
