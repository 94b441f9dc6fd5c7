//! `_contrib_MultiBoxDetection`: SSD detections from class probabilities,
//! location predictions and anchors, with per-class non-maximum
//! suppression.

use super::geometry::{argsort_desc, corner_inter_union, cpp_max, cpp_min, greedy_nms};
use super::{
    assign, float32, float_tuple, infer_real_type, prepared, shape_error, store, with_params, Real,
    MULTIBOX_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_MultiBoxDetection";
const INPUTS: [&str; 3] = ["cls_prob", "loc_pred", "anchor"];

/// The attributes (`background_id` is declared but, as in MXNet, class 0
/// is the background).
#[derive(Debug, Clone)]
struct Params {
    clip: bool,
    threshold: f32,
    nms_threshold: f32,
    force_suppress: bool,
    variances: [f32; 4],
    nms_topk: i64,
}

fn parse(attrs: &Attrs) -> Result<Params> {
    let v = float_tuple(OP, attrs, "variances", Some(4))?;
    attrs.int("background_id")?;
    Ok(Params {
        clip: attrs.bool("clip")?,
        threshold: float32(attrs, "threshold")?,
        nms_threshold: float32(attrs, "nms_threshold")?,
        force_suppress: attrs.bool("force_suppress")?,
        variances: [v[0], v[1], v[2], v[3]],
        nms_topk: attrs.int("nms_topk")?,
    })
}

fn infer_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(c) = ins[0].clone() else { return Ok(()) };
    let (b, n) = match *c {
        [b, _, n] if n > 0 => (b, n),
        _ => return Err(shape_error(OP, "cls_prob", "(batch, num_classes, num_anchors > 0)", &c)),
    };
    assign(OP, &mut ins[1], &[b, 4 * n], "loc_pred")?;
    assign(OP, &mut ins[2], &[1, n, 4], "anchor")?;
    assign(OP, &mut outs[0], &[b, n, 6], "the output")
}

/// The detected box of an anchor: its location prediction applied, in
/// `T` as MXNet's `TransformLocations`, clipped to [0, 1] with `clip`.
fn decode<T: Real>(p: &Params, a: &[T], loc: &[T]) -> [T; 4] {
    let v = p.variances.map(|x| T::narrow(x as f64));
    let two = T::ONE + T::ONE;
    let (aw, ah) = (a[2] - a[0], a[3] - a[1]);
    let (ax, ay) = ((a[0] + a[2]) / two, (a[1] + a[3]) / two);
    let (ox, oy) = (loc[0] * v[0] * aw + ax, loc[1] * v[1] * ah + ay);
    let (ow, oh) = ((loc[2] * v[2]).exp() * aw / two, (loc[3] * v[3]).exp() * ah / two);
    let b = [ox - ow, oy - oh, ox + ow, oy + oh];
    if p.clip {
        b.map(|x| cpp_max(T::ZERO, cpp_min(T::ONE, x)))
    } else {
        b
    }
}

/// The detections of one image into `out` (anchors x 6, filled with -1).
fn detect<T: Real>(p: &Params, probs: &[T], loc: &[T], anchors: &[T], out: &mut [T]) {
    let n = anchors.len() / 4;
    let classes = probs.len() / n;
    let threshold = T::narrow(p.threshold as f64);
    // [class id, score, xmin, ymin, xmax, ymax] of the anchors with a foreground class
    let mut rows: Vec<[T; 6]> = Vec::new();
    for i in 0..n {
        let (mut score, mut id) = (-T::ONE, 0usize);
        for j in 1..classes {
            if probs[j * n + i] > score {
                (score, id) = (probs[j * n + i], j);
            }
        }
        let below = score < threshold;
        if id > 0 && !below {
            let [x0, y0, x1, y1] = decode(p, &anchors[4 * i..4 * i + 4], &loc[4 * i..4 * i + 4]);
            rows.push([T::narrow(id as f64 - 1.0), score, x0, y0, x1, y1]);
        }
    }
    for (o, r) in out.chunks_exact_mut(6).zip(&rows) {
        o.copy_from_slice(r);
    }
    if rows.is_empty() || p.nms_threshold <= 0.0 || p.nms_threshold > 1.0 {
        return;
    }
    let order = argsort_desc(rows.len(), |i| rows[i][1]);
    let keep = if p.nms_topk > 0 { rows.len().min(p.nms_topk as usize) } else { rows.len() };
    // past the top k, rows keep their unsorted values but lose their class
    for o in out.chunks_exact_mut(6).take(rows.len()).skip(keep) {
        o[0] = -T::ONE;
    }
    let sorted: Vec<[T; 6]> = order[..keep].iter().map(|&i| rows[i]).collect();
    let nms = T::narrow(p.nms_threshold as f64);
    let mut rule = |k: usize, c: usize| {
        let (a, b) = (&sorted[k], &sorted[c]);
        if !p.force_suppress && a[0] != b[0] {
            return false;
        }
        let (inter, union) = corner_inter_union(&a[2..], &b[2..]);
        let iou = if union <= T::ZERO { T::ZERO } else { inter / union };
        iou >= nms
    };
    let kept = greedy_nms(keep, usize::MAX, &mut rule);
    let mut next = kept.iter().peekable();
    for (k, (o, r)) in out.chunks_exact_mut(6).zip(&sorted).enumerate() {
        o.copy_from_slice(r);
        if next.next_if(|&&j| j == k).is_none() {
            o[0] = -T::ONE;
        }
    }
}

fn forward_typed<T: Real>(ctx: &OpContext, p: &Params, ins: &[NDArray], out: &NDArray) -> Result<()> {
    let (probs, loc, anchors) = (ins[0].as_slice::<T>()?, ins[1].as_slice::<T>()?, ins[2].as_slice::<T>()?);
    let n = anchors.len() / 4;
    let mut y = vec![-T::ONE; out.size()];
    let per_prob = ins[0].shape()[1] * n;
    oxnet_core::parallel::for_each_chunk_mut(&mut y, n * 6, |b, o| {
        detect(p, &probs[b * per_prob..(b + 1) * per_prob], &loc[b * 4 * n..(b + 1) * 4 * n], anchors, o);
    });
    store(ctx.req[0], out, &y)
}

pub(super) fn register() {
    let float = |name: &str, default: f64, doc: &str| AttrSpec::optional(name, AttrKind::Float, default, doc);
    let def = OpDef::new(OP)
        .alias("_npx_multibox_detection")
        .doc(
            "SSD detections: for each of the N anchors (1, N, 4) the most likely foreground \
             class of cls_prob (B, C, N) (class 0 is background) with its probability, kept \
             when that is at least `threshold`, and the box decoded from loc_pred (B, 4N) with \
             `variances` (clipped to [0, 1] with clip). The kept detections are sorted by \
             descending score (the first nms_topk when positive) and suppressed where their IoU \
             with a better one of the same class (any class with force_suppress) reaches \
             nms_threshold. Returns (B, N, 6) rows [class_id, score, xmin, ymin, xmax, ymax]; \
             suppressed and empty rows have class_id -1. Zero gradient.",
        )
        .attr(AttrSpec::optional("clip", AttrKind::Bool, true, "Clip the boxes to [0, 1]."))
        .attr(float("threshold", 0.01, "Least probability of a detection."))
        .attr(AttrSpec::optional(
            "background_id",
            AttrKind::Int,
            0i64,
            "Background class id (class 0 is used).",
        ))
        .attr(float(
            "nms_threshold",
            0.5,
            "IoU from which a detection is suppressed; outside (0, 1]: no NMS.",
        ))
        .attr(AttrSpec::optional("force_suppress", AttrKind::Bool, false, "Suppress across classes too."))
        .attr(AttrSpec::optional(
            "variances",
            AttrKind::Str,
            AttrValue::Str("(0.1, 0.1, 0.2, 0.2)".into()),
            "Multipliers of the location predictions (x, y, w, h).",
        ))
        .attr(AttrSpec::optional("nms_topk", AttrKind::Int, -1i64, "Detections to keep before NMS; -1: all."))
        .arguments(&INPUTS)
        .infer_shape(|_, ins, outs| infer_shape(ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(OP, &INPUTS, MULTIBOX_DTYPES, ins, outs))
        .forward(|ctx, ins, outs| {
            let p = prepared(ctx.attrs, parse)?;
            with_real!(OP, ins[0].dtype(), [F32, F64], T => forward_typed::<T>(ctx, &p, ins, &outs[0]))
        })
        .zero_grad();
    registry::register(with_params(def, parse));
}
