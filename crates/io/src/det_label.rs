//! Detection labels as MXNet's `ImageDetRecordIter` reads them: one flat
//! list `[header_width, object_width, extra header..., (class, xmin, ymin,
//! xmax, ymax, extra...) per object]`, corners as fractions of the image,
//! and what the detection augmenter does to them: projection into a crop or
//! padding box, horizontal flips, and the crop samplers' constraints and
//! emission rules ([`DetLabel::try_crop`]).

use oxnet_core::{Error, Result};

/// An axis-aligned box `(x, y, width, height)` in fractions of the image
/// (OpenCV's `Rect_<float>` arithmetic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxF {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub width: f32,
    /// Height.
    pub height: f32,
}

impl BoxF {
    /// The area (0 for an empty box).
    pub fn area(&self) -> f32 {
        self.width * self.height
    }

    /// The intersection with `other` (all zeros when they do not overlap).
    pub fn intersect(&self, other: &BoxF) -> BoxF {
        let x = self.x.max(other.x);
        let y = self.y.max(other.y);
        let width = (self.x + self.width).min(other.x + other.width) - x;
        let height = (self.y + self.height).min(other.y + other.height) - y;
        if width <= 0.0 || height <= 0.0 {
            return BoxF { x: 0.0, y: 0.0, width: 0.0, height: 0.0 };
        }
        BoxF { x, y, width, height }
    }

    /// Intersection over union (0 without overlap).
    pub fn iou(&self, other: &BoxF) -> f32 {
        let inter = self.intersect(other).area();
        if inter <= 0.0 {
            return 0.0;
        }
        inter / (self.area() + other.area() - inter)
    }

    /// Whether the point is inside (left and top edges included, right
    /// and bottom excluded).
    pub fn contains(&self, px: f32, py: f32) -> bool {
        self.x <= px && px < self.x + self.width && self.y <= py && py < self.y + self.height
    }
}

/// One object of a label.
#[derive(Clone, Debug, PartialEq)]
pub struct DetObject {
    /// Class id.
    pub id: f32,
    /// Left edge.
    pub left: f32,
    /// Top edge.
    pub top: f32,
    /// Right edge.
    pub right: f32,
    /// Bottom edge.
    pub bottom: f32,
    /// The object's values after its corners.
    pub extra: Vec<f32>,
}

impl DetObject {
    /// The object's box.
    pub fn to_box(&self) -> BoxF {
        BoxF { x: self.left, y: self.top, width: self.right - self.left, height: self.bottom - self.top }
    }

    /// The object in the coordinates of `region`, clipped to `[0, 1]`.
    pub fn project(&self, region: &BoxF) -> DetObject {
        DetObject {
            left: ((self.left - region.x) / region.width).max(0.0),
            top: ((self.top - region.y) / region.height).max(0.0),
            right: ((self.right - region.x) / region.width).min(1.0),
            bottom: ((self.bottom - region.y) / region.height).min(1.0),
            ..self.clone()
        }
    }

    /// The object mirrored left-right.
    pub fn flip(&self) -> DetObject {
        DetObject { left: 1.0 - self.right, right: 1.0 - self.left, ..self.clone() }
    }
}

/// Which objects a crop keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitMode {
    /// Those whose centre lies in the crop.
    Center,
    /// Those whose covered fraction exceeds the threshold.
    Overlap,
}

/// The constraints of one crop sampler: a crop is accepted when some
/// object's IoU, `intersection / crop area` (sample coverage) and
/// `intersection / object area` (object coverage) all lie in their ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropConstraints {
    /// IoU range.
    pub overlap: (f32, f32),
    /// Intersection over the crop's area.
    pub sample_coverage: (f32, f32),
    /// Intersection over the object's area.
    pub object_coverage: (f32, f32),
}

impl CropConstraints {
    fn constrains(range: (f32, f32)) -> bool {
        range.0 > 0.0 || range.1 < 1.0
    }

    fn outside(v: f32, range: (f32, f32)) -> bool {
        v < range.0 || v > range.1
    }

    /// Whether `crop` meets the constraints for `object` (unconstrained
    /// ranges, `[0, 1]`, are not checked).
    pub fn accepts(&self, crop: &BoxF, object: &BoxF) -> bool {
        if Self::constrains(self.overlap) && Self::outside(crop.iou(object), self.overlap) {
            return false;
        }
        let inter = || crop.intersect(object).area();
        if Self::constrains(self.sample_coverage)
            && Self::outside(inter() / crop.area(), self.sample_coverage)
        {
            return false;
        }
        if Self::constrains(self.object_coverage)
            && Self::outside(inter() / object.area(), self.object_coverage)
        {
            return false;
        }
        true
    }

    /// Whether any range constrains at all.
    pub fn any(&self) -> bool {
        Self::constrains(self.overlap)
            || Self::constrains(self.sample_coverage)
            || Self::constrains(self.object_coverage)
    }
}

/// A parsed label: its header and its valid objects (those with
/// `xmax > xmin` and `ymax > ymin`; others are dropped on reading).
#[derive(Clone, Debug, PartialEq)]
pub struct DetLabel {
    header: Vec<f32>,
    object_width: usize,
    /// The objects, in the label's order.
    pub objects: Vec<DetObject>,
}

impl DetLabel {
    /// Parses a flat label (at least a two-value header and one object of
    /// at least five values).
    pub fn parse(raw: &[f32]) -> Result<DetLabel> {
        let bad = |msg: String| Err(Error::Invalid(format!("bad detection label {raw:?}: {msg}")));
        if raw.len() < 7 {
            return bad(format!("{} values, fewer than 7 (a header of 2 and one object of 5)", raw.len()));
        }
        let (header_width, object_width) = (raw[0] as i64, raw[1] as i64);
        if header_width < 2 {
            return bad(format!("header width {header_width} is below 2"));
        }
        if object_width < 5 {
            return bad(format!("object width {object_width} is below 5"));
        }
        let (hw, ow) = (header_width as usize, object_width as usize);
        if hw > raw.len() || !(raw.len() - hw).is_multiple_of(ow) {
            return bad(format!(
                "{} values after a header of {hw} are not objects of {ow}",
                raw.len() - hw.min(raw.len())
            ));
        }
        let objects = raw[hw..]
            .chunks(ow)
            .map(|o| DetObject {
                id: o[0],
                left: o[1],
                top: o[2],
                right: o[3],
                bottom: o[4],
                extra: o[5..].to_vec(),
            })
            .filter(|o| o.right > o.left && o.bottom > o.top)
            .collect();
        Ok(DetLabel { header: raw[..hw].to_vec(), object_width: ow, objects })
    }

    /// The flat label again: header, then the objects.
    pub fn to_vec(&self) -> Vec<f32> {
        let mut out = self.header.clone();
        out.reserve(self.objects.len() * self.object_width);
        for o in &self.objects {
            out.extend_from_slice(&[o.id, o.left, o.top, o.right, o.bottom]);
            out.extend_from_slice(&o.extra);
        }
        out
    }

    /// Mirrors every object left-right.
    pub fn flip(&mut self) {
        self.objects = self.objects.iter().map(DetObject::flip).collect();
    }

    /// Projects every object into the padded image `pad` (a box around
    /// the image: negative corner, sides above 1).
    pub fn pad(&mut self, pad: &BoxF) {
        self.objects = self.objects.iter().map(|o| o.project(pad)).collect();
    }

    /// Tries the crop `crop`: it is rejected when no object meets
    /// `constraints`, or when no object is kept by `emit` (centre inside
    /// the crop, or covered fraction above `emit_overlap_thresh`);
    /// otherwise the kept objects are projected into the crop and `true`
    /// returned. A label without objects accepts any crop.
    pub fn try_crop(
        &mut self,
        crop: &BoxF,
        constraints: &CropConstraints,
        emit: EmitMode,
        emit_overlap_thresh: f32,
    ) -> bool {
        if self.objects.is_empty() {
            return true;
        }
        if constraints.any() && !self.objects.iter().any(|o| constraints.accepts(crop, &o.to_box())) {
            return false;
        }
        let kept: Vec<DetObject> = self
            .objects
            .iter()
            .filter(|o| match emit {
                EmitMode::Center => crop.contains((o.left + o.right) * 0.5, (o.top + o.bottom) * 0.5),
                EmitMode::Overlap => {
                    let b = o.to_box();
                    crop.intersect(&b).area() / b.area() > emit_overlap_thresh
                }
            })
            .map(|o| o.project(crop))
            .collect();
        if kept.is_empty() {
            return false;
        }
        self.objects = kept;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label() -> DetLabel {
        // header [3, 6, 9]; objects of 6: an inverted box is dropped
        DetLabel::parse(&[
            3.0, 6.0, 9.0, //
            1.0, 0.1, 0.2, 0.5, 0.6, 7.0, //
            2.0, 0.8, 0.1, 0.2, 0.4, 0.0, //
            4.0, 0.5, 0.5, 0.9, 0.7, 1.0,
        ])
        .unwrap()
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len(), "{a:?} {b:?}");
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6), "{a:?} {b:?}");
    }

    #[test]
    fn parse_drops_invalid_boxes_and_round_trips() {
        let l = label();
        assert_eq!(l.objects.len(), 2);
        close(&l.to_vec(), &[3.0, 6.0, 9.0, 1.0, 0.1, 0.2, 0.5, 0.6, 7.0, 4.0, 0.5, 0.5, 0.9, 0.7, 1.0]);
        assert!(DetLabel::parse(&[2.0, 5.0, 0.0, 0.1, 0.1, 0.2]).is_err());
        assert!(DetLabel::parse(&[2.0, 4.0, 0.0, 0.1, 0.1, 0.2, 0.3]).is_err());
        assert!(DetLabel::parse(&[2.0, 5.0, 0.0, 0.1, 0.1, 0.2, 0.3, 1.0]).is_err());
    }

    #[test]
    fn flip_and_pad() {
        let mut l = label();
        l.flip();
        close(&l.to_vec()[3..9], &[1.0, 0.5, 0.2, 0.9, 0.6, 7.0]);
        // padding to scale 2 with the image at (0.5, 0.25): x' = (x + 0.5) / 2
        let mut l = label();
        l.pad(&BoxF { x: -0.5, y: -0.25, width: 2.0, height: 2.0 });
        close(&l.to_vec()[3..9], &[1.0, 0.3, 0.225, 0.5, 0.425, 7.0]);
    }

    #[test]
    fn box_geometry() {
        let a = BoxF { x: 0.0, y: 0.0, width: 0.5, height: 0.5 };
        let b = BoxF { x: 0.25, y: 0.25, width: 0.5, height: 0.5 };
        // intersection 0.25 x 0.25 = 0.0625; union 0.25 + 0.25 - 0.0625
        assert_eq!(a.intersect(&b), BoxF { x: 0.25, y: 0.25, width: 0.25, height: 0.25 });
        assert!((a.iou(&b) - 0.0625 / 0.4375).abs() < 1e-7);
        let far = BoxF { x: 0.6, y: 0.0, width: 0.1, height: 0.1 };
        assert_eq!(a.iou(&far), 0.0);
        assert!(a.contains(0.0, 0.0) && !a.contains(0.5, 0.2));
    }

    #[test]
    fn crop_center_emission() {
        // crop (0.3, 0.3)-(1, 1): object 1's centre (0.3, 0.4) is on the left edge (kept),
        // object 4's centre (0.7, 0.6) inside
        let crop = BoxF { x: 0.3, y: 0.3, width: 0.7, height: 0.7 };
        let none =
            CropConstraints { overlap: (0.0, 1.0), sample_coverage: (0.0, 1.0), object_coverage: (0.0, 1.0) };
        let mut l = label();
        assert!(l.try_crop(&crop, &none, EmitMode::Center, 0.3));
        // object 1: left (0.1-0.3)/0.7 < 0 -> 0, top 0, right 0.2/0.7, bottom 0.3/0.7
        close(&l.to_vec()[3..9], &[1.0, 0.0, 0.0, 0.2 / 0.7, 0.3 / 0.7, 7.0]);
        close(&l.to_vec()[9..15], &[4.0, 0.2 / 0.7, 0.2 / 0.7, 0.6 / 0.7, 0.4 / 0.7, 1.0]);
        // a crop holding no centre is rejected and leaves the label alone
        let mut l = label();
        let corner = BoxF { x: 0.0, y: 0.8, width: 0.2, height: 0.2 };
        assert!(!l.try_crop(&corner, &none, EmitMode::Center, 0.3));
        assert_eq!(l, label());
    }

    #[test]
    fn crop_overlap_emission_and_constraints() {
        // crop (0, 0)-(0.4, 0.4): object 1 (0.1..0.5 x 0.2..0.6, area 0.16) is covered
        // 0.3 x 0.2 = 0.06 -> 0.375; object 4 not at all
        let crop = BoxF { x: 0.0, y: 0.0, width: 0.4, height: 0.4 };
        let none =
            CropConstraints { overlap: (0.0, 1.0), sample_coverage: (0.0, 1.0), object_coverage: (0.0, 1.0) };
        let mut l = label();
        assert!(l.try_crop(&crop, &none, EmitMode::Overlap, 0.3));
        assert_eq!(l.objects.len(), 1);
        close(&l.to_vec()[3..9], &[1.0, 0.25, 0.5, 1.0, 1.0, 7.0]);
        let mut l = label();
        assert!(!l.try_crop(&crop, &none, EmitMode::Overlap, 0.4));
        // IoU of object 1 with the crop: 0.06 / (0.16 + 0.16 - 0.06) = 0.2308
        let iou = |lo, hi| CropConstraints { overlap: (lo, hi), ..none };
        assert!(label().try_crop(&crop, &iou(0.2, 0.25), EmitMode::Overlap, 0.3));
        assert!(!label().try_crop(&crop, &iou(0.25, 1.0), EmitMode::Overlap, 0.3));
        // sample coverage 0.06 / 0.16 = 0.375 of the crop; object coverage 0.375 too
        let sample = CropConstraints { sample_coverage: (0.4, 1.0), ..none };
        assert!(!label().try_crop(&crop, &sample, EmitMode::Overlap, 0.3));
        let object = CropConstraints { object_coverage: (0.3, 0.38), ..none };
        assert!(label().try_crop(&crop, &object, EmitMode::Overlap, 0.3));
    }
}
