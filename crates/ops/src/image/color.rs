//! Colour augmentations of an image (H, W, C) or a batch (N, H, W, C),
//! MXNet's `_image_random_brightness`, `_image_random_contrast`,
//! `_image_random_saturation`, `_image_random_hue`,
//! `_image_random_color_jitter`, `_image_adjust_lighting` and
//! `_image_random_lighting`: the transforms `RandomBrightness` ...
//! `RandomLighting` of `gluon.data.vision` hybridize onto them.
//!
//! Each works on pixel values as float32 and stores them back in the
//! input's dtype: uint8 clamped to 0..=255 and truncated, as MXNet 1.9.1;
//! floats as they are. Images of one channel are grey: contrast mixes with
//! their mean, saturation, hue and lighting leave them unchanged.
//!
//! Where oxnet differs from MXNet 1.9.1: a batch (N, H, W, C) is accepted,
//! each image with its own draw (MXNet takes one image); saturation mixes
//! with each pixel's grey level 0.299 R + 0.587 G + 0.114 B (MXNet's loop
//! overwrites its sum and keeps only 0.114 B); the colour jitter applies its
//! four adjustments in a random order drawn per image, like MXNet per call.
//! These operators have no gradient (the draw is not kept).

use super::layout::hw_axes;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpDef, Resource, Result};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// Grey-level weights of R, G, B.
const LUMA: [f32; 3] = [0.299, 0.587, 0.114];

/// AlexNet's PCA of ImageNet pixel colours: eigenvalue × eigenvector
/// component, as MXNet's lighting operators use (rows R, G, B).
const EIGEN: [[f32; 3]; 3] = [
    [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
];

/// One adjustment of one image's pixels (`len / channels` pixels).
#[derive(Debug, Clone, Copy)]
enum Adjust {
    Brightness(f32),
    Contrast(f32),
    Saturation(f32),
    Hue(f32),
    Lighting([f32; 3]),
}

fn apply(adjust: Adjust, px: &mut [f32], channels: usize) {
    match adjust {
        Adjust::Brightness(a) => px.iter_mut().for_each(|v| *v *= a),
        Adjust::Contrast(a) => {
            let n = (px.len() / channels).max(1) as f32;
            let sum: f32 = if channels == 3 {
                px.chunks_exact(3).map(|p| p[0] * LUMA[0] + p[1] * LUMA[1] + p[2] * LUMA[2]).sum()
            } else {
                px.iter().sum()
            };
            let beta = (1.0 - a) * sum / n;
            px.iter_mut().for_each(|v| *v = *v * a + beta);
        }
        Adjust::Saturation(a) if channels == 3 => {
            for p in px.chunks_exact_mut(3) {
                let grey = (p[0] * LUMA[0] + p[1] * LUMA[1] + p[2] * LUMA[2]) * (1.0 - a);
                p.iter_mut().for_each(|v| *v = grey + *v * a);
            }
        }
        Adjust::Hue(a) if channels == 3 => {
            for p in px.chunks_exact_mut(3) {
                let (h, l, s) = rgb_to_hls(p[0], p[1], p[2]);
                let (r, g, b) = hls_to_rgb(h + a * 360.0, l, s);
                p.copy_from_slice(&[r, g, b]);
            }
        }
        Adjust::Lighting(alpha) if channels == 3 => {
            let shift: Vec<f32> =
                EIGEN.iter().map(|row| row.iter().zip(&alpha).map(|(e, a)| e * a).sum()).collect();
            for p in px.chunks_exact_mut(3) {
                p.iter_mut().zip(&shift).for_each(|(v, s)| *v += s);
            }
        }
        _ => {} // one channel: saturation, hue and lighting change nothing
    }
}

/// RGB in 0..=255 to (hue in degrees, lightness, saturation) in 0..=1.
fn rgb_to_hls(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let (r, g, b) = (r / 255.0, g / 255.0, b / 255.0);
    let hi = r.max(g).max(b);
    let lo = r.min(g).min(b);
    let l = (hi + lo) / 2.0;
    let d = hi - lo;
    if d <= f32::EPSILON {
        return (0.0, l, 0.0);
    }
    let s = if l < 0.5 { d / (hi + lo) } else { d / (2.0 - hi - lo) };
    let mut h = if hi == r {
        (g - b) * 60.0 / d
    } else if hi == g {
        (b - r) * 60.0 / d + 120.0
    } else {
        (r - g) * 60.0 / d + 240.0
    };
    if h < 0.0 {
        h += 360.0;
    }
    (h, l, s)
}

/// (hue in degrees, any turn; lightness, saturation) back to RGB in 0..=255.
fn hls_to_rgb(h: f32, l: f32, s: f32) -> (f32, f32, f32) {
    if s == 0.0 {
        return (l * 255.0, l * 255.0, l * 255.0);
    }
    let hi = if l <= 0.5 { l * (1.0 + s) } else { l + s - l * s };
    let lo = 2.0 * l - hi;
    let sector_pos = (h / 60.0).rem_euclid(6.0);
    let sector = (sector_pos as usize).min(5);
    let f = sector_pos - sector as f32;
    let falling = lo + (hi - lo) * (1.0 - f);
    let rising = lo + (hi - lo) * f;
    // (r, g, b) per 60° sector of the hue circle
    let (r, g, b) = match sector {
        0 => (hi, rising, lo),
        1 => (falling, hi, lo),
        2 => (lo, hi, rising),
        3 => (lo, falling, hi),
        4 => (rising, lo, hi),
        _ => (hi, lo, falling),
    };
    (r * 255.0, g * 255.0, b * 255.0)
}

/// Runs `adjustments(image index)` over every image of `x` into `out`.
fn run(
    op: &str,
    x: &NDArray,
    out: &NDArray,
    mut adjustments: impl FnMut(usize) -> Vec<Adjust>,
) -> Result<()> {
    let shape = x.shape();
    hw_axes(op, shape)?;
    let channels = shape[shape.len() - 1];
    let per_image: usize = shape[shape.len() - 3..].iter().product();
    let values = x.to_vec::<f32>().map_err(|e| e.in_op(op))?;
    let mut result = values;
    if per_image > 0 {
        for (i, img) in result.chunks_mut(per_image).enumerate() {
            for a in adjustments(i) {
                apply(a, img, channels);
            }
        }
    }
    store_as(out, &result)
}

/// Stores float pixel values into `out` in its dtype (integers clamped to
/// their range and truncated, as MXNet's saturating cast).
fn store_as(out: &NDArray, values: &[f32]) -> Result<()> {
    fn ints<T: oxnet_core::Element>(
        out: &NDArray,
        values: &[f32],
        lo: f32,
        hi: f32,
        cast: impl Fn(f32) -> T,
    ) -> Result<()> {
        let dst = out.as_mut_slice::<T>()?;
        dst.iter_mut().zip(values).for_each(|(d, v)| *d = cast(v.clamp(lo, hi)));
        Ok(())
    }
    match out.dtype() {
        DType::U8 => ints(out, values, 0.0, 255.0, |v| v as u8),
        DType::I8 => ints(out, values, -128.0, 127.0, |v| v as i8),
        DType::I32 => ints(out, values, i32::MIN as f32, i32::MAX as f32, |v| v as i32),
        _ => out.assign_from(&NDArray::from_vec(values.to_vec(), out.shape())?.astype(out.dtype())?),
    }
}

fn same_shape(
    op: &'static str,
) -> impl Fn(&Attrs, &mut [Option<oxnet_core::Shape>], &mut [Option<oxnet_core::Shape>]) -> Result<()> {
    move |_, ins, outs| {
        if let Some(x) = &ins[0] {
            hw_axes(op, x)?;
            outs[0] = Some(x.clone());
        }
        Ok(())
    }
}

fn uniform(rng: &mut impl Rng, lo: f32, hi: f32) -> f32 {
    lo + (hi - lo) * rng.random::<f32>()
}

fn factors(op: &str, attrs: &Attrs) -> Result<(f32, f32)> {
    let (lo, hi) = (attrs.float("min_factor")? as f32, attrs.float("max_factor")? as f32);
    if !(0.0..=hi).contains(&lo) {
        return Err(Error::Invalid(format!(
            "{op}: need 0 <= min_factor <= max_factor, got min_factor={lo}, max_factor={hi}"
        )));
    }
    Ok((lo, hi))
}

fn base(op: &'static str, doc: &str) -> OpDef {
    OpDef::new(op)
        .alias(&format!("_npx_{op}"))
        .doc(doc)
        .infer_shape(same_shape(op))
        .resource(Resource::Random)
}

fn register_factor_op(op: &'static str, doc: &str, make: fn(f32) -> Adjust) {
    registry::register(
        base(op, doc)
            .attr(AttrSpec::required("min_factor", AttrKind::Float, "the smallest factor drawn"))
            .attr(AttrSpec::required("max_factor", AttrKind::Float, "the largest factor drawn"))
            .forward(move |ctx, ins, outs| {
                let (lo, hi) = factors(op, ctx.attrs)?;
                oxnet_core::random::with_rng(|rng| {
                    run(op, &ins[0], &outs[0], |_| vec![make(uniform(rng, lo, hi))])
                })
            }),
    );
}

fn register_hue() {
    let op = "_image_random_hue";
    registry::register(
        base(op, "Turns each image's hue by a fraction of the colour circle drawn uniformly from [min_factor, max_factor].")
            .attr(AttrSpec::required("min_factor", AttrKind::Float, "the smallest turn (fraction of 360°)"))
            .attr(AttrSpec::required("max_factor", AttrKind::Float, "the largest turn"))
            .forward(move |ctx, ins, outs| {
                let (lo, hi) = (ctx.attrs.float("min_factor")? as f32, ctx.attrs.float("max_factor")? as f32);
                if lo > hi {
                    return Err(Error::Invalid(format!("{op}: min_factor {lo} is above max_factor {hi}")));
                }
                oxnet_core::random::with_rng(|rng| {
                    run(op, &ins[0], &outs[0], |_| vec![Adjust::Hue(uniform(rng, lo, hi))])
                })
            }),
    );
}

fn register_color_jitter() {
    let op = "_image_random_color_jitter";
    let amount = |name: &str, what: &str| AttrSpec::required(name, AttrKind::Float, what);
    registry::register(
        base(op, "Jitters brightness, contrast and saturation by factors within 1 ± their amounts and the hue by a turn within ± hue, in a random order, per image.")
            .attr(amount("brightness", "how much to jitter the brightness"))
            .attr(amount("contrast", "how much to jitter the contrast"))
            .attr(amount("saturation", "how much to jitter the saturation"))
            .attr(amount("hue", "how much to jitter the hue"))
            .forward(move |ctx, ins, outs| {
                let get = |k: &str| -> Result<f32> {
                    let v = ctx.attrs.float(k)? as f32;
                    if v < 0.0 {
                        return Err(Error::Invalid(format!("{op}: {k} must not be negative, got {v}")));
                    }
                    Ok(v)
                };
                let (b, c, s, h) = (get("brightness")?, get("contrast")?, get("saturation")?, get("hue")?);
                oxnet_core::random::with_rng(|rng| {
                    run(op, &ins[0], &outs[0], |_| {
                        let mut order = [0, 1, 2, 3];
                        order.shuffle(rng);
                        order
                            .iter()
                            .filter_map(|k| match k {
                                0 if b > 0.0 => Some(Adjust::Brightness(1.0 + uniform(rng, -b, b))),
                                1 if c > 0.0 => Some(Adjust::Contrast(1.0 + uniform(rng, -c, c))),
                                2 if s > 0.0 => Some(Adjust::Saturation(1.0 + uniform(rng, -s, s))),
                                3 if h > 0.0 => Some(Adjust::Hue(uniform(rng, -h, h))),
                                _ => None,
                            })
                            .collect()
                    })
                })
            }),
    );
}

fn register_lighting() {
    let op = "_image_adjust_lighting";
    registry::register(
        OpDef::new(op)
            .alias(&format!("_npx_{op}"))
            .doc(
                "Adds AlexNet's PCA lighting noise with the given alphas for the three principal components.",
            )
            .attr(AttrSpec::required(
                "alpha",
                AttrKind::Str,
                "the alphas of the three components, (a0, a1, a2)",
            ))
            .infer_shape(same_shape(op))
            .forward(move |ctx, ins, outs| {
                let a = crate::util::parse_floats("alpha", ctx.attrs.str("alpha")?)?;
                let [a0, a1, a2] = a[..] else {
                    return Err(Error::Invalid(format!("{op}: alpha must have 3 values, got {}", a.len())));
                };
                let alpha = [a0 as f32, a1 as f32, a2 as f32];
                run(op, &ins[0], &outs[0], |_| vec![Adjust::Lighting(alpha)])
            }),
    );
    let op = "_image_random_lighting";
    registry::register(
        base(op, "Adds AlexNet's PCA lighting noise with alphas drawn from N(0, alpha_std²), per image.")
            .attr(AttrSpec::optional("alpha_std", AttrKind::Float, 0.05, "the spread of the alphas"))
            .forward(move |ctx, ins, outs| {
                let std = ctx.attrs.float("alpha_std")? as f32;
                let normal = Normal::new(0.0f32, std).map_err(|_| {
                    Error::Invalid(format!("{op}: alpha_std must be finite and not negative, got {std}"))
                })?;
                oxnet_core::random::with_rng(|rng| {
                    run(op, &ins[0], &outs[0], |_| {
                        vec![Adjust::Lighting([normal.sample(rng), normal.sample(rng), normal.sample(rng)])]
                    })
                })
            }),
    );
}

pub(super) fn register() {
    register_factor_op(
        "_image_random_brightness",
        "Scales each image's pixels by a factor drawn uniformly from [min_factor, max_factor].",
        Adjust::Brightness,
    );
    register_factor_op(
        "_image_random_contrast",
        "Mixes each image with its mean grey level: factor × pixel + (1 − factor) × mean, the factor drawn uniformly from [min_factor, max_factor].",
        Adjust::Contrast,
    );
    register_factor_op(
        "_image_random_saturation",
        "Mixes each pixel with its grey level: factor × pixel + (1 − factor) × grey, the factor drawn uniformly from [min_factor, max_factor].",
        Adjust::Saturation,
    );
    register_hue();
    register_color_jitter();
    register_lighting();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hls_round_trip_and_known_values() {
        for &(r, g, b) in &[
            (255.0, 0.0, 0.0),
            (10.0, 200.0, 30.0),
            (0.0, 0.0, 255.0),
            (128.0, 128.0, 128.0),
            (250.0, 240.0, 1.0),
        ] {
            let (h, l, s) = rgb_to_hls(r, g, b);
            let (r2, g2, b2) = hls_to_rgb(h, l, s);
            assert!((r - r2).abs() < 1e-3 && (g - g2).abs() < 1e-3 && (b - b2).abs() < 1e-3, "{r} {g} {b}");
        }
        assert_eq!(rgb_to_hls(0.0, 255.0, 0.0).0, 120.0);
        // pure red turned by a third of the circle is pure green
        let (h, l, s) = rgb_to_hls(255.0, 0.0, 0.0);
        let (r, g, b) = hls_to_rgb(h + 120.0, l, s);
        assert!(r.abs() < 1e-3 && (g - 255.0).abs() < 1e-3 && b.abs() < 1e-3);
    }

    #[test]
    fn contrast_and_saturation_mix_with_grey() {
        let mut px = vec![10.0, 20.0, 30.0, 50.0, 60.0, 70.0];
        apply(Adjust::Saturation(0.0), &mut px, 3);
        let g0 = 10.0 * 0.299 + 20.0 * 0.587 + 30.0 * 0.114;
        assert!(px[..3].iter().all(|v| (v - g0).abs() < 1e-4), "{px:?}");
        let mut px = vec![10.0, 20.0, 30.0, 50.0, 60.0, 70.0];
        apply(Adjust::Contrast(0.5), &mut px, 3);
        let mean = (g0 + 50.0 * 0.299 + 60.0 * 0.587 + 70.0 * 0.114) / 2.0;
        assert!((px[0] - (5.0 + 0.5 * mean)).abs() < 1e-4);
    }
}
