//! The options of MXNet's default augmenter, with its defaults, and the
//! checks of their values (errors name the argument).

use oxnet_core::{Error, Result};

/// The augmentation options of `ImageRecordIter` beyond resize, crop and
/// mirror, by MXNet's names; [`Default`] is MXNet's defaults (nothing done).
#[derive(Clone, Debug, PartialEq)]
pub struct AugmentParams {
    /// Crops a random area and aspect ratio, resized to the output.
    pub random_resized_crop: bool,
    /// Rotates by a whole number of degrees drawn from `[-v, v]`.
    pub max_rotate_angle: i32,
    /// With `min_aspect_ratio`: the upper end of the aspect ratio
    /// (width / height) drawn; without it the ratio is drawn from `[1 - v, 1 + v]`.
    pub max_aspect_ratio: f32,
    /// The lower end of the aspect ratio drawn.
    pub min_aspect_ratio: Option<f32>,
    /// Shears `(x, y) -> (x + m·y, y)` with `m` drawn from `[-v, v]`.
    pub max_shear_ratio: f32,
    /// A square crop of a random size in `[min_crop_size, max_crop_size]`
    /// resized to the output (-1: none).
    pub max_crop_size: i32,
    /// See `max_crop_size`.
    pub min_crop_size: i32,
    /// Scales by a factor drawn from `[min_random_scale, max_random_scale]`.
    pub max_random_scale: f32,
    /// See `max_random_scale`.
    pub min_random_scale: f32,
    /// The fraction of the area a random resized crop keeps, drawn from
    /// `[min_random_area, max_random_area]`.
    pub max_random_area: f32,
    /// See `max_random_area`.
    pub min_random_area: f32,
    /// The largest width and height after the warp.
    pub max_img_size: f32,
    /// The smallest width and height after the warp.
    pub min_img_size: f32,
    /// Multiplies the pixels by `1 + u`, `u` drawn from `[-v, v]`.
    pub brightness: f32,
    /// Scales the pixels' distances from the mean grey level by `1 + u`.
    pub contrast: f32,
    /// Blends with the grey image by `1 + u`.
    pub saturation: f32,
    /// The standard deviation of the PCA lighting noise's coefficients.
    pub pca_noise: f32,
    /// Adds a value drawn from `[-v, v]` to the hue (OpenCV's 0 to 180).
    pub random_h: i32,
    /// Adds a value drawn from `[-v, v]` to the saturation (0 to 255).
    pub random_s: i32,
    /// Adds a value drawn from `[-v, v]` to the lightness (0 to 255).
    pub random_l: i32,
    /// A fixed rotation in degrees when positive (overrides `max_rotate_angle`).
    pub rotate: i32,
    /// The value of pixels the warp and the padding add.
    pub fill_value: i32,
    /// Pixels of `fill_value` added on every side after the warp.
    pub pad: usize,
}

impl Default for AugmentParams {
    fn default() -> AugmentParams {
        AugmentParams {
            random_resized_crop: false,
            max_rotate_angle: 0,
            max_aspect_ratio: 0.0,
            min_aspect_ratio: None,
            max_shear_ratio: 0.0,
            max_crop_size: -1,
            min_crop_size: -1,
            max_random_scale: 1.0,
            min_random_scale: 1.0,
            max_random_area: 1.0,
            min_random_area: 1.0,
            max_img_size: 1e10,
            min_img_size: 0.0,
            brightness: 0.0,
            contrast: 0.0,
            saturation: 0.0,
            pca_noise: 0.0,
            random_h: 0,
            random_s: 0,
            random_l: 0,
            rotate: -1,
            fill_value: 255,
            pad: 0,
        }
    }
}

fn bad<T>(name: &str, msg: String) -> Result<T> {
    Err(Error::attr(name, format!("ImageRecordIter: {name} {msg}")))
}

impl AugmentParams {
    /// The (lower, upper) aspect ratio MXNet draws from.
    pub fn aspect_range(&self) -> (f32, f32) {
        match self.min_aspect_ratio {
            Some(min) => (min, self.max_aspect_ratio),
            None => (1.0 - self.max_aspect_ratio, 1.0 + self.max_aspect_ratio),
        }
    }

    /// Whether MXNet warps the image (any of rotation, shear, scale, aspect
    /// ratio outside a random resized crop, or size limits asked for; a
    /// non-empty `rotate_list` of the iterator's configuration warps too).
    pub fn warps(&self) -> bool {
        let (lo, hi) = self.aspect_range();
        self.max_rotate_angle > 0
            || self.max_shear_ratio > 0.0
            || self.rotate > 0
            || self.max_random_scale != 1.0
            || self.min_random_scale != 1.0
            || (!self.random_resized_crop && (lo != 1.0 || hi != 1.0))
            || self.max_img_size != 1e10
            || self.min_img_size != 0.0
    }

    /// `fill_value` as a byte (saturated, as OpenCV converts it).
    pub fn fill(&self) -> u8 {
        self.fill_value.clamp(0, 255) as u8
    }

    /// Checks the values: no negative range, no minimum above its maximum,
    /// no option that conflicts with `random_resized_crop` (or `rand_crop`).
    pub fn check(&self, rand_crop: bool) -> Result<()> {
        let non_negative = [
            ("max_rotate_angle", self.max_rotate_angle as f32),
            ("max_shear_ratio", self.max_shear_ratio),
            ("brightness", self.brightness),
            ("contrast", self.contrast),
            ("saturation", self.saturation),
            ("pca_noise", self.pca_noise),
            ("random_h", self.random_h as f32),
            ("random_s", self.random_s as f32),
            ("random_l", self.random_l as f32),
            ("max_random_scale", self.max_random_scale),
            ("min_random_scale", self.min_random_scale),
            ("max_random_area", self.max_random_area),
            ("min_random_area", self.min_random_area),
            ("max_img_size", self.max_img_size),
            ("min_img_size", self.min_img_size),
        ];
        for (name, v) in non_negative {
            if v.is_nan() || v < 0.0 {
                return bad(name, format!("must be non-negative, got {v}"));
            }
        }
        if self.max_aspect_ratio < 0.0 {
            return bad("max_aspect_ratio", format!("must be non-negative, got {}", self.max_aspect_ratio));
        }
        let ordered = [
            ("min_random_scale", self.min_random_scale, "max_random_scale", self.max_random_scale),
            ("min_random_area", self.min_random_area, "max_random_area", self.max_random_area),
            ("min_img_size", self.min_img_size, "max_img_size", self.max_img_size),
        ];
        for (lo_name, lo, hi_name, hi) in ordered {
            if lo > hi {
                return bad(lo_name, format!("{lo} is above {hi_name} {hi}"));
            }
        }
        let (lo, hi) = self.aspect_range();
        if let Some(min) = self.min_aspect_ratio {
            if min.is_nan() || min <= 0.0 {
                return bad("min_aspect_ratio", format!("must be positive, got {min}"));
            }
            if min > hi {
                return bad("min_aspect_ratio", format!("{min} is above max_aspect_ratio {hi}"));
            }
        } else if lo <= 0.0 {
            return bad("max_aspect_ratio", format!("{} leaves a ratio 1 - v <= 0", self.max_aspect_ratio));
        }
        if self.max_random_scale == 0.0 {
            return bad("max_random_scale", "must be positive".into());
        }
        if self.max_crop_size != -1 || self.min_crop_size != -1 {
            if self.min_crop_size <= 0 {
                return bad(
                    "min_crop_size",
                    format!("must be positive with max_crop_size, got {}", self.min_crop_size),
                );
            }
            if self.max_crop_size < self.min_crop_size {
                return bad(
                    "max_crop_size",
                    format!("{} is below min_crop_size {}", self.max_crop_size, self.min_crop_size),
                );
            }
        }
        if self.random_resized_crop {
            let conflicts = [
                ("min_random_scale", self.min_random_scale != 1.0),
                ("max_random_scale", self.max_random_scale != 1.0),
                ("min_crop_size", self.min_crop_size != -1),
                ("max_crop_size", self.max_crop_size != -1),
                ("rand_crop", rand_crop),
            ];
            if let Some((name, _)) = conflicts.iter().find(|(_, set)| *set) {
                return bad(name, "conflicts with random_resized_crop".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_argument() {
        let msg = |p: AugmentParams, rand_crop: bool| p.check(rand_crop).unwrap_err().to_string();
        assert!(msg(AugmentParams { brightness: -0.1, ..Default::default() }, false).contains("brightness"));
        let e =
            msg(AugmentParams { min_random_scale: 0.9, max_random_scale: 0.5, ..Default::default() }, false);
        assert!(e.contains("min_random_scale") && e.contains("max_random_scale"), "{e}");
        let e = msg(
            AugmentParams { min_aspect_ratio: Some(2.0), max_aspect_ratio: 1.5, ..Default::default() },
            false,
        );
        assert!(e.contains("min_aspect_ratio"), "{e}");
        let e = msg(AugmentParams { random_resized_crop: true, ..Default::default() }, true);
        assert!(e.contains("rand_crop") && e.contains("random_resized_crop"), "{e}");
        let e = msg(AugmentParams { max_crop_size: 10, ..Default::default() }, false);
        assert!(e.contains("min_crop_size"), "{e}");
        assert!(AugmentParams::default().check(true).is_ok());
        assert!(!AugmentParams::default().warps());
        assert!(AugmentParams { rotate: 30, ..Default::default() }.warps());
        // the aspect ratio of a random resized crop is the crop's, not a warp
        let rrc = AugmentParams { random_resized_crop: true, max_aspect_ratio: 0.25, ..Default::default() };
        assert!(!rrc.warps() && rrc.aspect_range() == (0.75, 1.25));
    }
}
