//! Request-aware stores: how a kernel writes a result into an output under
//! its [`Req`] (`null` skips, `write` and `inplace` overwrite, `add`
//! accumulates). Every operator, built in or a user's, stores its results
//! through these or the same rule.
//!
//! ```
//! use oxnet_core::store::{store, store_slice};
//! use oxnet_core::{NDArray, Req};
//!
//! let mut acc = [1.0f32, 2.0];
//! store_slice(Req::Add, &mut acc, &[10.0, 20.0]);
//! assert_eq!(acc, [11.0, 22.0]);
//!
//! let out = NDArray::from_vec(vec![1.0f64, 1.0], &[2]).unwrap();
//! let result = NDArray::from_vec(vec![0.5f64, 0.25], &[2]).unwrap();
//! store(Req::Add, &out, &result).unwrap();
//! assert_eq!(out.to_vec::<f64>().unwrap(), vec![1.5, 1.25]);
//! ```

use crate::{Element, Error, NDArray, Req, Result};

/// Stores `src` into `dst` under `req` (both contiguous, same length).
pub fn store_slice<T: Element>(req: Req, dst: &mut [T], src: &[T]) {
    match req {
        Req::Null => {}
        Req::Write | Req::Inplace => dst.copy_from_slice(src),
        Req::Add => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.add(*s)),
    }
}

/// Stores the array `src` into the kernel output `dst` under `req`
/// (converting dtype and broadcasting as [`NDArray::assign_from`] does;
/// `add` needs equal shapes).
pub fn store(req: Req, dst: &NDArray, src: &NDArray) -> Result<()> {
    match req {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => dst.assign_from(src),
        Req::Add => {
            if dst.shape() != src.shape() {
                return Err(Error::Shape(format!(
                    "cannot add a result of shape {:?} into an output of shape {:?}",
                    src.shape(),
                    dst.shape()
                )));
            }
            crate::with_dtype!(dst.dtype(), T => {
                let s = src.astype(dst.dtype())?;
                store_slice(Req::Add, dst.as_mut_slice::<T>()?, s.as_slice::<T>()?);
            });
            Ok(())
        }
    }
}
