//! `_contrib_box_encode` and `_contrib_box_decode`: box regression targets
//! as normalized center offsets and log sizes relative to anchors, and the
//! boxes such targets decode to.

use super::geometry::BoxFormat;
use super::{
    assign, assign_outputs, float32, infer_real_type, prepared, shape_error, store, with_params, Real,
    REAL_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, Error, NDArray, OpContext, OpDef, Result, Shape};

const ENCODE: &str = "_contrib_box_encode";
const DECODE: &str = "_contrib_box_decode";

/// The inputs of `_contrib_box_encode`.
const ENCODE_INPUTS: [&str; 6] = ["samples", "matches", "anchors", "refs", "means", "stds"];

/// The extents `(batch, boxes)` of a box array `(B, N, 4)` named `what`.
fn boxes3(op: &str, what: &str, s: &[usize]) -> Result<(usize, usize)> {
    match *s {
        [b, n, 4] => Ok((b, n)),
        _ => Err(shape_error(op, what, "(batch, boxes, 4)", s)),
    }
}

/// Center and size of the corner box `b` as MXNet's codec computes them:
/// `(x, y, width, height)`, the centers `lo + extent * 0.5` with a double
/// `0.5` ([`Real::plus_half_of`]).
fn center_of<T: Real>(b: &[T]) -> [T; 4] {
    let (w, h) = (b[2] - b[0], b[3] - b[1]);
    [b[0].plus_half_of(w), b[1].plus_half_of(h), w, h]
}

fn encode_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    assign(ENCODE, &mut ins[4], &[4], "means")?;
    assign(ENCODE, &mut ins[5], &[4], "stds")?;
    let Some(a) = ins[2].clone() else { return Ok(()) };
    let (b, n) = boxes3(ENCODE, "anchors", &a)?;
    for (i, what) in [(0, "samples"), (1, "matches")] {
        assign(ENCODE, &mut ins[i], &[b, n], what)?;
    }
    if let Some(r) = &ins[3] {
        let (rb, _) = boxes3(ENCODE, "refs", r)?;
        if rb != b {
            return Err(shape_error(ENCODE, "refs", &format!("(batch {b}, refs, 4) like anchors"), r));
        }
    }
    assign_outputs(ENCODE, outs, &[&a, &a])
}

fn encode_typed<T: Real>(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let [samples, matches, anchors, refs, means, stds] = [0, 1, 2, 3, 4, 5].map(|i| ins[i].as_slice::<T>());
    let (samples, matches, anchors, refs, means, stds) = (samples?, matches?, anchors?, refs?, means?, stds?);
    let n = ins[2].shape()[1];
    let m = ins[3].shape()[1];
    let mut targets = vec![T::ZERO; anchors.len()];
    let mut masks = vec![T::ZERO; anchors.len()];
    for i in 0..samples.len() {
        if samples[i].wide().partial_cmp(&0.5) != Some(std::cmp::Ordering::Greater) {
            continue;
        }
        let k = matches[i].to_i64().filter(|k| (0..m as i64).contains(k)).ok_or_else(|| {
            Error::Invalid(format!(
                "{ENCODE}: matches[{}, {}] = {:?} names no ref of the {m} per batch",
                i / n.max(1),
                i % n.max(1),
                matches[i]
            ))
        })? as usize;
        let r = center_of(&refs[((i / n) * m + k) * 4..][..4]);
        let a = center_of(&anchors[i * 4..i * 4 + 4]);
        // MXNet's `log` takes and returns a double: the log-size targets go
        // on from that double ([`Real::double_sub_div`])
        let log_target =
            |num: T, den: T, c: usize| T::double_sub_div((num / den).wide().ln(), means[c], stds[c]);
        let t = [
            ((r[0] - a[0]) / a[2] - means[0]) / stds[0],
            ((r[1] - a[1]) / a[3] - means[1]) / stds[1],
            log_target(r[2], a[2], 2),
            log_target(r[3], a[3], 3),
        ];
        targets[i * 4..i * 4 + 4].copy_from_slice(&t);
        masks[i * 4..i * 4 + 4].fill(T::ONE);
    }
    store(ctx.req[0], &outs[0], &targets)?;
    store(ctx.req[1], &outs[1], &masks)
}

/// The attributes of `_contrib_box_decode`.
#[derive(Debug, Clone, Copy)]
struct DecodeParams {
    stds: [f32; 4],
    /// Upper limit of the scaled log sizes; not positive: none.
    clip: f32,
    /// The anchors' format.
    format: BoxFormat,
}

fn parse_decode(attrs: &Attrs) -> Result<DecodeParams> {
    let s = |i: usize| float32(attrs, &format!("std{i}"));
    Ok(DecodeParams {
        stds: [s(0)?, s(1)?, s(2)?, s(3)?],
        clip: float32(attrs, "clip")?,
        format: BoxFormat::of(attrs, "format")?,
    })
}

fn decode_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(d) = ins[0].clone() else { return Ok(()) };
    let (_, n) = boxes3(DECODE, "data", &d)?;
    if let Some(a) = &ins[1] {
        if a.len() < 3 || a[a.len() - 1] != 4 || a.iter().product::<usize>() != n * 4 {
            return Err(shape_error(DECODE, "anchors", &format!("(1, {n}, 4), one box per data box"), a));
        }
    }
    assign(DECODE, &mut outs[0], &d, "the output")
}

fn decode_typed<T: Real>(ctx: &OpContext, p: &DecodeParams, ins: &[NDArray], out: &NDArray) -> Result<()> {
    let (x, anchors) = (ins[0].as_slice::<T>()?, ins[1].as_slice::<T>()?);
    let std = p.stds.map(|s| T::narrow(s as f64));
    let clip = T::narrow(p.clip as f64);
    let n = anchors.len() / 4;
    let mut y = vec![T::ZERO; x.len()];
    for (i, (o, d)) in y.chunks_exact_mut(4).zip(x.chunks_exact(4)).enumerate() {
        let b = &anchors[(i % n) * 4..(i % n) * 4 + 4];
        let [ax, ay, aw, ah] = match p.format {
            BoxFormat::Corner => center_of(b),
            BoxFormat::Center => [b[0], b[1], b[2], b[3]],
        };
        let (ox, oy) = (d[0] * std[0] * aw + ax, d[1] * std[1] * ah + ay);
        let half_size = |delta: T, extent: T| {
            let delta = match p.clip > 0.0 {
                true if delta < clip => delta,
                true => clip,
                false => delta,
            };
            T::narrow((T::narrow(delta.wide().exp()) * extent).wide() * 0.5)
        };
        let (ow, oh) = (half_size(d[2] * std[2], aw), half_size(d[3] * std[3], ah));
        o.copy_from_slice(&[ox - ow, oy - oh, ox + ow, oy + oh]);
    }
    store(ctx.req[0], out, &y)
}

pub(super) fn register() {
    registry::register(
        OpDef::new(ENCODE)
            .doc(
                "Box regression targets: for every anchor (B, N, 4) whose sample is positive \
                 (samples (B, N) > 0.5), the ref box (B, M, 4) that matches (B, N) names is \
                 encoded relative to the anchor, both corner boxes: ((x - ax) / aw, (y - ay) / \
                 ah, log(w / aw), log(h / ah)), less means (4,) and divided by stds (4,). \
                 Returns the targets (B, N, 4), 0 for other anchors, and the masks (B, N, 4), 1 \
                 for positive anchors and 0 elsewhere. Zero gradient.",
            )
            .arguments(&ENCODE_INPUTS)
            .outputs(&["output0", "output1"])
            .infer_shape(|_, ins, outs| encode_shape(ins, outs))
            .infer_type(|_, ins, outs| infer_real_type(ENCODE, &ENCODE_INPUTS, REAL_DTYPES, ins, outs))
            .forward(
                |ctx, ins, outs| with_real!(ENCODE, ins[2].dtype(), T => encode_typed::<T>(ctx, ins, outs)),
            )
            .zero_grad(),
    );

    let std = |i: usize| {
        AttrSpec::optional(&format!("std{i}"), AttrKind::Float, 1.0, &format!("Scale of encoded value {i}."))
    };
    let decode = OpDef::new(DECODE)
        .doc(
            "Decodes box regression outputs data (B, N, 4) against anchors (1, N, 4), corner or \
             center boxes (`format`): center (dx * std0 * aw + ax, dy * std1 * ah + ay) and \
             size (exp(dw * std2) * aw, exp(dh * std3) * ah), the scaled log sizes first \
             limited to `clip` when it is positive. Returns corner boxes (B, N, 4). Zero \
             gradient.",
        )
        .attr(std(0))
        .attr(std(1))
        .attr(std(2))
        .attr(std(3))
        .attr(AttrSpec::optional(
            "clip",
            AttrKind::Float,
            -1.0,
            "Upper limit of the scaled log sizes when positive.",
        ))
        .attr(BoxFormat::attr("format", "center", "The anchors' encoding: corner or center."))
        .arguments(&["data", "anchors"])
        .infer_shape(|_, ins, outs| decode_shape(ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(DECODE, &["data", "anchors"], REAL_DTYPES, ins, outs))
        .forward(|ctx, ins, outs| {
            let p = prepared(ctx.attrs, parse_decode)?;
            with_real!(DECODE, ins[0].dtype(), T => decode_typed::<T>(ctx, &p, ins, &outs[0]))
        })
        .zero_grad();
    registry::register(with_params(decode, parse_decode));
}
