//! Shapes, strides, broadcasting and MXNet's reshape codes.

use crate::{Error, Result};
use smallvec::SmallVec;

/// An array shape: one extent per axis (empty for a 0-d array).
pub type Shape = SmallVec<[usize; 6]>;
/// Strides in elements, one per axis; 0 for a broadcast axis, negative allowed.
pub type Strides = SmallVec<[isize; 6]>;

/// Builds a [`Shape`] from a slice.
pub fn shape(dims: &[usize]) -> Shape {
    Shape::from_slice(dims)
}

/// Merges the partially known shape `new` into `have` (a dimension of 0 is
/// unknown, as in MXNet's legacy shapes): unknown dimensions of `have` take
/// `new`'s; ranks or known dimensions that differ are an error.
pub fn merge_partial(have: &mut Shape, new: &[usize]) -> Result<()> {
    let conflict = || Error::Shape(format!("shapes {:?} and {new:?} must be equal", have.as_slice()));
    if have.len() != new.len() {
        return Err(conflict());
    }
    if have.iter().zip(new).any(|(&h, &n)| h != 0 && n != 0 && h != n) {
        return Err(conflict());
    }
    for (h, &n) in have.iter_mut().zip(new) {
        if *h == 0 {
            *h = n;
        }
    }
    Ok(())
}

/// True when no dimension of `s` is 0 (unknown in a partial shape).
pub fn is_known(s: &[usize]) -> bool {
    !s.contains(&0)
}

/// Number of elements of a shape (1 for 0-d).
#[inline]
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major (C order) strides for a shape.
#[inline]
pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::smallvec![0; shape.len()];
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1) as isize;
    }
    strides
}

/// Normalises a possibly negative axis for an array of rank `ndim`.
pub fn normalize_axis(axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::Shape(format!("axis {axis} is out of range for an array of rank {ndim}")));
    }
    Ok(a as usize)
}

/// The numpy broadcast of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Shape(format!("shapes {a:?} and {b:?} cannot be broadcast together")));
        };
    }
    Ok(out)
}

/// Strides that read an array of shape `from` (with strides `strides`) as if it
/// had the larger broadcast shape `to`: broadcast axes get stride 0.
pub fn broadcast_strides(from: &[usize], strides: &[isize], to: &[usize]) -> Result<Strides> {
    if from.len() > to.len() {
        return Err(Error::Shape(format!("cannot broadcast shape {from:?} to {to:?}")));
    }
    let lead = to.len() - from.len();
    let mut out: Strides = smallvec::smallvec![0; to.len()];
    for i in 0..from.len() {
        if from[i] == to[i + lead] {
            out[i + lead] = strides[i];
        } else if from[i] == 1 {
            out[i + lead] = 0;
        } else {
            return Err(Error::Shape(format!("cannot broadcast shape {from:?} to {to:?}")));
        }
    }
    Ok(out)
}

/// Resolves MXNet's reshape codes against an input shape.
///
/// Codes: `0` copies the input's extent at this position; `-1` is inferred
/// from the remaining size; `-2` copies all remaining input axes; `-3` merges
/// two consecutive input axes; `-4, a, b` splits one input axis into `a` and
/// `b` (one of which may be `-1`). Plain numbers are new extents.
pub fn resolve_reshape(input: &[usize], spec: &[i64]) -> Result<Shape> {
    let total = numel(input);
    let mut out: SmallVec<[i64; 6]> = SmallVec::new();
    let mut src = 0usize; // position in the input shape
    let mut infer_at: Option<usize> = None;
    let mut i = 0usize;
    let err = |msg: String| Error::Shape(format!("reshape {input:?} with {spec:?}: {msg}"));
    while i < spec.len() {
        let code = spec[i];
        match code {
            0 => {
                let d = *input.get(src).ok_or_else(|| err("code 0 past the input's rank".into()))?;
                out.push(d as i64);
                src += 1;
            }
            -1 => {
                if infer_at.is_some() {
                    return Err(err("more than one -1".into()));
                }
                infer_at = Some(out.len());
                out.push(-1);
                src += 1;
            }
            -2 => {
                while src < input.len() {
                    out.push(input[src] as i64);
                    src += 1;
                }
            }
            -3 => {
                if src + 1 >= input.len() {
                    return Err(err("code -3 needs two input axes".into()));
                }
                out.push((input[src] * input[src + 1]) as i64);
                src += 2;
            }
            -4 => {
                if i + 2 >= spec.len() {
                    return Err(err("code -4 needs two following numbers".into()));
                }
                let d = *input.get(src).ok_or_else(|| err("code -4 past the input's rank".into()))? as i64;
                let (mut a, mut b) = (spec[i + 1], spec[i + 2]);
                if a == -1 && b == -1 || a < -1 || b < -1 {
                    return Err(err("code -4 takes two extents, at most one of them -1".into()));
                }
                if a == -1 {
                    a = if b == 0 { 0 } else { d / b };
                }
                if b == -1 {
                    b = if a == 0 { 0 } else { d / a };
                }
                if a * b != d {
                    return Err(err(format!("cannot split axis of size {d} into {a} x {b}")));
                }
                out.push(a);
                out.push(b);
                src += 1;
                i += 2;
            }
            d if d > 0 => {
                out.push(d);
                src += 1;
            }
            d => return Err(err(format!("invalid code {d}"))),
        }
        i += 1;
    }
    if let Some(pos) = infer_at {
        let known: i64 = out.iter().enumerate().filter(|(j, _)| *j != pos).map(|(_, d)| *d).product();
        if known == 0 || total as i64 % known != 0 {
            return Err(err(format!("cannot infer -1 for {total} elements")));
        }
        out[pos] = total as i64 / known;
    }
    let shape: Shape = out.iter().map(|d| *d as usize).collect();
    if numel(&shape) != total {
        return Err(err(format!("size {} does not match {} elements", numel(&shape), total)));
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap().as_slice(), &[3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap().as_slice(), &[2, 2]);
        assert!(broadcast_shapes(&[3], &[4]).is_err());
        assert_eq!(broadcast_strides(&[3, 1], &[1, 1], &[2, 3, 4]).unwrap().as_slice(), &[0, 1, 0]);
    }

    #[test]
    fn reshape_codes_match_mxnet_docs() {
        let r = |i: &[usize], s: &[i64]| resolve_reshape(i, s).unwrap().to_vec();
        assert_eq!(r(&[2, 3, 4], &[4, 0, 2]), vec![4, 3, 2]);
        assert_eq!(r(&[2, 3, 4], &[2, 0, 0]), vec![2, 3, 4]);
        assert_eq!(r(&[2, 3, 4], &[6, 1, -1]), vec![6, 1, 4]);
        assert_eq!(r(&[2, 3, 4], &[3, -1, 8]), vec![3, 1, 8]);
        assert_eq!(r(&[2, 3, 4], &[-1]), vec![24]);
        assert_eq!(r(&[2, 3, 4], &[-2]), vec![2, 3, 4]);
        assert_eq!(r(&[2, 3, 4], &[2, -2]), vec![2, 3, 4]);
        assert_eq!(r(&[2, 3, 4], &[-2, 1, 1]), vec![2, 3, 4, 1, 1]);
        assert_eq!(r(&[2, 3, 4], &[-3, 4]), vec![6, 4]);
        assert_eq!(r(&[2, 3, 4, 5], &[-3, -3]), vec![6, 20]);
        assert_eq!(r(&[2, 3, 4], &[0, -3]), vec![2, 12]);
        assert_eq!(r(&[2, 3, 4], &[-3, -2]), vec![6, 4]);
        assert_eq!(r(&[2, 3, 4], &[-4, 1, 2, -2]), vec![1, 2, 3, 4]);
        assert_eq!(r(&[2, 3, 4], &[2, -4, -1, 3, -2]), vec![2, 1, 3, 4]);
        assert!(resolve_reshape(&[2, 3], &[4, -1]).is_err());
        assert!(resolve_reshape(&[2, 3], &[-1, -1]).is_err());
        assert!(resolve_reshape(&[2, 3], &[5]).is_err());
    }
}
