//! MXNet's colour jitter (brightness, contrast and saturation, each by a
//! factor `1 + u` with `u` drawn from `[-v, v]`, applied in a random order,
//! each rounding back to bytes) and its PCA lighting noise (AlexNet's:
//! the ImageNet RGB covariance's eigenvectors weighted by eigenvalues and
//! normal draws, one constant added per channel).

use super::params::AugmentParams;
use super::uniform;
use crate::image::Image;
use oxnet_core::Result;
use rand::Rng;
use rand_pcg::Pcg64;

/// The ImageNet RGB eigenvalues times their eigenvectors, row `i` for
/// channel `i` (R, G, B), column `j` for eigenvalue `j` (55.46, 4.794, 1.148).
pub const PCA_EIGVEC: [[f32; 3]; 3] = [
    [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
];

/// The grey level of each pixel as MXNet computes it for contrast and
/// saturation: OpenCV's fixed-point RGB-to-grey weights applied to its BGR
/// data as if RGB, so 0.299 weighs blue and 0.114 red; a grey image's own
/// value.
pub fn grey_levels(img: &Image) -> Vec<u8> {
    if img.channels < 3 {
        return img.data.iter().step_by(img.channels).copied().collect();
    }
    img.data
        .chunks_exact(img.channels)
        .map(|p| {
            ((u32::from(p[0]) * 1868 + u32::from(p[1]) * 9617 + u32::from(p[2]) * 4899 + (1 << 13)) >> 14)
                as u8
        })
        .collect()
}

/// A computed value stored back as a byte: rounded half to even, saturated.
fn to_byte(v: f32) -> u8 {
    v.round_ties_even().clamp(0.0, 255.0) as u8
}

/// Brightness: every value times `alpha`.
pub fn brightness(img: &mut Image, alpha: f32) {
    img.data.iter_mut().for_each(|v| *v = to_byte(f32::from(*v) * alpha));
}

/// Contrast: every value `v · alpha + (1 - alpha) · m`, `m` the mean grey level.
pub fn contrast(img: &mut Image, alpha: f32) {
    let grey = grey_levels(img);
    let mean = (grey.iter().map(|&g| f64::from(g)).sum::<f64>() / grey.len().max(1) as f64) as f32;
    let beta = (1.0 - alpha) * mean;
    img.data.iter_mut().for_each(|v| *v = to_byte(f32::from(*v) * alpha + beta));
}

/// Saturation: each colour value blended with its pixel's grey level,
/// `v · alpha + g · (1 - alpha)` (an alpha channel is kept).
pub fn saturation(img: &mut Image, alpha: f32) {
    let grey = grey_levels(img);
    let c = img.channels;
    let colours = c.min(3);
    for (px, &g) in img.data.chunks_exact_mut(c).zip(&grey) {
        for v in &mut px[..colours] {
            *v = to_byte(f32::from(*v) * alpha + f32::from(g) * (1.0 - alpha));
        }
    }
}

/// Brightness, contrast and saturation with factors drawn from
/// `1 ± brightness`, `1 ± contrast`, `1 ± saturation`, in a random order.
pub fn jitter(p: &AugmentParams, img: &mut Image, rng: &mut Pcg64) -> Result<()> {
    let alpha_b = 1.0 + uniform(rng, -p.brightness, p.brightness);
    let alpha_c = 1.0 + uniform(rng, -p.contrast, p.contrast);
    let alpha_s = 1.0 + uniform(rng, -p.saturation, p.saturation);
    let mut order = [0, 1, 2];
    for i in (1..3).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    for step in order {
        match step {
            0 => brightness(img, alpha_b),
            1 => contrast(img, alpha_c),
            _ => saturation(img, alpha_s),
        }
    }
    Ok(())
}

/// A draw of the normal distribution of mean 0 and deviation `sigma`
/// (Box–Muller).
pub fn normal(rng: &mut Pcg64, sigma: f32) -> f32 {
    let u1 = 1.0 - rng.random::<f64>(); // in (0, 1]
    let u2 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32 * sigma
}

/// The per-channel (R, G, B) offsets of PCA noise with coefficients `alpha`.
pub fn pca_offsets(alpha: [f32; 3]) -> [f32; 3] {
    PCA_EIGVEC.map(|row| row[0] * alpha[0] + row[1] * alpha[1] + row[2] * alpha[2])
}

/// Adds PCA lighting noise of level `sigma` to an RGB image: each channel
/// gets one offset, truncated toward zero with the value and saturated.
pub fn pca_noise(sigma: f32, img: &mut Image, rng: &mut Pcg64) {
    let alpha = [normal(rng, sigma), normal(rng, sigma), normal(rng, sigma)];
    add_offsets(img, pca_offsets(alpha));
}

/// Adds `offset[k]` to channel `k` as MXNet does: `int(v + offset)`
/// (toward zero), saturated to bytes.
pub fn add_offsets(img: &mut Image, offset: [f32; 3]) {
    for px in img.data.chunks_exact_mut(img.channels) {
        for (v, &o) in px.iter_mut().zip(&offset) {
            *v = ((f32::from(*v) + o) as i32).clamp(0, 255) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rgb(px: &[[u8; 3]]) -> Image {
        Image::new(1, px.len(), 3, px.concat()).unwrap()
    }

    #[test]
    fn grey_uses_mxnets_swapped_weights() {
        // pure blue weighs 0.299, pure red 0.114 (MXNet's BGR data through RGB weights)
        assert_eq!(grey_levels(&rgb(&[[0, 0, 200], [200, 0, 0], [0, 200, 0]])), vec![60, 23, 117]);
    }

    #[test]
    fn hand_computed_steps() {
        let mut img = rgb(&[[10, 100, 200]]);
        brightness(&mut img, 1.5);
        assert_eq!(img.data, vec![15, 150, 255]);
        // grey of (10, 100, 200): (10·1868 + 100·9617 + 200·4899 + 8192) >> 14 = 120
        let mut img = rgb(&[[10, 100, 200]]);
        contrast(&mut img, 0.5);
        assert_eq!(img.data, vec![65, 110, 160]); // v/2 + 60
        let mut img = rgb(&[[10, 100, 200]]);
        saturation(&mut img, 0.0);
        assert_eq!(img.data, vec![120, 120, 120]);
        let mut img = rgb(&[[0, 10, 250]]);
        add_offsets(&mut img, [-0.5, -0.5, 7.9]);
        assert_eq!(img.data, vec![0, 9, 255]);
    }

    #[test]
    fn normal_draws_have_the_deviation() {
        let mut rng = Pcg64::seed_from_u64(3);
        let draws: Vec<f32> = (0..20000).map(|_| normal(&mut rng, 2.0)).collect();
        let mean = draws.iter().sum::<f32>() / draws.len() as f32;
        let var = draws.iter().map(|d| (d - mean) * (d - mean)).sum::<f32>() / draws.len() as f32;
        assert!(mean.abs() < 0.05 && (var.sqrt() - 2.0).abs() < 0.05, "{mean} {var}");
    }
}
