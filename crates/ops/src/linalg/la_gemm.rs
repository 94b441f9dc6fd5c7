//! `_linalg_gemm` (`alpha·op(A)·op(B) + beta·C`), `_linalg_gemm2`
//! (`alpha·op(A)·op(B)`) and `_linalg_syrk` (`alpha·A·Aᵀ` or
//! `alpha·Aᵀ·A`) over batches of matrices.
//!
//! The matrices of gemm and gemm2 have their rows on axis `axis` (default
//! -2) and their columns on the last axis; every other axis is a batch
//! axis, and the output keeps that layout. Gradients are rules made of
//! `_linalg_gemm2` calls, so they differentiate again.

use super::la_common::{infer_float, read, set_out, write};
use super::{fmt_shape, gemm_err};
use crate::kernels::matmul;
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{numel, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Error, GradCtx, NDArray, OpContext, OpDef, Result,
};

/// The layout of an array seen as matrices with rows on `axis` and columns
/// on the last axis: `pre x rows x mid x cols` in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AxisLayout {
    pre: usize,
    rows: usize,
    mid: usize,
    cols: usize,
}

impl AxisLayout {
    fn new(shape: &[usize], axis: usize) -> Self {
        let nd = shape.len();
        AxisLayout {
            pre: numel(&shape[..axis]),
            rows: shape[axis],
            mid: numel(&shape[axis + 1..nd - 1]),
            cols: shape[nd - 1],
        }
    }

    fn batch(&self) -> usize {
        self.pre * self.mid
    }

    /// Offset in the array of element `(r, c)` of matrix `b`.
    fn offset(&self, b: usize, r: usize, c: usize) -> usize {
        let (p, q) = (b / self.mid.max(1), b % self.mid.max(1));
        ((p * self.rows + r) * self.mid + q) * self.cols + c
    }

    /// The matrices as one dense `batch x rows x cols` buffer.
    fn gather(&self, x: &[f64]) -> Vec<f64> {
        if self.mid == 1 {
            return x.to_vec();
        }
        let mut out = Vec::with_capacity(x.len());
        for b in 0..self.batch() {
            for r in 0..self.rows {
                for c in 0..self.cols {
                    out.push(x[self.offset(b, r, c)]);
                }
            }
        }
        out
    }

    /// The inverse of [`AxisLayout::gather`].
    fn scatter(&self, m: &[f64]) -> Vec<f64> {
        if self.mid == 1 {
            return m.to_vec();
        }
        let mut out = vec![0.0; m.len()];
        let mut i = 0;
        for b in 0..self.batch() {
            for r in 0..self.rows {
                for c in 0..self.cols {
                    out[self.offset(b, r, c)] = m[i];
                    i += 1;
                }
            }
        }
        out
    }
}

/// The parsed attributes of gemm and gemm2.
#[derive(Debug, Clone, Copy)]
struct GemmParams {
    ta: bool,
    tb: bool,
    alpha: f64,
    axis: i64,
}

fn params(attrs: &Attrs) -> Result<GemmParams> {
    Ok(GemmParams {
        ta: attrs.bool("transpose_a")?,
        tb: attrs.bool("transpose_b")?,
        alpha: attrs.float("alpha")?,
        axis: attrs.int("axis")?,
    })
}

/// How one product goes: the batch, `m x k` times `k x n`, the operands'
/// layouts, the row axis and the output shape.
struct Plan {
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a: AxisLayout,
    b: AxisLayout,
    out: AxisLayout,
    out_shape: Shape,
}

/// Checks the shapes of `op(A)·op(B)` with rows on `axis`.
fn plan(op: &str, p: &GemmParams, a: &[usize], b: &[usize]) -> Result<Plan> {
    let nd = a.len();
    if nd < 2 || b.len() != nd {
        return Err(Error::Shape(format!(
            "{op}: A and B must have the same rank, at least 2; got {} and {}",
            fmt_shape(a),
            fmt_shape(b)
        )));
    }
    let axis = if p.axis < 0 { p.axis + nd as i64 } else { p.axis };
    if axis < 0 || axis >= nd as i64 - 1 {
        return Err(Error::attr(
            "axis",
            format!(
                "{op}: invalid row axis {} for inputs of rank {nd} (it must precede the last axis)",
                p.axis
            ),
        ));
    }
    let axis = axis as usize;
    if (0..nd - 1).any(|i| i != axis && a[i] != b[i]) {
        return Err(Error::Shape(format!(
            "{op}: A {} and B {} must have the same shape except on the row and column axes",
            fmt_shape(a),
            fmt_shape(b)
        )));
    }
    let (m, ka) = if p.ta { (a[nd - 1], a[axis]) } else { (a[axis], a[nd - 1]) };
    let (kb, n) = if p.tb { (b[nd - 1], b[axis]) } else { (b[axis], b[nd - 1]) };
    if ka != kb {
        return Err(Error::Shape(format!(
            "{op}: incompatible matrix dimensions for multiplication: A {} (transpose_a={}) and B {} \
             (transpose_b={}) with rows on axis {axis} contract {ka} with {kb}",
            fmt_shape(a),
            p.ta,
            fmt_shape(b),
            p.tb
        )));
    }
    let mut out_shape = Shape::from_slice(a);
    out_shape[axis] = m;
    out_shape[nd - 1] = n;
    let (la, lb) = (AxisLayout::new(a, axis), AxisLayout::new(b, axis));
    Ok(Plan {
        batch: la.batch(),
        m,
        k: ka,
        n,
        a: la,
        b: lb,
        out: AxisLayout::new(&out_shape, axis),
        out_shape,
    })
}

/// `alpha·op(A)·op(B)` in the output's layout, as float64.
fn product(op: &str, p: &GemmParams, a: &NDArray, b: &NDArray) -> Result<(Plan, Vec<f64>)> {
    let pl = plan(op, p, a.shape(), b.shape())?;
    let am = pl.a.gather(&read(a)?);
    let bm = pl.b.gather(&read(b)?);
    let mut out = vec![0.0; pl.batch * pl.m * pl.n];
    matmul::batch_matmul(&am, &bm, &mut out, pl.batch, pl.m, pl.k, pl.n, p.ta, p.tb, false)
        .map_err(gemm_err)?;
    if p.alpha != 1.0 {
        out.iter_mut().for_each(|v| *v *= p.alpha);
    }
    let out = pl.out.scatter(&out);
    Ok((pl, out))
}

fn gemm2_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let (_, out) = product("_linalg_gemm2", &p, &inputs[0], &inputs[1])?;
    write(ctx.req[0], &outputs[0], &out)
}

fn gemm_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let beta = ctx.attrs.float("beta")?;
    let (pl, mut out) = product("_linalg_gemm", &p, &inputs[0], &inputs[1])?;
    check_c(&pl, inputs[2].shape())?;
    let c = read(&inputs[2])?;
    out.iter_mut().zip(&c).for_each(|(o, c)| *o += beta * c);
    write(ctx.req[0], &outputs[0], &out)
}

fn check_c(pl: &Plan, c: &[usize]) -> Result<()> {
    if c != pl.out_shape.as_slice() {
        return Err(Error::Shape(format!(
            "_linalg_gemm: C has shape {}, op(A)·op(B) has shape {}",
            fmt_shape(c),
            fmt_shape(&pl.out_shape)
        )));
    }
    Ok(())
}

/// Calls `_linalg_gemm2`.
fn gemm2(a: &NDArray, b: &NDArray, ta: bool, tb: bool, alpha: f64, axis: i64) -> Result<NDArray> {
    call(
        "_linalg_gemm2",
        &[a, b],
        &[
            ("transpose_a", ta.into()),
            ("transpose_b", tb.into()),
            ("alpha", AttrValue::Float(alpha)),
            ("axis", AttrValue::Int(axis)),
        ],
    )
}

/// Gradients of `D = alpha·op(A)·op(B)` for A and B given `dD`.
fn product_grads(g: &GradCtx, p: &GemmParams) -> Result<[Option<NDArray>; 2]> {
    let (a, b, dd) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let da = if g.needs_grad[0] {
        Some(if p.ta {
            gemm2(b, dd, p.tb, true, p.alpha, p.axis)?
        } else {
            gemm2(dd, b, false, !p.tb, p.alpha, p.axis)?
        })
    } else {
        None
    };
    let db = if g.needs_grad[1] {
        Some(if p.tb {
            gemm2(dd, a, true, p.ta, p.alpha, p.axis)?
        } else {
            gemm2(a, dd, !p.ta, false, p.alpha, p.axis)?
        })
    } else {
        None
    };
    Ok([da, db])
}

fn gemm2_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let p = params(g.attrs)?;
    Ok(product_grads(g, &p)?.into_iter().collect())
}

fn gemm_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let p = params(g.attrs)?;
    let beta = g.attrs.float("beta")?;
    let [da, db] = product_grads(g, &p)?;
    let dc = if g.needs_grad[2] {
        Some(call("_mul_scalar", &[&g.out_grads[0]], &[("scalar", AttrValue::Float(beta))])?)
    } else {
        None
    };
    Ok(vec![da, db, dc])
}

fn syrk_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let t = ctx.attrs.bool("transpose")?;
    let alpha = ctx.attrs.float("alpha")?;
    let a = &inputs[0];
    let b = super::la_common::batch_of("_linalg_syrk", "A", a.shape())?;
    let am = read(a)?;
    // B = alpha·A·Aᵀ (k = cols) or alpha·Aᵀ·A (k = rows)
    let (n, k) = if t { (b.cols, b.rows) } else { (b.rows, b.cols) };
    let mut out = vec![0.0; b.batch * n * n];
    matmul::batch_matmul(&am, &am, &mut out, b.batch, n, k, n, t, !t, false).map_err(gemm_err)?;
    // exactly symmetric, from the lower triangle
    for m in out.chunks_mut((n * n).max(1)) {
        super::la_dense::mirror(m, n, true);
    }
    out.iter_mut().for_each(|v| *v *= alpha);
    write(ctx.req[0], &outputs[0], &out)
}

fn syrk_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(a) = &ins[0] else { return Ok(()) };
    let b = super::la_common::batch_of("_linalg_syrk", "A", a)?;
    let n = if attrs.bool("transpose")? { b.cols } else { b.rows };
    let mut s = super::la_common::leading(a, 2);
    s.push(n);
    s.push(n);
    set_out("_linalg_syrk", outs, 0, s)
}

/// `dA = alpha·(dB + dBᵀ)·A` (or `alpha·A·(dB + dBᵀ)` when transposed).
fn syrk_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let t = g.attrs.bool("transpose")?;
    let alpha = g.attrs.float("alpha")?;
    let (a, db) = (&g.inputs[0], &g.out_grads[0]);
    let (x, y) = if t {
        (gemm2(a, db, false, false, alpha, -2)?, gemm2(a, db, false, true, alpha, -2)?)
    } else {
        (gemm2(db, a, false, false, alpha, -2)?, gemm2(db, a, true, false, alpha, -2)?)
    };
    Ok(vec![Some(call("elemwise_add", &[&x, &y], &[])?)])
}

fn product_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional("transpose_a", AttrKind::Bool, false, "Multiply with the transpose of A."))
        .attr(AttrSpec::optional("transpose_b", AttrKind::Bool, false, "Multiply with the transpose of B."))
        .attr(AttrSpec::optional("alpha", AttrKind::Float, 1.0, "Scalar factor multiplied with A·B."))
}

fn axis_attr(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "axis",
        AttrKind::Int,
        -2i64,
        "Axis of the matrix rows (the columns are on the last axis; the other axes are batch axes).",
    ))
}

pub(super) fn register() {
    registry::register(
        axis_attr(product_attrs(OpDef::new("_linalg_gemm").alias("linalg_gemm")).attr(AttrSpec::optional(
            "beta",
            AttrKind::Float,
            1.0,
            "Scalar factor multiplied with C.",
        )))
        .doc(
            "General matrix multiplication and accumulation: out = alpha·op(A)·op(B) + beta·C over \
             batches of matrices (rows on `axis`, columns on the last axis). float32 and float64 only.",
        )
        .arguments(&["A", "B", "C"])
        .infer_shape(|attrs, ins, outs| {
            let p = params(attrs)?;
            let (Some(a), Some(b)) = (&ins[0], &ins[1]) else { return Ok(()) };
            let pl = plan("_linalg_gemm", &p, a, b)?;
            if let Some(c) = &ins[2] {
                check_c(&pl, c)?;
            }
            ins[2] = Some(pl.out_shape.clone());
            set_out("_linalg_gemm", outs, 0, pl.out_shape)
        })
        .infer_type(infer_float("_linalg_gemm"))
        .forward(gemm_forward)
        .grad_rule(gemm_grad),
    );
    registry::register(
        axis_attr(product_attrs(OpDef::new("_linalg_gemm2").alias("linalg_gemm2")))
            .doc(
                "General matrix multiplication: out = alpha·op(A)·op(B) over batches of matrices (rows on \
                 `axis`, columns on the last axis). float32 and float64 only.",
            )
            .arguments(&["A", "B"])
            .infer_shape(|attrs, ins, outs| {
                let p = params(attrs)?;
                let (Some(a), Some(b)) = (&ins[0], &ins[1]) else { return Ok(()) };
                let pl = plan("_linalg_gemm2", &p, a, b)?;
                set_out("_linalg_gemm2", outs, 0, pl.out_shape)
            })
            .infer_type(infer_float("_linalg_gemm2"))
            .forward(gemm2_forward)
            .grad_rule(gemm2_grad),
    );
    registry::register(
        OpDef::new("_linalg_syrk")
            .alias("linalg_syrk")
            .doc(
                "Symmetric rank-k update: out = alpha·A·Aᵀ, or alpha·Aᵀ·A with `transpose`, over the \
                 trailing two axes. float32 and float64 only.",
            )
            .arguments(&["A"])
            .attr(AttrSpec::optional("transpose", AttrKind::Bool, false, "Use Aᵀ·A instead of A·Aᵀ."))
            .attr(AttrSpec::optional("alpha", AttrKind::Float, 1.0, "Scalar factor of the product."))
            .infer_shape(syrk_shape)
            .infer_type(infer_float("_linalg_syrk"))
            .forward(syrk_forward)
            .grad_rule(syrk_grad),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    fn rand(shape: &[usize]) -> NDArray {
        NDArray::random_uniform(-1.0, 1.0, shape, DType::F64).unwrap()
    }

    #[test]
    fn gemm_values_match_mxnet() {
        let a = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let b = arr(&[1., 0., 2., 1., 0., 3.], &[3, 2]);
        let c = arr(&[1., 1., 1., 1.], &[2, 2]);
        let attrs = [("alpha", AttrValue::Float(2.0)), ("beta", AttrValue::Float(-1.0))];
        let d = invoke1("_linalg_gemm", &[&a, &b, &c], &attrs).unwrap();
        // 2·A·B - C: A·B = [[5, 11], [14, 23]]
        assert_eq!(d.to_vec::<f64>().unwrap(), vec![9., 21., 27., 45.]);
        let e = invoke1("_linalg_gemm2", &[&a, &a], &[("transpose_b", true.into())]).unwrap();
        assert_eq!(e.to_vec::<f64>().unwrap(), vec![14., 32., 32., 77.]);
    }

    #[test]
    fn gemm2_axis_matches_mxnet() {
        // MXNet 1.9.1: gemm2(arange(24).reshape(2,3,4), arange(24).reshape(2,3,4)/10, axis=0, transpose_b=True)
        let a = NDArray::arange(0.0, 24.0, 1.0, DType::F64).unwrap().reshape(&[2, 3, 4]).unwrap();
        let b = invoke1("_div_scalar", &[&a], &[("scalar", AttrValue::Float(10.0))]).unwrap();
        let attrs = [("axis", AttrValue::Int(0)), ("transpose_b", true.into())];
        let c = invoke1("_linalg_gemm2", &[&a, &b], &attrs).unwrap();
        assert_eq!(c.shape(), &[2, 3, 2]);
        let want = [1.4, 8.6, 12.6, 39., 36.6, 82.2, 8.6, 73.4, 39., 123., 82.2, 185.4];
        compare("_linalg_gemm2", "axis=0", &c.to_vec::<f64>().unwrap(), &want, 1e-12, 1e-12).unwrap();
        let e = invoke1("_linalg_gemm2", &[&a, &b], &[("axis", AttrValue::Int(-1))]).unwrap_err().to_string();
        assert!(e.contains("axis"), "{e}");
        let e = invoke1("_linalg_gemm2", &[&a, &a], &[]).unwrap_err().to_string();
        assert!(e.contains("(2, 3, 4)") && e.contains("_linalg_gemm2"), "{e}");
    }

    #[test]
    fn gradients_match_central_differences() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let sa = if ta { [2, 4, 3] } else { [2, 3, 4] };
            let sb = if tb { [2, 5, 4] } else { [2, 4, 5] };
            OpChecker::new("_linalg_gemm2", &[rand(&sa), rand(&sb)])
                .attr("transpose_a", ta)
                .attr("transpose_b", tb)
                .attr("alpha", 0.7)
                .run()
                .unwrap();
            OpChecker::new("_linalg_gemm", &[rand(&sa), rand(&sb), rand(&[2, 3, 5])])
                .attr("transpose_a", ta)
                .attr("transpose_b", tb)
                .attr("beta", -1.5)
                .run()
                .unwrap();
        }
        OpChecker::new("_linalg_gemm2", &[rand(&[3, 2, 4]), rand(&[3, 2, 5])])
            .attr("axis", 0i64)
            .attr("transpose_a", true)
            .run()
            .unwrap();
        OpChecker::new("_linalg_syrk", &[rand(&[2, 3, 4])]).attr("alpha", 0.5).run().unwrap();
        OpChecker::new("_linalg_syrk", &[rand(&[3, 4])]).attr("transpose", true).run().unwrap();
    }

    #[test]
    fn syrk_and_dtypes() {
        let a = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let b = invoke1("_linalg_syrk", &[&a], &[("alpha", AttrValue::Float(2.0))]).unwrap();
        assert_eq!(b.to_vec::<f64>().unwrap(), vec![28., 64., 64., 154.]);
        let b = invoke1("_linalg_syrk", &[&a], &[("transpose", true.into())]).unwrap();
        assert_eq!(b.shape(), &[3, 3]);
        assert_eq!(b.to_vec::<f64>().unwrap()[..3], [17., 22., 27.]);
        let h = a.astype(DType::F16).unwrap();
        let e = invoke1("_linalg_gemm2", &[&h, &h], &[("transpose_b", true.into())]).unwrap_err().to_string();
        assert!(e.contains("float32") && e.contains("_linalg_gemm2"), "{e}");
        let f = a.astype(DType::F32).unwrap();
        let r = invoke1("_linalg_gemm2", &[&f, &f], &[("transpose_b", true.into())]).unwrap();
        assert_eq!((r.dtype(), r.to_vec::<f64>().unwrap()), (DType::F32, vec![14., 32., 32., 77.]));
    }
}
