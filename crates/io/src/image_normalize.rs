//! The last step of `ImageRecordIter`: an augmented image (height ×
//! width × channels bytes) written channels first, mirrored if asked, as
//! MXNet's output types have it: `float32` as `(v - mean) · c / std + i / std`
//! (mean per channel or a mean image; `c` the scale times a random contrast
//! factor, `i` the scale times a random illumination), `uint8` as is, `int8`
//! as `v - round(mean)` saturated.

use crate::image::Image;
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_pcg::Pcg64;
use std::sync::Arc;

/// The element type of the batches' data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputType {
    /// Normalised floats.
    #[default]
    Float32,
    /// The pixels as they are (no mean, deviation or scale).
    UInt8,
    /// The pixels less the rounded mean, saturated to -128..=127.
    Int8,
}

impl OutputType {
    /// The type named `name` (`float32`, `uint8` or `int8`).
    pub fn from_name(name: &str) -> Result<OutputType> {
        match name {
            "float32" => Ok(OutputType::Float32),
            "uint8" => Ok(OutputType::UInt8),
            "int8" => Ok(OutputType::Int8),
            other => Err(Error::attr(
                "dtype",
                format!("ImageRecordIter: dtype must be float32, uint8 or int8, got `{other}`"),
            )),
        }
    }
}

/// How images become output values.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalize {
    /// Per channel (R, G, B, alpha): subtracted.
    pub mean: [f32; 4],
    /// Per channel: divided by.
    pub std: [f32; 4],
    /// Multiplies after the mean is subtracted.
    pub scale: f32,
    /// A mean image (channels, height, width of the output, RGB), used
    /// instead of `mean` when given.
    pub mean_img: Option<Arc<Vec<f32>>>,
    /// The contrast factor is `1 + u`, `u` drawn from `[-v, v]`.
    pub max_random_contrast: f32,
    /// The illumination added is `u`, drawn from `[-v, v]` (before `/ std`).
    pub max_random_illumination: f32,
    /// The output type.
    pub dtype: OutputType,
}

impl Default for Normalize {
    fn default() -> Normalize {
        Normalize {
            mean: [0.0; 4],
            std: [1.0; 4],
            scale: 1.0,
            mean_img: None,
            max_random_contrast: 0.0,
            max_random_illumination: 0.0,
            dtype: OutputType::Float32,
        }
    }
}

impl Normalize {
    /// Writes `img` into `out` (channels, height, width), mirrored
    /// left-right with `mirrored`; the float type draws its contrast and
    /// illumination from `rng`. The mean image is indexed by the unmirrored
    /// position, as in MXNet. Integer types come out as their values in `f32`.
    pub fn write(&self, img: &Image, mirrored: bool, rng: &mut Pcg64, out: &mut [f32]) {
        let (h, w, c) = (img.height, img.width, img.channels);
        let (mut mult, mut bias) = ([0f32; 4], [0f32; 4]);
        if self.dtype == OutputType::Float32 {
            let (rc, ri) = (self.max_random_contrast, self.max_random_illumination);
            let contrast = (rng.random::<f32>() * rc * 2.0 - rc + 1.0) * self.scale;
            let illumination = (rng.random::<f32>() * ri * 2.0 - ri) * self.scale;
            for k in 0..4 {
                mult[k] = contrast / self.std[k];
                bias[k] = illumination / self.std[k];
            }
        }
        let mean_int = self.mean.map(|m| m.round());
        for y in 0..h {
            for x in 0..w {
                let src = (y * w + x) * c;
                let dx = if mirrored { w - 1 - x } else { x };
                for k in 0..c {
                    let v = f32::from(img.data[src + k]);
                    let mean = |rounded: bool| match &self.mean_img {
                        Some(m) => {
                            let v = m[(k * h + y) * w + x];
                            if rounded {
                                v.round()
                            } else {
                                v
                            }
                        }
                        None if rounded => mean_int[k],
                        None => self.mean[k],
                    };
                    out[(k * h + y) * w + dx] = match self.dtype {
                        OutputType::Float32 => (v - mean(false)) * mult[k] + bias[k],
                        OutputType::UInt8 => v,
                        OutputType::Int8 => (v - mean(true)).clamp(-128.0, 127.0),
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn output_types() {
        let img = Image::new(1, 2, 1, vec![10, 250]).unwrap();
        let mut rng = Pcg64::seed_from_u64(0);
        let mut out = [0f32; 2];
        let n = Normalize { mean: [100.4, 0.0, 0.0, 0.0], std: [2.0; 4], scale: 0.5, ..Default::default() };
        n.write(&img, true, &mut rng, &mut out);
        assert_eq!(out, [(250.0 - 100.4) * 0.25, (10.0 - 100.4) * 0.25]);
        Normalize { dtype: OutputType::UInt8, ..n.clone() }.write(&img, false, &mut rng, &mut out);
        assert_eq!(out, [10.0, 250.0]);
        Normalize { dtype: OutputType::Int8, ..n.clone() }.write(&img, false, &mut rng, &mut out);
        assert_eq!(out, [-90.0, 127.0]);
        // a mean image, indexed before mirroring
        let m = Normalize { mean_img: Some(Arc::new(vec![1.0, 2.0])), ..Default::default() };
        m.write(&img, true, &mut rng, &mut out);
        assert_eq!(out, [248.0, 9.0]);
        // contrast and illumination factors within their ranges
        let r = Normalize { max_random_contrast: 0.5, max_random_illumination: 3.0, ..Default::default() };
        let one = Image::new(1, 1, 1, vec![100]).unwrap();
        let mut o = [0f32; 1];
        let mut seen = Vec::new();
        for _ in 0..200 {
            r.write(&one, false, &mut rng, &mut o);
            assert!((47.0..=153.0).contains(&o[0]), "{}", o[0]);
            seen.push(o[0]);
        }
        assert!(seen.iter().any(|&v| v < 80.0) && seen.iter().any(|&v| v > 120.0));
        assert!(OutputType::from_name("float16").unwrap_err().to_string().contains("dtype"));
    }
}
