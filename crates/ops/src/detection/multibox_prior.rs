//! `_contrib_MultiBoxPrior`: SSD anchor boxes for every position of a
//! feature map.

use super::{
    assign, float_tuple, infer_real_type, prepared, shape_error, store, with_params, Real, MULTIBOX_DTYPES,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_MultiBoxPrior";

/// The attributes, as the float32 values MXNet keeps.
#[derive(Debug, Clone)]
struct Params {
    sizes: Vec<f32>,
    ratios: Vec<f32>,
    clip: bool,
    /// Steps along y and x; not positive: 1 / height and 1 / width.
    steps: [f32; 2],
    /// Center offsets along y and x, in [0, 1].
    offsets: [f32; 2],
}

fn parse(attrs: &Attrs) -> Result<Params> {
    let sizes = float_tuple(OP, attrs, "sizes", None)?;
    let ratios = float_tuple(OP, attrs, "ratios", None)?;
    for (name, v) in [("sizes", &sizes), ("ratios", &ratios)] {
        if v.is_empty() {
            return Err(Error::attr(name, format!("{OP}: {name} must not be empty")));
        }
    }
    let steps = float_tuple(OP, attrs, "steps", Some(2))?;
    let offsets = float_tuple(OP, attrs, "offsets", Some(2))?;
    if let Some(o) = offsets.iter().find(|o| !(0.0..=1.0).contains(*o)) {
        return Err(Error::attr("offsets", format!("{OP}: offsets must lie in [0, 1], got {o}")));
    }
    if steps[0] * steps[1] < 0.0 {
        return Err(Error::attr("steps", format!("{OP}: give both steps (y, x) or neither, got {steps:?}")));
    }
    Ok(Params {
        sizes,
        ratios,
        clip: attrs.bool("clip")?,
        steps: [steps[0], steps[1]],
        offsets: [offsets[0], offsets[1]],
    })
}

/// The feature map's height and width: data must be at least 4-d.
fn plane(s: &[usize]) -> Result<(usize, usize)> {
    match *s {
        [_, _, h, w, ..] if h > 0 && w > 0 => Ok((h, w)),
        _ => Err(shape_error(OP, "data", "(batch, channel, height, width) with height and width > 0", s)),
    }
}

fn infer_shape(p: &Params, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(d) = &ins[0] else { return Ok(()) };
    let (h, w) = plane(d)?;
    let per = p.sizes.len() + p.ratios.len() - 1;
    assign(OP, &mut outs[0], &[1, h * w * per, 4], "the output")
}

/// The anchors of an `h` x `w` map, corners in float32 as MXNet computes them.
fn anchors(p: &Params, h: usize, w: usize) -> Vec<f32> {
    let (hf, wf) = (h as f32, w as f32);
    let (step_y, step_x) = match p.steps {
        [y, x] if y > 0.0 && x > 0.0 => (y, x),
        _ => (1.0 / hf, 1.0 / wf),
    };
    let first = p.sizes.iter().map(|&s| (s, p.ratios[0].sqrt()));
    let shapes: Vec<(f32, f32)> =
        first.chain(p.ratios[1..].iter().map(|&r| (p.sizes[0], r.sqrt()))).collect();
    let mut out = Vec::with_capacity(h * w * shapes.len() * 4);
    for r in 0..h {
        let cy = (r as f32 + p.offsets[0]) * step_y;
        for c in 0..w {
            let cx = (c as f32 + p.offsets[1]) * step_x;
            for &(size, ratio) in &shapes {
                let half_w = size * hf / wf * ratio / 2.0;
                let half_h = size / ratio / 2.0;
                out.extend_from_slice(&[cx - half_w, cy - half_h, cx + half_w, cy + half_h]);
            }
        }
    }
    if p.clip {
        out.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
    }
    out
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let p = prepared(ctx.attrs, parse)?;
    let (h, w) = plane(ins[0].shape())?;
    let a = anchors(&p, h, w);
    with_real!(OP, ins[0].dtype(), [F32, F64], T => {
        let y: Vec<T> = a.iter().map(|&v| T::narrow(v as f64)).collect();
        store(ctx.req[0], &outs[0], &y)
    })
}

pub(super) fn register() {
    let tuple = |name: &str, default: &str, doc: &str| {
        AttrSpec::optional(name, AttrKind::Str, AttrValue::Str(default.into()), doc)
    };
    let def = OpDef::new(OP)
        .alias("_npx_multibox_prior")
        .doc(
            "Anchor boxes (SSD) for the feature map data (N, C, H, W): at every position, \
             centered at ((x + offsets[1]) * steps[1], (y + offsets[0]) * steps[0]) (steps \
             1/W and 1/H by default), one box per size with the first ratio and one per further \
             ratio with the first size, of width size * H / W * sqrt(ratio) and height size / \
             sqrt(ratio). Returns corners (1, H * W * (len(sizes) + len(ratios) - 1), 4), \
             clipped to [0, 1] with clip. Zero gradient.",
        )
        .attr(tuple("sizes", "(1.0,)", "Box sizes, relative to the image."))
        .attr(tuple("ratios", "(1.0,)", "Aspect ratios (width / height)."))
        .attr(AttrSpec::optional("clip", AttrKind::Bool, false, "Clip the boxes to [0, 1]."))
        .attr(tuple("steps", "(-1.0, -1.0)", "Steps (y, x) between centers; -1: 1 / height, 1 / width."))
        .attr(tuple("offsets", "(0.5, 0.5)", "Center offsets (y, x) within a step, in [0, 1]."))
        .infer_shape(|attrs, ins, outs| infer_shape(&prepared(attrs, parse)?, ins, outs))
        .infer_type(|_, ins, outs| infer_real_type(OP, &["data"], MULTIBOX_DTYPES, ins, outs))
        .forward(forward)
        .zero_grad();
    registry::register(with_params(def, parse));
}
