//! Creating arrays: constants, ranges, host data and random draws.

use super::NDArray;
use crate::shape::{numel, Shape};
use crate::storage::Storage;
use crate::{random, DType, Device, Element, Error, Result};
use std::sync::Arc;

impl NDArray {
    /// An array with unspecified contents (zeroed for bool, whose bytes must be 0 or 1).
    pub fn empty(shape: &[usize], dtype: DType, device: Device) -> Result<NDArray> {
        let bytes = numel(shape)
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::Shape(format!("shape {shape:?} is too large")))?;
        let storage = if dtype == DType::Bool {
            Storage::zeroed(bytes, device)?
        } else {
            Storage::uninit(bytes, device)?
        };
        Ok(NDArray::from_parts(
            Arc::new(storage),
            Shape::from_slice(shape),
            crate::shape::contiguous_strides(shape),
            0,
            dtype,
        ))
    }

    /// An array of zeros.
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<NDArray> {
        let bytes = numel(shape)
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::Shape(format!("shape {shape:?} is too large")))?;
        Ok(NDArray::from_parts(
            Arc::new(Storage::zeroed(bytes, device)?),
            Shape::from_slice(shape),
            crate::shape::contiguous_strides(shape),
            0,
            dtype,
        ))
    }

    /// An array of ones.
    pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<NDArray> {
        NDArray::full(shape, 1.0, dtype, device)
    }

    /// An array filled with `value`.
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<NDArray> {
        let a = NDArray::empty(shape, dtype, device)?;
        a.fill(value)?;
        Ok(a)
    }

    /// Zeros with the shape, dtype and device of `like`.
    pub fn zeros_like(like: &NDArray) -> Result<NDArray> {
        NDArray::zeros(like.shape(), like.dtype(), like.device())
    }

    /// Ones with the shape, dtype and device of `like`.
    pub fn ones_like(like: &NDArray) -> Result<NDArray> {
        NDArray::ones(like.shape(), like.dtype(), like.device())
    }

    /// A 0-d array holding `value`.
    pub fn scalar<T: Element>(value: T) -> NDArray {
        NDArray::from_vec(vec![value], &[]).expect("one element fits a 0-d shape")
    }

    /// Takes ownership of `data` laid out in row-major order with `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<NDArray> {
        if data.len() != numel(shape) {
            return Err(Error::Shape(format!("{} elements cannot have shape {shape:?}", data.len())));
        }
        NDArray::from_slice(&data, shape)
    }

    /// Copies `data` (row-major) into a new CPU array of `shape`.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<NDArray> {
        if data.len() != numel(shape) {
            return Err(Error::Shape(format!("{} elements cannot have shape {shape:?}", data.len())));
        }
        let a = NDArray::empty(shape, T::DTYPE, Device::Cpu)?;
        a.as_mut_slice::<T>()?.copy_from_slice(data);
        Ok(a)
    }

    /// Values `start, start+step, ...` below `stop` (numpy's `arange`).
    pub fn arange(start: f64, stop: f64, step: f64, dtype: DType) -> Result<NDArray> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
            return Err(Error::Invalid(format!(
                "arange({start}, {stop}, {step}): step must be finite and non-zero"
            )));
        }
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        let a = NDArray::empty(&[n], dtype, Device::Cpu)?;
        // as MXNet 1.9.1: an integer dtype takes start and step cast to it
        // (1.3 steps of an int32 range are steps of 1)
        let (start, step) = if dtype.is_float() { (start, step) } else { (start.trunc(), step.trunc()) };
        crate::with_dtype!(dtype, T => {
            for (i, v) in a.as_mut_slice::<T>()?.iter_mut().enumerate() {
                *v = T::from_f64(start + step * i as f64);
            }
        });
        Ok(a)
    }

    /// Samples uniformly from `[low, high)` using oxnet's global generator.
    pub fn random_uniform(low: f64, high: f64, shape: &[usize], dtype: DType) -> Result<NDArray> {
        if low.is_nan() || high.is_nan() || low > high {
            return Err(Error::Invalid(format!("uniform: low {low} must not exceed high {high}")));
        }
        let a = NDArray::empty(shape, dtype, Device::Cpu)?;
        let draws = random::with_rng(|rng| random::uniform_vec(rng, numel(shape), low, high));
        a.fill_from_f64(&draws)?;
        Ok(a)
    }

    /// Samples from a normal distribution using oxnet's global generator.
    pub fn random_normal(mean: f64, std: f64, shape: &[usize], dtype: DType) -> Result<NDArray> {
        if std.is_nan() || std < 0.0 {
            return Err(Error::Invalid(format!("normal: scale {std} must be non-negative")));
        }
        let a = NDArray::empty(shape, dtype, Device::Cpu)?;
        let draws = random::with_rng(|rng| random::normal_vec(rng, numel(shape), mean, std));
        a.fill_from_f64(&draws)?;
        Ok(a)
    }

    fn fill_from_f64(&self, values: &[f64]) -> Result<()> {
        crate::with_dtype!(self.dtype(), T => {
            for (d, v) in self.as_mut_slice::<T>()?.iter_mut().zip(values) {
                *d = T::from_f64(*v);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation() {
        let a = NDArray::arange(0.0, 6.0, 1.0, DType::F32).unwrap().reshape(&[2, 3]).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0., 1., 2., 3., 4., 5.]);
        let z = NDArray::zeros(&[], DType::I64, Device::Cpu).unwrap();
        assert_eq!(z.ndim(), 0);
        assert_eq!(z.size(), 1);
        assert_eq!(
            NDArray::full(&[2], 2.5, DType::F64, Device::Cpu).unwrap().to_vec::<f64>().unwrap(),
            vec![2.5, 2.5]
        );
        assert!(NDArray::from_vec(vec![1.0f32; 5], &[2, 3]).is_err());
        assert!(NDArray::zeros(&[2], DType::F32, Device::Gpu(0))
            .unwrap_err()
            .to_string()
            .contains("no GPU backend"));
        let p = NDArray::zeros(&[3], DType::F32, Device::Cpu).unwrap();
        assert_eq!(p.raw_ptr() as usize % crate::storage::ALIGNMENT, 0);
    }
}
