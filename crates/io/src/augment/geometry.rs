//! MXNet's random affine transform (rotation, shear, scale and aspect
//! ratio about the image's centre, into a size limited by
//! `min_img_size`/`max_img_size`) and its constant padding.

use super::params::AugmentParams;
use super::warp::warp_affine;
use super::{inter_method, uniform};
use crate::image::Image;
use oxnet_core::Result;
use rand::Rng;
use rand_pcg::Pcg64;

/// The forward map MXNet builds, in `f32` as it does: rotation by `angle`
/// degrees, shear `shear`, scale `scale` and aspect ratio `ratio`, centred
/// in an output of `size` (width, height) for a source of `src` (width, height).
pub fn affine_matrix(
    angle: i32,
    shear: f32,
    scale: f32,
    ratio: f32,
    src: (usize, usize),
    size: (f32, f32),
) -> [f32; 6] {
    let radians = f64::from(angle) / 180.0 * std::f64::consts::PI;
    let (a, b) = (radians.cos() as f32, radians.sin() as f32);
    let hs = 2.0 * scale / (1.0 + ratio);
    let ws = ratio * hs;
    let (m00, m01) = (hs * a - shear * b * ws, hs * b + shear * a * ws);
    let (m10, m11) = (-b * ws, a * ws);
    let (cols, rows) = (src.0 as f32, src.1 as f32);
    let corner_x = m00 * cols + m01 * rows;
    let corner_y = m10 * cols + m11 * rows;
    [m00, m01, (size.0 - corner_x) / 2.0, m10, m11, (size.1 - corner_y) / 2.0]
}

/// `img` warped with a random rotation, shear, scale and aspect ratio as
/// MXNet draws them: a fixed `rotate` overrides the drawn angle, and a
/// non-empty `rotate_list` both (an angle drawn uniformly from it, after
/// the others, as MXNet's order of draws has it).
pub fn random_affine(
    p: &AugmentParams,
    rotate_list: &[i32],
    inter: i64,
    img: &Image,
    rng: &mut Pcg64,
) -> Result<Image> {
    let shear = uniform(rng, -p.max_shear_ratio, p.max_shear_ratio);
    let mut angle = rng.random_range(-p.max_rotate_angle..=p.max_rotate_angle);
    if p.rotate > 0 {
        angle = p.rotate;
    }
    if !rotate_list.is_empty() {
        angle = rotate_list[rng.random_range(0..rotate_list.len())];
    }
    let (scale, ratio) = if p.random_resized_crop {
        (1.0, 1.0)
    } else {
        let (lo, hi) = p.aspect_range();
        (uniform(rng, p.min_random_scale, p.max_random_scale), uniform(rng, lo, hi))
    };
    let limit = |v: f32| p.min_img_size.max(p.max_img_size.min(v));
    let size = (limit(scale * img.width as f32), limit(scale * img.height as f32));
    // OpenCV's size of floats: truncated
    let (width, height) = ((size.0 as usize).max(1), (size.1 as usize).max(1));
    let m = affine_matrix(angle, shear, scale, ratio, (img.width, img.height), size);
    let method = inter_method(inter, (img.width, img.height), (width, height), rng)?;
    Ok(warp_affine(img, m.map(f64::from), (width, height), method, p.fill()))
}

/// `img` with `pad` pixels of `fill` added on every side.
pub fn pad(img: &Image, pad: usize, fill: u8) -> Image {
    let c = img.channels;
    let (width, height) = (img.width + 2 * pad, img.height + 2 * pad);
    let mut data = vec![fill; width * height * c];
    for y in 0..img.height {
        let to = ((y + pad) * width + pad) * c;
        data[to..to + img.width * c].copy_from_slice(&img.data[y * img.width * c..(y + 1) * img.width * c]);
    }
    Image { height, width, channels: c, data }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_keeps_the_centre() {
        // 90 degrees of a 4×2 image into 4×2: centre (2, 1) maps to (2, 1)
        let m = affine_matrix(90, 0.0, 1.0, 1.0, (4, 2), (4.0, 2.0));
        let (x, y) = (m[0] * 2.0 + m[1] * 1.0 + m[2], m[3] * 2.0 + m[4] * 1.0 + m[5]);
        assert!((x - 2.0).abs() < 1e-5 && (y - 1.0).abs() < 1e-5, "{x} {y}");
        // rotation part: (x, y) -> (y, -x) up to rounding of cos 90°
        assert!(m[0].abs() < 1e-6 && (m[1] - 1.0).abs() < 1e-6 && (m[3] + 1.0).abs() < 1e-6);
        // scale 0.5, ratio 3: hs = 0.25, ws = 0.75 (width grows against height)
        let m = affine_matrix(0, 0.0, 0.5, 3.0, (8, 8), (4.0, 4.0));
        assert_eq!(m, [0.25, 0.0, 1.0, -0.0, 0.75, -1.0]);
    }

    #[test]
    fn rotate_list_picks_each_listed_angle() {
        use crate::resize::Interp;
        use rand::SeedableRng;
        let data = (0..7 * 9 * 3).map(|i| (i * 37 % 251) as u8).collect();
        let img = Image::new(7, 9, 3, data).unwrap();
        // the list overrides a fixed rotation and the random range
        let p = AugmentParams { rotate: 30, max_rotate_angle: 10, ..Default::default() };
        let list = [0, 90, -45, 200];
        let by_angle: Vec<Image> = list
            .iter()
            .map(|&a| {
                let m = affine_matrix(a, 0.0, 1.0, 1.0, (9, 7), (9.0, 7.0));
                warp_affine(&img, m.map(f64::from), (9, 7), Interp::Linear, p.fill())
            })
            .collect();
        let mut seen = [0usize; 4];
        for seed in 0..64 {
            let out = random_affine(&p, &list, 1, &img, &mut Pcg64::seed_from_u64(seed)).unwrap();
            let k = by_angle.iter().position(|r| *r == out).expect("a rotation by a listed angle");
            seen[k] += 1;
        }
        assert!(seen.iter().all(|&n| n >= 6), "{seen:?}");
        // angle 0 keeps the image
        assert_eq!(by_angle[0], img);
    }

    #[test]
    fn padding() {
        let img = Image::new(1, 2, 1, vec![1, 2]).unwrap();
        let out = pad(&img, 1, 9);
        assert_eq!((out.height, out.width), (3, 4));
        assert_eq!(out.data, vec![9, 9, 9, 9, 9, 1, 2, 9, 9, 9, 9, 9]);
    }
}
