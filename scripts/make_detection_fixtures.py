#!/usr/bin/env python3
"""Writes crates/ops/src/detection/mx_values.rs: MXNet 1.9.1's values for the
tests of oxnet's detection operators (contrib.box_iou, box_nms, box_encode,
box_decode, bipartite_matching, MultiBoxPrior, MultiBoxTarget,
MultiBoxDetection, Proposal, MultiProposal).

The inputs are made here with numpy (fixed seed; boxes, scores and deltas on
grids of 1/64 so that float32 holds them exactly) and written into the file
with MXNet's outputs, in float32 and, where MXNet accepts it, float64. For
box_nms the script also backpropagates the head gradient of
``super::test_util::head`` and stores the input gradient.

Run with MXNet 1.9.1 installed, from the repository root:

    python scripts/make_detection_fixtures.py
"""
import mxnet as mx, numpy as np

def q(a, step=1/64):
    return np.round(np.asarray(a) / step) * step

def boxes(rng, shape, lo=0.0, hi=4.0):
    p = q(rng.uniform(lo, hi, shape[:-1] + (2, 2)))
    x = np.sort(p[..., 0], axis=-1); y = np.sort(p[..., 1], axis=-1)
    return np.stack([x[..., 0], y[..., 0], x[..., 1] + 1/16, y[..., 1] + 1/16], axis=-1)

def head(n):
    return np.array([(j * 13 % 29) / 8.0 - 1.5 for j in range(n)])

def fmt(v):
    return ", ".join(repr(float(x)) for x in np.asarray(v, dtype=np.float64).ravel())

def shape(s):
    return "&[" + ", ".join(str(d) for d in s) + "]"

cases = {"float32": [], "float64": []}

def case(key, op, attrs, inputs, dtypes=("float32", "float64"), grad=False):
    for dt in dtypes:
        xs = [mx.nd.array(np.asarray(x), dtype=dt) for x in inputs]
        kw = {k: v for k, v in attrs}
        fn = getattr(mx.nd.contrib, op)
        g = []
        if grad:
            xs[0].attach_grad()
            with mx.autograd.record():
                y = fn(*xs, **kw)
            y.backward(mx.nd.array(head(y.size).reshape(y.shape), dtype=dt))
            g = xs[0].grad.asnumpy()
            outs = [y]
        else:
            outs = fn(*xs, **kw)
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
        cases[dt].append((key, "_contrib_" + op, attrs, [x.asnumpy() for x in xs], [o.asnumpy() for o in outs], g))

rng = np.random.RandomState(7)
# --- box_iou
l, r = boxes(rng, (2, 3, 4)), boxes(rng, (5, 4))
case("iou_corner", "box_iou", [], [l, r])
lc = np.concatenate([q(rng.uniform(0, 4, (4, 2))), q(rng.uniform(0.5, 3, (4, 2)))], axis=1)
rc = np.concatenate([q(rng.uniform(0, 4, (3, 2))), q(rng.uniform(0.5, 3, (3, 2)))], axis=1)
case("iou_center", "box_iou", [("format", "center")], [lc, rc])

# --- box_nms: (2, 10, 6) rows [id, score, x1, y1, x2, y2]; distinct scores
def nms_data(rng, b=2, n=10):
    ids = rng.randint(0, 3, (b, n, 1)).astype(np.float64)
    sc = (rng.permutation(b * n).reshape(b, n, 1) + 1) / 32.0
    bx = boxes(rng, (b, n, 4), 0, 3)
    return np.concatenate([ids, sc, bx], axis=-1)
d = nms_data(rng)
case("nms_default", "box_nms", [], [d], grad=True)
case("nms_classes", "box_nms", [("overlap_thresh", "0.3"), ("id_index", "0"), ("valid_thresh", "0.1")], [d], grad=True)
case("nms_force_bg_topk", "box_nms", [("overlap_thresh", "0.2"), ("id_index", "0"), ("force_suppress", "True"), ("background_id", "1"), ("topk", "6")], [d], grad=True)
case("nms_center_out", "box_nms", [("overlap_thresh", "0.4"), ("out_format", "center")], [d])
dc = d.copy()
dc[..., 2:4] = (d[..., 2:4] + d[..., 4:6]) / 2; dc[..., 4:6] = d[..., 4:6] - d[..., 2:4]
case("nms_center_in", "box_nms", [("overlap_thresh", "0.4"), ("in_format", "center")], [dc])
# layout [x1, y1, x2, y2, score] batched (2, 2, 6, 5)
d5 = np.concatenate([boxes(rng, (2, 2, 6, 4), 0, 2), (rng.permutation(24).reshape(2, 2, 6, 1) + 1) / 16.0], axis=-1)
case("nms_layout", "box_nms", [("coord_start", "0"), ("score_index", "4"), ("overlap_thresh", "0.25"), ("topk", "4")], [d5], grad=True)

# --- box_encode / box_decode
B, N, M = 2, 5, 3
samples = rng.choice([-1.0, 0.0, 1.0], (B, N))
matches = rng.randint(0, M, (B, N)).astype(np.float64)
anchors = boxes(rng, (B, N, 4), 0, 3)
refs = boxes(rng, (B, M, 4), 0, 3)
means = np.array([0.0, 0.125, -0.25, 0.5]); stds = np.array([0.1, 0.1, 0.2, 0.25])
case("encode", "box_encode", [], [samples, matches, anchors, refs, means, stds])
deltas = q(rng.normal(0, 0.5, (B, N, 4)))
anc1 = boxes(rng, (1, N, 4), 0, 3)
case("decode_center", "box_decode", [], [deltas, np.concatenate([anc1[..., :2], anc1[..., 2:] - anc1[..., :2]], -1)])
case("decode_corner_clip", "box_decode", [("format", "corner"), ("std0", "0.1"), ("std1", "0.2"), ("std2", "0.5"), ("std3", "2.0"), ("clip", "0.4")], [deltas, anc1])

# --- bipartite matching
s = (rng.permutation(24).reshape(2, 4, 3) + 1) / 25.0
case("bipartite", "bipartite_matching", [("threshold", "0.3")], [s])
case("bipartite_ascend_topk", "bipartite_matching", [("threshold", "0.7"), ("is_ascend", "True"), ("topk", "1")], [s])
case("bipartite_2d", "bipartite_matching", [("threshold", "1e-12")], [np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])])

# --- MultiBoxPrior
x = np.zeros((1, 2, 3, 4))
case("prior_default", "MultiBoxPrior", [], [x], dtypes=("float32",))
case("prior_sizes_ratios", "MultiBoxPrior", [("sizes", "(0.5, 0.25, 0.1)"), ("ratios", "(1, 2, 0.5)"), ("clip", "True")], [x], dtypes=("float32",))
case("prior_steps_offsets", "MultiBoxPrior", [("sizes", "(0.3,)"), ("ratios", "(1.5, 0.7)"), ("steps", "(0.2, 0.3)"), ("offsets", "(0.25, 0.75)")], [np.zeros((2, 1, 2, 3))], dtypes=("float32",))

# --- MultiBoxTarget: anchors (1, 12, 4) in [0, 1], labels (2, 3, 5), one padded row
NA = 12
anc = boxes(rng, (1, NA, 4), 0, 0.9)
lab = np.full((2, 3, 5), -1.0)
lab[0, 0] = [1, 0.1, 0.1, 0.5, 0.6]; lab[0, 1] = [0, 0.4, 0.3, 0.9, 0.8]
lab[1, 0] = [2, 0.2, 0.0, 0.7, 0.5]; lab[1, 1] = [1, 0.05, 0.5, 0.35, 0.95]; lab[1, 2] = [0, 0.6, 0.6, 0.95, 0.95]
lab = q(lab)
cls = q(rng.normal(0, 1, (2, 4, NA)))
case("target_default", "MultiBoxTarget", [], [anc, lab, cls], dtypes=("float32",))
case("target_mining", "MultiBoxTarget", [("negative_mining_ratio", "1.5"), ("overlap_threshold", "0.3"), ("negative_mining_thresh", "0.4"), ("ignore_label", "-2"), ("variances", "(0.2, 0.1, 0.3, 0.4)")], [anc, lab, cls], dtypes=("float32",))
case("target_no_threshold", "MultiBoxTarget", [("overlap_threshold", "0")], [anc, lab, cls], dtypes=("float32",))

# --- MultiBoxDetection: cls_prob (2, 3, 12) softmax, loc (2, 48)
logits = rng.normal(0, 1.5, (2, 3, NA))
prob = q(np.exp(logits) / np.exp(logits).sum(1, keepdims=True), 1/1024)
loc = q(rng.normal(0, 0.5, (2, 4 * NA)))
case("detect_default", "MultiBoxDetection", [], [prob, loc, anc], dtypes=("float32",))
case("detect_force_topk", "MultiBoxDetection", [("force_suppress", "True"), ("nms_topk", "5"), ("nms_threshold", "0.3"), ("threshold", "0.2")], [prob, loc, anc], dtypes=("float32",))
case("detect_noclip_nonms", "MultiBoxDetection", [("clip", "False"), ("nms_threshold", "0"), ("variances", "(0.2, 0.2, 0.1, 0.1)")], [prob, loc, anc], dtypes=("float32",))

# --- Proposal / MultiProposal (float32 only)
A, H, W = 4, 5, 6
cp = q(rng.uniform(0, 1, (2, 2 * A, H, W)), 1/4096)
bp = q(rng.normal(0, 0.3, (2, 4 * A, H, W)))
info = np.array([[70.0, 90.0, 1.0], [80.0, 60.0, 0.75]])
pattrs = [("scales", "(2, 4)"), ("ratios", "(0.5, 2)"), ("feature_stride", "16"), ("rpn_pre_nms_top_n", "40"),
          ("rpn_post_nms_top_n", "12"), ("threshold", "0.5"), ("rpn_min_size", "8"), ("output_score", "True")]
case("proposal", "Proposal", pattrs, [cp[:1], bp[:1], info[:1]], dtypes=("float32",))
case("proposal_iou_loss_pad", "Proposal", [(k, v) for k, v in pattrs if k != "rpn_post_nms_top_n"] + [("rpn_post_nms_top_n", "50"), ("iou_loss", "True"), ("threshold", "0.3")], [cp[1:], bp[1:] * 8, info[1:]], dtypes=("float32",))
case("multi_proposal", "MultiProposal", pattrs, [cp, bp, info], dtypes=("float32",))

out = ["//! Values MXNet 1.9.1 computed for the tests of this folder, written by",
       "//! `scripts/make_detection_fixtures.py`: it builds the inputs given here with",
       "//! numpy (boxes, scores and deltas on grids of 1/64 so that float32 holds them",
       "//! exactly), runs `mx.nd.contrib.<op>` on them in float32 and, where MXNet",
       "//! accepts it, float64, and for `box_nms` backpropagates the head gradient",
       "//! [`super::test_util::head`].",
       "",
       "#![allow(clippy::approx_constant, clippy::excessive_precision)]",
       "",
       "use super::test_util::MxCase;", ""]
for dt, name in (("float32", "F32"), ("float64", "F64")):
    out.append(f"/// {dt} calls.")
    out.append("#[rustfmt::skip]")
    out.append(f"pub(super) const {name}: &[MxCase] = &[")
    for key, op, attrs, xs, ys, g in cases[dt]:
        out.append("    MxCase {")
        out.append(f'        key: "{key}",')
        out.append(f'        op: "{op}",')
        out.append("        attrs: &[" + ", ".join(f'("{k}", "{v}")' for k, v in attrs) + "],")
        out.append("        inputs: &[" + ", ".join(f"({shape(x.shape)}, &[{fmt(x)}])" for x in xs) + "],")
        out.append("        outs: &[" + ", ".join(f"({shape(y.shape)}, &[{fmt(y)}])" for y in ys) + "],")
        out.append(f"        grad: &[{fmt(g) if len(g) else ''}],")
        out.append("    },")
    out.append("];")
    out.append("")
open("crates/ops/src/detection/mx_values.rs", "w").write("\n".join(out))
print({k: len(v) for k, v in cases.items()})
