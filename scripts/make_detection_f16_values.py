#!/usr/bin/env python3
"""Writes crates/ops/src/detection/mx_values_f16.rs: MXNet 1.9.1's float16
values for the tests of oxnet's box operators (contrib.box_iou, box_nms with
its gradient, box_encode, box_decode, bipartite_matching), the operators
MXNet computes in float16 (``mshadow::half_t``, every operation rounded to
half).

The inputs are random float16 numbers (fixed seed), at scales where half's
rounding shows: boxes up to a few hundred pixels, scores with ties. Each
operator runs on them in float16; the outputs are halves, written as the
exact float64 values, so that the Rust tests compare them exactly. For
box_nms the script also backpropagates the head gradient of
``super::test_util::head`` and stores the input gradient.

Run with MXNet 1.9.1 installed, from the repository root:

    python scripts/make_detection_f16_values.py
"""
import mxnet as mx
import numpy as np

H = np.float16


def head(n):
    return np.array([(j * 13 % 29) / 8.0 - 1.5 for j in range(n)])


def fmt(v):
    return ", ".join(repr(float(x)) for x in np.asarray(v, dtype=np.float64).ravel())


def shape(s):
    return "&[" + ", ".join(str(d) for d in s) + "]"


def boxes(rng, shape, lo, hi):
    p = rng.uniform(lo, hi, shape[:-1] + (2, 2))
    x = np.sort(p[..., 0], axis=-1)
    y = np.sort(p[..., 1], axis=-1)
    return np.stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], axis=-1).astype(H)


def to_center(b):
    b = b.astype(np.float64)
    return np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], axis=-1).astype(H)


cases = []


def case(key, op, attrs, inputs, grad=False):
    xs = [mx.nd.array(np.asarray(x, dtype=H), dtype="float16") for x in inputs]
    fn = getattr(mx.nd.contrib, op)
    kw = dict(attrs)
    g = []
    if grad:
        xs[0].attach_grad()
        with mx.autograd.record():
            y = fn(*xs, **kw)
        y.backward(mx.nd.array(head(y.size).reshape(y.shape), dtype="float16"))
        g = xs[0].grad.asnumpy()
        outs = [y]
    else:
        outs = fn(*xs, **kw)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
    outs = [o.asnumpy() for o in outs]
    assert all(o.dtype == np.float16 and np.isfinite(o).all() for o in outs), key
    cases.append((key, "_contrib_" + op, attrs, [x.asnumpy() for x in xs], outs, g))


rng = np.random.RandomState(16)
# --- box_iou
case("iou_corner_f16", "box_iou", [], [boxes(rng, (2, 3, 4), 0, 300), boxes(rng, (5, 4), 0, 300)])
case("iou_center_f16", "box_iou", [("format", "center")],
     [to_center(boxes(rng, (4, 4), 0, 40)), to_center(boxes(rng, (3, 4), 0, 40))])

# --- box_nms: (2, 12, 6) rows [id, score, x1, y1, x2, y2], scores with ties
b, n = 2, 12
ids = rng.randint(0, 3, (b, n, 1)).astype(np.float64)
sc = np.round(rng.uniform(0, 1, (b, n, 1)) * 12) / 12
d = np.concatenate([ids, sc, boxes(rng, (b, n, 4), 0, 200)], axis=-1).astype(H)
case("nms_f16", "box_nms", [("overlap_thresh", "0.45")], [d], grad=True)
case("nms_classes_f16", "box_nms",
     [("overlap_thresh", "0.3"), ("id_index", "0"), ("valid_thresh", "0.3"), ("background_id", "2")], [d], grad=True)
case("nms_force_topk_f16", "box_nms",
     [("overlap_thresh", "0.7"), ("id_index", "0"), ("force_suppress", "True"), ("topk", "7"), ("out_format", "center")],
     [d], grad=True)
dc = d.copy()
dc[..., 2:] = to_center(d[..., 2:])
case("nms_center_in_f16", "box_nms", [("overlap_thresh", "0.2"), ("in_format", "center")], [dc])
# an IoU that half rounds to 0.7002 > 0.7: suppressed in float16 (float32 keeps both)
case("nms_thresh_f16", "box_nms", [("overlap_thresh", "0.7")],
     [[[0, 0.9, 2, 1.625, 2.25, 2.5], [0, 0.8, 2, 1.625, 2.25, 2.875]]], grad=True)

# --- box_encode / box_decode
B, N, M = 2, 6, 3
samples = rng.choice([-1.0, 0.0, 1.0, 0.75], (B, N))
matches = rng.randint(0, M, (B, N)).astype(np.float64)
means = rng.uniform(-0.5, 0.5, 4).astype(H)
stds = rng.uniform(0.05, 0.5, 4).astype(H)
case("encode_f16", "box_encode", [],
     [samples, matches, boxes(rng, (B, N, 4), 0, 300), boxes(rng, (B, M, 4), 0, 300), means, stds])
deltas = rng.normal(0, 1, (B, N, 4)).astype(H)
anc = boxes(rng, (1, N, 4), 0, 300)
case("decode_center_f16", "box_decode", [("std0", "0.1"), ("std1", "0.1"), ("std2", "0.2"), ("std3", "0.2")],
     [deltas, to_center(anc)])
case("decode_corner_clip_f16", "box_decode",
     [("format", "corner"), ("std0", "0.3"), ("std2", "1.7"), ("clip", "0.4")], [deltas, anc])

# --- bipartite matching, scores with ties
s = (np.round(rng.uniform(0, 1, (2, 5, 4)) * 10) / 10).astype(H)
case("bipartite_f16", "bipartite_matching", [("threshold", "0.3")], [s])
case("bipartite_ascend_topk_f16", "bipartite_matching", [("threshold", "0.7"), ("is_ascend", "True"), ("topk", "2")], [s])
# half(0.7) = 0.7002 is greater than the float threshold 0.7: it matches
case("bipartite_thresh_f16", "bipartite_matching", [("threshold", "0.7")], [[[0.7, 0.5], [0.25, 0.7]]])

out = ["//! Values MXNet 1.9.1 computed in float16 for the tests of this folder,",
       "//! written by `scripts/make_detection_f16_values.py`: random float16",
       "//! inputs at scales where half's rounding shows, run through",
       "//! `mx.nd.contrib.<op>` in float16 (and for `box_nms` the head gradient",
       "//! [`super::test_util::head`] backpropagated). Every value is a half,",
       "//! written exactly.",
       "",
       "use super::test_util::MxCase;",
       "",
       "/// float16 calls.",
       "#[rustfmt::skip]",
       "pub(super) const F16: &[MxCase] = &["]
for key, op, attrs, xs, ys, g in cases:
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
open("crates/ops/src/detection/mx_values_f16.rs", "w").write("\n".join(out))
print(len(cases), "float16 cases")
