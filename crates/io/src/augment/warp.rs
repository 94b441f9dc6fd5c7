//! An affine warp with OpenCV's rules (`cv::warpAffine` with a constant
//! border, which MXNet's augmenter calls): the forward matrix inverted in
//! `f64`, source coordinates in fixed point (10 fractional bits, cut to
//! 1/32 of a pixel), bilinear weights in 15-bit fixed point, and taps
//! outside the image taking the fill value. Nearest and bilinear results
//! are OpenCV's exactly; bicubic and Lanczos weights are rounded from
//! `f32` kernels, so they may differ from OpenCV's by one grey level.

use crate::image::Image;
use crate::resize::Interp;

/// Fractional bits of the source coordinates OpenCV keeps for the weights.
const INTER_BITS: i32 = 5;
const INTER_TAB_SIZE: i32 = 1 << INTER_BITS;
/// Fractional bits of the coordinates as first computed.
const AB_BITS: i32 = 10;
const AB_SCALE: f64 = (1 << AB_BITS) as f64;
/// Fixed-point bits of the interpolation weights.
const COEF_BITS: i32 = 15;

/// The inverse of the 2×3 affine map `m` (row-major), as OpenCV computes it
/// (a singular map gives zeros).
pub fn invert(m: [f64; 6]) -> [f64; 6] {
    let d = m[0] * m[4] - m[1] * m[3];
    let d = if d != 0.0 { 1.0 / d } else { 0.0 };
    let (a11, a22) = (m[4] * d, m[0] * d);
    let (a12, a21) = (-m[1] * d, -m[3] * d);
    let b1 = -a11 * m[2] - a12 * m[5];
    let b2 = -a21 * m[2] - a22 * m[5];
    [a11, a12, b1, a21, a22, b2]
}

/// OpenCV's `saturate_cast<int>` of a double: rounded half to even.
fn round_int(v: f64) -> i32 {
    v.round_ties_even().clamp(i32::MIN as f64, i32::MAX as f64) as i32
}

/// The 1-D weights of `interp` at fraction `t` of a pixel, and the offset
/// of the first tap from the coordinate's floor.
fn kernel(interp: Interp, t: f32) -> (Vec<f32>, i32) {
    match interp {
        Interp::Cubic => {
            const A: f32 = -0.75;
            let c0 = ((A * (t + 1.0) - 5.0 * A) * (t + 1.0) + 8.0 * A) * (t + 1.0) - 4.0 * A;
            let c1 = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
            let c2 = ((A + 2.0) * (1.0 - t) - (A + 3.0)) * (1.0 - t) * (1.0 - t) + 1.0;
            (vec![c0, c1, c2, 1.0 - c0 - c1 - c2], -1)
        }
        Interp::Lanczos => {
            let mut w: Vec<f32> = (0..8)
                .map(|k| {
                    let x = t + 3.0 - k as f32;
                    if x.abs() < 1e-6 {
                        1.0
                    } else {
                        let p = std::f32::consts::PI * x;
                        4.0 * p.sin() * (p / 4.0).sin() / (p * p)
                    }
                })
                .collect();
            let sum: f32 = w.iter().sum();
            w.iter_mut().for_each(|v| *v /= sum);
            (w, -3)
        }
        _ => (vec![1.0 - t, t], 0),
    }
}

/// The 2-D fixed-point weights for fractions (`fx`, `fy`) in 1/32 pixel,
/// row by row, summing to `1 << COEF_BITS`.
fn weights(interp: Interp, fx: i32, fy: i32) -> Vec<i32> {
    let scale = (1 << COEF_BITS) as f32;
    let (kx, _) = kernel(interp, fx as f32 / INTER_TAB_SIZE as f32);
    let (ky, _) = kernel(interp, fy as f32 / INTER_TAB_SIZE as f32);
    let mut w: Vec<i32> = ky
        .iter()
        .flat_map(|&vy| kx.iter().map(move |&vx| (vy * vx * scale).round_ties_even() as i32))
        .collect();
    let diff = w.iter().sum::<i32>() - (1 << COEF_BITS);
    if diff != 0 {
        // as OpenCV, the rounding error goes to the largest weight
        let big = (0..w.len()).max_by_key(|&i| w[i]).unwrap_or(0);
        w[big] -= diff;
    }
    w
}

/// `img` warped by the forward affine map `m` (destination = m · source,
/// row-major 2×3) into `width × height`, with `interp` (area counts as
/// bilinear, as in OpenCV) and `fill` outside the source.
pub fn warp_affine(
    img: &Image,
    m: [f64; 6],
    (width, height): (usize, usize),
    interp: Interp,
    fill: u8,
) -> Image {
    let inv = invert(m);
    let c = img.channels;
    let (sw, sh) = (img.width as i32, img.height as i32);
    let interp = if interp == Interp::Area { Interp::Linear } else { interp };
    let nearest = interp == Interp::Nearest;
    let round_delta = if nearest { AB_SCALE as i32 / 2 } else { AB_SCALE as i32 / INTER_TAB_SIZE / 2 };
    let adelta: Vec<i32> = (0..width).map(|x| round_int(inv[0] * x as f64 * AB_SCALE)).collect();
    let bdelta: Vec<i32> = (0..width).map(|x| round_int(inv[3] * x as f64 * AB_SCALE)).collect();
    let offset = kernel(interp, 0.0).1;
    let mut table = Vec::new();
    if !nearest {
        for fy in 0..INTER_TAB_SIZE {
            for fx in 0..INTER_TAB_SIZE {
                table.push(weights(interp, fx, fy));
            }
        }
    }
    let taps = if nearest { 1 } else { kernel(interp, 0.0).0.len() as i32 };
    let mut out = vec![fill; width * height * c];
    let mut acc = vec![0i32; c];
    for y in 0..height {
        let x0 = round_int((inv[1] * y as f64 + inv[2]) * AB_SCALE) + round_delta;
        let y0 = round_int((inv[4] * y as f64 + inv[5]) * AB_SCALE) + round_delta;
        for x in 0..width {
            let dst = &mut out[(y * width + x) * c..(y * width + x + 1) * c];
            if nearest {
                let (sx, sy) = ((x0 + adelta[x]) >> AB_BITS, (y0 + bdelta[x]) >> AB_BITS);
                if sx >= 0 && sy >= 0 && sx < sw && sy < sh {
                    let src = (sy as usize * img.width + sx as usize) * c;
                    dst.copy_from_slice(&img.data[src..src + c]);
                }
                continue;
            }
            let xs = (x0 + adelta[x]) >> (AB_BITS - INTER_BITS);
            let ys = (y0 + bdelta[x]) >> (AB_BITS - INTER_BITS);
            let (sx, sy) = ((xs >> INTER_BITS) + offset, (ys >> INTER_BITS) + offset);
            if sx >= sw || sx + taps <= 0 || sy >= sh || sy + taps <= 0 {
                continue; // every tap outside: the fill value
            }
            let w =
                &table[((ys & (INTER_TAB_SIZE - 1)) * INTER_TAB_SIZE + (xs & (INTER_TAB_SIZE - 1))) as usize];
            acc.iter_mut().for_each(|a| *a = 0);
            for ky in 0..taps {
                let yy = sy + ky;
                for kx in 0..taps {
                    let xx = sx + kx;
                    let wk = w[(ky * taps + kx) as usize];
                    if xx >= 0 && yy >= 0 && xx < sw && yy < sh {
                        let src = (yy as usize * img.width + xx as usize) * c;
                        for (a, &v) in acc.iter_mut().zip(&img.data[src..src + c]) {
                            *a += wk * i32::from(v);
                        }
                    } else {
                        acc.iter_mut().for_each(|a| *a += wk * i32::from(fill));
                    }
                }
            }
            for (d, &a) in dst.iter_mut().zip(&acc) {
                *d = ((a + (1 << (COEF_BITS - 1))) >> COEF_BITS).clamp(0, 255) as u8;
            }
        }
    }
    Image { height, width, channels: c, data: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp() -> Image {
        let data = (0..4 * 5).map(|i| (i * 10) as u8).collect();
        Image::new(4, 5, 1, data).unwrap()
    }

    #[test]
    fn identity_and_shift_are_exact() {
        let img = ramp();
        let same = warp_affine(&img, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0], (5, 4), Interp::Linear, 7);
        assert_eq!(same, img);
        // one pixel right: the first column is the fill value
        let moved = warp_affine(&img, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0], (5, 4), Interp::Nearest, 7);
        assert_eq!(&moved.data[..5], &[7, 0, 10, 20, 30]);
        // half a pixel right, bilinear: means of neighbours, the first blended with the fill
        let half = warp_affine(&img, [1.0, 0.0, 0.5, 0.0, 1.0, 0.0], (5, 4), Interp::Linear, 7);
        assert_eq!(&half.data[..5], &[4, 5, 15, 25, 35]);
    }

    #[test]
    fn inversion_and_weights() {
        let inv = invert([2.0, 0.0, 4.0, 0.0, 0.5, 1.0]);
        assert_eq!(inv, [0.5, -0.0, -2.0, -0.0, 2.0, -2.0]);
        for interp in [Interp::Linear, Interp::Cubic, Interp::Lanczos] {
            for f in [0, 5, 16, 31] {
                assert_eq!(weights(interp, f, 31 - f).iter().sum::<i32>(), 1 << COEF_BITS);
            }
        }
        // bilinear weights are exact products: (32 - 8)(32 - 16)·32 for the first tap
        assert_eq!(
            weights(Interp::Linear, 8, 16),
            vec![24 * 16 * 32, 8 * 16 * 32, 24 * 16 * 32, 8 * 16 * 32]
        );
    }
}
