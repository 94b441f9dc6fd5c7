//! MXNet's HSL jitter: the image converted to OpenCV's 8-bit HLS (hue 0 to
//! 180, lightness and saturation 0 to 255, computed in `f32` and rounded),
//! whole numbers added to each (drawn from `[-v, v]` by a bell-shaped
//! mix of two uniforms, truncated toward zero), clamped, and converted back.

use super::params::AugmentParams;
use crate::image::Image;
use rand::Rng;
use rand_pcg::Pcg64;

fn to_byte(v: f32) -> u8 {
    v.round_ties_even().clamp(0.0, 255.0) as u8
}

/// (hue, lightness, saturation) bytes of an RGB pixel, as OpenCV's
/// `COLOR_RGB2HLS` computes them.
pub fn rgb_to_hls([r, g, b]: [u8; 3]) -> [u8; 3] {
    let (r, g, b) = (f32::from(r) / 255.0, f32::from(g) / 255.0, f32::from(b) / 255.0);
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    let diff = max - min;
    let l = (max + min) * 0.5;
    let (mut h, mut s) = (0.0, 0.0);
    if diff > f32::EPSILON {
        s = if l < 0.5 { diff / (max + min) } else { diff / (2.0 - max - min) };
        let k = 60.0 / diff;
        h = if max == r {
            (g - b) * k
        } else if max == g {
            (b - r) * k + 120.0
        } else {
            (r - g) * k + 240.0
        };
        if h < 0.0 {
            h += 360.0;
        }
    }
    [to_byte(h * 0.5), to_byte(l * 255.0), to_byte(s * 255.0)]
}

/// The RGB bytes of OpenCV's 8-bit (hue, lightness, saturation), as its
/// `COLOR_HLS2RGB` computes them.
pub fn hls_to_rgb([h, l, s]: [u8; 3]) -> [u8; 3] {
    let (l, s) = (f32::from(l) / 255.0, f32::from(s) / 255.0);
    if s == 0.0 {
        let v = to_byte(l * 255.0);
        return [v, v, v];
    }
    let p2 = if l <= 0.5 { l * (1.0 + s) } else { l + s - l * s };
    let p1 = 2.0 * l - p2;
    let mut h = f32::from(h) * (6.0 / 180.0);
    while h < 0.0 {
        h += 6.0;
    }
    while h >= 6.0 {
        h -= 6.0;
    }
    let sector = h.floor() as usize;
    let f = h - sector as f32;
    let (top, bottom, falling, rising) = (p2, p1, p1 + (p2 - p1) * (1.0 - f), p1 + (p2 - p1) * f);
    let [r, g, b] = match sector {
        0 => [top, rising, bottom],
        1 => [falling, top, bottom],
        2 => [bottom, top, rising],
        3 => [bottom, falling, top],
        4 => [rising, bottom, top],
        _ => [top, bottom, falling],
    };
    [to_byte(r * 255.0), to_byte(g * 255.0), to_byte(b * 255.0)]
}

/// MXNet's draw of a whole offset in `[-v, v]`: `(u1 + 4·u2) / 5` scaled,
/// truncated toward zero.
fn offset(rng: &mut Pcg64, v: i32) -> i32 {
    let r = (rng.random::<f32>() + 4.0 * rng.random::<f32>()) / 5.0;
    (r * v as f32 * 2.0 - v as f32) as i32
}

/// Adds the offsets (`dh`, `dl`, `ds`) to every pixel in HLS, clamped to
/// 0..=180 for the hue and 0..=255 for the others.
pub fn shift(img: &mut Image, (dh, dl, ds): (i32, i32, i32)) {
    for px in img.data.chunks_exact_mut(3) {
        let [h, l, s] = rgb_to_hls([px[0], px[1], px[2]]);
        let h = (i32::from(h) + dh).clamp(0, 180) as u8;
        let l = (i32::from(l) + dl).clamp(0, 255) as u8;
        let s = (i32::from(s) + ds).clamp(0, 255) as u8;
        px.copy_from_slice(&hls_to_rgb([h, l, s]));
    }
}

/// HSL jitter of an RGB image by offsets drawn from `[-random_h, random_h]`,
/// `[-random_s, random_s]`, `[-random_l, random_l]`.
pub fn jitter(p: &AugmentParams, img: &mut Image, rng: &mut Pcg64) {
    let dh = offset(rng, p.random_h);
    let ds = offset(rng, p.random_s);
    let dl = offset(rng, p.random_l);
    shift(img, (dh, dl, ds));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_conversions() {
        // pure red: hue 0, lightness 127.5 -> 128 (half to even), saturation 255
        assert_eq!(rgb_to_hls([255, 0, 0]), [0, 128, 255]);
        // (0, 128, 255): hue (0 - ... ) 240 - 60·(128/255)/1 = 209.88° -> 104.9 -> 105
        assert_eq!(rgb_to_hls([0, 128, 255]), [105, 128, 255]);
        assert_eq!(rgb_to_hls([90, 90, 90]), [0, 90, 0]);
        assert_eq!(hls_to_rgb([0, 128, 255]), [255, 1, 1]);
        assert_eq!(hls_to_rgb([60, 64, 255]), [0, 128, 0]);
        assert_eq!(hls_to_rgb([7, 90, 0]), [90, 90, 90]);
        // round trips stay within a grey level or two for saturated colours
        for px in [[200u8, 30, 60], [12, 240, 100], [50, 60, 70]] {
            let back = hls_to_rgb(rgb_to_hls(px));
            assert!(px.iter().zip(back).all(|(&a, b)| (a as i32 - b as i32).abs() <= 3), "{px:?} {back:?}");
        }
    }

    #[test]
    fn lightness_shift_brightens() {
        let mut img = Image::new(1, 1, 3, vec![90, 90, 90]).unwrap();
        shift(&mut img, (0, 20, 0));
        assert_eq!(img.data, vec![110, 110, 110]);
    }
}
