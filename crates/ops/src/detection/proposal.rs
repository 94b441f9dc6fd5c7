//! `_contrib_Proposal` and `_contrib_MultiProposal`: Faster R-CNN region
//! proposals. Anchors are laid over the feature map, moved by the predicted
//! deltas, clipped to the image, too small ones marked; the best
//! `rpn_pre_nms_top_n` by score go through non-maximum suppression, and the
//! first `rpn_post_nms_top_n` kept (repeated when fewer are kept) are the
//! output rows `[batch_index, x1, y1, x2, y2]`, with their scores. All in
//! float32, as MXNet's CPU kernels (`proposal.cc`, `multi_proposal.cc`).

use super::geometry::{argsort_desc, cpp_max, cpp_min, greedy_nms, Suppress};
use super::{
    assign, assign_outputs, float32, float_tuple, infer_real_type, prepared, shape_error, store,
    unsupported_dtype, with_params, PROPOSAL_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, DType, Error, NDArray, OpContext, OpDef, Result, Shape,
};

const SINGLE: &str = "_contrib_Proposal";
const MULTI: &str = "_contrib_MultiProposal";
const INPUTS: [&str; 3] = ["cls_prob", "bbox_pred", "im_info"];

/// The attributes.
#[derive(Debug, Clone)]
struct Params {
    pre_nms: i64,
    post_nms: usize,
    threshold: f32,
    min_size: i64,
    scales: Vec<f32>,
    ratios: Vec<f32>,
    stride: i64,
    iou_loss: bool,
}

fn parse(attrs: &Attrs) -> Result<Params> {
    let post = attrs.int("rpn_post_nms_top_n")?;
    if post < 0 {
        return Err(Error::attr(
            "rpn_post_nms_top_n",
            format!("rpn_post_nms_top_n must be >= 0, got {post}"),
        ));
    }
    let stride = attrs.int("feature_stride")?;
    if stride <= 0 {
        return Err(Error::attr("feature_stride", format!("feature_stride must be positive, got {stride}")));
    }
    Ok(Params {
        pre_nms: attrs.int("rpn_pre_nms_top_n")?,
        post_nms: post as usize,
        threshold: float32(attrs, "threshold")?,
        min_size: attrs.int("rpn_min_size")?,
        scales: float_tuple("Proposal", attrs, "scales", None)?,
        ratios: float_tuple("Proposal", attrs, "ratios", None)?,
        stride,
        iou_loss: attrs.bool("iou_loss")?,
    })
}

fn infer_shape(op: &str, p: &Params, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(c) = ins[0].clone() else { return Ok(()) };
    let [n, ch, h, w] = *c else {
        return Err(shape_error(op, "cls_prob", "(batch, 2 * num_anchors, height, width)", &c));
    };
    let anchors = p.scales.len() * p.ratios.len();
    if ch != 2 * anchors || h == 0 || w == 0 {
        let want = format!(
            "(batch, {}, height > 0, width > 0): 2 * num_anchors, num_anchors = len(scales) {} x len(ratios) {}",
            2 * anchors,
            p.scales.len(),
            p.ratios.len()
        );
        return Err(shape_error(op, "cls_prob", &want, &c));
    }
    if op == SINGLE && n != 1 {
        return Err(shape_error(op, "cls_prob", "one image (1, ...); MultiProposal takes batches", &c));
    }
    assign(op, &mut ins[1], &[n, 4 * anchors, h, w], "bbox_pred")?;
    assign(op, &mut ins[2], &[n, 3], "im_info")?;
    let rows = n * p.post_nms;
    assign_outputs(op, outs, &[&[rows, 5], &[rows, 1]])
}

/// The anchors of one feature-map position, `[x1, y1, x2, y2]`, ratios
/// outer and scales inner, as MXNet's `GenerateAnchors` (float32).
fn base_anchors(p: &Params) -> Vec<[f32; 4]> {
    let size = p.stride as f32;
    let ctr = (0.5 * (size as f64 - 1.0)) as f32;
    let mut out = Vec::new();
    for &ratio in &p.ratios {
        for &scale in &p.scales {
            let ratio_area = (size * size / ratio).floor();
            let w = (ratio_area.sqrt() + 0.5).floor() * scale;
            let h = (w / scale * ratio + 0.5).floor() * scale;
            let (hw, hh) = (0.5 * (w - 1.0), 0.5 * (h - 1.0));
            out.push([ctr - hw, ctr - hh, ctr + hw, ctr + hh]);
        }
    }
    out
}

/// The feature map: its anchors at the origin, its height and width.
struct FeatureMap<'a> {
    base: &'a [[f32; 4]],
    h: usize,
    w: usize,
}

/// One image's inputs: foreground scores (A, H, W), deltas (4A, H, W) and
/// `[height, width, scale]`.
struct Image<'a> {
    scores: &'a [f32],
    deltas: &'a [f32],
    info: [f32; 3],
}

/// Moves `anchor` by `d` and clips it to the image (MXNet's
/// `BBoxTransformInv`, or `IoUTransformInv` with iou_loss).
fn transform(p: &Params, anchor: [f32; 4], d: [f32; 4], im_h: f32, im_w: f32) -> [f32; 4] {
    let moved = if p.iou_loss {
        [anchor[0] + d[0], anchor[1] + d[1], anchor[2] + d[2], anchor[3] + d[3]]
    } else {
        // MXNet mixes double constants into these float expressions
        let w = ((anchor[2] - anchor[0]) as f64 + 1.0) as f32;
        let h = ((anchor[3] - anchor[1]) as f64 + 1.0) as f32;
        let cx = (anchor[0] as f64 + 0.5 * (w as f64 - 1.0)) as f32;
        let cy = (anchor[1] as f64 + 0.5 * (h as f64 - 1.0)) as f32;
        let (pcx, pcy) = (d[0] * w + cx, d[1] * h + cy);
        let (pw, ph) = (d[2].exp() * w, d[3].exp() * h);
        let lo = |c: f32, e: f32| (c as f64 - 0.5 * (e as f64 - 1.0)) as f32;
        let hi = |c: f32, e: f32| (c as f64 + 0.5 * (e as f64 - 1.0)) as f32;
        [lo(pcx, pw), lo(pcy, ph), hi(pcx, pw), hi(pcy, ph)]
    };
    let clip = |v: f32, limit: f32| cpp_max(cpp_min(v, limit - 1.0), 0.0);
    [clip(moved[0], im_w), clip(moved[1], im_h), clip(moved[2], im_w), clip(moved[3], im_h)]
}

/// The boxes and scores of every anchor of an image, in MXNet's order
/// (position-major, anchor-minor), before sorting.
fn candidates(op: &str, p: &Params, map: &FeatureMap, img: &Image) -> Result<Vec<([f32; 4], f32)>> {
    let FeatureMap { base, h, w } = *map;
    let a_n = base.len();
    let stride = p.stride as f32;
    let real_h = (img.info[0] / stride) as i64;
    let real_w = (img.info[1] / stride) as i64;
    if real_h > h as i64 || real_w > w as i64 {
        return Err(Error::Invalid(format!(
            "{op}: im_info {:?} covers {real_h} x {real_w} feature positions at stride {}, more than the {h} x {w} map",
            img.info, p.stride
        )));
    }
    let min_size = p.min_size as f32 * img.info[2];
    let plane = h * w;
    let mut out = Vec::with_capacity(a_n * plane);
    for y in 0..h {
        for x in 0..w {
            for (a, b) in base.iter().enumerate() {
                let (sx, sy) = ((x as i64 * p.stride) as f32, (y as i64 * p.stride) as f32);
                let anchor = [b[0] + sx, b[1] + sy, b[2] + sx, b[3] + sy];
                let at = y * w + x;
                let d = [0, 1, 2, 3].map(|c| img.deltas[(a * 4 + c) * plane + at]);
                let mut bx = transform(p, anchor, d, img.info[0], img.info[1]);
                let mut score = img.scores[a * plane + at];
                if y as i64 >= real_h || x as i64 >= real_w {
                    score = -1.0;
                }
                // too small: grown by min_size / 2 on each side and scored -1
                if bx[2] - bx[0] + 1.0 < min_size || bx[3] - bx[1] + 1.0 < min_size {
                    let half = min_size / 2.0;
                    bx = [bx[0] - half, bx[1] - half, bx[2] + half, bx[3] + half];
                    score = -1.0;
                }
                out.push((bx, score));
            }
        }
    }
    Ok(out)
}

/// Proposal's suppression rule (IoU with the +1 pixel convention above
/// `threshold`), checking the kept boxes a block at a time.
struct PixelIou<'a> {
    boxes: &'a [([f32; 4], f32)],
    area: Vec<f32>,
    threshold: f32,
    /// The kept boxes' coordinates and areas, one vector each.
    kept: [Vec<f32>; 5],
}

impl Suppress for PixelIou<'_> {
    fn suppressed(&mut self, kept: &[usize], cand: usize) -> bool {
        for &k in &kept[self.kept[0].len()..] {
            let b = self.boxes[k].0;
            for (v, x) in self.kept.iter_mut().zip([b[0], b[1], b[2], b[3], self.area[k]]) {
                v.push(x);
            }
        }
        let ([jx1, jy1, jx2, jy2], _) = self.boxes[cand];
        let j_area = self.area[cand];
        let [x1, y1, x2, y2, area] = &self.kept;
        const BLOCK: usize = 32;
        (0..x1.len()).step_by(BLOCK).any(|s| {
            let e = (s + BLOCK).min(x1.len());
            let mut hit = false;
            for k in s..e {
                let w = cpp_max(0.0, cpp_min(x2[k], jx2) - cpp_max(x1[k], jx1) + 1.0);
                let h = cpp_max(0.0, cpp_min(y2[k], jy2) - cpp_max(y1[k], jy1) + 1.0);
                let inter = w * h;
                hit |= inter / (area[k] + j_area - inter) > self.threshold;
            }
            hit
        })
    }
}

/// The output rows `[x1, y1, x2, y2, score]` of one image.
fn propose(op: &str, p: &Params, map: &FeatureMap, img: &Image) -> Result<Vec<[f32; 5]>> {
    let all = candidates(op, p, map, img)?;
    let count = all.len();
    let pre = if p.pre_nms > 0 { (p.pre_nms as usize).min(count) } else { count };
    let order = argsort_desc(count, |i| all[i].1);
    let boxes: Vec<([f32; 4], f32)> = order[..pre].iter().map(|&i| all[i]).collect();
    let area = boxes.iter().map(|(b, _)| (b[2] - b[0] + 1.0) * (b[3] - b[1] + 1.0)).collect();
    let mut rule = PixelIou { boxes: &boxes, area, threshold: p.threshold, kept: Default::default() };
    let kept = greedy_nms(pre, p.post_nms.min(pre), &mut rule);
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    Ok((0..p.post_nms)
        .map(|i| {
            let (b, s) = boxes[kept[i % kept.len()]];
            [b[0], b[1], b[2], b[3], s]
        })
        .collect())
}

fn forward(op: &'static str, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = prepared(ctx.attrs, parse)?;
    if let Some(x) = ins.iter().find(|x| x.dtype() != DType::F32) {
        return Err(unsupported_dtype(op, PROPOSAL_DTYPES, x.dtype()));
    }
    let [n, ch, h, w] = *ins[0].shape() else {
        return Err(shape_error(op, "cls_prob", "4-d", ins[0].shape()));
    };
    let (cls, deltas, info) =
        (ins[0].as_slice::<f32>()?, ins[1].as_slice::<f32>()?, ins[2].as_slice::<f32>()?);
    let base = base_anchors(&p);
    let plane = (ch / 2) * h * w;
    let images = oxnet_core::parallel::map(n, |b| {
        let img = Image {
            scores: &cls[(2 * b + 1) * plane..(2 * b + 2) * plane],
            deltas: &deltas[b * 4 * plane..(b + 1) * 4 * plane],
            info: [info[3 * b], info[3 * b + 1], info[3 * b + 2]],
        };
        propose(op, &p, &FeatureMap { base: &base, h, w }, &img)
    });
    let mut rois = Vec::with_capacity(n * p.post_nms * 5);
    let mut scores = Vec::with_capacity(n * p.post_nms);
    for (b, rows) in images.into_iter().enumerate() {
        for r in rows? {
            rois.extend_from_slice(&[b as f32, r[0], r[1], r[2], r[3]]);
            scores.push(r[4]);
        }
    }
    store(ctx.req[0], &outs[0], &rois)?;
    match outs.get(1) {
        Some(out) => store(ctx.req[1], out, &scores),
        None => Ok(()),
    }
}

fn register_one(op: &'static str, doc: &str) {
    let int = |name: &str, default: i64, doc: &str| AttrSpec::optional(name, AttrKind::Int, default, doc);
    let tuple = |name: &str, default: &str, doc: &str| {
        AttrSpec::optional(name, AttrKind::Str, AttrValue::Str(default.into()), doc)
    };
    let def = OpDef::new(op)
        .doc(doc)
        .attr(int("rpn_pre_nms_top_n", 6000, "Best-scoring boxes that enter NMS; not positive: all."))
        .attr(int("rpn_post_nms_top_n", 300, "Boxes to output per image after NMS."))
        .attr(AttrSpec::optional("threshold", AttrKind::Float, 0.7, "IoU above which NMS suppresses a box."))
        .attr(int("rpn_min_size", 16, "Least height and width of a proposal, times the image scale."))
        .attr(tuple("scales", "(4.0, 8.0, 16.0, 32.0)", "Anchor scales (multiples of feature_stride)."))
        .attr(tuple("ratios", "(0.5, 1.0, 2.0)", "Anchor aspect ratios (height / width)."))
        .attr(int("feature_stride", 16, "Image pixels per feature-map position."))
        .attr(AttrSpec::optional("output_score", AttrKind::Bool, false, "Also return the scores."))
        .attr(AttrSpec::optional(
            "iou_loss",
            AttrKind::Bool,
            false,
            "The deltas move the corners (IoU loss) instead of center and log size.",
        ))
        .arguments(&INPUTS)
        .outputs_fn(|attrs| {
            let both = attrs.bool("output_score")?;
            Ok(if both { vec!["output".into(), "score".into()] } else { vec!["output".into()] })
        })
        .arity_fn(|attrs| Ok([3, 0, if attrs.bool("output_score")? { 2 } else { 1 }]))
        .infer_shape(move |attrs, ins, outs| infer_shape(op, &prepared(attrs, parse)?, ins, outs))
        .infer_type(move |_, ins, outs| infer_real_type(op, &INPUTS, PROPOSAL_DTYPES, ins, outs))
        .forward(move |ctx, ins, outs| forward(op, ctx, ins, outs))
        .zero_grad();
    registry::register(with_params(def, parse));
}

pub(super) fn register() {
    register_one(
        SINGLE,
        "Region proposals (Faster R-CNN) for one image: cls_prob (1, 2A, H, W) (the second A \
         channels are the foreground scores), bbox_pred (1, 4A, H, W) and im_info (1, 3) \
         [height, width, scale], A = len(scales) x len(ratios) anchors per position spaced \
         feature_stride apart. The anchors, moved by the deltas and clipped to the image, are \
         scored (-1 for positions past the image and boxes smaller than rpn_min_size x scale); \
         the best rpn_pre_nms_top_n, sorted by descending score, go through NMS at IoU \
         `threshold`, and the first rpn_post_nms_top_n kept boxes (repeated when fewer are kept) \
         give output (rpn_post_nms_top_n, 5) rows [0, x1, y1, x2, y2] and, with output_score, \
         their scores (rpn_post_nms_top_n, 1). float32; zero gradient.",
    );
    register_one(
        MULTI,
        "Region proposals (Faster R-CNN) for a batch of N images, each as `Proposal` does: \
         cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W), im_info (N, 3) give output (N x \
         rpn_post_nms_top_n, 5) rows [batch_index, x1, y1, x2, y2] and, with output_score, \
         the scores (N x rpn_post_nms_top_n, 1). float32; zero gradient.",
    );
}
