//! An affine warp with OpenCV's rules (`cv::warpAffine` with a constant
//! border, which MXNet's augmenter calls): the forward matrix inverted in
//! `f64`, source coordinates in fixed point (10 fractional bits, cut to
//! 1/32 of a pixel), weights from OpenCV's tables of 15-bit fixed-point
//! products of the `f32` kernels (rounded, saturated to 16 bits, their sum
//! mended as OpenCV does), and taps outside the image taking the fill
//! value. The results are OpenCV 3.4.2's bit for bit (checked against
//! MXNet 1.9.1's `ImageRecordIter` for every interpolation).

use crate::image::Image;
use crate::resize::{cubic, lanczos, Interp};
use std::sync::OnceLock;

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

/// The number of taps along each axis of `interp`, and the offset of the
/// first from the coordinate's floor.
fn taps(interp: Interp) -> (usize, i32) {
    match interp {
        Interp::Cubic => (4, -1),
        Interp::Lanczos => (8, -3),
        _ => (2, 0),
    }
}

/// The 1-D `f32` weights of `interp` at fraction `t` of a pixel.
fn kernel(interp: Interp, t: f32) -> Vec<f32> {
    match interp {
        Interp::Cubic => cubic(t).to_vec(),
        Interp::Lanczos => lanczos(t).to_vec(),
        _ => vec![1.0 - t, t],
    }
}

/// OpenCV's table of 2-D fixed-point weights, one entry per fraction pair
/// (`fy · 32 + fx`, in 1/32 pixel), row by row: the products of the 1-D
/// `f32` weights rounded to 15 bits; where they do not sum to `1 << 15`,
/// the difference taken from the smallest (or given to the largest) of
/// the four weights at taps `n/2` and `n/2 + 1` of each axis, as OpenCV
/// does.
fn table(interp: Interp) -> Vec<Vec<i32>> {
    let (n, _) = taps(interp);
    let one = 1 << COEF_BITS;
    let step = 1.0 / INTER_TAB_SIZE as f32;
    let k1d: Vec<Vec<f32>> = (0..INTER_TAB_SIZE).map(|i| kernel(interp, i as f32 * step)).collect();
    let mut out = Vec::with_capacity((INTER_TAB_SIZE * INTER_TAB_SIZE) as usize);
    for ky in &k1d {
        for kx in &k1d {
            let mut w: Vec<i32> = ky
                .iter()
                .flat_map(|&vy| {
                    kx.iter().map(move |&vx| {
                        ((vy * vx * one as f32).round_ties_even() as i32).clamp(-32768, 32767)
                    })
                })
                .collect();
            let diff = w.iter().sum::<i32>() - one;
            if diff != 0 {
                let centre = n / 2;
                let (mut small, mut large) = (centre * n + centre, centre * n + centre);
                for r in centre..centre + 2 {
                    for col in centre..centre + 2 {
                        // for two taps (bilinear) OpenCV's loop reads past
                        // the entry, into the next one's weights, not yet
                        // computed (zeros), which never win
                        let i = r * n + col;
                        if i >= w.len() {
                            continue;
                        }
                        if w[i] < w[small] {
                            small = i;
                        } else if w[i] > w[large] {
                            large = i;
                        }
                    }
                }
                if diff < 0 {
                    w[large] -= diff;
                } else {
                    w[small] -= diff;
                }
            }
            out.push(w);
        }
    }
    out
}

/// [`table`] of `interp`, made once.
fn cached_table(interp: Interp) -> &'static [Vec<i32>] {
    static TABLES: [OnceLock<Vec<Vec<i32>>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match interp {
        Interp::Cubic => 1,
        Interp::Lanczos => 2,
        _ => 0,
    };
    TABLES[slot].get_or_init(|| table(interp))
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
    let (n, offset) = taps(interp);
    let table: &[Vec<i32>] = if nearest { &[] } else { cached_table(interp) };
    let taps = if nearest { 1 } else { n as i32 };
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
            let t = table(interp);
            assert_eq!(t.len(), 32 * 32);
            assert!(t.iter().all(|w| w.iter().sum::<i32>() == 1 << COEF_BITS), "{interp:?}");
        }
        // bilinear weights are exact products: (32 - 8)(32 - 16)·32 for the first tap
        assert_eq!(
            table(Interp::Linear)[16 * 32 + 8],
            vec![24 * 16 * 32, 8 * 16 * 32, 24 * 16 * 32, 8 * 16 * 32]
        );
        // a whole pixel: the tap at the floor alone, but 1 << 15 saturates
        // to 32767 in OpenCV's 16-bit table, and the missing 1 goes to the
        // first of the central taps it looks at (row 2, column 2)
        let mut unit = vec![0; 16];
        unit[5] = (1 << COEF_BITS) - 1;
        unit[10] = 1;
        assert_eq!(table(Interp::Cubic)[0], unit);
    }
}

#[cfg(test)]
mod mxnet_dump {
    use super::*;
    use crate::augment::geometry::affine_matrix;

    /// Warps dumped from MXNet 1.9.1's `ImageRecordIter` (a developer's
    /// check, not run by default; `scripts/make_resize_fixture.py
    /// --dump-warp FILE N`, then `OXNET_WARP_CASES=FILE cargo test
    /// --release -p oxnet-io -- --ignored warp_dump`): records of six
    /// little-endian u32 (h, w, c, angle, interp, fill) and two f32 (scale,
    /// aspect ratio), the source bytes and MXNet's result.
    #[test]
    #[ignore]
    fn warp_dump() {
        let Ok(path) = std::env::var("OXNET_WARP_CASES") else { return };
        let bytes = std::fs::read(path).unwrap();
        let (mut at, mut cases, mut bad) = (0, 0, 0);
        let mut per_interp = [(0usize, 0usize); 5];
        while at < bytes.len() {
            let word = |i: usize| u32::from_le_bytes(bytes[at + 4 * i..at + 4 * i + 4].try_into().unwrap());
            let [h, w, c, angle, code, fill] = [0, 1, 2, 3, 4, 5].map(|i| word(i) as usize);
            let (scale, ratio) = (f32::from_bits(word(6)), f32::from_bits(word(7)));
            at += 32;
            let img = Image::new(h, w, c, bytes[at..at + h * w * c].to_vec()).unwrap();
            at += h * w * c;
            let size = (scale * w as f32, scale * h as f32);
            let (nw, nh) = ((size.0 as usize).max(1), (size.1 as usize).max(1));
            let want = &bytes[at..at + nh * nw * c];
            at += nh * nw * c;
            let interp = Interp::from_code(code as i64, (h, w), (nh, nw)).unwrap();
            let m = affine_matrix(angle as i32, 0.0, scale, ratio, (w, h), size);
            let got = warp_affine(&img, m.map(f64::from), (nw, nh), interp, fill as u8);
            cases += 1;
            per_interp[code].0 += 1;
            if got.data != want {
                bad += 1;
                per_interp[code].1 += 1;
                let n = (0..want.len()).filter(|&i| got.data[i] != want[i]).count();
                if bad <= 10 {
                    eprintln!("{h}x{w}x{c} angle {angle} interp {code}: {n} differ");
                }
            }
        }
        eprintln!("{cases} cases, {bad} differ; per interp (cases, differ): {per_interp:?}");
        assert_eq!(bad, 0);
    }
}
