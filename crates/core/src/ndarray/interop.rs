//! Zero-copy views to and from the `ndarray` crate.

use super::NDArray;
use crate::shape::{Shape, Strides};
use crate::storage::Storage;
use crate::{Element, Error, Result};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use std::sync::Arc;

impl NDArray {
    /// Takes ownership of an `ndarray` array without copying its elements.
    pub fn from_ndarray<T: Element>(array: ArrayD<T>) -> Result<NDArray> {
        let shape: Shape = Shape::from_slice(array.shape());
        let strides: Strides = Strides::from_slice(array.strides());
        let (mut vec, offset) = array.into_raw_vec_and_offset();
        let offset = offset.unwrap_or(0);
        let bytes = vec.len() * std::mem::size_of::<T>();
        let ptr = vec.as_mut_ptr() as *mut u8;
        // SAFETY: the Vec's heap buffer does not move when the Vec is moved
        // into the owner box, and lives as long as the storage.
        let storage = unsafe { Storage::foreign(ptr, bytes, crate::Device::Cpu, Box::new(vec)) };
        Ok(NDArray::from_parts(Arc::new(storage), shape, strides, offset, T::DTYPE))
    }

    /// An array over memory owned elsewhere (a DLPack producer, a numpy
    /// array): `storage` from [`Storage::foreign`], seen with `shape` and
    /// non-negative element `strides`. Errors when the view would reach
    /// past the storage.
    pub fn from_foreign(
        storage: Storage,
        shape: &[usize],
        strides: &[isize],
        dtype: crate::DType,
    ) -> Result<NDArray> {
        if shape.len() != strides.len() || strides.iter().any(|&s| s < 0) {
            return Err(Error::Invalid(format!(
                "foreign memory: shape {shape:?} with strides {strides:?} is not a layout oxnet can view"
            )));
        }
        let span = if shape.contains(&0) {
            0
        } else {
            1 + shape.iter().zip(strides).map(|(&d, &s)| (d - 1) * s as usize).sum::<usize>()
        };
        if span * dtype.size() > storage.bytes() {
            return Err(Error::Invalid(format!(
                "foreign memory: a view of shape {shape:?} and strides {strides:?} needs {} bytes, the buffer has {}",
                span * dtype.size(),
                storage.bytes()
            )));
        }
        Ok(NDArray::from_parts(
            Arc::new(storage),
            Shape::from_slice(shape),
            Strides::from_slice(strides),
            0,
            dtype,
        ))
    }

    /// The lowest-addressed element and the absolute strides; `ndarray`
    /// takes only non-negative strides, so reversed axes are inverted after.
    fn positive_layout<T: Element>(&self) -> Result<(*mut T, Vec<usize>, Vec<usize>)> {
        let mut ptr = self.data_ptr::<T>()?;
        self.device().ensure_host()?;
        let mut reversed = Vec::new();
        let mut strides = Vec::with_capacity(self.ndim());
        for (axis, (&s, &d)) in self.strides().iter().zip(self.shape()).enumerate() {
            if s < 0 && d > 0 {
                // SAFETY: the last element along this axis lies inside the view.
                ptr = unsafe { ptr.offset(s * (d as isize - 1)) };
                reversed.push(axis);
            }
            strides.push(s.unsigned_abs());
        }
        Ok((ptr, strides, reversed))
    }

    /// A read-only `ndarray` view of the same memory (any strides).
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        let (ptr, strides, reversed) = self.positive_layout::<T>()?;
        let shape = IxDyn(self.shape()).strides(IxDyn(&strides));
        // SAFETY: the layout describes elements inside the storage, which
        // outlives the borrow of `self`.
        let mut view = unsafe { ArrayViewD::from_shape_ptr(shape, ptr as *const T) };
        for axis in reversed {
            view.invert_axis(ndarray::Axis(axis));
        }
        Ok(view)
    }

    /// A mutable `ndarray` view of the same memory (writable arrays only;
    /// broadcast views with zero strides are refused).
    pub fn view_mut<T: Element>(&self) -> Result<ArrayViewMutD<'_, T>> {
        self.check_writable()?;
        if self.strides().iter().zip(self.shape()).any(|(s, d)| *s == 0 && *d > 1) {
            return Err(Error::Invalid("cannot write through a broadcast view".into()));
        }
        let (ptr, strides, reversed) = self.positive_layout::<T>()?;
        let shape = IxDyn(self.shape()).strides(IxDyn(&strides));
        // SAFETY: as in `view`; no two elements alias (no zero strides).
        let mut view = unsafe { ArrayViewMutD::from_shape_ptr(shape, ptr) };
        for axis in reversed {
            view.invert_axis(ndarray::Axis(axis));
        }
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, NDArray, SliceSpec};

    #[test]
    fn round_trips_without_copies() {
        let arr =
            ndarray::Array::from_shape_vec((2, 3), vec![1.0f32, 2., 3., 4., 5., 6.]).unwrap().into_dyn();
        let p = arr.as_ptr();
        let a = NDArray::from_ndarray(arr).unwrap();
        assert_eq!(a.data_ptr::<f32>().unwrap() as *const f32, p);
        assert_eq!(a.shape(), &[2, 3]);
        let v = a.view::<f32>().unwrap();
        assert_eq!(v[[1, 2]], 6.0);
        let rev = a.slice(&[SliceSpec::all(), SliceSpec { begin: None, end: None, step: Some(-1) }]).unwrap();
        assert_eq!(rev.view::<f32>().unwrap()[[0, 0]], 3.0);
        assert_eq!(rev.view::<f32>().unwrap()[[1, 2]], 4.0);
        rev.view_mut::<f32>().unwrap()[[1, 0]] = 60.0;
        assert_eq!(a.to_vec::<f32>().unwrap()[5], 60.0);
        a.view_mut::<f32>().unwrap()[[0, 0]] = 10.0;
        assert_eq!(a.to_vec::<f32>().unwrap()[0], 10.0);
        assert!(a.view::<f64>().is_err());
        let t = ndarray::Array::from_shape_vec((2, 2), vec![1.0f64, 2., 3., 4.])
            .unwrap()
            .reversed_axes()
            .into_dyn();
        let b = NDArray::from_ndarray(t).unwrap();
        assert_eq!(b.dtype(), DType::F64);
        assert_eq!(b.to_vec::<f64>().unwrap(), vec![1., 3., 2., 4.]);
    }
}
