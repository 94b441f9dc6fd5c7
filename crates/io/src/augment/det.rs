//! MXNet's default detection augmenter (`det_aug_default` of MXNet
//! 1.9.1's `ImageDetRecordIter`), step by step in its order: the shorter
//! side resized; colour (HLS shifts and a contrast factor, each with its
//! probability); a horizontal flip; random padding with `fill_value`; a
//! random crop from the crop samplers (tried in a random order, each up to
//! its trial count, until one is accepted); and the resize to the output
//! (`force`, `shrink` or `fit`). The label follows every geometric step.
//!
//! The crop and pad geometry ([`crop_box`], [`pad_box`]) take their unit
//! draws from a closure so they can be checked with chosen numbers.

use super::det_params::{CropSampler, DetAugmentParams, ResizeMode};
use super::{hsl, inter_method, uniform};
use crate::augment::crop::cut;
use crate::det_label::{BoxF, DetLabel};
use crate::image::Image;
use crate::resize::resize;
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_pcg::Pcg64;

/// A crop box of sampler `s` for an image of aspect ratio `img_aspect`
/// (width / height), from four unit draws: the scale `s` from its range
/// (plus 1e-12), the squared width/height factor `r²` from `[max(a_lo /
/// img_aspect, s²), min(a_hi / img_aspect, 1 / s²)]`, width `min(1, s·r)`,
/// height `min(1, s / r)`, then the corner uniformly where the box fits.
pub fn crop_box(s: &CropSampler, img_aspect: f32, draw: &mut impl FnMut() -> f32) -> BoxF {
    let lerp = |lo: f32, hi: f32, u: f32| lo + u * (hi - lo);
    let scale = lerp(s.scale.0, s.scale.1, draw()) + 1e-12;
    let min_ratio = (s.aspect_ratio.0 / img_aspect).max(scale * scale);
    let max_ratio = (s.aspect_ratio.1 / img_aspect).min(1.0 / (scale * scale));
    let ratio = lerp(min_ratio, max_ratio, draw()).sqrt();
    let width = (scale * ratio).min(1.0);
    let height = (scale / ratio).min(1.0);
    let x = lerp(0.0, 1.0 - width, draw());
    let y = lerp(0.0, 1.0 - height, draw());
    BoxF { x, y, width, height }
}

/// A padding box (the padded image in the image's coordinates: corner
/// `(-x0, -y0)`, sides `scale`) from unit draws: `scale` from `[1,
/// max_pad_scale]`, `None` below 1.05; then `x0`, `y0` from `[0, scale - 1]`.
pub fn pad_box(max_pad_scale: f32, draw: &mut impl FnMut() -> f32) -> Option<BoxF> {
    let scale = 1.0 + draw() * (max_pad_scale - 1.0);
    if scale < 1.05 {
        return None;
    }
    let x0 = draw() * (scale - 1.0);
    let y0 = draw() * (scale - 1.0);
    Some(BoxF { x: -x0, y: -y0, width: scale, height: scale })
}

/// The pixels (left, top, right, bottom) a padding box adds to a
/// `width × height` image (each truncated, as MXNet converts them).
pub fn pad_pixels(pad: &BoxF, width: usize, height: usize) -> [usize; 4] {
    let (w, h) = (width as f32, height as f32);
    [
        (-pad.x * w) as usize,
        (-pad.y * h) as usize,
        ((pad.width + pad.x - 1.0) * w) as usize,
        ((pad.height + pad.y - 1.0) * h) as usize,
    ]
}

/// The pixel rectangle (x, y, width, height) of a crop box in a
/// `width × height` image (truncated, at least one pixel, inside the image).
pub fn crop_pixels(crop: &BoxF, width: usize, height: usize) -> [usize; 4] {
    let (w, h) = (width as f32, height as f32);
    let x = ((crop.x * w) as usize).min(width - 1);
    let y = ((crop.y * h) as usize).min(height - 1);
    let cw = ((crop.width * w) as usize).clamp(1, width - x);
    let ch = ((crop.height * h) as usize).clamp(1, height - y);
    [x, y, cw, ch]
}

/// `img` inside a border of `[left, top, right, bottom]` pixels of `fill`
/// (an alpha channel's border is 0, as OpenCV's three-value scalar gives).
pub fn border(img: &Image, [left, top, right, bottom]: [usize; 4], fill: u8) -> Image {
    let c = img.channels;
    let (width, height) = (img.width + left + right, img.height + top + bottom);
    let mut px = vec![fill; c];
    if c == 4 {
        px[3] = 0;
    }
    let mut data: Vec<u8> = px.iter().copied().cycle().take(width * height * c).collect();
    let row = img.width * c;
    for y in 0..img.height {
        let to = ((y + top) * width + left) * c;
        data[to..to + row].copy_from_slice(&img.data[y * row..(y + 1) * row]);
    }
    Image { height, width, channels: c, data }
}

/// Multiplies every value by `alpha`, rounded to nearest (ties to even)
/// and saturated, as OpenCV's `convertTo` does.
pub fn scale_values(img: &mut Image, alpha: f32) {
    for v in &mut img.data {
        *v = (f32::from(*v) * alpha).round_ties_even().clamp(0.0, 255.0) as u8;
    }
}

/// Mirrors `img` left-right.
pub fn flip(img: &mut Image) {
    let (w, c) = (img.width, img.channels);
    for row in img.data.chunks_exact_mut(w * c) {
        for x in 0..w / 2 {
            for k in 0..c {
                row.swap(x * c + k, (w - 1 - x) * c + k);
            }
        }
    }
}

fn colour(p: &DetAugmentParams, img: &mut Image, rng: &mut Pcg64) -> Result<()> {
    if p.random_hue_prob <= 0.0
        && p.random_saturation_prob <= 0.0
        && p.random_illumination_prob <= 0.0
        && p.random_contrast_prob <= 0.0
    {
        return Ok(());
    }
    let mut range = || uniform(rng, -1.0, 1.0);
    let h = (range() * p.max_random_hue as f32) as i32;
    let s = (range() * p.max_random_saturation as f32) as i32;
    let l = (range() * p.max_random_illumination as f32) as i32;
    let c = range() * p.max_random_contrast;
    let mut chance = |prob: f32| rng.random::<f32>() < prob;
    let h = if chance(p.random_hue_prob) { h } else { 0 };
    let s = if chance(p.random_saturation_prob) { s } else { 0 };
    let l = if chance(p.random_illumination_prob) { l } else { 0 };
    let c = if chance(p.random_contrast_prob) { c } else { 0.0 };
    if h != 0 || s != 0 || l != 0 {
        if img.channels != 3 {
            return Err(Error::attr(
                "random_hue_prob",
                "ImageDetRecordIter: hue, saturation and illumination need 3 colour channels",
            ));
        }
        hsl::shift(img, (h, l, s));
    }
    if c.abs() > 1e-3 {
        scale_values(img, 1.0 + c);
    }
    Ok(())
}

fn random_crop(p: &DetAugmentParams, img: Image, label: &mut DetLabel, rng: &mut Pcg64) -> Image {
    let mut order: Vec<usize> = (0..p.samplers.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let aspect = img.width as f32 / img.height as f32;
    for idx in order {
        let s = &p.samplers[idx];
        for _ in 0..s.max_trials {
            let crop = crop_box(s, aspect, &mut || rng.random::<f32>());
            if label.try_crop(&crop, &s.constraints, p.crop_emit_mode, p.emit_overlap_thresh) {
                let [x, y, w, h] = crop_pixels(&crop, img.width, img.height);
                return cut(&img, x, y, w, h);
            }
        }
    }
    img
}

fn resize_to(p: &DetAugmentParams, img: Image, (h, w): (usize, usize), rng: &mut Pcg64) -> Result<Image> {
    let method = inter_method(p.inter_method, (img.width, img.height), (w, h), rng)?;
    if (img.height, img.width) == (h, w) {
        return Ok(img);
    }
    resize(&img, h, w, method)
}

/// One image and its label through the detection augmenter; the result is
/// at most the output's `(height, width)` (exactly it with `force`).
pub fn augment_det(
    p: &DetAugmentParams,
    mut img: Image,
    label: &mut DetLabel,
    out: (usize, usize),
    rng: &mut Pcg64,
) -> Result<Image> {
    if p.resize > 0 {
        let r = p.resize as usize;
        let size = if img.height > img.width {
            (r * img.height / img.width, r)
        } else {
            (r, r * img.width / img.height)
        };
        img = resize_to(p, img, size, rng)?;
    }
    colour(p, &mut img, rng)?;
    if p.rand_mirror_prob > 0.0 && rng.random::<f32>() < p.rand_mirror_prob {
        label.flip();
        flip(&mut img);
    }
    if p.rand_pad_prob > 0.0 && p.max_pad_scale > 1.0 && rng.random::<f32>() < p.rand_pad_prob {
        if let Some(pad) = pad_box(p.max_pad_scale, &mut || rng.random::<f32>()) {
            label.pad(&pad);
            let fill = p.fill_value.clamp(0, 255) as u8;
            img = border(&img, pad_pixels(&pad, img.width, img.height), fill);
        }
    }
    if p.rand_crop_prob > 0.0 && !p.samplers.is_empty() && rng.random::<f32>() < p.rand_crop_prob {
        img = random_crop(p, img, label, rng);
    }
    let (h, w) = out;
    let ratio = || (h as f32 / img.height as f32).min(w as f32 / img.width as f32);
    let size = |ratio: f32| {
        (((ratio * img.height as f32) as usize).max(1), ((ratio * img.width as f32) as usize).max(1))
    };
    match p.resize_mode {
        ResizeMode::Force => resize_to(p, img, (h, w), rng),
        ResizeMode::Shrink if img.height > h || img.width > w => {
            let to = size(ratio());
            resize_to(p, img, to, rng)
        }
        ResizeMode::Shrink => Ok(img),
        ResizeMode::Fit => {
            let to = size(ratio());
            resize_to(p, img, to, rng)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::det_label::CropConstraints;

    fn draws(values: &[f32]) -> impl FnMut() -> f32 + '_ {
        let mut it = values.iter();
        move || *it.next().expect("enough draws")
    }

    fn sampler(scale: (f32, f32), aspect_ratio: (f32, f32)) -> CropSampler {
        let none =
            CropConstraints { overlap: (0.0, 1.0), sample_coverage: (0.0, 1.0), object_coverage: (0.0, 1.0) };
        CropSampler { scale, aspect_ratio, constraints: none, max_trials: 25 }
    }

    fn close(b: BoxF, want: [f32; 4]) {
        let got = [b.x, b.y, b.width, b.height];
        assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6), "{got:?} {want:?}");
    }

    #[test]
    fn crop_box_geometry() {
        // scale 0.3 + 0.5·(0.9 - 0.3) = 0.6; square image, ratio range [max(0.5, 0.36),
        // min(2, 1/0.36)] = [0.5, 2]; draw 0.5 -> 1.25, r = sqrt(1.25) = 1.118034;
        // width 0.6·1.118034 = 0.670820, height 0.6/1.118034 = 0.536656;
        // x = 0.25·(1 - 0.670820), y = 1.0·(1 - 0.536656)
        let s = sampler((0.3, 0.9), (0.5, 2.0));
        close(
            crop_box(&s, 1.0, &mut draws(&[0.5, 0.5, 0.25, 1.0])),
            [0.082295, 0.463344, 0.670820, 0.536656],
        );
        // a wide image (aspect 2) with a square crop: r² = 0.5 / ... : the range is
        // [max(1/2, 0.25), min(1/2, 4)] = [0.5, 0.5] at scale 0.5 -> r = 0.707107,
        // width 0.353553, height 0.707107 (square in pixels: 0.353553·2 = 0.707107)
        let s = sampler((0.0, 1.0), (1.0, 1.0));
        close(
            crop_box(&s, 2.0, &mut draws(&[0.5, 0.3, 0.0, 0.0])),
            [0.0, 0.0, 0.353553, std::f32::consts::FRAC_1_SQRT_2],
        );
        // full scale clamps the sides at 1
        close(crop_box(&s, 1.0, &mut draws(&[1.0, 0.0, 0.7, 0.7])), [0.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn pad_box_geometry() {
        // scale 1 + 0.5·(3 - 1) = 2; x0 = 0.25·1, y0 = 1.0·1
        let b = pad_box(3.0, &mut draws(&[0.5, 0.25, 1.0])).unwrap();
        close(b, [-0.25, -1.0, 2.0, 2.0]);
        // a 10 × 4 image: left 2 (2.5 truncated), top 4, right (2 - 0.25 - 1)·10 = 7, bottom 0
        assert_eq!(pad_pixels(&b, 10, 4), [2, 4, 7, 0]);
        // scales below 1.05 pad nothing
        assert!(pad_box(1.5, &mut draws(&[0.09])).is_none());
    }

    #[test]
    fn crop_pixels_truncate_and_stay_inside() {
        let b = BoxF { x: 0.25, y: 0.5, width: 0.5, height: 0.49 };
        assert_eq!(crop_pixels(&b, 10, 10), [2, 5, 5, 4]);
        let tiny = BoxF { x: 0.99, y: 0.0, width: 0.01, height: 1.0 };
        assert_eq!(crop_pixels(&tiny, 10, 10), [9, 0, 1, 10]);
    }

    #[test]
    fn border_flip_and_contrast() {
        let img = Image::new(1, 2, 3, vec![1, 2, 3, 4, 5, 6]).unwrap();
        let b = border(&img, [1, 0, 0, 1], 9);
        assert_eq!((b.height, b.width), (2, 3));
        assert_eq!(b.data, vec![9, 9, 9, 1, 2, 3, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
        let mut f = img.clone();
        flip(&mut f);
        assert_eq!(f.data, vec![4, 5, 6, 1, 2, 3]);
        let mut c = Image::new(1, 3, 1, vec![5, 100, 200]).unwrap();
        // 5·1.5 = 7.5 -> 8 (ties to even), 150, 300 -> 255
        scale_values(&mut c, 1.5);
        assert_eq!(c.data, vec![8, 150, 255]);
    }

    #[test]
    fn resize_modes() {
        let p = |mode| DetAugmentParams { resize_mode: mode, ..Default::default() };
        let mut rng = <Pcg64 as rand::SeedableRng>::seed_from_u64(0);
        let img = Image::new(20, 40, 3, vec![50; 2400]).unwrap();
        let mut label = DetLabel::parse(&[2.0, 5.0, 0.0, 0.1, 0.1, 0.5, 0.5]).unwrap();
        let size = |mode, out, rng: &mut Pcg64, label: &mut DetLabel| {
            let r = augment_det(&p(mode), img.clone(), label, out, rng).unwrap();
            (r.height, r.width)
        };
        assert_eq!(size(ResizeMode::Force, (16, 16), &mut rng, &mut label), (16, 16));
        // ratio min(16/20, 16/40) = 0.4 -> 8 × 16
        assert_eq!(size(ResizeMode::Shrink, (16, 16), &mut rng, &mut label), (8, 16));
        assert_eq!(size(ResizeMode::Shrink, (30, 50), &mut rng, &mut label), (20, 40));
        // fit enlarges: min(30/20, 100/40) = 1.5 -> 30 × 60
        assert_eq!(size(ResizeMode::Fit, (30, 100), &mut rng, &mut label), (30, 60));
    }
}
