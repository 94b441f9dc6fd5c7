//! MXNet's default image augmenter (`aug_default` of MXNet 1.9.1's
//! `ImageRecordIter`), step by step in its order: the shorter side
//! resized, an affine warp (rotation, fixed or drawn from a range or from
//! `rotate_list`, shear, scale, aspect ratio, size limits; [`geometry`],
//! [`warp`]), padding, a crop ([`crop`]: random resized, random size, or
//! the output size), colour jitter
//! ([`color`]: brightness, contrast and saturation in a random order),
//! HSL jitter ([`hsl`]) and PCA lighting noise ([`color`]).
//!
//! Images are RGB here where MXNet's are OpenCV's BGR; every step that
//! depends on the order (grey levels, PCA noise) is written for RGB with
//! the weights MXNet applies to each colour, so the results agree.
//! Random draws come from the image's own generator ([`Pcg64`]).

pub mod color;
pub mod crop;
pub mod det;
pub mod det_params;
pub mod geometry;
pub mod hsl;
pub mod params;
pub mod warp;

pub use params::AugmentParams;

use crate::image::Image;
use crate::image_record_iter::ImageRecordConfig;
use crate::resize::{resize, Interp};
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_pcg::Pcg64;

/// MXNet's interpolation choice for a resize from `from` to `to`
/// ((width, height)): 9 picks by the sizes, 10 at random, else as given.
pub fn inter_method(code: i64, from: (usize, usize), to: (usize, usize), rng: &mut Pcg64) -> Result<Interp> {
    let code = if code == 10 { rng.random_range(0..5) } else { code };
    Interp::from_code(code, (from.1, from.0), (to.1, to.0))
}

/// A uniform draw in `[lo, hi)` (`lo` when the range is empty).
pub(crate) fn uniform(rng: &mut Pcg64, lo: f32, hi: f32) -> f32 {
    lo + rng.random::<f32>() * (hi - lo)
}

/// One image through MXNet's default augmenter: the result has the
/// output's height and width (`config.data_shape`).
pub fn augment(config: &ImageRecordConfig, mut img: Image, rng: &mut Pcg64) -> Result<Image> {
    let p = &config.augment;
    let [_, h, w] = config.data_shape;
    if config.resize > 0 {
        let r = config.resize;
        let (nh, nw) = if img.height > img.width {
            (r * img.height / img.width, r)
        } else {
            (r, r * img.width / img.height)
        };
        let method = inter_method(config.inter_method, (img.width, img.height), (nw, nh), rng)?;
        img = resize(&img, nh, nw, method)?;
    }
    if p.warps() || !config.rotate_list.is_empty() {
        img = geometry::random_affine(p, &config.rotate_list, config.inter_method, &img, rng)?;
    }
    if p.pad > 0 {
        img = geometry::pad(&img, p.pad, p.fill());
    }
    let cropped = if p.random_resized_crop {
        crop::random_resized(p, config.inter_method, &img, (w, h), rng)?
    } else if p.max_crop_size != -1 || p.min_crop_size != -1 {
        Some(crop::random_size(p, config.rand_crop, config.inter_method, &img, (w, h), rng)?)
    } else {
        None
    };
    img = match cropped {
        Some(img) => img,
        None => crop::output_size(config.rand_crop, config.inter_method, img, (w, h), rng)?,
    };
    if p.brightness > 0.0 || p.contrast > 0.0 || p.saturation > 0.0 {
        color::jitter(p, &mut img, rng)?;
    }
    if p.random_h != 0 || p.random_s != 0 || p.random_l != 0 {
        if img.channels != 3 {
            return Err(Error::attr("random_h", "ImageRecordIter: HSL jitter needs 3 colour channels"));
        }
        hsl::jitter(p, &mut img, rng);
    }
    if p.pca_noise > 0.0 {
        if img.channels != 3 {
            return Err(Error::attr("pca_noise", "ImageRecordIter: PCA noise needs 3 colour channels"));
        }
        color::pca_noise(p.pca_noise, &mut img, rng);
    }
    Ok(img)
}
