//! The options of MXNet's detection augmenter (`det_aug_default`), with
//! its defaults, and the checks of their values (errors name the argument).

use crate::det_label::{CropConstraints, EmitMode};
use oxnet_core::{Error, Result};

/// How the augmented image meets the output shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeMode {
    /// Resized to the output's height and width, whatever its aspect ratio.
    Force,
    /// Shrunk (aspect ratio kept) only when larger than the output.
    Shrink,
    /// Resized to fit the output, aspect ratio kept (enlarged if smaller).
    Fit,
}

impl ResizeMode {
    /// The mode named `name` (`force`, `shrink` or `fit`).
    pub fn from_name(name: &str) -> Result<ResizeMode> {
        match name {
            "force" => Ok(ResizeMode::Force),
            "shrink" => Ok(ResizeMode::Shrink),
            "fit" => Ok(ResizeMode::Fit),
            other => Err(Error::attr(
                "resize_mode",
                format!("ImageDetRecordIter: resize_mode must be force, shrink or fit, got `{other}`"),
            )),
        }
    }
}

impl EmitMode {
    /// The mode named `name` (`center` or `overlap`).
    pub fn from_name(name: &str) -> Result<EmitMode> {
        match name {
            "center" => Ok(EmitMode::Center),
            "overlap" => Ok(EmitMode::Overlap),
            other => Err(Error::attr(
                "crop_emit_mode",
                format!("ImageDetRecordIter: crop_emit_mode must be center or overlap, got `{other}`"),
            )),
        }
    }
}

/// One crop sampler: the ranges its crop boxes are drawn from, the
/// constraints they must meet, and how many tries it makes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropSampler {
    /// The crop's scale (square root of its area fraction) range.
    pub scale: (f32, f32),
    /// The crop's aspect ratio (width / height in pixels) range.
    pub aspect_ratio: (f32, f32),
    /// What a crop must meet for some object.
    pub constraints: CropConstraints,
    /// Tries before the sampler gives up.
    pub max_trials: usize,
}

/// The detection augmenter's options by MXNet's names; [`Default`] is
/// MXNet's defaults (nothing but the final force resize).
#[derive(Clone, Debug, PartialEq)]
pub struct DetAugmentParams {
    /// Resizes the shorter side to this first (-1: no).
    pub resize: i64,
    /// Probability of a random crop.
    pub rand_crop_prob: f32,
    /// The crop samplers (MXNet's per-sampler tuples, one value
    /// broadcast to every sampler); empty when `num_crop_sampler <= 0`.
    pub samplers: Vec<CropSampler>,
    /// Which objects a crop keeps.
    pub crop_emit_mode: EmitMode,
    /// The covered fraction an object needs to be kept by `Overlap`.
    pub emit_overlap_thresh: f32,
    /// Probability of random padding.
    pub rand_pad_prob: f32,
    /// The padded image's largest size, as a multiple of the image's.
    pub max_pad_scale: f32,
    /// Hue shift (OpenCV's 0 to 180) drawn from `[-v, v]`.
    pub max_random_hue: i32,
    /// Probability of the hue shift.
    pub random_hue_prob: f32,
    /// Saturation shift drawn from `[-v, v]`.
    pub max_random_saturation: i32,
    /// Probability of the saturation shift.
    pub random_saturation_prob: f32,
    /// Lightness shift drawn from `[-v, v]`.
    pub max_random_illumination: i32,
    /// Probability of the lightness shift.
    pub random_illumination_prob: f32,
    /// Contrast: the pixels multiplied by `1 + u`, `u` drawn from `[-v, v]`.
    pub max_random_contrast: f32,
    /// Probability of the contrast change.
    pub random_contrast_prob: f32,
    /// Probability of a horizontal flip.
    pub rand_mirror_prob: f32,
    /// The value of padded pixels.
    pub fill_value: i32,
    /// OpenCV's interpolation number (0 to 4, 9 auto, 10 random).
    pub inter_method: i64,
    /// How the result meets the output shape.
    pub resize_mode: ResizeMode,
}

impl Default for DetAugmentParams {
    fn default() -> DetAugmentParams {
        DetAugmentParams {
            resize: -1,
            rand_crop_prob: 0.0,
            samplers: vec![CropSamplerOptions::default().sampler(0)],
            crop_emit_mode: EmitMode::Center,
            emit_overlap_thresh: 0.3,
            rand_pad_prob: 0.0,
            max_pad_scale: 1.0,
            max_random_hue: 0,
            random_hue_prob: 0.0,
            max_random_saturation: 0,
            random_saturation_prob: 0.0,
            max_random_illumination: 0,
            random_illumination_prob: 0.0,
            max_random_contrast: 0.0,
            random_contrast_prob: 0.0,
            rand_mirror_prob: 0.0,
            fill_value: 127,
            inter_method: 1,
            resize_mode: ResizeMode::Force,
        }
    }
}

/// MXNet's per-sampler tuples as given (one value, or one per sampler).
#[derive(Clone, Debug, PartialEq)]
pub struct CropSamplerOptions {
    /// `min_crop_scales`.
    pub min_crop_scales: Vec<f32>,
    /// `max_crop_scales`.
    pub max_crop_scales: Vec<f32>,
    /// `min_crop_aspect_ratios`.
    pub min_crop_aspect_ratios: Vec<f32>,
    /// `max_crop_aspect_ratios`.
    pub max_crop_aspect_ratios: Vec<f32>,
    /// `min_crop_overlaps`.
    pub min_crop_overlaps: Vec<f32>,
    /// `max_crop_overlaps`.
    pub max_crop_overlaps: Vec<f32>,
    /// `min_crop_sample_coverages`.
    pub min_crop_sample_coverages: Vec<f32>,
    /// `max_crop_sample_coverages`.
    pub max_crop_sample_coverages: Vec<f32>,
    /// `min_crop_object_coverages`.
    pub min_crop_object_coverages: Vec<f32>,
    /// `max_crop_object_coverages`.
    pub max_crop_object_coverages: Vec<f32>,
    /// `max_crop_trials`.
    pub max_crop_trials: Vec<i64>,
}

impl Default for CropSamplerOptions {
    fn default() -> CropSamplerOptions {
        CropSamplerOptions {
            min_crop_scales: vec![0.0],
            max_crop_scales: vec![1.0],
            min_crop_aspect_ratios: vec![1.0],
            max_crop_aspect_ratios: vec![1.0],
            min_crop_overlaps: vec![0.0],
            max_crop_overlaps: vec![1.0],
            min_crop_sample_coverages: vec![0.0],
            max_crop_sample_coverages: vec![1.0],
            min_crop_object_coverages: vec![0.0],
            max_crop_object_coverages: vec![1.0],
            max_crop_trials: vec![25],
        }
    }
}

fn bad<T>(name: &str, msg: String) -> Result<T> {
    Err(Error::attr(name, format!("ImageDetRecordIter: {name} {msg}")))
}

impl CropSamplerOptions {
    fn lists(&self) -> [(&'static str, Vec<f32>); 11] {
        [
            ("min_crop_scales", self.min_crop_scales.clone()),
            ("max_crop_scales", self.max_crop_scales.clone()),
            ("min_crop_aspect_ratios", self.min_crop_aspect_ratios.clone()),
            ("max_crop_aspect_ratios", self.max_crop_aspect_ratios.clone()),
            ("min_crop_overlaps", self.min_crop_overlaps.clone()),
            ("max_crop_overlaps", self.max_crop_overlaps.clone()),
            ("min_crop_sample_coverages", self.min_crop_sample_coverages.clone()),
            ("max_crop_sample_coverages", self.max_crop_sample_coverages.clone()),
            ("min_crop_object_coverages", self.min_crop_object_coverages.clone()),
            ("max_crop_object_coverages", self.max_crop_object_coverages.clone()),
            ("max_crop_trials", self.max_crop_trials.iter().map(|&v| v as f32).collect()),
        ]
    }

    /// Sampler `i` (each tuple's only value, or its `i`-th).
    fn sampler(&self, i: usize) -> CropSampler {
        fn at<T: Copy>(v: &[T], i: usize) -> T {
            if v.len() == 1 {
                v[0]
            } else {
                v[i]
            }
        }
        CropSampler {
            scale: (at(&self.min_crop_scales, i), at(&self.max_crop_scales, i)),
            aspect_ratio: (at(&self.min_crop_aspect_ratios, i), at(&self.max_crop_aspect_ratios, i)),
            constraints: CropConstraints {
                overlap: (at(&self.min_crop_overlaps, i), at(&self.max_crop_overlaps, i)),
                sample_coverage: (
                    at(&self.min_crop_sample_coverages, i),
                    at(&self.max_crop_sample_coverages, i),
                ),
                object_coverage: (
                    at(&self.min_crop_object_coverages, i),
                    at(&self.max_crop_object_coverages, i),
                ),
            },
            max_trials: at(&self.max_crop_trials, i).max(0) as usize,
        }
    }

    /// The `num_crop_sampler` samplers, checked as MXNet checks them: with
    /// one sampler every tuple has one value; with more, one value or one
    /// per sampler; scales in `[0, 1]` with the maximum above the minimum;
    /// non-negative aspect ratios; no maximum below its minimum. None when
    /// `num_crop_sampler <= 0` (no cropping; the tuples are not checked).
    pub fn samplers(&self, num_crop_sampler: i64) -> Result<Vec<CropSampler>> {
        if num_crop_sampler <= 0 {
            return Ok(Vec::new());
        }
        let n = num_crop_sampler as usize;
        for (name, values) in self.lists() {
            let fits = if n == 1 { values.len() == 1 } else { values.len() == 1 || values.len() == n };
            if !fits {
                return bad(
                    name,
                    format!("has {} values for {n} crop samplers (num_crop_sampler)", values.len()),
                );
            }
            if values.iter().any(|v| v.is_nan()) {
                return bad(name, "holds NaN".into());
            }
        }
        let samplers: Vec<CropSampler> = (0..n).map(|i| self.sampler(i)).collect();
        for s in &samplers {
            let c = s.constraints;
            let checks = [
                (s.scale.0 >= 0.0, "min_crop_scales", format!("must be non-negative, got {}", s.scale.0)),
                (s.scale.1 <= 1.0, "max_crop_scales", format!("must be at most 1, got {}", s.scale.1)),
                (
                    s.scale.1 > s.scale.0,
                    "max_crop_scales",
                    format!("{} must be above min_crop_scales {}", s.scale.1, s.scale.0),
                ),
                (
                    s.aspect_ratio.0 >= 0.0,
                    "min_crop_aspect_ratios",
                    format!("must be non-negative, got {}", s.aspect_ratio.0),
                ),
                (
                    s.aspect_ratio.1 >= s.aspect_ratio.0,
                    "max_crop_aspect_ratios",
                    format!("{} is below min_crop_aspect_ratios {}", s.aspect_ratio.1, s.aspect_ratio.0),
                ),
                (
                    c.overlap.1 >= c.overlap.0,
                    "max_crop_overlaps",
                    format!("{} is below min_crop_overlaps {}", c.overlap.1, c.overlap.0),
                ),
                (
                    c.sample_coverage.1 >= c.sample_coverage.0,
                    "max_crop_sample_coverages",
                    format!(
                        "{} is below min_crop_sample_coverages {}",
                        c.sample_coverage.1, c.sample_coverage.0
                    ),
                ),
                (
                    c.object_coverage.1 >= c.object_coverage.0,
                    "max_crop_object_coverages",
                    format!(
                        "{} is below min_crop_object_coverages {}",
                        c.object_coverage.1, c.object_coverage.0
                    ),
                ),
            ];
            if let Some((_, name, msg)) = checks.into_iter().find(|(ok, _, _)| !ok) {
                return bad(name, msg);
            }
        }
        Ok(samplers)
    }
}

impl DetAugmentParams {
    /// Checks the values that are not the samplers' (those are checked by
    /// [`CropSamplerOptions::samplers`]).
    pub fn check(&self) -> Result<()> {
        if !matches!(self.inter_method, 0..=4 | 9 | 10) {
            return bad("inter_method", format!("{} is not 0 to 4, 9 or 10", self.inter_method));
        }
        if self.resize == 0 || self.resize < -1 {
            return bad("resize", format!("must be positive or -1, got {}", self.resize));
        }
        if self.emit_overlap_thresh.is_nan() || self.emit_overlap_thresh < 0.0 {
            return bad(
                "emit_overlap_thresh",
                format!("must be non-negative, got {}", self.emit_overlap_thresh),
            );
        }
        let non_negative = [
            ("max_random_hue", self.max_random_hue as f32),
            ("max_random_saturation", self.max_random_saturation as f32),
            ("max_random_illumination", self.max_random_illumination as f32),
            ("max_random_contrast", self.max_random_contrast),
        ];
        for (name, v) in non_negative {
            if v.is_nan() || v < 0.0 {
                return bad(name, format!("must be non-negative, got {v}"));
            }
        }
        let numbers = [
            ("rand_crop_prob", self.rand_crop_prob),
            ("rand_pad_prob", self.rand_pad_prob),
            ("random_hue_prob", self.random_hue_prob),
            ("random_saturation_prob", self.random_saturation_prob),
            ("random_illumination_prob", self.random_illumination_prob),
            ("random_contrast_prob", self.random_contrast_prob),
            ("rand_mirror_prob", self.rand_mirror_prob),
            ("max_pad_scale", self.max_pad_scale),
        ];
        for (name, v) in numbers {
            if v.is_nan() {
                return bad(name, "is NaN".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_broadcast_and_check() {
        let o = CropSamplerOptions {
            min_crop_scales: vec![0.1, 0.3],
            max_crop_trials: vec![5],
            ..Default::default()
        };
        let s = o.samplers(2).unwrap();
        assert_eq!((s[0].scale, s[1].scale, s[1].max_trials), ((0.1, 1.0), (0.3, 1.0), 5));
        // one sampler takes one value per tuple only
        assert!(o.samplers(1).unwrap_err().to_string().contains("min_crop_scales"));
        assert!(o.samplers(3).unwrap_err().to_string().contains("min_crop_scales"));
        assert!(o.samplers(0).unwrap().is_empty());
        let e =
            CropSamplerOptions { min_crop_scales: vec![1.0], ..Default::default() }.samplers(1).unwrap_err();
        assert!(e.to_string().contains("max_crop_scales"), "{e}");
        let e = CropSamplerOptions {
            min_crop_overlaps: vec![0.5],
            max_crop_overlaps: vec![0.4],
            ..Default::default()
        }
        .samplers(1)
        .unwrap_err();
        assert!(e.to_string().contains("max_crop_overlaps"), "{e}");
        assert!(ResizeMode::from_name("crop").unwrap_err().to_string().contains("resize_mode"));
        assert!(EmitMode::from_name("all").unwrap_err().to_string().contains("crop_emit_mode"));
        let e = DetAugmentParams { inter_method: 5, ..Default::default() }.check().unwrap_err();
        assert!(e.to_string().contains("inter_method"));
    }
}
