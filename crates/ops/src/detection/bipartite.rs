//! `_contrib_bipartite_matching`: greedy one-to-one matching of the rows
//! and columns of score matrices, best score first.

use super::geometry::argsort_desc;
use super::{
    assign_outputs, float32, infer_real_type, prepared, shape_error, store, with_params, Real, REAL_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_bipartite_matching";

/// The attributes.
#[derive(Debug, Clone, Copy)]
struct Params {
    is_ascend: bool,
    threshold: f32,
    /// Matches to make before stopping (MXNet stops after `topk + 1`); not
    /// positive: no limit.
    topk: i64,
}

fn parse(attrs: &Attrs) -> Result<Params> {
    Ok(Params {
        is_ascend: attrs.bool("is_ascend")?,
        threshold: float32(attrs, "threshold")?,
        topk: attrs.int("topk")?,
    })
}

fn infer_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(d) = &ins[0] else { return Ok(()) };
    if d.len() < 2 {
        return Err(shape_error(OP, "data", "a score matrix (..., rows, columns)", d));
    }
    let rows = &d[..d.len() - 1];
    let mut cols = d[..d.len() - 2].to_vec();
    cols.push(d[d.len() - 1]);
    assign_outputs(OP, outs, &[rows, &cols])
}

/// Matches one (rows x cols) score matrix into the row and column markers
/// (both -1 to start with).
fn match_one<T: Real>(p: &Params, scores: &[T], cols: usize, rmark: &mut [T], cmark: &mut [T]) {
    let order = if p.is_ascend {
        argsort_desc(scores.len(), |i| -scores[i])
    } else {
        argsort_desc(scores.len(), |i| scores[i])
    };
    // the float threshold, compared with the DType scores as it is
    let thr = p.threshold as f64;
    let unset = -T::ONE;
    let mut count = 0i64;
    for idx in order {
        let (r, c) = (idx / cols, idx % cols);
        if rmark[r] != unset || cmark[c] != unset {
            continue;
        }
        let s = scores[idx].wide();
        if !((!p.is_ascend && s > thr) || (p.is_ascend && s < thr)) {
            break; // the remaining scores are worse
        }
        rmark[r] = T::narrow(c as f64);
        cmark[c] = T::narrow(r as f64);
        count += 1;
        if p.topk > 0 && count > p.topk {
            break;
        }
    }
}

fn forward_typed<T: Real>(ctx: &OpContext, p: &Params, x: &NDArray, outs: &[NDArray]) -> Result<()> {
    let s = x.shape();
    let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
    let batch = s[..s.len() - 2].iter().product::<usize>();
    let xs = x.as_slice::<T>()?;
    let mut rm = vec![-T::ONE; batch * rows];
    let mut cm = vec![-T::ONE; batch * cols];
    if rows > 0 && cols > 0 {
        let mut pairs: Vec<(&mut [T], &mut [T])> = rm.chunks_mut(rows).zip(cm.chunks_mut(cols)).collect();
        oxnet_core::parallel::for_each_chunk_mut(&mut pairs, 1, |b, pair| {
            let (r, c) = &mut pair[0];
            match_one(p, &xs[b * rows * cols..(b + 1) * rows * cols], cols, r, c);
        });
    }
    store(ctx.req[0], &outs[0], &rm)?;
    store(ctx.req[1], &outs[1], &cm)
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = prepared(ctx.attrs, parse)?;
    with_real!(OP, ins[0].dtype(), T => forward_typed::<T>(ctx, &p, &ins[0], outs))
}

pub(super) fn register() {
    let def = OpDef::new(OP)
        .doc(
            "Greedy bipartite matching of score matrices data (..., N, M): the pairs (row, \
             column) are taken best score first (largest, or smallest with is_ascend), each row \
             and column at most once, while the score passes `threshold` (greater than it, or \
             less with is_ascend). Returns the matched column of every row (..., N) and the \
             matched row of every column (..., M), -1 where unmatched. With topk > 0 the \
             matching stops after topk + 1 pairs, as MXNet's kernel does. Zero gradient.",
        )
        .attr(AttrSpec::optional(
            "is_ascend",
            AttrKind::Bool,
            false,
            "Match the smallest scores first (set threshold accordingly).",
        ))
        .attr(AttrSpec::required(
            "threshold",
            AttrKind::Float,
            "Scores must be greater than this (less with is_ascend) to match.",
        ))
        .attr(AttrSpec::optional("topk", AttrKind::Int, -1i64, "Limit on the matches; -1: no limit."))
        .outputs(&["output0", "output1"])
        .infer_shape(|_, ins, outs| infer_shape(ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(OP, &["data"], REAL_DTYPES, ins, outs))
        .forward(forward)
        .zero_grad();
    registry::register(with_params(def, parse));
}
