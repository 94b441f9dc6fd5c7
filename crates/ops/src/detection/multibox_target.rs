//! `_contrib_MultiBoxTarget`: SSD training targets: each anchor is matched
//! to a ground-truth box (or made a negative, possibly by hard negative
//! mining) and given class and location targets.

use super::geometry::{argsort_desc, corner_inter_union};
use super::{
    assign_outputs, float32, float_tuple, infer_real_type, prepared, shape_error, store, with_params, Real,
    MULTIBOX_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_MultiBoxTarget";
const INPUTS: [&str; 3] = ["anchor", "label", "cls_pred"];

/// The attributes.
#[derive(Debug, Clone)]
struct Params {
    overlap_threshold: f32,
    ignore_label: f32,
    negative_mining_ratio: f32,
    negative_mining_thresh: f32,
    variances: [f32; 4],
}

fn parse(attrs: &Attrs) -> Result<Params> {
    let v = float_tuple(OP, attrs, "variances", Some(4))?;
    // minimum_negative_samples is declared but, as in MXNet's CPU kernel, unused
    attrs.int("minimum_negative_samples")?;
    Ok(Params {
        overlap_threshold: float32(attrs, "overlap_threshold")?,
        ignore_label: float32(attrs, "ignore_label")?,
        negative_mining_ratio: float32(attrs, "negative_mining_ratio")?,
        negative_mining_thresh: float32(attrs, "negative_mining_thresh")?,
        variances: [v[0], v[1], v[2], v[3]],
    })
}

fn infer_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (Some(a), Some(l)) = (&ins[0], &ins[1]) else { return Ok(()) };
    let n = match **a {
        [1, n, 4] if n > 0 => n,
        _ => return Err(shape_error(OP, "anchor", "(1, num_anchors, 4) with num_anchors > 0", a)),
    };
    let b = match **l {
        [b, labels, width] if labels > 0 && width >= 5 => b,
        _ => return Err(shape_error(OP, "label", "(batch, num_labels > 0, label_width >= 5)", l)),
    };
    if let Some(p) = &ins[2] {
        if p.len() != 3 || p[0] != b || p[1] == 0 || p[2] != n {
            let want = format!("(batch {b}, num_classes, num_anchors {n})");
            return Err(shape_error(OP, "cls_pred", &want, p));
        }
    }
    assign_outputs(OP, outs, &[&[b, 4 * n], &[b, 4 * n], &[b, n]])
}

/// The location target of an anchor matched to a ground truth, computed
/// in float32 as MXNet's `AssignLocTargets`.
fn loc_target<T: Real>(anchor: &[T], gt: &[T], v: &[f32; 4]) -> [T; 4] {
    let f = |x: T| x.wide() as f32;
    let center = |b: &[T]| {
        let (l, t, r, bot) = (f(b[0]), f(b[1]), f(b[2]), f(b[3]));
        (r - l, bot - t, (l + r) * 0.5, (t + bot) * 0.5)
    };
    let (aw, ah, ax, ay) = center(anchor);
    let (gw, gh, gx, gy) = center(gt);
    let t = [(gx - ax) / aw / v[0], (gy - ay) / ah / v[1], (gw / aw).ln() / v[2], (gh / ah).ln() / v[3]];
    t.map(|x| T::narrow(x as f64))
}

/// The flags of one image's anchors: 1 positive (with its ground truth in
/// `matches`), 0 negative, -1 ignored.
struct Assignment {
    flags: Vec<i8>,
    matches: Vec<(f32, i64)>,
}

/// The largest overlap of row `j` of `iou` and its ground truth (the
/// first of equal ones), `(-1, -1)` when there is none.
fn best_gt(iou: &[f32], j: usize, gts: usize) -> (f32, i64) {
    let mut best = (-1.0f32, -1i64);
    for (k, &v) in iou[j * gts..(j + 1) * gts].iter().enumerate() {
        if v > best.0 {
            best = (v, k as i64);
        }
    }
    best
}

/// Matches the anchors of one image to its `gts` ground truths (`iou`:
/// anchors x gts); `cls` are its class predictions (classes x anchors).
fn assign<T: Real>(p: &Params, iou: &[f32], gts: usize, cls: &[T]) -> Result<Assignment> {
    let n = iou.len() / gts;
    let mut flags = vec![-1i8; n];
    let mut matches = vec![(-1.0f32, -1i64); n];
    let mut gt_done = vec![false; gts];
    let mut positives = 0usize;
    // every ground truth takes its best free anchor, best pairs first
    while gt_done.contains(&false) {
        let mut best: Option<(usize, usize)> = None;
        let mut best_iou = 1e-6f32;
        for j in (0..n).filter(|&j| flags[j] != 1) {
            for k in (0..gts).filter(|&k| !gt_done[k]) {
                if iou[j * gts + k] > best_iou {
                    (best, best_iou) = (Some((j, k)), iou[j * gts + k]);
                }
            }
        }
        let Some((j, k)) = best else { break };
        matches[j] = (best_iou, k as i64);
        positives += 1;
        gt_done[k] = true;
        flags[j] = 1;
    }
    if p.overlap_threshold > 0.0 {
        for j in 0..n {
            if flags[j] == 1 {
                continue;
            }
            let (v, k) = best_gt(iou, j, gts);
            if k >= 0 {
                matches[j] = (v, k);
                if v > p.overlap_threshold {
                    positives += 1;
                    flags[j] = 1;
                }
            }
        }
    }
    if p.negative_mining_ratio > 0.0 {
        if p.negative_mining_thresh <= 0.0 || p.negative_mining_thresh.is_nan() {
            return Err(Error::attr(
                "negative_mining_thresh",
                format!("{OP}: negative_mining_thresh must be positive for negative mining"),
            ));
        }
        let wanted = ((positives as f32 * p.negative_mining_ratio) as i64).min((n - positives) as i64);
        if wanted > 0 {
            // the negatives the model finds least like background
            let classes = cls.len() / n;
            let mut pool: Vec<(f32, usize)> = Vec::new();
            for j in (0..n).filter(|&j| flags[j] != 1) {
                if matches[j].0 < 0.0 {
                    let (v, k) = best_gt(iou, j, gts);
                    if k >= 0 {
                        matches[j] = (v, k);
                    }
                }
                if matches[j].0 < p.negative_mining_thresh && flags[j] == -1 {
                    let logit = |c: usize| cls[c * n + j];
                    let top = (1..classes).map(logit).fold(logit(0), |m, v| if v > m { v } else { m });
                    let sum = (0..classes).fold(T::ZERO, |s, c| s + (logit(c) - top).exp());
                    let prob = (logit(0) - top).exp() / sum;
                    pool.push((-(prob.wide() as f32), j));
                }
            }
            if (pool.len() as i64) < wanted {
                return Err(Error::Invalid(format!(
                    "{OP}: {} candidate negatives for {wanted} wanted",
                    pool.len()
                )));
            }
            for k in argsort_desc(pool.len(), |k| pool[k].0).into_iter().take(wanted as usize) {
                flags[pool[k].1] = 0;
            }
        }
    } else {
        flags.iter_mut().filter(|f| **f != 1).for_each(|f| *f = 0);
    }
    Ok(Assignment { flags, matches })
}

/// The ground truths of one image: rows before the first of class -1,
/// whose coordinates must be -1 too.
fn valid_labels<T: Real>(label: &[T], width: usize) -> Result<usize> {
    for (i, row) in label.chunks_exact(width).enumerate() {
        if row[0].wide() as f32 == -1.0 {
            if row[1..5].iter().any(|v| v.wide() as f32 != -1.0) {
                return Err(Error::Invalid(format!(
                    "{OP}: label row {i} has class -1 (padding) but coordinates {:?}, not -1",
                    &row[1..5]
                )));
            }
            return Ok(i);
        }
    }
    Ok(label.len() / width)
}

/// The targets of one image: location (4 per anchor), mask, class.
fn image_targets<T: Real>(
    p: &Params,
    anchors: &[T],
    label: &[T],
    width: usize,
    cls: &[T],
) -> Result<[Vec<T>; 3]> {
    let n = anchors.len() / 4;
    let mut loc = vec![T::ZERO; 4 * n];
    let mut mask = vec![T::ZERO; 4 * n];
    let mut class = vec![T::narrow(p.ignore_label as f64); n];
    let gts = valid_labels(label, width)?;
    if gts == 0 {
        return Ok([loc, mask, class]);
    }
    let gt = |k: usize| &label[k * width + 1..k * width + 5];
    let mut iou = vec![0.0f32; n * gts];
    for (j, a) in anchors.chunks_exact(4).enumerate() {
        for k in 0..gts {
            let (inter, union) = corner_inter_union(a, gt(k));
            let v = if union == T::ZERO { T::ZERO } else { inter / union };
            iou[j * gts + k] = v.wide() as f32;
        }
    }
    let Assignment { flags, matches } = assign(p, &iou, gts, cls)?;
    for (j, &f) in flags.iter().enumerate() {
        if f == 1 {
            let k = matches[j].1 as usize;
            class[j] = label[k * width] + T::ONE;
            mask[4 * j..4 * j + 4].fill(T::ONE);
            let t = loc_target(&anchors[4 * j..4 * j + 4], gt(k), &p.variances);
            loc[4 * j..4 * j + 4].copy_from_slice(&t);
        } else if f == 0 {
            class[j] = T::ZERO;
        }
    }
    Ok([loc, mask, class])
}

fn forward_typed<T: Real>(ctx: &OpContext, p: &Params, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (anchors, labels, preds) =
        (ins[0].as_slice::<T>()?, ins[1].as_slice::<T>()?, ins[2].as_slice::<T>()?);
    let ls = ins[1].shape();
    let (batch, per_label, width) = (ls[0], ls[1] * ls[2], ls[2]);
    let per_pred = preds.len() / batch.max(1);
    let images = oxnet_core::parallel::map(batch, |b| {
        let label = &labels[b * per_label..(b + 1) * per_label];
        image_targets(p, anchors, label, width, &preds[b * per_pred..(b + 1) * per_pred])
    });
    let mut all: [Vec<T>; 3] = Default::default();
    for image in images {
        for (acc, part) in all.iter_mut().zip(image?) {
            acc.extend(part);
        }
    }
    for (i, values) in all.iter().enumerate() {
        store(ctx.req[i], &outs[i], values)?;
    }
    Ok(())
}

pub(super) fn register() {
    let float = |name: &str, default: f64, doc: &str| AttrSpec::optional(name, AttrKind::Float, default, doc);
    let def = OpDef::new(OP)
        .alias("_npx_multibox_target")
        .doc(
            "SSD training targets from anchors (1, N, 4), labels (B, L, W >= 5), rows [class, \
             xmin, ymin, xmax, ymax, ...] padded with rows of -1, and class predictions (B, C, \
             N). Each ground truth first takes its best anchor, then every anchor whose best \
             IoU exceeds overlap_threshold is positive; with negative_mining_ratio > 0 the \
             (ratio x positives) anchors below negative_mining_thresh least like background \
             become negatives, otherwise all others do. Returns loc_target (B, 4N): the matched \
             box as center offsets and log sizes divided by variances; loc_mask (B, 4N): 1 for \
             positives; cls_target (B, N): class + 1 for positives, 0 for negatives, \
             ignore_label else. Zero gradient.",
        )
        .attr(float("overlap_threshold", 0.5, "IoU above which an anchor is a positive match."))
        .attr(float("ignore_label", -1.0, "Class target of anchors neither positive nor negative."))
        .attr(float("negative_mining_ratio", -1.0, "Negatives per positive to mine; -1: no mining."))
        .attr(float("negative_mining_thresh", 0.5, "IoU below which an anchor may be a mined negative."))
        .attr(AttrSpec::optional(
            "minimum_negative_samples",
            AttrKind::Int,
            0i64,
            "Minimum number of negatives (unused by MXNet's CPU kernel, and here).",
        ))
        .attr(AttrSpec::optional(
            "variances",
            AttrKind::Str,
            AttrValue::Str("(0.1, 0.1, 0.2, 0.2)".into()),
            "Divisors of the location targets (x, y, w, h).",
        ))
        .arguments(&INPUTS)
        .outputs(&["loc_target", "loc_mask", "cls_target"])
        .infer_shape(|_, ins, outs| infer_shape(ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(OP, &INPUTS, MULTIBOX_DTYPES, ins, outs))
        .forward(|ctx, ins, outs| {
            let p = prepared(ctx.attrs, parse)?;
            with_real!(OP, ins[0].dtype(), [F32, F64], T => forward_typed::<T>(ctx, &p, ins, outs))
        })
        .zero_grad();
    registry::register(with_params(def, parse));
}
