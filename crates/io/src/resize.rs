//! Resizing images as `cv::resize` of the OpenCV 3.4.2 inside MXNet
//! 1.9.1's wheel does (which `mx.image.imresize`, `mx.nd.image.resize` and
//! the record iterators call): the same pixel centres
//! (`src = (dst + 0.5) · scale - 0.5`), border replication and kernels
//! (nearest, bilinear, bicubic with `a = -0.75`, area averaging when
//! neither side grows, Lanczos with 8 taps).
//!
//! `uint8` images come out bit for bit as OpenCV's: weights in 11-bit
//! fixed point rounded from `f32` kernels, a horizontal pass into `i32`
//! rows and a vertical pass with OpenCV's shifts, including the rounding of
//! its SSE loops (bilinear: 16-bit high products of the rows shifted right
//! by 4; bicubic: `f32` sums rounded to even) over the part of each row
//! they cover, and its scalar rounding over the rest. Area averaging by
//! whole factors takes OpenCV's fast path (`(sum + 2) >> 2` for 2×2,
//! else the sum times `1 / area` in `f32`); other shrinks its table of
//! `f32` cell weights, summed in its order. Bilinear halving of both sides
//! is area averaging, as in OpenCV. `f32` images are computed in `f32` with
//! the same taps (not OpenCV's float code, so within rounding of it).

use crate::image::Image;
use oxnet_core::{Error, Result};

/// An interpolation method, by MXNet's and OpenCV's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interp {
    /// 0: the nearest pixel.
    Nearest,
    /// 1: bilinear.
    Linear,
    /// 2: bicubic over 4×4 pixels.
    Cubic,
    /// 3: averaging the source area each pixel covers (bilinear when enlarging).
    Area,
    /// 4: Lanczos over 8×8 pixels.
    Lanczos,
}

impl Interp {
    /// The method numbered `n` (0 to 4). MXNet's 9 ("auto") picks by the
    /// sizes: cubic to enlarge, area to shrink, bilinear otherwise.
    pub fn from_code(
        n: i64,
        (src_h, src_w): (usize, usize),
        (dst_h, dst_w): (usize, usize),
    ) -> Result<Interp> {
        Ok(match n {
            0 => Interp::Nearest,
            1 => Interp::Linear,
            2 => Interp::Cubic,
            3 => Interp::Area,
            4 => Interp::Lanczos,
            9 => {
                if dst_h > src_h && dst_w > src_w {
                    Interp::Cubic
                } else if dst_h < src_h && dst_w < src_w {
                    Interp::Area
                } else {
                    Interp::Linear
                }
            }
            _ => {
                return Err(Error::attr(
                    "interp",
                    format!("unknown interpolation {n}: use 0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area), 4 (Lanczos) or 9 (auto)"),
                ))
            }
        })
    }
}

/// The bicubic kernel (`a = -0.75`) at fraction `x`, in `f32` in OpenCV's
/// order of operations (its fixed-point weights are rounded from these).
pub(crate) fn cubic(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

/// The 8-tap Lanczos kernel at fraction `x` (taps at -3..=4), as OpenCV
/// computes it: the sines from one angle by the addition formulas in
/// `f64`, each tap stored as `f32`, normalised by their `f32` sum.
pub(crate) fn lanczos(x: f32) -> [f32; 8] {
    const S45: f64 = std::f64::consts::FRAC_1_SQRT_2;
    const CS: [[f64; 2]; 8] = [
        [1.0, 0.0],
        [-S45, -S45],
        [0.0, 1.0],
        [S45, -S45],
        [-1.0, 0.0],
        [S45, S45],
        [0.0, -1.0],
        [-S45, S45],
    ];
    let mut w = [0f32; 8];
    if x < f32::EPSILON {
        w[3] = 1.0;
        return w;
    }
    let y0 = -f64::from(x + 3.0) * std::f64::consts::PI * 0.25;
    let (s0, c0) = (y0.sin(), y0.cos());
    let mut sum = 0f32;
    for (i, wi) in w.iter_mut().enumerate() {
        let y = -f64::from(x + 3.0 - i as f32) * std::f64::consts::PI * 0.25;
        *wi = ((CS[i][0] * s0 + CS[i][1] * c0) / (y * y)) as f32;
        sum += *wi;
    }
    let inv = 1.0 / sum;
    w.map(|v| v * inv)
}

/// A sample type [`resize_pixels`] works on: bytes (OpenCV's fixed-point
/// arithmetic, bit-exact) or floats (computed in `f32`).
pub trait Sample: Copy + Default {
    /// `data` (`src` = height, width, channels) resized to `dst` (height,
    /// width) with `interp`; sizes already checked.
    fn resize_checked(
        data: &[Self],
        src: (usize, usize, usize),
        dst: (usize, usize),
        interp: Interp,
    ) -> Vec<Self>;
}

impl Sample for u8 {
    fn resize_checked(
        data: &[u8],
        src: (usize, usize, usize),
        dst: (usize, usize),
        interp: Interp,
    ) -> Vec<u8> {
        fixed::resize(data, src, dst, interp)
    }
}

impl Sample for f32 {
    fn resize_checked(
        data: &[f32],
        src: (usize, usize, usize),
        dst: (usize, usize),
        interp: Interp,
    ) -> Vec<f32> {
        float::resize(data, src, dst, interp)
    }
}

/// `data` (`height × width × channels`, row-major) resized to
/// `new_height × new_width` with `interp`.
pub fn resize_pixels<T: Sample>(
    data: &[T],
    (height, width, c): (usize, usize, usize),
    (new_height, new_width): (usize, usize),
    interp: Interp,
) -> Result<Vec<T>> {
    if new_height == 0 || new_width == 0 || height == 0 || width == 0 {
        return Err(Error::Invalid(format!(
            "cannot resize an image of {height}x{width} to {new_height}x{new_width}: sizes must be positive"
        )));
    }
    if data.len() != height * width * c {
        return Err(Error::Invalid(format!(
            "an image of {height}x{width}x{c} needs {} values, got {}",
            height * width * c,
            data.len()
        )));
    }
    if c == 0 || (new_height, new_width) == (height, width) {
        // OpenCV copies an image of the same size
        return Ok(data.to_vec());
    }
    Ok(T::resize_checked(data, (height, width, c), (new_height, new_width), interp))
}

/// `img` resized to `height × width` with `interp`.
pub fn resize(img: &Image, height: usize, width: usize, interp: Interp) -> Result<Image> {
    let c = img.channels;
    let data = resize_pixels(&img.data, (img.height, img.width, c), (height, width), interp)?;
    Image::new(height, width, c, data)
}

/// The scales OpenCV derives from the sizes along one axis: destination
/// over source (`inv`), its inverse (`scale`) and that rounded (`whole`),
/// and whether the inverse is a whole number.
#[derive(Clone, Copy)]
struct Scale {
    inv: f64,
    scale: f64,
    whole: i64,
    is_whole: bool,
}

impl Scale {
    fn new(src: usize, dst: usize) -> Scale {
        let inv = dst as f64 / src as f64;
        let scale = 1.0 / inv;
        let whole = scale.round_ties_even() as i64;
        Scale { inv, scale, whole, is_whole: (scale - whole as f64).abs() < f64::EPSILON }
    }
}

/// The nearest source index along an axis for each destination index.
fn nearest_index(src: usize, dst: usize) -> Vec<usize> {
    // OpenCV steps by the inverse of dst / src, which can fall just below
    // src / dst (18 -> 20: 10 · 0.8999… floors to 8, not 9)
    let step = 1.0 / (dst as f64 / src as f64);
    (0..dst).map(|d| ((d as f64 * step).floor() as usize).min(src - 1)).collect()
}

/// OpenCV 3.4.2's fixed-point resize of 8-bit images.
mod fixed {
    use super::{cubic, lanczos, nearest_index, Interp, Scale};

    /// Fractional bits of the resize weights.
    const COEF_BITS: i32 = 11;
    const COEF_SCALE: f32 = (1 << COEF_BITS) as f32;

    /// `saturate_cast<short>` of a float: rounded half to even.
    fn short(v: f32) -> i32 {
        (v.round_ties_even() as i32).clamp(i32::from(i16::MIN), i32::from(i16::MAX))
    }

    /// `saturate_cast<uchar>` of a float: rounded half to even, saturated.
    fn byte_of_f32(v: f32) -> u8 {
        v.round_ties_even().clamp(0.0, 255.0) as u8
    }

    pub(super) fn resize(
        data: &[u8],
        (h, w, c): (usize, usize, usize),
        (nh, nw): (usize, usize),
        interp: Interp,
    ) -> Vec<u8> {
        if interp == Interp::Nearest {
            return nearest(data, (h, w, c), (nh, nw));
        }
        let (sx, sy) = (Scale::new(w, nw), Scale::new(h, nh));
        let area_fast = sx.is_whole && sy.is_whole;
        let mut interp = interp;
        if interp == Interp::Linear && area_fast && sx.whole == 2 && sy.whole == 2 {
            // halving both sides bilinearly is averaging 2×2 blocks
            interp = Interp::Area;
        }
        if interp == Interp::Area && sx.scale >= 1.0 && sy.scale >= 1.0 {
            return if area_fast {
                area_whole(data, (h, w, c), (nh, nw), (sx.whole as usize, sy.whole as usize))
            } else {
                area_cells(data, (h, w, c), (nh, nw), sx.scale, sy.scale)
            };
        }
        generic(data, (h, w, c), (nh, nw), interp, (sx, sy))
    }

    fn nearest(data: &[u8], (h, w, c): (usize, usize, usize), (nh, nw): (usize, usize)) -> Vec<u8> {
        let (xs, ys) = (nearest_index(w, nw), nearest_index(h, nh));
        let mut out = Vec::with_capacity(nh * nw * c);
        for &y in &ys {
            let row = &data[y * w * c..(y + 1) * w * c];
            for &x in &xs {
                out.extend_from_slice(&row[x * c..(x + 1) * c]);
            }
        }
        out
    }

    /// Shrinking by whole factors `(fx, fy)` (the destination size times
    /// the factor is the source size).
    fn area_whole(
        data: &[u8],
        (_h, w, c): (usize, usize, usize),
        (nh, nw): (usize, usize),
        (fx, fy): (usize, usize),
    ) -> Vec<u8> {
        let mut out = vec![0u8; nh * nw * c];
        let stride = w * c;
        if fx == 2 && fy == 2 && matches!(c, 1 | 3 | 4) {
            for (y, row) in out.chunks_exact_mut(nw * c).enumerate() {
                let (r0, r1) = (&data[2 * y * stride..], &data[(2 * y + 1) * stride..]);
                for x in 0..nw {
                    for k in 0..c {
                        let i = 2 * x * c + k;
                        let sum =
                            u32::from(r0[i]) + u32::from(r0[i + c]) + u32::from(r1[i]) + u32::from(r1[i + c]);
                        row[x * c + k] = ((sum + 2) >> 2) as u8;
                    }
                }
            }
            return out;
        }
        let scale = 1.0 / (fx * fy) as f32;
        for (y, row) in out.chunks_exact_mut(nw * c).enumerate() {
            for x in 0..nw {
                for k in 0..c {
                    let mut sum = 0i32;
                    for r in 0..fy {
                        let src = &data[(y * fy + r) * stride + x * fx * c + k..];
                        sum += (0..fx).map(|s| i32::from(src[s * c])).sum::<i32>();
                    }
                    row[x * c + k] = byte_of_f32(sum as f32 * scale);
                }
            }
        }
        out
    }

    /// One source pixel's share of one destination pixel along an axis.
    struct Share {
        dst: usize,
        src: usize,
        alpha: f32,
    }

    /// The source cells each destination pixel covers along an axis of
    /// `src` pixels shrunk by `scale`, with their fractions, in OpenCV's order.
    fn shares(src: usize, dst: usize, scale: f64) -> Vec<Share> {
        let mut tab = Vec::with_capacity(2 * src);
        for d in 0..dst {
            let f1 = d as f64 * scale;
            let f2 = f1 + scale;
            let cell = scale.min(src as f64 - f1);
            let s2 = (f2.floor() as i64).min(src as i64 - 1);
            let s1 = (f1.ceil() as i64).min(s2);
            if s1 as f64 - f1 > 1e-3 {
                tab.push(Share { dst: d, src: (s1 - 1) as usize, alpha: ((s1 as f64 - f1) / cell) as f32 });
            }
            for s in s1..s2 {
                tab.push(Share { dst: d, src: s as usize, alpha: (1.0 / cell) as f32 });
            }
            if f2 - s2 as f64 > 1e-3 {
                tab.push(Share {
                    dst: d,
                    src: s2 as usize,
                    alpha: ((f2 - s2 as f64).min(1.0).min(cell) / cell) as f32,
                });
            }
        }
        tab
    }

    /// Shrinking by other factors: each source row spread over its
    /// destination pixels, the rows summed into each destination row, in `f32`.
    fn area_cells(
        data: &[u8],
        (h, w, c): (usize, usize, usize),
        (nh, nw): (usize, usize),
        scale_x: f64,
        scale_y: f64,
    ) -> Vec<u8> {
        let (xtab, ytab) = (shares(w, nw, scale_x), shares(h, nh, scale_y));
        // each destination column's run of shares (they come in order)
        let mut runs = vec![(0usize, 0usize); nw];
        for (i, x) in xtab.iter().enumerate() {
            if runs[x.dst].1 == 0 {
                runs[x.dst].0 = i;
            }
            runs[x.dst].1 = i + 1;
        }
        let width = nw * c;
        let mut out = vec![0u8; nh * width];
        let mut buf = vec![0f32; width];
        let mut sum = vec![0f32; width];
        let mut current = ytab.first().map_or(0, |s| s.dst);
        let mut spread = usize::MAX; // the source row `buf` holds
        for share in &ytab {
            if share.src != spread {
                // the row spread over the columns: each column's shares
                // added in order from zero, as OpenCV's buffer takes them
                let row = &data[share.src * w * c..(share.src + 1) * w * c];
                for (d, &(lo, hi)) in runs.iter().enumerate() {
                    for k in 0..c {
                        let mut v = 0f32;
                        for x in &xtab[lo..hi] {
                            v += f32::from(row[x.src * c + k]) * x.alpha;
                        }
                        buf[d * c + k] = v;
                    }
                }
                spread = share.src;
            }
            if share.dst != current {
                let d = &mut out[current * width..(current + 1) * width];
                for ((o, s), b) in d.iter_mut().zip(sum.iter_mut()).zip(&buf) {
                    *o = byte_of_f32(*s);
                    *s = share.alpha * b;
                }
                current = share.dst;
            } else {
                for (s, b) in sum.iter_mut().zip(&buf) {
                    *s += share.alpha * b;
                }
            }
        }
        for (o, s) in out[current * width..(current + 1) * width].iter_mut().zip(&sum) {
            *o = byte_of_f32(*s);
        }
        out
    }

    /// The first tap and the fraction of each destination index along an
    /// axis, as OpenCV places them (`area`: its bilinear stand-in for area
    /// averaging when enlarging).
    fn position(d: usize, scale: Scale, area: bool) -> (i64, f32) {
        if area {
            let s = (d as f64 * scale.scale).floor() as i64;
            let f = ((d + 1) as f64 - (s + 1) as f64 * scale.inv) as f32;
            (s, if f <= 0.0 { 0.0 } else { f - f.floor() })
        } else {
            let f = ((d as f64 + 0.5) * scale.scale - 0.5) as f32;
            let s = f.floor();
            (s as i64, f - s)
        }
    }

    /// The fixed-point weights of the `ksize` taps at fraction `f`.
    fn weights(interp: Interp, f: f32, out: &mut [i32]) {
        match interp {
            Interp::Cubic => out.iter_mut().zip(cubic(f)).for_each(|(o, v)| *o = short(v * COEF_SCALE)),
            Interp::Lanczos => out.iter_mut().zip(lanczos(f)).for_each(|(o, v)| *o = short(v * COEF_SCALE)),
            _ => {
                out[0] = short((1.0 - f) * COEF_SCALE);
                out[1] = short(f * COEF_SCALE);
            }
        }
    }

    /// Destination pixels `[0, end)` of a row of `width` values OpenCV's
    /// SSE loop writes in the vertical bicubic pass (8 at a time); the rest
    /// are its scalar code's.
    fn cubic_simd_end(width: usize) -> usize {
        width / 8 * 8
    }

    /// Bilinear, bicubic, Lanczos and the area stand-in: a horizontal pass
    /// into `i32` rows (weights scaled by 2^11), then a vertical one.
    fn generic(
        data: &[u8],
        (h, w, c): (usize, usize, usize),
        (nh, nw): (usize, usize),
        interp: Interp,
        (sx, sy): (Scale, Scale),
    ) -> Vec<u8> {
        let area = interp == Interp::Area;
        let ksize = match interp {
            Interp::Cubic => 4,
            Interp::Lanczos => 8,
            _ => 2,
        };
        let bordered = matches!(interp, Interp::Cubic | Interp::Lanczos);
        let back = ksize as i64 / 2 - 1; // taps before the one at the floor
                                         // horizontal taps: source offsets (clamped) and weights per destination column
        let mut xofs = vec![0usize; nw * ksize];
        let mut alpha = vec![0i32; nw * ksize];
        for d in 0..nw {
            let (mut s, mut f) = position(d, sx, area);
            if !bordered {
                if s < 0 {
                    (s, f) = (0, 0.0);
                }
                if s >= w as i64 - 1 {
                    (s, f) = (w as i64 - 1, 0.0);
                }
            }
            weights(interp, f, &mut alpha[d * ksize..(d + 1) * ksize]);
            for k in 0..ksize {
                xofs[d * ksize + k] = (s - back + k as i64).clamp(0, w as i64 - 1) as usize * c;
            }
        }
        let width = nw * c;
        // the rows of the window, by source row, reused while it slides
        let mut rows: Vec<(usize, Vec<i32>)> = Vec::with_capacity(ksize);
        let mut window: Vec<usize> = vec![0; ksize];
        let mut beta = vec![0i32; ksize];
        let mut out = vec![0u8; nh * width];
        let mut next_rows: Vec<(usize, Vec<i32>)> = Vec::with_capacity(ksize);
        for (dy, dst) in out.chunks_exact_mut(width).enumerate() {
            let (s, f) = position(dy, sy, area);
            weights(interp, f, &mut beta);
            for (k, row) in window.iter_mut().enumerate() {
                *row = (s - back + k as i64).clamp(0, h as i64 - 1) as usize;
            }
            // keep the rows computed for the last destination row, compute the new ones
            next_rows.clear();
            for &y in &window {
                if !next_rows.iter().any(|(r, _)| *r == y) {
                    if let Some(i) = rows.iter().position(|(r, _)| *r == y) {
                        next_rows.push(rows.swap_remove(i));
                    }
                }
            }
            for &y in &window {
                if !next_rows.iter().any(|(r, _)| *r == y) {
                    let mut buf = rows.pop().map(|(_, b)| b).unwrap_or_else(|| vec![0i32; width]);
                    let row = &data[y * w * c..(y + 1) * w * c];
                    match ksize {
                        2 => horizontal::<2>(row, c, &xofs, &alpha, &mut buf),
                        4 => horizontal::<4>(row, c, &xofs, &alpha, &mut buf),
                        _ => horizontal::<8>(row, c, &xofs, &alpha, &mut buf),
                    }
                    next_rows.push((y, buf));
                }
            }
            std::mem::swap(&mut rows, &mut next_rows);
            let src: Vec<&[i32]> = window
                .iter()
                .map(|y| {
                    rows.iter().find(|(r, _)| r == y).map(|(_, b)| b.as_slice()).expect("a row of the window")
                })
                .collect();
            match interp {
                Interp::Cubic => vertical_cubic(&src, &beta, dst),
                Interp::Lanczos => vertical_scalar(&src, &beta, dst),
                _ => vertical_linear(&src, &beta, dst),
            }
        }
        out
    }

    /// One source row's horizontal pass: each destination value is the sum
    /// of its `K` taps times their weights.
    fn horizontal<const K: usize>(row: &[u8], c: usize, xofs: &[usize], alpha: &[i32], out: &mut [i32]) {
        for ((ofs, wts), dst) in xofs.chunks_exact(K).zip(alpha.chunks_exact(K)).zip(out.chunks_exact_mut(c))
        {
            for (k, d) in dst.iter_mut().enumerate() {
                let mut v = 0i32;
                for t in 0..K {
                    v = v.wrapping_add(i32::from(row[ofs[t] + k]) * wts[t]);
                }
                *d = v;
            }
        }
    }

    /// The scalar vertical pass: the weighted sum of the rows, scaled back
    /// by 2^22 with rounding, saturated.
    fn scalar(src: &[&[i32]], beta: &[i32], x: usize) -> u8 {
        let mut v = 0i32;
        for (s, &b) in src.iter().zip(beta) {
            v = v.wrapping_add(s[x].wrapping_mul(b));
        }
        (v.wrapping_add(1 << (2 * COEF_BITS - 1)) >> (2 * COEF_BITS)).clamp(0, 255) as u8
    }

    fn vertical_scalar(src: &[&[i32]], beta: &[i32], dst: &mut [u8]) {
        for (x, d) in dst.iter_mut().enumerate() {
            *d = scalar(src, beta, x);
        }
    }

    /// The vertical bilinear pass as OpenCV's SSE code computes it (and its
    /// scalar code for bytes, which copies it): the rows cut to 16 bits
    /// (`>> 4`), the high halves of their products with the weights (`>> 16`)
    /// summed, then `(v + 2) >> 2`.
    fn vertical_linear(src: &[&[i32]], beta: &[i32], dst: &mut [u8]) {
        let (s0, s1) = (&src[0][..dst.len()], &src[1][..dst.len()]);
        let (b0, b1) = (beta[0], beta[1]);
        for ((d, &v0), &v1) in dst.iter_mut().zip(s0).zip(s1) {
            let v = ((b0 * (v0 >> 4)) >> 16) + ((b1 * (v1 >> 4)) >> 16);
            *d = ((v + 2) >> 2).clamp(0, 255) as u8;
        }
    }

    fn vertical_cubic(src: &[&[i32]], beta: &[i32], dst: &mut [u8]) {
        let end = cubic_simd_end(dst.len());
        // SSE: the weights scaled to floats, the products summed in f32
        let scale = 1.0 / (COEF_SCALE * COEF_SCALE);
        let b: Vec<f32> = beta.iter().map(|&v| v as f32 * scale).collect();
        for (x, d) in dst[..end].iter_mut().enumerate() {
            let mut v = src[0][x] as f32 * b[0] + src[1][x] as f32 * b[1];
            v += src[2][x] as f32 * b[2];
            v += src[3][x] as f32 * b[3];
            *d = v.round_ties_even().clamp(0.0, 255.0) as u8;
        }
        for (x, d) in dst.iter_mut().enumerate().skip(end) {
            *d = scalar(src, beta, x);
        }
    }
}

/// The `f32` path: taps and weights per destination coordinate, a
/// horizontal pass into `f32` rows, then a vertical one.
mod float {
    use super::{cubic, lanczos, nearest_index, Interp};

    /// The taps of one destination coordinate: source indices (clamped
    /// into the image) and their weights.
    struct Taps {
        index: Vec<usize>,
        weight: Vec<f32>,
    }

    /// The taps for each of `dst` coordinates over `src` pixels. `area_shrink`:
    /// area averaging (OpenCV averages only when neither axis grows; otherwise
    /// its area method interpolates linearly with weights of its own).
    fn taps(interp: Interp, src: usize, dst: usize, area_shrink: bool) -> Vec<Taps> {
        let scale = src as f64 / dst as f64;
        let clamp = |i: i64| i.clamp(0, src as i64 - 1) as usize;
        if interp == Interp::Nearest {
            return nearest_index(src, dst)
                .into_iter()
                .map(|s| Taps { index: vec![s], weight: vec![1.0] })
                .collect();
        }
        (0..dst)
            .map(|d| {
                if interp == Interp::Area && area_shrink {
                    // the source span [d·scale, (d+1)·scale), fractional at its ends
                    let (lo, hi) = (d as f64 * scale, (d as f64 + 1.0) * scale);
                    let mut index = Vec::new();
                    let mut weight = Vec::new();
                    let mut s = lo.floor() as i64;
                    while (s as f64) < hi {
                        let cover = (hi.min(s as f64 + 1.0) - lo.max(s as f64)) / scale;
                        if cover > 1e-9 {
                            index.push(clamp(s));
                            weight.push(cover as f32);
                        }
                        s += 1;
                    }
                    return Taps { index, weight };
                }
                let f = (d as f64 + 0.5) * scale - 0.5;
                let base = f.floor();
                let x = (f - base) as f32;
                let base = base as i64;
                match interp {
                    Interp::Cubic => {
                        Taps { index: (-1..3).map(|k| clamp(base + k)).collect(), weight: cubic(x).to_vec() }
                    }
                    Interp::Lanczos => Taps {
                        index: (-3..5).map(|k| clamp(base + k)).collect(),
                        weight: lanczos(x).to_vec(),
                    },
                    Interp::Area => {
                        // OpenCV's: how far destination pixel d's right edge
                        // reaches past source pixel s's right edge, in destination pixels
                        let s = (d as f64 * scale).floor();
                        let reach = (d as f64 + 1.0) - (s + 1.0) / scale;
                        let x = if reach <= 0.0 { 0.0 } else { (reach - reach.floor()) as f32 };
                        let (base, x) =
                            if s as usize >= src - 1 { (src as i64 - 1, 0.0) } else { (s as i64, x) };
                        Taps { index: vec![clamp(base), clamp(base + 1)], weight: vec![1.0 - x, x] }
                    }
                    _ => {
                        let (base, x) = if base < 0 { (0, 0.0) } else { (base, x) };
                        Taps { index: vec![clamp(base), clamp(base + 1)], weight: vec![1.0 - x, x] }
                    }
                }
            })
            .collect()
    }

    pub(super) fn resize(
        data: &[f32],
        (height, width, c): (usize, usize, usize),
        (new_height, new_width): (usize, usize),
        interp: Interp,
    ) -> Vec<f32> {
        let area_shrink = new_height <= height && new_width <= width;
        let (rows, cols) =
            (taps(interp, height, new_height, area_shrink), taps(interp, width, new_width, area_shrink));
        // horizontal pass into f32 rows, then vertical
        let mut horizontal = vec![0f32; height * new_width * c];
        for y in 0..height {
            let src = &data[y * width * c..(y + 1) * width * c];
            let out = &mut horizontal[y * new_width * c..(y + 1) * new_width * c];
            for (x, t) in cols.iter().enumerate() {
                for ch in 0..c {
                    out[x * c + ch] = t.index.iter().zip(&t.weight).map(|(&i, &w)| w * src[i * c + ch]).sum();
                }
            }
        }
        let mut out = vec![0f32; new_height * new_width * c];
        for (y, t) in rows.iter().enumerate() {
            let row = &mut out[y * new_width * c..(y + 1) * new_width * c];
            for (k, v) in row.iter_mut().enumerate() {
                *v =
                    t.index.iter().zip(&t.weight).map(|(&i, &w)| w * horizontal[i * new_width * c + k]).sum();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases dumped by MXNet 1.9.1 (a developer's check, not run by
    /// default; `scripts/make_resize_fixture.py --dump-resize FILE N`, then
    /// `OXNET_RESIZE_CASES=FILE cargo test --release -p oxnet-io -- --ignored mxnet_dump`):
    /// records of six little-endian u32 (h, w, c, new h, new w, interp),
    /// the source bytes and MXNet's result.
    #[test]
    #[ignore]
    fn mxnet_dump() {
        let Ok(path) = std::env::var("OXNET_RESIZE_CASES") else { return };
        let bytes = std::fs::read(path).unwrap();
        let (mut at, mut cases, mut bad) = (0, 0, 0);
        let mut per_interp = [(0usize, 0usize); 5];
        while at < bytes.len() {
            let head: Vec<usize> = (0..6)
                .map(|i| u32::from_le_bytes(bytes[at + 4 * i..at + 4 * i + 4].try_into().unwrap()) as usize)
                .collect();
            let [h, w, c, nh, nw, code] = head[..] else { unreachable!() };
            at += 24;
            let src = &bytes[at..at + h * w * c];
            at += h * w * c;
            let want = &bytes[at..at + nh * nw * c];
            at += nh * nw * c;
            let interp = Interp::from_code(code as i64, (h, w), (nh, nw)).unwrap();
            let got = resize_pixels(src, (h, w, c), (nh, nw), interp).unwrap();
            cases += 1;
            per_interp[code].0 += 1;
            if got != want {
                bad += 1;
                per_interp[code].1 += 1;
                if bad <= 12 {
                    let diffs: Vec<(usize, u8, u8)> = (0..want.len())
                        .filter(|&i| got[i] != want[i])
                        .map(|i| (i, got[i], want[i]))
                        .take(6)
                        .collect();
                    let n = (0..want.len()).filter(|&i| got[i] != want[i]).count();
                    eprintln!("{h}x{w}x{c} -> {nh}x{nw} interp {code}: {n} differ, first {diffs:?}");
                }
            }
        }
        eprintln!("{cases} cases, {bad} differ; per interp (cases, differ): {per_interp:?}");
        assert_eq!(bad, 0);
    }
}
