//! Writing values at listed positions of an array (`a.flat[idx] = v`).

use super::NDArray;
use crate::{Error, Result};

impl NDArray {
    /// Writes the elements of `values` (taken in row-major order and
    /// converted to this array's dtype) at the row-major positions
    /// `positions` of this array, which may have any layout: numpy's
    /// `a.flat[positions] = values`. Where a position repeats, the later
    /// value stays.
    ///
    /// ```
    /// use oxnet_core::NDArray;
    /// let a = NDArray::from_vec(vec![0f32; 6], &[2, 3]).unwrap();
    /// let v = NDArray::from_vec(vec![7f64, 8.0], &[2]).unwrap();
    /// a.scatter_flat(&[1, 5], &v).unwrap();
    /// assert_eq!(a.to_vec::<f32>().unwrap(), [0.0, 7.0, 0.0, 0.0, 0.0, 8.0]);
    /// ```
    pub fn scatter_flat(&self, positions: &[usize], values: &NDArray) -> Result<()> {
        self.check_writable()?;
        self.device().ensure_host()?;
        self.check_has_values()?;
        if values.size() != positions.len() {
            return Err(Error::Shape(format!(
                "scatter: {} positions for {} values",
                positions.len(),
                values.size()
            )));
        }
        let size = self.size();
        if let Some(&p) = positions.iter().find(|&&p| p >= size) {
            return Err(Error::Invalid(format!(
                "scatter: position {p} is outside an array of {size} elements"
            )));
        }
        if self.strides().iter().zip(self.shape()).any(|(s, d)| *s == 0 && *d > 1) {
            return Err(Error::Invalid("cannot write through a broadcast view".into()));
        }
        let (shape, strides) = (self.shape().to_vec(), self.strides().to_vec());
        let offset_of = |mut p: usize| -> isize {
            let mut o = 0isize;
            for (d, s) in shape.iter().zip(&strides).rev() {
                o += (p % d) as isize * s;
                p /= d;
            }
            o
        };
        crate::with_dtype!(self.dtype(), D => {
            let vals: Vec<D> = values.to_vec::<D>()?;
            let base = self.raw_ptr() as *mut D;
            for (&p, v) in positions.iter().zip(vals) {
                // SAFETY: `p` is below the size, so its offset stays inside the view.
                unsafe { *base.offset(offset_of(p)) = v };
            }
        });
        Ok(())
    }
}
