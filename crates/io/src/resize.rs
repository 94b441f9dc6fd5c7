//! Resizing images with OpenCV's interpolation rules (`cv2.resize`, which
//! MXNet's `mx.image.imresize` and its iterators call): the same pixel
//! centres (`src = (dst + 0.5) · scale - 0.5`), border replication and
//! kernels (nearest, bilinear, bicubic with `a = -0.75`, area averaging when
//! shrinking, Lanczos with 8 taps). OpenCV computes in fixed point; this
//! computes in `f32` and rounds, so results agree with OpenCV's within one
//! grey level.

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

/// The taps of one destination coordinate: source indices (clamped into
/// the image) and their weights.
struct Taps {
    index: Vec<usize>,
    weight: Vec<f32>,
}

fn cubic(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

fn lanczos(x: f32) -> [f32; 8] {
    let mut w = [0f32; 8];
    let mut sum = 0.0;
    for (k, wk) in w.iter_mut().enumerate() {
        let t = x + 3.0 - k as f32; // distance from tap k (taps at -3..4)
        *wk = if t.abs() < 1e-6 {
            1.0
        } else {
            let p = std::f32::consts::PI * t;
            4.0 * (p).sin() * (p / 4.0).sin() / (p * p)
        };
        sum += *wk;
    }
    w.map(|v| v / sum)
}

/// The taps for each of `dst` coordinates over `src` pixels. `area_shrink`:
/// area averaging (OpenCV averages only when neither axis grows; otherwise
/// its area method interpolates linearly with weights of its own).
fn taps(interp: Interp, src: usize, dst: usize, area_shrink: bool) -> Vec<Taps> {
    let scale = src as f64 / dst as f64;
    let clamp = |i: i64| i.clamp(0, src as i64 - 1) as usize;
    (0..dst)
        .map(|d| {
            if interp == Interp::Nearest {
                // OpenCV steps by the inverse of dst / src, which can fall just
                // below src / dst (18 -> 20: 10 · 0.8999… floors to 8, not 9)
                let step = 1.0 / (dst as f64 / src as f64);
                let s = ((d as f64 * step).floor() as i64).min(src as i64 - 1);
                return Taps { index: vec![clamp(s)], weight: vec![1.0] };
            }
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
                Interp::Lanczos => {
                    Taps { index: (-3..5).map(|k| clamp(base + k)).collect(), weight: lanczos(x).to_vec() }
                }
                Interp::Area => {
                    // OpenCV's: how far destination pixel d's right edge
                    // reaches past source pixel s's right edge, in destination pixels
                    let s = (d as f64 * scale).floor();
                    let reach = (d as f64 + 1.0) - (s + 1.0) / scale;
                    let x = if reach <= 0.0 { 0.0 } else { (reach - reach.floor()) as f32 };
                    let (base, x) = if s as usize >= src - 1 { (src as i64 - 1, 0.0) } else { (s as i64, x) };
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

/// A sample type [`resize_pixels`] works on: bytes (rounded and saturated
/// back) or floats (kept as computed).
pub trait Sample: Copy + Default {
    /// The value as `f32`.
    fn to_f32(self) -> f32;
    /// The computed value stored back.
    fn from_f32(v: f32) -> Self;
}

impl Sample for u8 {
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
    fn from_f32(v: f32) -> Self {
        v.round().clamp(0.0, 255.0) as u8
    }
}

impl Sample for f32 {
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
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
                out[x * c + ch] =
                    t.index.iter().zip(&t.weight).map(|(&i, &w)| w * src[i * c + ch].to_f32()).sum();
            }
        }
    }
    let mut out = vec![T::default(); new_height * new_width * c];
    for (y, t) in rows.iter().enumerate() {
        let row = &mut out[y * new_width * c..(y + 1) * new_width * c];
        for (k, v) in row.iter_mut().enumerate() {
            let sum: f32 =
                t.index.iter().zip(&t.weight).map(|(&i, &w)| w * horizontal[i * new_width * c + k]).sum();
            *v = T::from_f32(sum);
        }
    }
    Ok(out)
}

/// `img` resized to `height × width` with `interp`.
pub fn resize(img: &Image, height: usize, width: usize, interp: Interp) -> Result<Image> {
    let c = img.channels;
    let data = resize_pixels(&img.data, (img.height, img.width, c), (height, width), interp)?;
    Image::new(height, width, c, data)
}
