//! MXNet's three crops: a random resized crop (a random area and aspect
//! ratio, up to ten tries), a square crop of random size, both resized to
//! the output; otherwise the output's size cut from the image (enlarged
//! first if smaller), centrally or at random.

use super::params::AugmentParams;
use super::{inter_method, uniform};
use crate::image::Image;
use crate::resize::resize;
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_pcg::Pcg64;

/// The `width × height` region of `img` at (`x`, `y`).
pub fn cut(img: &Image, x: usize, y: usize, width: usize, height: usize) -> Image {
    let c = img.channels;
    let mut data = Vec::with_capacity(width * height * c);
    for row in y..y + height {
        let from = (row * img.width + x) * c;
        data.extend_from_slice(&img.data[from..from + width * c]);
    }
    Image { height, width, channels: c, data }
}

/// A crop of a random fraction of the area (`[min_random_area,
/// max_random_area]`) and aspect ratio, its sides swapped half the time,
/// resized to `out` (width, height); `None` when ten tries do not fit
/// (or nothing is asked for), leaving the plain crop to follow.
pub fn random_resized(
    p: &AugmentParams,
    inter: i64,
    img: &Image,
    out: (usize, usize),
    rng: &mut Pcg64,
) -> Result<Option<Image>> {
    let (lo, hi) = p.aspect_range();
    if p.max_random_area == 1.0 && p.min_random_area == 1.0 && lo == 1.0 && hi == 1.0 {
        return Ok(None);
    }
    let area = (img.height * img.width) as f32;
    for _ in 0..10 {
        let target = area * uniform(rng, p.min_random_area, p.max_random_area);
        let ratio = uniform(rng, lo, hi);
        let mut h = (target / ratio).sqrt().round() as usize;
        let mut w = (target * ratio).sqrt().round() as usize;
        if rng.random::<f32>() > 0.5 {
            std::mem::swap(&mut h, &mut w);
        }
        if h <= img.height && w <= img.width && h > 0 && w > 0 {
            let y = rng.random_range(0..=img.height - h);
            let x = rng.random_range(0..=img.width - w);
            let method = inter_method(inter, (w, h), out, rng)?;
            return Ok(Some(resize(&cut(img, x, y, w, h), out.1, out.0, method)?));
        }
    }
    Ok(None)
}

/// A square crop of a random side in `[min_crop_size, max_crop_size]`
/// (at random with `rand_crop`, else central), resized to `out`.
pub fn random_size(
    p: &AugmentParams,
    rand_crop: bool,
    inter: i64,
    img: &Image,
    out: (usize, usize),
    rng: &mut Pcg64,
) -> Result<Image> {
    let max = p.max_crop_size as usize;
    if img.width < max || img.height < max {
        return Err(Error::attr(
            "max_crop_size",
            format!("ImageRecordIter: max_crop_size {max} exceeds the image ({}x{})", img.width, img.height),
        ));
    }
    let side = rng.random_range(p.min_crop_size as usize..=max);
    let (spare_y, spare_x) = (img.height - side, img.width - side);
    let (y, x) = if rand_crop {
        (rng.random_range(0..=spare_y), rng.random_range(0..=spare_x))
    } else {
        (spare_y / 2, spare_x / 2)
    };
    let method = inter_method(inter, (side, side), out, rng)?;
    resize(&cut(img, x, y, side, side), out.1, out.0, method)
}

/// The output's `out` (width, height) cut from `img`, centrally or at
/// random with `rand_crop`, after enlarging an image smaller than it
/// (keeping its aspect ratio).
pub fn output_size(
    rand_crop: bool,
    inter: i64,
    mut img: Image,
    out: (usize, usize),
    rng: &mut Pcg64,
) -> Result<Image> {
    let (w, h) = out;
    // MXNet picks the method once, from the image's and the output's sizes
    let method = inter_method(inter, (img.width, img.height), out, rng)?;
    if img.height < h {
        let nw = (h as f32 / img.height as f32 * img.width as f32) as usize;
        img = resize(&img, h, nw, method)?;
    }
    if img.width < w {
        let nh = (w as f32 / img.width as f32 * img.height as f32) as usize;
        img = resize(&img, nh, w, method)?;
    }
    if img.height < h || img.width < w {
        return Err(Error::Invalid(format!(
            "an image of {}x{} is smaller than the output {w}x{h}",
            img.width, img.height
        )));
    }
    let (spare_y, spare_x) = (img.height - h, img.width - w);
    let (y, x) = if rand_crop {
        (rng.random_range(0..=spare_y), rng.random_range(0..=spare_x))
    } else {
        (spare_y / 2, spare_x / 2)
    };
    Ok(cut(&img, x, y, w, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn img(h: usize, w: usize) -> Image {
        Image::new(h, w, 1, (0..h * w).map(|i| i as u8).collect()).unwrap()
    }

    #[test]
    fn crops() {
        let mut rng = Pcg64::seed_from_u64(1);
        assert_eq!(cut(&img(3, 4), 1, 1, 2, 2).data, vec![5, 6, 9, 10]);
        // central 2×2 of 4×4 (no resize needed: nearest keeps values)
        let p = AugmentParams { min_crop_size: 2, max_crop_size: 2, ..Default::default() };
        assert_eq!(random_size(&p, false, 0, &img(4, 4), (2, 2), &mut rng).unwrap().data, vec![5, 6, 9, 10]);
        let p = AugmentParams { min_crop_size: 5, max_crop_size: 5, ..Default::default() };
        assert!(random_size(&p, false, 0, &img(4, 4), (2, 2), &mut rng)
            .unwrap_err()
            .to_string()
            .contains("max_crop_size"));
        assert_eq!(output_size(false, 1, img(4, 6), (2, 2), &mut rng).unwrap().data, vec![8, 9, 14, 15]);
        // nothing asked for: no random resized crop
        assert!(random_resized(&AugmentParams::default(), 1, &img(4, 4), (2, 2), &mut rng)
            .unwrap()
            .is_none());
    }

    #[test]
    fn random_resized_crop_areas_stay_in_range() {
        let p = AugmentParams {
            random_resized_crop: true,
            min_random_area: 0.25,
            max_random_area: 0.25,
            min_aspect_ratio: Some(1.0),
            max_aspect_ratio: 1.0,
            ..Default::default()
        };
        // a quarter of 8×8 at aspect 1: a 4×4 piece, nearest-resized to 4×4 unchanged
        let src = img(8, 8);
        for seed in 0..20 {
            let mut rng = Pcg64::seed_from_u64(seed);
            let out = random_resized(&p, 0, &src, (4, 4), &mut rng).unwrap().unwrap();
            let (y, x) = ((out.data[0] / 8) as usize, (out.data[0] % 8) as usize);
            assert!(y <= 4 && x <= 4);
            assert_eq!(out, cut(&src, x, y, 4, 4));
        }
    }
}
