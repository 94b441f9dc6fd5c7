//! `_contrib_box_nms` (alias `_contrib_box_non_maximum_suppression`):
//! non-maximum suppression over batches of boxes, and
//! `_backward_contrib_box_nms`, which routes the gradient of the kept rows
//! back to the rows they came from.

use super::geometry::BoxFormat;
use super::geometry::{argsort_desc, box_area, center_to_corner, corner_to_center, greedy_nms, intersection};
use super::{
    assign_outputs, float32, infer_real_type, prepared, shape_error, store, with_params, Real, REAL_DTYPES,
};
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, Error, GradCtx, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_box_nms";
const BACKWARD: &str = "_backward_contrib_box_nms";

/// The attributes.
#[derive(Debug, Clone, Copy)]
struct Params {
    overlap_thresh: f32,
    valid_thresh: f32,
    topk: i64,
    coord_start: i64,
    score_index: i64,
    id_index: i64,
    background_id: i64,
    force_suppress: bool,
    in_format: BoxFormat,
    out_format: BoxFormat,
}

fn parse(attrs: &Attrs) -> Result<Params> {
    Ok(Params {
        overlap_thresh: float32(attrs, "overlap_thresh")?,
        valid_thresh: float32(attrs, "valid_thresh")?,
        topk: attrs.int("topk")?,
        coord_start: attrs.int("coord_start")?,
        score_index: attrs.int("score_index")?,
        id_index: attrs.int("id_index")?,
        background_id: attrs.int("background_id")?,
        force_suppress: attrs.bool("force_suppress")?,
        in_format: BoxFormat::of(attrs, "in_format")?,
        out_format: BoxFormat::of(attrs, "out_format")?,
    })
}

/// Checks the column indices against the box width `width` (MXNet's
/// checks, in its order).
fn check_columns(p: &Params, width: usize) -> Result<()> {
    let w = width as i64;
    let expected = if p.id_index >= 0 { 6 } else { 5 };
    let bad = |attr: &str, msg: String| Err(Error::attr(attr, format!("{OP}: {msg}")));
    if w < expected {
        return Err(Error::Shape(format!(
            "{OP}: the boxes must have at least {expected} elements (score and 4 coordinates{}), got {w}",
            if expected == 6 { ", class id" } else { "" }
        )));
    }
    let (cs, ce, si) = (p.coord_start, p.coord_start + 3, p.score_index);
    if !(0..w).contains(&si) {
        return bad("score_index", format!("score_index {si} is out of range [0, {w})"));
    }
    if (cs..=ce).contains(&si) {
        return bad("score_index", format!("score_index {si} falls among the coordinates [{cs}, {ce}]"));
    }
    if cs < 0 || ce >= w {
        return bad("coord_start", format!("coordinates [{cs}, {ce}] are out of range [0, {w})"));
    }
    let id = p.id_index;
    if id >= 0 {
        if id >= w {
            return bad("id_index", format!("id_index {id} is out of range [0, {w})"));
        }
        if (cs..=ce).contains(&id) {
            return bad("id_index", format!("id_index {id} falls among the coordinates [{cs}, {ce}]"));
        }
        if id == si {
            return bad("id_index", format!("id_index {id} is also the score_index"));
        }
    }
    Ok(())
}

fn infer_shape(p: &Params, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(d) = ins[0].clone().or_else(|| outs[0].clone()) else { return Ok(()) };
    if d.len() < 2 {
        return Err(shape_error(OP, "data", "(..., num_boxes, box_width), at least 2-d", &d));
    }
    check_columns(p, d[d.len() - 1])?;
    let mut record = d.to_vec();
    *record.last_mut().expect("2-d") = 1;
    super::assign(OP, &mut ins[0], &d, "data")?;
    assign_outputs(OP, outs, &[&d, &record])
}

/// Suppression of one batch of `n` boxes of `width` elements: the kept
/// rows in order, written into `out` (rows after them -1) and their
/// global positions (`base` + row) into `record` (-1 after them).
fn nms_batch<T: Real>(
    p: &Params,
    x: &[T],
    width: usize,
    topk: usize,
    base: usize,
    out: &mut [T],
    rec: &mut [T],
) {
    let n = x.len() / width;
    let col = |i: usize, c: i64| x[i * width + c as usize];
    let valid_thresh = T::narrow(p.valid_thresh as f64);
    let background = T::narrow(p.background_id as f64);
    let valid: Vec<usize> = (0..n)
        .filter(|&i| {
            col(i, p.score_index) > valid_thresh && (p.id_index < 0 || col(i, p.id_index) != background)
        })
        .collect();
    let order = argsort_desc(valid.len(), |k| col(valid[k], p.score_index));
    let cand: Vec<usize> = order.iter().take(topk).map(|&k| valid[k]).collect();
    let cs = p.coord_start as usize;
    let coords = |i: usize| &x[i * width + cs..i * width + cs + 4];
    let areas: Vec<T> = cand.iter().map(|&i| box_area(coords(i), p.in_format)).collect();
    // MXNet compares the IoU (a DType) with the float threshold as it is
    let thresh = p.overlap_thresh as f64;
    let class = |i: usize| col(i, p.id_index).to_i64().unwrap_or(i64::MIN);
    let mut rule = |k: usize, c: usize| {
        let (a, b) = (cand[k], cand[c]);
        if !p.force_suppress && p.id_index >= 0 && class(a) != class(b) {
            return false;
        }
        let inter = intersection(coords(a), coords(b), p.in_format);
        (inter / (areas[k] + areas[c] - inter)).wide() > thresh
    };
    let kept = greedy_nms(cand.len(), usize::MAX, &mut rule);
    out.fill(-T::ONE);
    rec.fill(-T::ONE);
    for (row, &k) in kept.iter().enumerate() {
        let i = cand[k];
        out[row * width..(row + 1) * width].copy_from_slice(&x[i * width..(i + 1) * width]);
        rec[row] = T::narrow((base + i) as f64);
    }
    if p.in_format != p.out_format {
        for b in out.chunks_exact_mut(width) {
            match p.out_format {
                BoxFormat::Center => corner_to_center(&mut b[cs..cs + 4]),
                BoxFormat::Corner => center_to_corner(&mut b[cs..cs + 4]),
            }
        }
    }
}

fn forward_typed<T: Real>(ctx: &OpContext, p: &Params, x: &NDArray, outs: &[NDArray]) -> Result<()> {
    let s = x.shape();
    let (n, width) = (s[s.len() - 2], s[s.len() - 1]);
    let xs = x.as_slice::<T>()?;
    let topk = if p.topk < 0 { n } else { n.min(p.topk as usize) };
    let (mut out, mut rec) = (xs.to_vec(), vec![T::ZERO; xs.len() / width]);
    if topk < 1 {
        // MXNet copies the input and numbers every row
        rec.iter_mut().enumerate().for_each(|(i, r)| *r = T::narrow(i as f64));
    } else {
        let mut parts: Vec<(&mut [T], &mut [T])> = out.chunks_mut(n * width).zip(rec.chunks_mut(n)).collect();
        oxnet_core::parallel::for_each_chunk_mut(&mut parts, 1, |b, part| {
            let (o, r) = &mut part[0];
            nms_batch(p, &xs[b * n * width..(b + 1) * n * width], width, topk, b * n, o, r);
        });
    }
    store(ctx.req[0], &outs[0], &out)?;
    store(ctx.req[1], &outs[1], &rec)
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = prepared(ctx.attrs, parse)?;
    check_columns(&p, *ins[0].shape().last().unwrap_or(&0))?;
    if ins[0].size() == 0 {
        return Ok(());
    }
    with_real!(OP, ins[0].dtype(), T => forward_typed::<T>(ctx, &p, &ins[0], outs))
}

/// `_backward_contrib_box_nms`: rows of `ograd` go to the rows `record`
/// names; the others get 0.
fn backward_typed<T: Real>(ctx: &OpContext, og: &NDArray, record: &NDArray, out: &NDArray) -> Result<()> {
    let (g, rec) = (og.as_slice::<T>()?, record.as_slice::<T>()?);
    let width = og.shape().last().copied().unwrap_or(0);
    let mut dx = vec![T::ZERO; g.len()];
    let rows = dx.len() / width.max(1);
    for (i, &r) in rec.iter().enumerate().take(rows) {
        let Some(to) = r.to_usize().filter(|&t| r >= T::ZERO && t < rows) else { continue };
        dx[to * width..(to + 1) * width].copy_from_slice(&g[i * width..(i + 1) * width]);
    }
    store(ctx.req[0], out, &dx)
}

fn nms_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad.first().copied().unwrap_or(false) {
        return Ok(vec![None]);
    }
    let record =
        g.outputs.get(1).ok_or_else(|| Error::Autograd(format!("{OP}: the record output is missing")))?;
    Ok(vec![Some(call(BACKWARD, &[&g.out_grads[0], record], &[])?)])
}

fn attrs(def: OpDef) -> OpDef {
    let int = |name: &str, default: i64, doc: &str| AttrSpec::optional(name, AttrKind::Int, default, doc);
    def.attr(AttrSpec::optional(
        "overlap_thresh",
        AttrKind::Float,
        0.5,
        "IoU above which the box with the smaller score is suppressed.",
    ))
    .attr(AttrSpec::optional(
        "valid_thresh",
        AttrKind::Float,
        0.0,
        "Boxes whose score is not above this are dropped first.",
    ))
    .attr(int("topk", -1, "Suppress among the topk best boxes of each batch only; -1: all."))
    .attr(int("coord_start", 2, "Column of the first of the 4 coordinates."))
    .attr(int("score_index", 1, "Column of the score."))
    .attr(int("id_index", -1, "Column of the class id; -1: no class."))
    .attr(int("background_id", -1, "Class id of background boxes, dropped when id_index >= 0."))
    .attr(AttrSpec::optional(
        "force_suppress",
        AttrKind::Bool,
        false,
        "Suppress across classes too (otherwise only boxes of one class id suppress each other).",
    ))
    .attr(BoxFormat::attr("in_format", "corner", "Input box encoding: corner or center."))
    .attr(BoxFormat::attr("out_format", "corner", "Output box encoding: corner or center."))
}

pub(super) fn register() {
    let def = OpDef::new(OP)
        .alias("_contrib_box_non_maximum_suppression")
        .doc(
            "Non-maximum suppression: data (..., n, k) holds batches of n boxes of k elements, by \
             default [id, score, xmin, ymin, xmax, ymax]. In each batch the boxes whose score is \
             above valid_thresh (and, with id_index >= 0, whose class is not background_id) are \
             sorted by descending score (ties in input order); among the first topk, a box whose \
             IoU with a better kept box exceeds overlap_thresh (of the same class unless \
             force_suppress) is dropped. The output has the kept boxes first, in order, the \
             other rows filled with -1, coordinates converted from in_format to out_format. A \
             hidden second output (..., n, 1) records where each kept row came from; the \
             gradient of the kept rows goes back there, suppressed boxes get 0.",
        )
        .outputs(&["output0", "output1"])
        .visible_outputs(1)
        .infer_shape(|attrs, ins, outs| infer_shape(&prepared(attrs, parse)?, ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(OP, &["data"], REAL_DTYPES, ins, outs))
        .forward(forward)
        .grad_rule(nms_grad);
    registry::register(with_params(attrs(def), parse));

    registry::register(
        OpDef::new(BACKWARD)
            .doc(
                "Gradient of `_contrib_box_nms`: each row i of ograd (..., n, k) goes to row \
                 record[i] (the flat row position, -1: none) of a zero array shaped like ograd.",
            )
            .arguments(&["ograd", "record"])
            .infer_shape(|_, ins, outs| {
                let Some(g) = ins[0].clone() else { return Ok(()) };
                if g.len() < 2 {
                    return Err(shape_error(BACKWARD, "ograd", "at least 2-d", &g));
                }
                let mut rec = g.to_vec();
                *rec.last_mut().expect("2-d") = 1;
                super::assign(BACKWARD, &mut ins[1], &rec, "record")?;
                super::assign(BACKWARD, &mut outs[0], &g, "the output")
            })
            .infer_type(|_, ins, outs| {
                infer_real_type(BACKWARD, &["ograd", "record"], REAL_DTYPES, ins, outs)
            })
            .forward(|ctx, ins, outs| {
                let (og, record) = (&ins[0], &ins[1]);
                with_real!(BACKWARD, og.dtype(), T => backward_typed::<T>(ctx, og, record, &outs[0]))
            }),
    );
}
