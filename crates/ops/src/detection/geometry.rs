//! The geometry the detection operators share: box formats, overlaps as
//! MXNet's kernels compute them, the stable descending sort they order
//! boxes by, and greedy non-maximum suppression.

use super::Real;
use oxnet_core::attrs::Attrs;
use oxnet_core::{AttrKind, AttrSpec, Result};
use std::cmp::Ordering;

/// How the four coordinates of a box are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BoxFormat {
    /// `[xmin, ymin, xmax, ymax]`.
    Corner,
    /// `[center_x, center_y, width, height]`.
    Center,
}

impl BoxFormat {
    /// The format attribute `name` (`corner` or `center`).
    pub fn of(attrs: &Attrs, name: &str) -> Result<BoxFormat> {
        Ok(if attrs.str(name)? == "center" { BoxFormat::Center } else { BoxFormat::Corner })
    }

    /// Declares a format attribute.
    pub fn attr(name: &str, default: &str, doc: &str) -> AttrSpec {
        AttrSpec::optional(name, AttrKind::Choice(vec!["corner", "center"]), default, doc)
    }
}

/// C++'s `std::max(a, b)`: `b` when `a < b`, else `a`.
#[inline(always)]
pub(super) fn cpp_max<T: PartialOrd>(a: T, b: T) -> T {
    if a < b {
        b
    } else {
        a
    }
}

/// C++'s `std::min(a, b)`: `b` when `b < a`, else `a`.
#[inline(always)]
pub(super) fn cpp_min<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

/// The overlap of two boxes along one axis (MXNet's `Intersect`): `a0`,
/// `a2` are the low and high coordinates (corner) or center and extent
/// (center) of the first box, `b0`, `b2` the second's; never negative.
#[inline]
fn overlap_1d<T: Real>(a0: T, a2: T, b0: T, b2: T, fmt: BoxFormat) -> T {
    let w = match fmt {
        BoxFormat::Corner => {
            let left = if a0 > b0 { a0 } else { b0 };
            let right = if a2 < b2 { a2 } else { b2 };
            right - left
        }
        BoxFormat::Center => {
            let two = T::ONE + T::ONE;
            let (aw, bw) = (a2 / two, b2 / two);
            let (al, ar, bl, br) = (a0 - aw, a0 + aw, b0 - bw, b0 + bw);
            let left = if bl > al { bl } else { al };
            let right = if br < ar { br } else { ar };
            right - left
        }
    };
    if w > T::ZERO {
        w
    } else {
        T::ZERO
    }
}

/// The area of the intersection of boxes `a` and `b` (4 coordinates each).
#[inline]
pub(super) fn intersection<T: Real>(a: &[T], b: &[T], fmt: BoxFormat) -> T {
    overlap_1d(a[0], a[2], b[0], b[2], fmt) * overlap_1d(a[1], a[3], b[1], b[3], fmt)
}

/// The area of box `b` (MXNet's `BoxArea`): 0 when its width or height
/// is negative.
#[inline]
pub(super) fn box_area<T: Real>(b: &[T], fmt: BoxFormat) -> T {
    let (w, h) = match fmt {
        BoxFormat::Corner => (b[2] - b[0], b[3] - b[1]),
        BoxFormat::Center => (b[2], b[3]),
    };
    if w < T::ZERO || h < T::ZERO {
        T::ZERO
    } else {
        w * h
    }
}

/// Intersection and union of two corner boxes as the MultiBox kernels
/// compute them: the areas are not clamped, so inverted boxes give odd
/// unions, which the callers test.
#[inline]
pub(super) fn corner_inter_union<T: Real>(a: &[T], b: &[T]) -> (T, T) {
    let w = cpp_max(T::ZERO, cpp_min(a[2], b[2]) - cpp_max(a[0], b[0]));
    let h = cpp_max(T::ZERO, cpp_min(a[3], b[3]) - cpp_max(a[1], b[1]));
    let inter = w * h;
    let union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    (inter, union)
}

/// Rewrites the corner box `b` as a center box, unless its first
/// coordinate is negative (MXNet's `corner_to_center` skips those, meant
/// for the -1 rows of suppressed boxes).
pub(super) fn corner_to_center<T: Real>(b: &mut [T]) {
    if b[0] < T::ZERO {
        return;
    }
    let two = T::ONE + T::ONE;
    let (l, t, r, bot) = (b[0], b[1], b[2], b[3]);
    b.copy_from_slice(&[(l + r) / two, (t + bot) / two, r - l, bot - t]);
}

/// Rewrites the center box `b` as a corner box, unless its center x is
/// negative (as MXNet's `center_to_corner`).
pub(super) fn center_to_corner<T: Real>(b: &mut [T]) {
    if b[0] < T::ZERO {
        return;
    }
    let two = T::ONE + T::ONE;
    let (x, y, w, h) = (b[0], b[1], b[2] / two, b[3] / two);
    b.copy_from_slice(&[x - w, y - h, x + w, y + h]);
}

/// Largest first, NaN after every number; equal keys compare equal.
fn descending<K: PartialOrd>(a: &K, b: &K) -> Ordering {
    b.partial_cmp(a).unwrap_or_else(|| {
        let nan = |x: &K| x.partial_cmp(x).is_none();
        nan(a).cmp(&nan(b))
    })
}

/// The positions `0..n` ordered by `key`, largest first; equal keys keep
/// their order (C++'s `std::stable_sort` with `>`, as MXNet's kernels
/// sort; NaN keys, which that leaves undefined, go last).
pub(super) fn argsort_desc<K: PartialOrd>(n: usize, key: impl Fn(usize) -> K) -> Vec<usize> {
    let keys: Vec<K> = (0..n).map(key).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| descending(&keys[a], &keys[b]));
    order
}

/// Decides whether a candidate box is suppressed by boxes already kept.
pub(super) trait Suppress {
    /// True when candidate `cand` overlaps one of `kept` (earlier
    /// candidates, in order) too much.
    fn suppressed(&mut self, kept: &[usize], cand: usize) -> bool;
}

/// Any `f(kept, cand)` that says whether the kept box `kept` suppresses the
/// candidate `cand`, tried against the kept boxes in order.
impl<F: FnMut(usize, usize) -> bool> Suppress for F {
    fn suppressed(&mut self, kept: &[usize], cand: usize) -> bool {
        kept.iter().any(|&k| self(k, cand))
    }
}

/// Greedy non-maximum suppression over the candidates `0..n`, best first:
/// a candidate is kept unless a box kept before it suppresses it, and the
/// walk stops once `limit` boxes are kept. Returns the kept candidates in
/// order. Equivalent to MXNet's loops, which go through the kept boxes and
/// mark the later candidates each suppresses: a suppressed box suppresses
/// nothing, so both keep the same boxes.
pub(super) fn greedy_nms(n: usize, limit: usize, rule: &mut impl Suppress) -> Vec<usize> {
    let mut kept = Vec::new();
    for cand in 0..n {
        if kept.len() >= limit {
            break;
        }
        if !rule.suppressed(&kept, cand) {
            kept.push(cand);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_is_stable_descending_with_nan_last() {
        let keys = [1.0f32, 3.0, f32::NAN, 3.0, -1.0, 1.0];
        assert_eq!(argsort_desc(keys.len(), |i| keys[i]), [1, 3, 0, 5, 4, 2]);
    }

    #[test]
    fn overlaps_in_both_formats() {
        let (a, b) = ([0.0f64, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]);
        assert_eq!(intersection(&a, &b, BoxFormat::Corner), 1.0);
        assert_eq!(box_area(&b, BoxFormat::Corner), 6.0);
        assert_eq!(box_area(&[2.0, 2.0, 1.0, 3.0], BoxFormat::Corner), 0.0);
        // the same boxes as centers
        let (ac, bc) = ([1.0f64, 1.0, 2.0, 2.0], [2.0, 2.5, 2.0, 3.0]);
        assert_eq!(intersection(&ac, &bc, BoxFormat::Center), 1.0);
        assert_eq!(box_area(&bc, BoxFormat::Center), 6.0);
        assert_eq!(corner_inter_union(&a, &b), (1.0, 9.0));
        let mut c = b;
        corner_to_center(&mut c);
        assert_eq!(c, bc);
        center_to_corner(&mut c);
        assert_eq!(c, b);
        let mut skipped = [-1.0f64, 0.0, 1.0, 1.0];
        corner_to_center(&mut skipped);
        assert_eq!(skipped, [-1.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn greedy_nms_keeps_what_no_kept_box_suppresses() {
        // 0 suppresses 1, 1 (suppressed) would suppress 2: 2 stays
        let mut rule = |k: usize, c: usize| (k, c) == (0, 1) || (k, c) == (1, 2);
        assert_eq!(greedy_nms(4, usize::MAX, &mut rule), [0, 2, 3]);
        assert_eq!(greedy_nms(4, 2, &mut rule), [0, 2]);
        assert_eq!(greedy_nms(4, 0, &mut rule), Vec::<usize>::new());
    }
}
