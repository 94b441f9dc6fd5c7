//! `dot` and `batch_dot`.

use super::{batch_dot_op, dot_op, fmt_shape, gemm_arrays, reshape_op};
use crate::partial_shape::{merge, merge_dim, show};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{numel, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Error, GradCtx, NDArray, OpContext, OpDef, Req, Result,
};

/// How `dot` sees its operands: each as a 2-d matrix stored row-major.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DotPlan {
    /// `lhs` as stored: `l_rows x l_cols`, rows are axes `[0, l_split)`.
    pub l_split: usize,
    pub l_rows: usize,
    pub l_cols: usize,
    /// `rhs` as stored: `r_rows x r_cols`, rows are axes `[0, r_split)`.
    pub r_split: usize,
    pub r_rows: usize,
    pub r_cols: usize,
    /// The product is `m x k` times `k x n`.
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub out_shape: Shape,
}

/// MXNet's `dot` shape rule: without transposes, the last axis of `lhs`
/// contracts with the first axis of `rhs`; `transpose_a` makes it the first
/// axis of `lhs`, `transpose_b` the last axis of `rhs` (the transposes apply
/// to the operands seen as 2-d matrices). Two vectors give shape `(1,)`.
pub(super) fn dot_plan(l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<DotPlan> {
    if l.is_empty() || r.is_empty() {
        return Err(Error::Shape(format!(
            "dot needs operands of rank >= 1, got lhs {} and rhs {}",
            fmt_shape(l),
            fmt_shape(r)
        )));
    }
    if l.len() == 1 && r.len() == 1 && (ta || tb) {
        return Err(Error::Shape(format!(
            "dot of two vectors ({} and {}) does not take transpose_a or transpose_b",
            fmt_shape(l),
            fmt_shape(r)
        )));
    }
    let l_split = if ta { 1 } else { l.len() - 1 };
    let r_split = if tb { r.len() - 1 } else { 1 };
    let (l_rows, l_cols) = (numel(&l[..l_split]), numel(&l[l_split..]));
    let (r_rows, r_cols) = (numel(&r[..r_split]), numel(&r[r_split..]));
    let (m, kl) = if ta { (l_cols, l_rows) } else { (l_rows, l_cols) };
    let (kr, n) = if tb { (r_cols, r_rows) } else { (r_rows, r_cols) };
    if kl != kr {
        return Err(Error::Shape(format!(
            "dot shape mismatch: lhs {} (transpose_a={}) X rhs {} (transpose_b={}): the contracted dimensions {} and {} differ",
            fmt_shape(l),
            if ta { "True" } else { "False" },
            fmt_shape(r),
            if tb { "True" } else { "False" },
            kl,
            kr
        )));
    }
    let mut out_shape = Shape::new();
    if l.len() == 1 && r.len() == 1 {
        out_shape.push(1);
    } else {
        if l.len() > 1 {
            out_shape.extend_from_slice(if ta { &l[1..] } else { &l[..l.len() - 1] });
        }
        if r.len() > 1 {
            out_shape.extend_from_slice(if tb { &r[..r.len() - 1] } else { &r[1..] });
        }
    }
    Ok(DotPlan { l_split, l_rows, l_cols, r_split, r_rows, r_cols, m, k: kl, n, out_shape })
}

fn flags(attrs: &Attrs) -> Result<(bool, bool)> {
    Ok((attrs.bool("transpose_a")?, attrs.bool("transpose_b")?))
}

fn check_out(outs: &mut [Option<Shape>], shape: Shape, what: &str) -> Result<()> {
    match &outs[0] {
        Some(have) if *have != shape => Err(Error::Shape(format!(
            "{what}: the output has shape {}, the operands give {}",
            fmt_shape(have),
            fmt_shape(&shape)
        ))),
        _ => {
            outs[0] = Some(shape);
            Ok(())
        }
    }
}

fn dot_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let (ta, tb) = flags(ctx.attrs)?;
    let (lhs, rhs, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let p = dot_plan(lhs.shape(), rhs.shape(), ta, tb)?;
    oxnet_core::with_float_dtype!(out.dtype(), T => gemm_arrays::<T>(
        lhs,
        (0, p.l_split),
        ta,
        rhs,
        (0, p.r_split),
        tb,
        out.as_mut_slice::<T>()?,
        (1, p.m, p.k, p.n),
        req == Req::Add,
    ))
}

/// Gradients of `dot` on the operands seen as stored 2-d matrices `A`, `B`
/// with `C = op(A)·op(B)`, given `G = dC`.
fn dot_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (ta, tb) = flags(g.attrs)?;
    let (lhs, rhs, og) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let p = dot_plan(lhs.shape(), rhs.shape(), ta, tb)?;
    if lhs.size() == 0 || rhs.size() == 0 || og.size() == 0 {
        let z = |x: &NDArray, need: bool| {
            if need {
                NDArray::zeros_like(x).map(Some)
            } else {
                Ok(None)
            }
        };
        return Ok(vec![z(lhs, g.needs_grad[0])?, z(rhs, g.needs_grad[1])?]);
    }
    let a2 = reshape_op(lhs, &[p.l_rows, p.l_cols])?;
    let b2 = reshape_op(rhs, &[p.r_rows, p.r_cols])?;
    let g2 = reshape_op(og, &[p.m, p.n])?;
    let da = if g.needs_grad[0] {
        let d = match (ta, tb) {
            (false, false) => dot_op(&g2, &b2, false, true)?,
            (true, false) => dot_op(&b2, &g2, false, true)?,
            (false, true) => dot_op(&g2, &b2, false, false)?,
            (true, true) => dot_op(&b2, &g2, true, true)?,
        };
        Some(reshape_op(&d, lhs.shape())?)
    } else {
        None
    };
    let db = if g.needs_grad[1] {
        let d = match (ta, tb) {
            (false, false) => dot_op(&a2, &g2, true, false)?,
            (true, false) => dot_op(&a2, &g2, false, false)?,
            (false, true) => dot_op(&g2, &a2, true, false)?,
            (true, true) => dot_op(&g2, &a2, true, true)?,
        };
        Some(reshape_op(&d, rhs.shape())?)
    } else {
        None
    };
    Ok(vec![da, db])
}

/// `batch_dot` shapes: `(B..., M, K) x (B..., K, N)` (before transposes);
/// returns `(batch, m, k, n, out_shape)`.
fn batch_plan(l: &[usize], r: &[usize], ta: bool, tb: bool) -> Result<(usize, usize, usize, usize, Shape)> {
    let mismatch = |why: &str| {
        Error::Shape(format!(
            "batch_dot: lhs {} (transpose_a={}) X rhs {} (transpose_b={}): {why}",
            fmt_shape(l),
            if ta { "True" } else { "False" },
            fmt_shape(r),
            if tb { "True" } else { "False" }
        ))
    };
    if l.len() < 3 || l.len() != r.len() {
        return Err(mismatch("both operands must have the same rank, at least 3"));
    }
    let nd = l.len();
    if l[..nd - 2] != r[..nd - 2] {
        return Err(mismatch("the batch dimensions differ"));
    }
    let (m, kl) = if ta { (l[nd - 1], l[nd - 2]) } else { (l[nd - 2], l[nd - 1]) };
    let (kr, n) = if tb { (r[nd - 1], r[nd - 2]) } else { (r[nd - 2], r[nd - 1]) };
    if kl != kr {
        return Err(mismatch(&format!("the contracted dimensions {kl} and {kr} differ")));
    }
    let mut out: Shape = Shape::from_slice(&l[..nd - 2]);
    out.push(m);
    out.push(n);
    Ok((numel(&l[..nd - 2]), m, kl, n, out))
}

/// `dot` over partial shapes (0 = unknown extent): the contracted extents
/// fill each other, the output takes the other axes as they are known.
fn dot_infer_partial(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (ta, tb) = flags(attrs)?;
    let (Some(mut l), Some(mut r)) = (ins[0].clone(), ins[1].clone()) else {
        return Ok(());
    };
    if l.is_empty() || r.is_empty() {
        return Err(Error::Shape(format!(
            "dot needs operands of rank >= 1, got lhs {} and rhs {}",
            show(&l),
            show(&r)
        )));
    }
    let la = if ta { 0 } else { l.len() - 1 };
    let ra = if tb { r.len() - 1 } else { 0 };
    let Ok(k) = merge_dim(l[la], r[ra], "dot") else {
        // the complete rule names both shapes
        return dot_plan(&l, &r, ta, tb).map(|_| ());
    };
    if k == 0 {
        return Ok(());
    }
    (l[la], r[ra]) = (k, k);
    let plan = dot_plan(&l, &r, ta, tb)?;
    (ins[0], ins[1]) = (Some(l), Some(r));
    merge(&mut outs[0], &plan.out_shape, "dot: the output")
}

/// `batch_dot` over partial shapes: the batch axes fill each other; the
/// output is known once both operands' matrix axes are (as in MXNet).
fn batch_dot_infer_partial(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let (ta, tb) = flags(attrs)?;
    let (Some(mut l), Some(mut r)) = (ins[0].clone(), ins[1].clone()) else {
        return Ok(());
    };
    if l.len() < 3 || l.len() != r.len() {
        return batch_plan(&l, &r, ta, tb).map(|_| ());
    }
    let nd = l.len();
    for i in 0..nd - 2 {
        let Ok(b) = merge_dim(l[i], r[i], "batch_dot") else {
            return batch_plan(&l, &r, ta, tb).map(|_| ());
        };
        (l[i], r[i]) = (b, b);
    }
    if l[nd - 2..].contains(&0) || r[nd - 2..].contains(&0) {
        return Ok(());
    }
    let (.., shape) = batch_plan(&l, &r, ta, tb)?;
    (ins[0], ins[1]) = (Some(l), Some(r));
    merge(&mut outs[0], &shape, "batch_dot: the output")
}

fn batch_dot_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let (ta, tb) = flags(ctx.attrs)?;
    let (lhs, rhs, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let (batch, m, k, n, _) = batch_plan(lhs.shape(), rhs.shape(), ta, tb)?;
    let nd = lhs.ndim();
    oxnet_core::with_float_dtype!(out.dtype(), T => gemm_arrays::<T>(
        lhs,
        (nd - 2, nd - 1),
        ta,
        rhs,
        (nd - 2, nd - 1),
        tb,
        out.as_mut_slice::<T>()?,
        (batch, m, k, n),
        req == Req::Add,
    ))
}

fn batch_dot_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (ta, tb) = flags(g.attrs)?;
    let (a, b, og) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let da = if g.needs_grad[0] {
        Some(match (ta, tb) {
            (false, false) => batch_dot_op(og, b, false, true)?,
            (true, false) => batch_dot_op(b, og, false, true)?,
            (false, true) => batch_dot_op(og, b, false, false)?,
            (true, true) => batch_dot_op(b, og, true, true)?,
        })
    } else {
        None
    };
    let db = if g.needs_grad[1] {
        Some(match (ta, tb) {
            (false, false) => batch_dot_op(a, og, true, false)?,
            (true, false) => batch_dot_op(a, og, false, false)?,
            (false, true) => batch_dot_op(og, a, true, false)?,
            (true, true) => batch_dot_op(og, a, true, true)?,
        })
    } else {
        None
    };
    Ok(vec![da, db])
}

fn transpose_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "transpose_a",
        AttrKind::Bool,
        false,
        "Use the transpose of the left operand (seen as a matrix).",
    ))
    .attr(AttrSpec::optional(
        "transpose_b",
        AttrKind::Bool,
        false,
        "Use the transpose of the right operand (seen as a matrix).",
    ))
    .attr(AttrSpec::optional(
        "forward_stype",
        AttrKind::Str,
        AttrValue::None,
        "Storage type of the output (accepted for compatibility; only dense is supported).",
    ))
}

pub(super) fn register() {
    registry::register(
        transpose_attrs(
            OpDef::new("dot")
                .doc(
                    "Dot product of two arrays (MXNet semantics). Vector·vector gives shape (1,); \
                     otherwise the last axis of `lhs` contracts with the first axis of `rhs`. \
                     `transpose_a`/`transpose_b` transpose the operands seen as 2-d matrices \
                     (for N-d `lhs`, transpose_a contracts its first axis instead; for N-d `rhs`, \
                     transpose_b contracts its last axis). Float dtypes only.",
                )
                .arguments(&["lhs", "rhs"]),
        )
        .accepts_strided()
        .infer_shape(|attrs, ins, outs| {
            let (ta, tb) = flags(attrs)?;
            let (Some(l), Some(r)) = (&ins[0], &ins[1]) else {
                return Ok(());
            };
            let p = dot_plan(l, r, ta, tb)?;
            check_out(outs, p.out_shape, "dot")
        })
        .infer_shape_partial(dot_infer_partial)
        .forward(dot_forward)
        .grad_rule(dot_grad),
    );
    registry::register(
        transpose_attrs(
            OpDef::new("batch_dot")
                .doc(
                    "Batched matrix product: `(B, M, K) x (B, K, N) -> (B, M, N)`; with \
                     `transpose_a` the left operand is `(B, K, M)`, with `transpose_b` the right \
                     one is `(B, N, K)`. More leading batch axes are allowed when both operands \
                     share them. Float dtypes only.",
                )
                .arguments(&["lhs", "rhs"]),
        )
        .accepts_strided()
        .infer_shape(|attrs, ins, outs| {
            let (ta, tb) = flags(attrs)?;
            let (Some(l), Some(r)) = (&ins[0], &ins[1]) else {
                return Ok(());
            };
            let (.., shape) = batch_plan(l, r, ta, tb)?;
            check_out(outs, shape, "batch_dot")
        })
        .infer_shape_partial(batch_dot_infer_partial)
        .forward(batch_dot_forward)
        .grad_rule(batch_dot_grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::{assert_close, OpChecker};
    use oxnet_core::{invoke1, DType};

    fn rand(shape: &[usize], dt: DType) -> NDArray {
        NDArray::random_uniform(-1.0, 1.0, shape, dt).unwrap()
    }

    /// Element of `x` (row-major, f64) at a multi-index.
    fn at(x: &[f64], shape: &[usize], idx: &[usize]) -> f64 {
        let mut off = 0;
        for (i, d) in idx.iter().zip(shape) {
            off = off * d + i;
        }
        x[off]
    }

    /// Reference 2-d product `op(a)·op(b)` with plain loops.
    fn ref_matmul(
        a: &[f64],
        ash: (usize, usize),
        ta: bool,
        b: &[f64],
        bsh: (usize, usize),
        tb: bool,
    ) -> Vec<f64> {
        let (m, k) = if ta { (ash.1, ash.0) } else { ash };
        let n = if tb { bsh.0 } else { bsh.1 };
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for p in 0..k {
                    let av = if ta { a[p * ash.1 + i] } else { a[i * ash.1 + p] };
                    let bv = if tb { b[j * bsh.1 + p] } else { b[p * bsh.1 + j] };
                    s += av * bv;
                }
                out[i * n + j] = s;
            }
        }
        out
    }

    fn dot_attrs(ta: bool, tb: bool) -> [(&'static str, AttrValue); 2] {
        [("transpose_a", ta.into()), ("transpose_b", tb.into())]
    }

    #[test]
    fn dot_hand_values() {
        let a = NDArray::from_vec(vec![1.0f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        let b = NDArray::from_vec(vec![1.0f32, 0., 0., 1., 1., 1.], &[3, 2]).unwrap();
        let c = invoke1("dot", &[&a, &b], &[]).unwrap();
        assert_eq!(c.shape(), &[2, 2]);
        assert_eq!(c.to_vec::<f32>().unwrap(), vec![4., 5., 10., 11.]);
        // vector . vector -> (1,)
        let v = NDArray::from_vec(vec![1.0f64, 2., 3.], &[3]).unwrap();
        let w = NDArray::from_vec(vec![4.0f64, 5., 6.], &[3]).unwrap();
        let d = invoke1("dot", &[&v, &w], &[]).unwrap();
        assert_eq!(d.shape(), &[1]);
        assert_eq!(d.to_vec::<f64>().unwrap(), vec![32.0]);
        // matrix . vector and vector . matrix
        let v3 = NDArray::from_vec(vec![1.0f32, 1., 1.], &[3]).unwrap();
        let mv = invoke1("dot", &[&a, &v3], &[]).unwrap();
        assert_eq!((mv.shape(), mv.to_vec::<f32>().unwrap()), (&[2usize][..], vec![6., 15.]));
        let v2 = NDArray::from_vec(vec![1.0f32, -1.], &[2]).unwrap();
        let vm = invoke1("dot", &[&v2, &a], &[]).unwrap();
        assert_eq!(vm.to_vec::<f32>().unwrap(), vec![-3., -3., -3.]);
    }

    #[test]
    fn dot_all_transpose_combos_match_loops() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (m, k, n) = (3, 4, 5);
            let ash = if ta { (k, m) } else { (m, k) };
            let bsh = if tb { (n, k) } else { (k, n) };
            let a = rand(&[ash.0, ash.1], DType::F64);
            let b = rand(&[bsh.0, bsh.1], DType::F64);
            let c = invoke1("dot", &[&a, &b], &dot_attrs(ta, tb)).unwrap();
            assert_eq!(c.shape(), &[m, n]);
            let want = ref_matmul(&a.to_vec().unwrap(), ash, ta, &b.to_vec().unwrap(), bsh, tb);
            oxnet_core::check::compare("dot", "values", &c.to_vec().unwrap(), &want, 1e-12, 1e-12).unwrap();
            OpChecker::new("dot", &[a, b]).attr("transpose_a", ta).attr("transpose_b", tb).run().unwrap();
        }
    }

    #[test]
    fn dot_nd_contracts_last_with_first() {
        // (2, 3, 4) . (4, 2, 3) -> (2, 3, 2, 3)
        let a = rand(&[2, 3, 4], DType::F64);
        let b = rand(&[4, 2, 3], DType::F64);
        let c = invoke1("dot", &[&a, &b], &[]).unwrap();
        assert_eq!(c.shape(), &[2, 3, 2, 3]);
        let (av, bv, cv) = (a.to_vec().unwrap(), b.to_vec().unwrap(), c.to_vec::<f64>().unwrap());
        for i in 0..2 {
            for j in 0..3 {
                for p in 0..2 {
                    for q in 0..3 {
                        let want: f64 = (0..4)
                            .map(|t| at(&av, &[2, 3, 4], &[i, j, t]) * at(&bv, &[4, 2, 3], &[t, p, q]))
                            .sum();
                        let got = at(&cv, &[2, 3, 2, 3], &[i, j, p, q]);
                        assert!((got - want).abs() < 1e-12);
                    }
                }
            }
        }
        // transpose_a on N-d lhs contracts its first axis: (4, 2, 3)^T . (4, 5) -> (2, 3, 5)
        let a = rand(&[4, 2, 3], DType::F64);
        let b = rand(&[4, 5], DType::F64);
        let c = invoke1("dot", &[&a, &b], &dot_attrs(true, false)).unwrap();
        assert_eq!(c.shape(), &[2, 3, 5]);
        let (av, bv, cv) = (a.to_vec().unwrap(), b.to_vec().unwrap(), c.to_vec::<f64>().unwrap());
        let want: f64 = (0..4).map(|t| at(&av, &[4, 2, 3], &[t, 1, 2]) * at(&bv, &[4, 5], &[t, 3])).sum();
        assert!((at(&cv, &[2, 3, 5], &[1, 2, 3]) - want).abs() < 1e-12);
        OpChecker::new("dot", &[a, b]).attr("transpose_a", true).run().unwrap();
        // transpose_b on N-d rhs contracts its last axis: (5, 4) . (2, 3, 4)^T -> (5, 2, 3)
        let a = rand(&[5, 4], DType::F64);
        let b = rand(&[2, 3, 4], DType::F64);
        let c = invoke1("dot", &[&a, &b], &dot_attrs(false, true)).unwrap();
        assert_eq!(c.shape(), &[5, 2, 3]);
        let (av, bv, cv) = (a.to_vec().unwrap(), b.to_vec().unwrap(), c.to_vec::<f64>().unwrap());
        let want: f64 = (0..4).map(|t| at(&av, &[5, 4], &[3, t]) * at(&bv, &[2, 3, 4], &[1, 0, t])).sum();
        assert!((at(&cv, &[5, 2, 3], &[3, 1, 0]) - want).abs() < 1e-12);
        OpChecker::new("dot", &[a, b]).attr("transpose_b", true).run().unwrap();
        OpChecker::new("dot", &[rand(&[2, 3, 4], DType::F64), rand(&[4, 3], DType::F64)]).run().unwrap();
        OpChecker::new("dot", &[rand(&[4], DType::F64), rand(&[4], DType::F64)]).run().unwrap();
        OpChecker::new("dot", &[rand(&[4], DType::F64), rand(&[4, 2, 2], DType::F64)]).run().unwrap();
    }

    #[test]
    fn dot_f32_matches_f64_and_half_types_work() {
        let a = rand(&[17, 33], DType::F64);
        let b = rand(&[33, 9], DType::F64);
        let want = invoke1("dot", &[&a, &b], &[]).unwrap();
        let got =
            invoke1("dot", &[&a.astype(DType::F32).unwrap(), &b.astype(DType::F32).unwrap()], &[]).unwrap();
        assert_eq!(got.dtype(), DType::F32);
        assert_close(&got, &want, 1e-5, 1e-5).unwrap();
        for dt in [DType::F16, DType::BF16] {
            let got = invoke1("dot", &[&a.astype(dt).unwrap(), &b.astype(dt).unwrap()], &[]).unwrap();
            assert_eq!(got.dtype(), dt);
            assert_close(&got, &want, 3e-2, 8e-2).unwrap();
        }
        let i = NDArray::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        let e = invoke1("dot", &[&i, &i], &[]).unwrap_err().to_string();
        assert!(e.contains("int32"), "{e}");
    }

    #[test]
    fn dot_reads_transposed_views_and_accumulates() {
        let a = rand(&[4, 3], DType::F32);
        let b = rand(&[4, 5], DType::F32);
        let at_view = a.transpose(None).unwrap();
        assert!(!at_view.is_contiguous());
        let via_view = invoke1("dot", &[&at_view, &b], &[]).unwrap();
        let via_flag = invoke1("dot", &[&a, &b], &dot_attrs(true, false)).unwrap();
        assert_eq!(via_view.to_vec::<f32>().unwrap(), via_flag.to_vec::<f32>().unwrap());
        // a strided (non-dense) view is copied
        let big = rand(&[3, 8], DType::F32);
        let sl = big.slice_axis(1, 0, Some(4)).unwrap();
        let got = invoke1("dot", &[&sl, &b], &[]).unwrap();
        let want = invoke1("dot", &[&sl.copy().unwrap(), &b], &[]).unwrap();
        assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
        // req = add
        let op = registry::get("dot").unwrap();
        let attrs = op.parse_attrs(&[]).unwrap();
        let out = NDArray::full(&[3, 5], 2.0, DType::F32, oxnet_core::Device::Cpu).unwrap();
        oxnet_core::invoke_into(&op, &[&at_view, &b], &attrs, std::slice::from_ref(&out), &[Req::Add])
            .unwrap();
        let want: Vec<f32> = via_flag.to_vec::<f32>().unwrap().iter().map(|v| v + 2.0).collect();
        oxnet_core::check::compare(
            "dot",
            "add",
            &out.to_vec().unwrap(),
            &want.iter().map(|v| *v as f64).collect::<Vec<_>>(),
            1e-6,
            1e-6,
        )
        .unwrap();
    }

    #[test]
    fn dot_errors_name_both_shapes() {
        let a = rand(&[2, 3], DType::F32);
        let b = rand(&[4, 5], DType::F32);
        let e = invoke1("dot", &[&a, &b], &[]).unwrap_err().to_string();
        assert!(e.contains("(2, 3)") && e.contains("(4, 5)"), "{e}");
        let e = invoke1("dot", &[&a, &a], &dot_attrs(true, true)).unwrap_err().to_string();
        assert!(e.contains("(2, 3)"), "{e}");
        let v = rand(&[3], DType::F32);
        assert!(invoke1("dot", &[&v, &v], &dot_attrs(true, false)).is_err());
        let s = NDArray::scalar(1.0f32);
        assert!(invoke1("dot", &[&s, &v], &[]).is_err());
        // empty inner dimension gives zeros
        let zeros = |s: &[usize]| NDArray::zeros(s, DType::F32, oxnet_core::Device::Cpu).unwrap();
        let z = invoke1("dot", &[&zeros(&[2, 0]), &zeros(&[0, 3])], &[]).unwrap();
        assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 6]);
        let z = invoke1("dot", &[&zeros(&[0, 4]), &rand(&[4, 3], DType::F32)], &[]).unwrap();
        assert_eq!(z.shape(), &[0, 3]);
    }

    #[test]
    fn batch_dot_values_and_gradients() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (bn, m, k, n) = (3, 2, 4, 5);
            let ash = if ta { (k, m) } else { (m, k) };
            let bsh = if tb { (n, k) } else { (k, n) };
            let a = rand(&[bn, ash.0, ash.1], DType::F64);
            let b = rand(&[bn, bsh.0, bsh.1], DType::F64);
            let c = invoke1("batch_dot", &[&a, &b], &dot_attrs(ta, tb)).unwrap();
            assert_eq!(c.shape(), &[bn, m, n]);
            let (av, bv, cv) =
                (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap(), c.to_vec::<f64>().unwrap());
            for i in 0..bn {
                let want = ref_matmul(
                    &av[i * m * k..(i + 1) * m * k],
                    ash,
                    ta,
                    &bv[i * k * n..(i + 1) * k * n],
                    bsh,
                    tb,
                );
                oxnet_core::check::compare(
                    "batch_dot",
                    "values",
                    &cv[i * m * n..(i + 1) * m * n],
                    &want,
                    1e-12,
                    1e-12,
                )
                .unwrap();
            }
            OpChecker::new("batch_dot", &[a, b])
                .attr("transpose_a", ta)
                .attr("transpose_b", tb)
                .run()
                .unwrap();
        }
        // f32 vs f64, 4-d batch, transposed view input
        let a = rand(&[2, 3, 4, 5], DType::F64);
        let b = rand(&[2, 3, 5, 2], DType::F64);
        let want = invoke1("batch_dot", &[&a, &b], &[]).unwrap();
        assert_eq!(want.shape(), &[2, 3, 4, 2]);
        let a32 = a.astype(DType::F32).unwrap();
        let got = invoke1("batch_dot", &[&a32, &b.astype(DType::F32).unwrap()], &[]).unwrap();
        assert_close(&got, &want, 1e-5, 1e-5).unwrap();
        let at = a32.transpose(Some(&[0, 1, 3, 2])).unwrap();
        let via_view =
            invoke1("batch_dot", &[&at, &b.astype(DType::F32).unwrap()], &dot_attrs(true, false)).unwrap();
        assert_close(&via_view, &want, 1e-5, 1e-5).unwrap();
    }

    #[test]
    fn batch_dot_errors() {
        let a = rand(&[2, 3, 4], DType::F32);
        let b = rand(&[2, 5, 6], DType::F32);
        let e = invoke1("batch_dot", &[&a, &b], &[]).unwrap_err().to_string();
        assert!(e.contains("(2, 3, 4)") && e.contains("(2, 5, 6)"), "{e}");
        let c = rand(&[3, 4, 6], DType::F32);
        assert!(invoke1("batch_dot", &[&a, &c], &[]).unwrap_err().to_string().contains("batch"));
        assert!(invoke1("batch_dot", &[&rand(&[3, 4], DType::F32), &rand(&[4, 3], DType::F32)], &[]).is_err());
    }

    #[test]
    fn second_order_through_dot() {
        // d/dx sum(dot(x, x)) for a square x is x^T·1 + 1·x^T; its gradient
        // through create_graph is checked against the closed form.
        let x = rand(&[3, 3], DType::F64);
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = oxnet_core::autograd::record();
            invoke1("dot", &[&x, &x], &[]).unwrap()
        };
        let gx = oxnet_core::autograd::grad(
            &[&y],
            &[&x],
            &[],
            oxnet_core::autograd::BackwardOptions {
                create_graph: true,
                retain_graph: true,
                ..Default::default()
            },
        )
        .unwrap();
        let xv = x.to_vec::<f64>().unwrap();
        // dL/dx[i][j] for L = sum(x·x) is sum_k x[j][k] + sum_k x[k][i]
        let g = gx[0].to_vec::<f64>().unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let want: f64 = (0..3).map(|k| xv[j * 3 + k] + xv[k * 3 + i]).sum();
                assert!((g[i * 3 + j] - want).abs() < 1e-12);
            }
        }
        // sum of that gradient is 6·sum(x): its gradient is 6 everywhere
        gx[0].backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![6.0; 9]);
    }
}
