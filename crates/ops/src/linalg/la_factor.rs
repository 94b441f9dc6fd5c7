//! Factorizations: `_linalg_potrf` (Cholesky), `_linalg_potri` (the
//! inverse from a Cholesky factor), `_linalg_gelqf` (LQ) and
//! `_linalg_syevd` (symmetric eigen-decomposition), with MXNet's
//! conventions for signs and the triangles read, and its gradients.

use super::fmt_shape;
use super::la_common::{
    batch_of, infer_float, leading, out_grad, per_item, read, saved, set_out, square_of, write,
};
use super::la_dense::{cholesky_lower, lq, matmul, mirror, sym_eig, transpose, triangle, trsm};
use oxnet_core::attrs::Attrs;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, DType, Error, NDArray, OpContext, OpDef, Result,
};

/// The `n x n` identity.
fn eye(n: usize) -> Vec<f64> {
    let mut e = vec![0.0; n * n];
    for i in 0..n {
        e[i * n + i] = 1.0;
    }
    e
}

fn potrf_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_potrf";
    let lower = ctx.attrs.bool("lower")?;
    let (batch, n) = square_of(OP, "A", inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let [out] = per_item(batch, |b| {
        let ai = &a[b * n * n..][..n * n];
        // the upper factor is the transpose of the lower one of Aᵀ
        let src = if lower { ai.to_vec() } else { transpose(ai, n, n) };
        let l = cholesky_lower(&src, n).ok_or_else(|| {
            Error::Invalid(format!(
                "{OP}: the Cholesky factorization failed on matrix {b} of A {}: the input matrix is either \
                 not symmetric or not positive definite",
                fmt_shape(inputs[0].shape())
            ))
        })?;
        Ok([if lower { l } else { transpose(&l, n, n) }])
    })?;
    write(ctx.req[0], &outputs[0], &out)
}

/// Backward of `L = potrf(A)`:
/// `dA = 0.5·L⁻ᵀ·copyLTU(Lᵀ·dL)·L⁻¹`, where copyLTU mirrors the lower
/// triangle onto the upper one (the upper factor is handled transposed).
fn potrf_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_potrf";
    let lower = ctx.attrs.bool("lower")?;
    let out = saved(OP, args.outputs, 0, "output")?;
    let (batch, n) = square_of(OP, "A", out.shape())?;
    let f = read(out)?;
    let g = out_grad(args, 0, f.len())?;
    let [da] = per_item(batch, |b| {
        let (fi, gi) = (&f[b * n * n..][..n * n], &g[b * n * n..][..n * n]);
        let (l, dl) =
            if lower { (fi.to_vec(), gi.to_vec()) } else { (transpose(fi, n, n), transpose(gi, n, n)) };
        let mut m = matmul((&l, n, n), true, (&dl, n, n), false, 1.0);
        mirror(&mut m, n, true);
        let lt = transpose(&l, n, n);
        let x = trsm((&lt, false), n, (&m, n, n), false, 1.0);
        Ok([trsm((&l, true), n, (&x, n, n), true, 0.5)])
    })?;
    write(ctx.req[0], &grads[0], &da)
}

fn potri_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let lower = ctx.attrs.bool("lower")?;
    let (batch, n) = square_of("_linalg_potri", "A", inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let [out] = per_item(batch, |b| {
        let t = triangle(&a[b * n * n..][..n * n], n, lower);
        let inv = trsm((&t, lower), n, (&eye(n), n, n), false, 1.0);
        // (L·Lᵀ)⁻¹ = L⁻ᵀ·L⁻¹; (Uᵀ·U)⁻¹ = U⁻¹·U⁻ᵀ
        let mut r = if lower {
            matmul((&inv, n, n), true, (&inv, n, n), false, 1.0)
        } else {
            matmul((&inv, n, n), false, (&inv, n, n), true, 1.0)
        };
        mirror(&mut r, n, true);
        Ok([r])
    })?;
    write(ctx.req[0], &outputs[0], &out)
}

/// Backward of `A = potri(L)`: `dL = -tril(A·(dA + dAᵀ)·L⁻ᵀ)` (the upper
/// factor transposed).
fn potri_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_potri";
    let lower = ctx.attrs.bool("lower")?;
    let x = saved(OP, args.inputs, 0, "input")?;
    let (batch, n) = square_of(OP, "A", x.shape())?;
    let fac = read(x)?;
    let out = read(saved(OP, args.outputs, 0, "output")?)?;
    let g = out_grad(args, 0, out.len())?;
    let [dl] = per_item(batch, |b| {
        let r = b * n * n..(b + 1) * n * n;
        let t = triangle(&fac[r.clone()], n, lower);
        let l = if lower { t } else { transpose(&t, n, n) };
        let gi = &g[r.clone()];
        let s: Vec<f64> = gi.iter().zip(transpose(gi, n, n)).map(|(x, y)| x + y).collect();
        let p = matmul((&out[r], n, n), false, (&s, n, n), false, -1.0);
        // p·L⁻ᵀ: solve X·Lᵀ = p
        let lt = transpose(&l, n, n);
        let d = triangle(&trsm((&lt, false), n, (&p, n, n), true, 1.0), n, true);
        Ok([if lower { d } else { transpose(&d, n, n) }])
    })?;
    write(ctx.req[0], &grads[0], &dl)
}

/// Checks gelqf's input: matrices `m x n` with `m <= n`.
fn gelqf_dims(a: &[usize]) -> Result<(usize, usize, usize)> {
    const OP: &str = "_linalg_gelqf";
    let b = batch_of(OP, "A", a)?;
    if b.rows > b.cols {
        return Err(Error::Shape(format!(
            "{OP}: input A {} must have at least as many columns as rows (last dimension >= second to last)",
            fmt_shape(a)
        )));
    }
    Ok((b.batch, b.rows, b.cols))
}

fn gelqf_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (batch, m, n) = gelqf_dims(inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let [q, l] = per_item(batch, |b| {
        let (q, l) = lq(&a[b * m * n..][..m * n], m, n);
        Ok([q, l])
    })?;
    write(ctx.req[0], &outputs[0], &q)?;
    write(ctx.req[1], &outputs[1], &l)
}

/// Backward of `(Q, L) = gelqf(A)`:
/// `dA = L⁻ᵀ·(dQ + copyLTU(M)·Q)` with `M = Lᵀ·dL - dQ·Qᵀ`.
fn gelqf_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_gelqf";
    let (q_arr, l_arr) = (saved(OP, args.outputs, 0, "output")?, saved(OP, args.outputs, 1, "output")?);
    let (batch, m, n) = gelqf_dims(q_arr.shape())?;
    let (q, l) = (read(q_arr)?, read(l_arr)?);
    let dq = out_grad(args, 0, q.len())?;
    let dl = out_grad(args, 1, l.len())?;
    let [da] = per_item(batch, |b| {
        let (qi, dqi) = (&q[b * m * n..][..m * n], &dq[b * m * n..][..m * n]);
        let (li, dli) = (&l[b * m * m..][..m * m], &dl[b * m * m..][..m * m]);
        let mut mm = matmul((li, m, m), true, (dli, m, m), false, 1.0);
        let dqqt = matmul((dqi, m, n), false, (qi, m, n), true, 1.0);
        mm.iter_mut().zip(&dqqt).for_each(|(x, y)| *x -= y);
        mirror(&mut mm, m, true);
        let mut x = matmul((&mm, m, m), false, (qi, m, n), false, 1.0);
        x.iter_mut().zip(dqi).for_each(|(x, y)| *x += y);
        let lt = transpose(li, m, m);
        Ok([trsm((&lt, false), m, (&x, m, n), false, 1.0)])
    })?;
    write(ctx.req[0], &grads[0], &da)
}

fn syevd_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (batch, n) = square_of("_linalg_syevd", "A", inputs[0].shape())?;
    let a = read(&inputs[0])?;
    let [u, lam] = per_item(batch, |b| {
        let (u, lam) = sym_eig(&a[b * n * n..][..n * n], n);
        Ok([u, lam])
    })?;
    write(ctx.req[0], &outputs[0], &u)?;
    write(ctx.req[1], &outputs[1], &lam)
}

/// Backward of `(U, λ) = syevd(A)`: `dA = Uᵀ·Y·U`, where `X = dU·Uᵀ`,
/// `Y` has `dλ` on its diagonal and, off it,
/// `Y[i][j] = Y[j][i] = (X[i][j] - X[j][i]) / (2·max(λ_i - λ_j, eps))`
/// for `i > j` (eps a tiny guard against equal eigenvalues).
fn syevd_backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    const OP: &str = "_linalg_syevd";
    let (u_arr, l_arr) = (saved(OP, args.outputs, 0, "output")?, saved(OP, args.outputs, 1, "output")?);
    let (batch, n) = square_of(OP, "A", u_arr.shape())?;
    let eps = if u_arr.dtype() == DType::F32 { 1e-30 } else { 1e-100 };
    let (u, lam) = (read(u_arr)?, read(l_arr)?);
    let du = out_grad(args, 0, u.len())?;
    let dlam = out_grad(args, 1, lam.len())?;
    let [da] = per_item(batch, |b| {
        let (ui, dui) = (&u[b * n * n..][..n * n], &du[b * n * n..][..n * n]);
        let (li, dli) = (&lam[b * n..][..n], &dlam[b * n..][..n]);
        let x = matmul((dui, n, n), false, (ui, n, n), true, 1.0);
        let mut y = vec![0.0; n * n];
        for i in 0..n {
            y[i * n + i] = dli[i];
            for j in 0..i {
                let denom = 2.0 * (li[i] - li[j]).max(eps);
                let e = (x[i * n + j] - x[j * n + i]) / denom;
                y[i * n + j] = e;
                y[j * n + i] = e;
            }
        }
        let t = matmul((ui, n, n), true, (&y, n, n), false, 1.0);
        Ok([matmul((&t, n, n), false, (ui, n, n), false, 1.0)])
    })?;
    write(ctx.req[0], &grads[0], &da)
}

fn lower_attr(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "lower",
        AttrKind::Bool,
        true,
        "True: the factor is lower triangular (the lower triangle is read); false: upper triangular.",
    ))
}

fn square_same(
    op: &'static str,
) -> impl Fn(&Attrs, &mut [Option<oxnet_core::Shape>], &mut [Option<oxnet_core::Shape>]) -> Result<()> {
    move |_, ins, outs| {
        let Some(a) = &ins[0] else { return Ok(()) };
        square_of(op, "A", a)?;
        let a = a.clone();
        set_out(op, outs, 0, a)
    }
}

pub(super) fn register() {
    registry::register(
        lower_attr(OpDef::new("_linalg_potrf").alias("linalg_potrf"))
            .doc(
                "Cholesky factorization of symmetric positive-definite matrices (over the trailing two axes): \
                 out = L with A = L·Lᵀ (or U with A = Uᵀ·U when `lower` is false); only that triangle of A is \
                 read. float32 and float64 only.",
            )
            .arguments(&["A"])
            .infer_shape(square_same("_linalg_potrf"))
            .infer_type(infer_float("_linalg_potrf"))
            .forward(potrf_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![], outputs: vec![0] },
                potrf_backward,
            ),
    );
    registry::register(
        lower_attr(OpDef::new("_linalg_potri").alias("linalg_potri"))
            .doc(
                "Inverse of a symmetric positive-definite matrix from its Cholesky factor A (over the trailing \
                 two axes): out = (A·Aᵀ)⁻¹ (or (Aᵀ·A)⁻¹ when `lower` is false). float32 and float64 only.",
            )
            .arguments(&["A"])
            .infer_shape(square_same("_linalg_potri"))
            .infer_type(infer_float("_linalg_potri"))
            .forward(potri_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![0] },
                potri_backward,
            ),
    );
    registry::register(
        OpDef::new("_linalg_gelqf").alias("linalg_gelqf")
            .doc(
                "LQ factorization (over the trailing two axes) of matrices with at least as many columns as \
                 rows: A = L·Q, Q with orthonormal rows, L lower triangular (LAPACK's signs). Outputs Q and L. \
                 float32 and float64 only.",
            )
            .arguments(&["A"])
            .outputs(&["output0", "output1"])
            .infer_shape(|_, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                let (_, m, _) = gelqf_dims(a)?;
                let mut l = leading(a, 2);
                l.push(m);
                l.push(m);
                let a = a.clone();
                set_out("_linalg_gelqf", outs, 0, a)?;
                set_out("_linalg_gelqf", outs, 1, l)
            })
            .infer_type(infer_float("_linalg_gelqf"))
            .forward(gelqf_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0, 1], inputs: vec![], outputs: vec![0, 1] },
                gelqf_backward,
            ),
    );
    registry::register(
        OpDef::new("_linalg_syevd")
            .doc(
                "Eigen-decomposition of symmetric matrices (over the trailing two axes; the lower triangle is \
                 read): A = Uᵀ·diag(L)·U with the eigenvalues L ascending and the rows of U the eigenvectors, \
                 each signed so that its entry of largest magnitude is positive. Outputs U and L. float32 and \
                 float64 only.",
            )
            .arguments(&["A"])
            .outputs(&["output0", "output1"])
            .infer_shape(|_, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                let (_, n) = square_of("_linalg_syevd", "A", a)?;
                let mut l = leading(a, 2);
                l.push(n);
                let a = a.clone();
                set_out("_linalg_syevd", outs, 0, a)?;
                set_out("_linalg_syevd", outs, 1, l)
            })
            .infer_type(infer_float("_linalg_syevd"))
            .forward(syevd_forward)
            .backward(
                |_| BackwardDeps { out_grads: vec![0, 1], inputs: vec![], outputs: vec![0, 1] },
                syevd_backward,
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{autograd, invoke, invoke1, DType, NDArray, Req};

    fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    const S: [f64; 9] = [2., 1., 0.5, 1., 3., 0.2, 0.5, 0.2, 1.];

    #[test]
    fn potrf_potri_match_mxnet() {
        let s = arr(&S, &[3, 3]);
        let l = invoke1("_linalg_potrf", &[&s], &[]).unwrap();
        let (r2, h2) = (std::f64::consts::SQRT_2, std::f64::consts::FRAC_1_SQRT_2);
        let want = [r2, 0., 0., h2, 1.581139, 0., 0.353553, -0.031623, 0.93488];
        compare("_linalg_potrf", "L", &l.to_vec::<f64>().unwrap(), &want, 1e-5, 1e-6).unwrap();
        let u = invoke1("_linalg_potrf", &[&s], &[("lower", false.into())]).unwrap();
        let want_u = [r2, h2, 0.353553, 0., 1.581139, -0.031623, 0., 0., 0.93488];
        compare("_linalg_potrf", "U", &u.to_vec::<f64>().unwrap(), &want_u, 1e-5, 1e-6).unwrap();
        let e = invoke1("_linalg_potrf", &[&arr(&[1., 2., 2., 1.], &[2, 2])], &[]).unwrap_err().to_string();
        assert!(e.contains("_linalg_potrf") && e.contains("positive definite"), "{e}");
        // MXNet 1.9.1: potri of a full matrix reads one triangle
        let t = arr(&[1., 5., 2., 3.], &[2, 2]);
        let r = invoke1("_linalg_potri", &[&t], &[]).unwrap();
        let want = [1.44444444, -0.22222222, -0.22222222, 0.11111111];
        compare("_linalg_potri", "lower", &r.to_vec::<f64>().unwrap(), &want, 1e-8, 1e-8).unwrap();
        let r = invoke1("_linalg_potri", &[&t], &[("lower", false.into())]).unwrap();
        let want = [3.77777778, -0.55555556, -0.55555556, 0.11111111];
        compare("_linalg_potri", "upper", &r.to_vec::<f64>().unwrap(), &want, 1e-8, 1e-8).unwrap();
    }

    #[test]
    fn gelqf_and_syevd_match_mxnet() {
        let outs = invoke("_linalg_gelqf", &[&arr(&[-1., 2., 3., 4., -5., 7.], &[2, 3])], &[]).unwrap();
        let want_q = [-0.267261, 0.534522, 0.801784, 0.483843, -0.645124, 0.591364];
        compare("_linalg_gelqf", "Q", &outs[0].to_vec::<f64>().unwrap(), &want_q, 1e-5, 1e-6).unwrap();
        let want_l = [3.741657, 0., 1.870829, 9.300538];
        compare("_linalg_gelqf", "L", &outs[1].to_vec::<f64>().unwrap(), &want_l, 1e-5, 1e-6).unwrap();
        let e = invoke("_linalg_gelqf", &[&arr(&[1., 2., 3., 4., 5., 6.], &[3, 2])], &[]).unwrap_err();
        assert!(e.to_string().contains("(3, 2)"), "{e}");
        let neg: Vec<f64> = S.iter().map(|v| -v).collect();
        let outs = invoke("_linalg_syevd", &[&arr(&neg, &[3, 3])], &[]).unwrap();
        let want_u =
            [0.537764, 0.827474, 0.161543, 0.706736, -0.546912, 0.448789, -0.459711, 0.127175, 0.878915];
        compare("_linalg_syevd", "U", &outs[0].to_vec::<f64>().unwrap(), &want_u, 1e-5, 1e-6).unwrap();
        compare(
            "_linalg_syevd",
            "L",
            &outs[1].to_vec::<f64>().unwrap(),
            &[-3.68893, -1.543653, -0.767417],
            1e-5,
            1e-6,
        )
        .unwrap();
    }

    #[test]
    fn gelqf_gradient_of_sum_l_matches_mxnet() {
        // MXNet 1.9.1: a = [[1, 2, 3], [4, 5, 7]]; sum(L).backward()
        let a = arr(&[1., 2., 3., 4., 5., 7.], &[2, 3]);
        a.attach_grad(Req::Write).unwrap();
        let outs = {
            let _r = autograd::record();
            invoke("_linalg_gelqf", &[&a], &[]).unwrap()
        };
        let s = {
            let _r = autograd::record();
            invoke1("sum", &[&outs[1]], &[]).unwrap()
        };
        s.backward().unwrap();
        #[rustfmt::skip]
        let want = [-3.0398613499073464, -0.5345224838248492, 0.122416310261034, 0.6814220561380896,
                    -0.5345224838248486, -1.118011491754111];
        compare("_linalg_gelqf", "dA", &a.grad().unwrap().to_vec::<f64>().unwrap(), &want, 1e-5, 1e-6)
            .unwrap();
    }

    /// The gradient of `op` (output `out`) at `x` for the head gradients
    /// `heads`, through autograd.
    fn grad_of(
        op: &str,
        x: &NDArray,
        attrs: &[(&str, oxnet_core::AttrValue)],
        heads: &[NDArray],
    ) -> Vec<f64> {
        x.attach_grad(Req::Write).unwrap();
        let outs = {
            let _r = autograd::record();
            invoke(op, &[x], attrs).unwrap()
        };
        let outs: Vec<&NDArray> = outs.iter().collect();
        let heads: Vec<Option<&NDArray>> = heads.iter().map(Some).collect();
        autograd::backward(&outs, &heads, Default::default()).unwrap();
        x.grad().unwrap().to_vec::<f64>().unwrap()
    }

    const H: [f64; 9] = [0.3, -1., 2., 0.5, 0.1, -0.7, 1.1, 0.4, 0.9];

    #[test]
    fn gradients_match_mxnet() {
        // values computed by MXNet 1.9.1 for the same inputs and head gradients
        let h = arr(&H, &[3, 3]);
        let g = grad_of("_linalg_potrf", &arr(&S, &[3, 3]), &[], std::slice::from_ref(&h));
        #[rustfmt::skip]
        let want = [-0.006849639683973762, 0.12557462341347658, 0.20051338062087035, 0.12557462341347655,
                    0.03434513687724675, 0.13611801377814772, 0.20051338062087032, 0.13611801377814775,
                    0.48134536857062793];
        compare("_linalg_potrf", "dA", &g, &want, 1e-9, 1e-12).unwrap();
        let g =
            grad_of("_linalg_potrf", &arr(&S, &[3, 3]), &[("lower", false.into())], std::slice::from_ref(&h));
        #[rustfmt::skip]
        let want = [0.090064002009772, -0.3143143213956185, 0.6926367034640775, -0.3143143213956184,
                    0.027388126024876325, -0.21173252884037405, 0.6926367034640776, -0.21173252884037405,
                    0.48134536857062793];
        compare("_linalg_potrf", "dA upper", &g, &want, 1e-9, 1e-12).unwrap();
        let l = [1.5, 0., 0., 0.3, 2., 0., -0.4, 0.6, 1.2];
        let g = grad_of("_linalg_potri", &arr(&l, &[3, 3]), &[], std::slice::from_ref(&h));
        #[rustfmt::skip]
        let want = [-0.7195987654320988, 0.0, 0.0, 0.5819444444444445, -0.17930555555555555, 0.0,
                    -1.5953703703703703, 0.4210185185185185, -2.4220833333333336];
        compare("_linalg_potri", "dL", &g, &want, 1e-9, 1e-12).unwrap();
        let lt = arr(&l, &[3, 3]).transpose(None).unwrap().copy().unwrap();
        let g = grad_of("_linalg_potri", &lt, &[("lower", false.into())], std::slice::from_ref(&h));
        #[rustfmt::skip]
        let want = [-0.7195987654320988, 0.5819444444444445, -1.5953703703703703, 0.0, -0.17930555555555555,
                    0.4210185185185185, 0.0, 0.0, -2.4220833333333336];
        compare("_linalg_potri", "dU", &g, &want, 1e-9, 1e-12).unwrap();
        let g = grad_of("_linalg_syevd", &arr(&S, &[3, 3]), &[], &[h, arr(&[0.5, -1., 2.], &[3])]);
        #[rustfmt::skip]
        let want = [1.2970857075465945, 0.712876918907392, -0.9042264618765208, 0.712876918907392,
                    1.1731509745731872, 1.3825047788679716, -0.9042264618765208, 1.3825047788679716,
                    -0.9702366821197812];
        compare("_linalg_syevd", "dA", &g, &want, 1e-7, 1e-9).unwrap();
        let a = arr(&[1., 2., 3., 4., 5., 7.], &[2, 3]);
        let hq = arr(&[-0.3, -0.1, 0.1, 0.3, 0.5, 0.7], &[2, 3]);
        let g = grad_of("_linalg_gelqf", &a, &[], &[hq, arr(&[1., 0., -2., 0.5], &[2, 2])]);
        #[rustfmt::skip]
        let want = [-0.8008482596324842, -0.5380200926894497, -0.6215896472541858, 1.007057117044295,
                    1.0780800466787501, 1.440032521048696];
        compare("_linalg_gelqf", "dA", &g, &want, 1e-9, 1e-12).unwrap();
    }

    #[test]
    fn gradients_match_central_differences() {
        // potrf and syevd read one triangle but return a symmetric
        // gradient (as MXNet), which finite differences cannot see: their
        // gradients are checked against MXNet's values above
        let s = arr(&S, &[3, 3]);
        let batch = arr(&[S.to_vec(), S.iter().map(|v| v * 2.0).collect()].concat(), &[2, 3, 3]);
        for lower in [true, false] {
            OpChecker::new("_linalg_potrf", std::slice::from_ref(&batch))
                .attr("lower", lower)
                .skip_grad()
                .run()
                .unwrap();
            let l = invoke1("_linalg_potrf", &[&s], &[("lower", lower.into())]).unwrap();
            OpChecker::new("_linalg_potri", &[l]).attr("lower", lower).tol(1e-3, 1e-5).run().unwrap();
        }
        let a = NDArray::random_uniform(-1.0, 1.0, &[2, 2, 4], DType::F64).unwrap();
        OpChecker::new("_linalg_gelqf", &[a]).tol(1e-3, 1e-5).run().unwrap();
        OpChecker::new("_linalg_syevd", &[batch]).skip_grad().run().unwrap();
    }
}
