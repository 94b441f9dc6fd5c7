//! Views: new shapes and strides over the same storage, no copying.

use super::NDArray;
use crate::shape::{broadcast_strides, normalize_axis, resolve_reshape, Shape, Strides};
use crate::{DType, Error, Result};

/// One axis of a slice: numpy's `begin:end:step`, with `None` meaning "from the
/// start"/"to the end" and negative indices counting from the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SliceSpec {
    /// First index (inclusive).
    pub begin: Option<i64>,
    /// Last index (exclusive).
    pub end: Option<i64>,
    /// Step; must not be 0. `None` means 1.
    pub step: Option<i64>,
}

impl SliceSpec {
    /// `begin..end` with step 1.
    pub fn range(begin: i64, end: i64) -> SliceSpec {
        SliceSpec { begin: Some(begin), end: Some(end), step: None }
    }

    /// The whole axis.
    pub fn all() -> SliceSpec {
        SliceSpec::default()
    }

    /// Resolves against an axis of length `len`: (start, count, step).
    pub fn resolve(&self, len: usize) -> Result<(usize, usize, i64)> {
        let step = self.step.unwrap_or(1);
        if step == 0 {
            return Err(Error::Invalid("slice step cannot be zero".into()));
        }
        let n = len as i64;
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let norm = |v: i64| if v < 0 { v + n } else { v };
        let (start, stop) = if step > 0 {
            (clamp(self.begin.map(norm).unwrap_or(0), 0, n), clamp(self.end.map(norm).unwrap_or(n), 0, n))
        } else {
            (
                clamp(self.begin.map(norm).unwrap_or(n - 1), -1, n - 1),
                clamp(self.end.map(norm).unwrap_or(-1), -1, n - 1),
            )
        };
        let count = if step > 0 {
            if stop > start {
                (stop - start + step - 1) / step
            } else {
                0
            }
        } else if start > stop {
            (start - stop + (-step) - 1) / (-step)
        } else {
            0
        };
        Ok((start.max(0) as usize, count as usize, step))
    }
}

impl NDArray {
    /// Reshapes with MXNet's codes (0, -1, -2, -3, -4; see
    /// [`resolve_reshape`](crate::shape::resolve_reshape)). A view when the
    /// array is contiguous, a copy otherwise.
    pub fn reshape(&self, spec: &[i64]) -> Result<NDArray> {
        let new_shape = resolve_reshape(self.shape(), spec)?;
        let src = self.contiguous()?;
        let strides = crate::shape::contiguous_strides(&new_shape);
        Ok(src.with_layout(new_shape, strides, src.offset()))
    }

    /// A contiguous array of `shape` and `dtype` over the start of this
    /// array's storage, whatever this array's own dtype and layout (graph
    /// executors carve planned buffers out of shared blocks this way). The
    /// storage must hold enough bytes.
    pub fn storage_view(&self, shape: &[usize], dtype: DType) -> Result<NDArray> {
        let bytes = crate::shape::numel(shape).saturating_mul(dtype.size());
        if bytes > self.storage().bytes() {
            return Err(Error::Shape(format!(
                "a {dtype} view of shape {shape:?} needs {bytes} bytes; the storage holds {}",
                self.storage().bytes()
            )));
        }
        Ok(NDArray::from_parts(
            self.storage().clone(),
            Shape::from_slice(shape),
            crate::shape::contiguous_strides(shape),
            0,
            dtype,
        ))
    }

    /// Reshapes to an explicit shape (no codes).
    pub fn reshape_to(&self, shape: &[usize]) -> Result<NDArray> {
        let spec: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
        if crate::shape::numel(shape) != self.size() {
            return Err(Error::Shape(format!(
                "cannot reshape {:?} ({} elements) to {shape:?}",
                self.shape(),
                self.size()
            )));
        }
        if shape.contains(&0) {
            let src = self.contiguous()?;
            return Ok(src.with_layout(
                Shape::from_slice(shape),
                crate::shape::contiguous_strides(shape),
                src.offset(),
            ));
        }
        self.reshape(&spec)
    }

    /// Permutes the axes; `None` reverses them (numpy's `.T`).
    pub fn transpose(&self, axes: Option<&[usize]>) -> Result<NDArray> {
        let nd = self.ndim();
        let axes: Vec<usize> = match axes {
            Some(a) => a.to_vec(),
            None => (0..nd).rev().collect(),
        };
        let mut seen = vec![false; nd];
        if axes.len() != nd || axes.iter().any(|&a| a >= nd || std::mem::replace(&mut seen[a], true)) {
            return Err(Error::Shape(format!("transpose axes {axes:?} are not a permutation of 0..{nd}")));
        }
        let shape: Shape = axes.iter().map(|&a| self.shape()[a]).collect();
        let strides: Strides = axes.iter().map(|&a| self.strides()[a]).collect();
        Ok(self.with_layout(shape, strides, self.offset()))
    }

    /// Slices every axis (missing trailing axes are taken whole).
    pub fn slice(&self, specs: &[SliceSpec]) -> Result<NDArray> {
        if specs.len() > self.ndim() {
            return Err(Error::Shape(format!(
                "{} slice entries for an array of rank {}",
                specs.len(),
                self.ndim()
            )));
        }
        let mut shape = Shape::from_slice(self.shape());
        let mut strides = Strides::from_slice(self.strides());
        let mut offset = self.offset() as isize;
        for (axis, spec) in specs.iter().enumerate() {
            let (start, count, step) = spec.resolve(self.shape()[axis])?;
            if count > 0 {
                offset += start as isize * self.strides()[axis];
            }
            shape[axis] = count;
            strides[axis] = self.strides()[axis] * step as isize;
        }
        Ok(self.with_layout(shape, strides, offset.max(0) as usize))
    }

    /// Slices one axis: `begin..end` (end `None` = to the end; negatives count from the end).
    pub fn slice_axis(&self, axis: i64, begin: i64, end: Option<i64>) -> Result<NDArray> {
        let axis = normalize_axis(axis, self.ndim())?;
        let mut specs = vec![SliceSpec::all(); axis + 1];
        specs[axis] = SliceSpec { begin: Some(begin), end, step: None };
        self.slice(&specs)
    }

    /// Selects index `i` of axis 0, dropping that axis (`x[i]`).
    pub fn at(&self, i: i64) -> Result<NDArray> {
        if self.ndim() == 0 {
            return Err(Error::Shape("cannot index a 0-d array".into()));
        }
        let n = self.shape()[0] as i64;
        let idx = if i < 0 { i + n } else { i };
        if idx < 0 || idx >= n {
            return Err(Error::Shape(format!("index {i} is out of bounds for axis 0 of size {n}")));
        }
        let offset = self.offset() as isize + idx as isize * self.strides()[0];
        Ok(self.with_layout(
            Shape::from_slice(&self.shape()[1..]),
            Strides::from_slice(&self.strides()[1..]),
            offset as usize,
        ))
    }

    /// A read view with the broadcast shape `shape` (stride 0 on broadcast axes).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<NDArray> {
        let strides = broadcast_strides(self.shape(), self.strides(), shape)?;
        Ok(self.with_layout(Shape::from_slice(shape), strides, self.offset()))
    }

    /// Inserts an axis of length 1 at `axis` (negative counts from the end of the new rank).
    pub fn expand_dims(&self, axis: i64) -> Result<NDArray> {
        let axis = normalize_axis(axis, self.ndim() + 1)?;
        let mut shape = Shape::from_slice(self.shape());
        let mut strides = Strides::from_slice(self.strides());
        let stride = if axis < self.ndim() { self.strides()[axis] * self.shape()[axis] as isize } else { 1 };
        shape.insert(axis, 1);
        strides.insert(axis, stride);
        Ok(self.with_layout(shape, strides, self.offset()))
    }

    /// Removes axes of length 1 (the given ones, or all of them).
    pub fn squeeze(&self, axes: Option<&[i64]>) -> Result<NDArray> {
        let nd = self.ndim();
        let drop: Vec<bool> = match axes {
            None => self.shape().iter().map(|d| *d == 1).collect(),
            Some(list) => {
                let mut drop = vec![false; nd];
                for a in list {
                    let a = normalize_axis(*a, nd)?;
                    if self.shape()[a] != 1 {
                        return Err(Error::Shape(format!(
                            "cannot squeeze axis {a} of size {} (shape {:?})",
                            self.shape()[a],
                            self.shape()
                        )));
                    }
                    drop[a] = true;
                }
                drop
            }
        };
        let shape: Shape = (0..nd).filter(|i| !drop[*i]).map(|i| self.shape()[i]).collect();
        let strides: Strides = (0..nd).filter(|i| !drop[*i]).map(|i| self.strides()[i]).collect();
        Ok(self.with_layout(shape, strides, self.offset()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    fn iota(shape: &[usize]) -> NDArray {
        NDArray::arange(0.0, crate::shape::numel(shape) as f64, 1.0, DType::F32)
            .unwrap()
            .reshape_to(shape)
            .unwrap()
    }

    #[test]
    fn views_share_storage() {
        let a = iota(&[2, 3]);
        let t = a.transpose(None).unwrap();
        assert!(t.shares_storage(&a));
        assert!(!t.is_contiguous());
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
        let s =
            a.slice(&[SliceSpec::all(), SliceSpec { begin: Some(2), end: None, step: Some(-1) }]).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![2., 1., 0., 5., 4., 3.]);
        let b = a.slice_axis(1, 1, None).unwrap();
        assert_eq!(b.shape(), &[2, 2]);
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![1., 2., 4., 5.]);
        b.fill(9.0).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0., 9., 9., 3., 9., 9.]);
        let e = a.expand_dims(1).unwrap();
        assert_eq!(e.shape(), &[2, 1, 3]);
        assert!(e.is_contiguous());
        assert_eq!(e.squeeze(None).unwrap().shape(), &[2, 3]);
        assert!(e.squeeze(Some(&[0])).is_err());
        let bc = iota(&[3]).broadcast_to(&[2, 3]).unwrap();
        assert_eq!(bc.to_vec::<f32>().unwrap(), vec![0., 1., 2., 0., 1., 2.]);
        assert_eq!(a.at(-1).unwrap().to_vec::<f32>().unwrap(), vec![3., 9., 9.]);
        // reshape of a non-contiguous view copies
        let r = t.reshape(&[-1]).unwrap();
        assert!(!r.shares_storage(&a));
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 3., 9., 9., 9., 9.]);
        assert_eq!(iota(&[2, 3, 4]).reshape(&[-3, 0]).unwrap().shape(), &[6, 4]);
    }

    #[test]
    fn slice_resolution() {
        assert_eq!(SliceSpec::range(-2, 10).resolve(5).unwrap(), (3, 2, 1));
        assert_eq!(SliceSpec { begin: None, end: None, step: Some(-2) }.resolve(5).unwrap(), (4, 3, -2));
        assert!(SliceSpec { begin: None, end: None, step: Some(0) }.resolve(5).is_err());
        assert_eq!(SliceSpec::range(3, 1).resolve(5).unwrap().1, 0);
    }
}
