//! [`NDArray`]: an n-dimensional, strided, reference-counted array.
//!
//! Cloning an `NDArray` clones a handle: both handles see the same memory
//! and the same autograd state. Views ([`NDArray::reshape`],
//! [`NDArray::transpose`], [`NDArray::slice_axis`], ...) share the storage of
//! the array they come from without copying.

mod create;
mod fmt;
mod interop;
mod scatter;
mod view;

use crate::autograd::AgEntry;
use crate::shape::{numel, Shape, Strides};
use crate::storage::Storage;
use crate::strided::for_each_offsets;
use crate::{DType, Device, Element, Error, Result};
use std::sync::{Arc, Mutex};

/// Contiguous copies of at least this many bytes are split over the thread
/// pool ([`crate::parallel`]), in pieces of [`COPY_PIECE_BYTES`].
const PARALLEL_COPY_BYTES: usize = 512 * 1024;
const COPY_PIECE_BYTES: usize = 256 * 1024;

pub use view::SliceSpec;

/// An n-dimensional array of one [`DType`] on one [`Device`].
#[derive(Clone)]
pub struct NDArray {
    inner: Arc<Inner>,
}

struct Inner {
    storage: Arc<Storage>,
    shape: Shape,
    strides: Strides,
    /// Offset of element 0 from the start of the storage, in elements.
    offset: usize,
    dtype: DType,
    /// Autograd state: a variable with a gradient buffer, or the recorded
    /// operation that produced this array.
    ag: Mutex<Option<AgEntry>>,
}

impl NDArray {
    /// Builds a handle over `storage` with an explicit layout.
    pub(crate) fn from_parts(
        storage: Arc<Storage>,
        shape: Shape,
        strides: Strides,
        offset: usize,
        dtype: DType,
    ) -> NDArray {
        NDArray { inner: Arc::new(Inner { storage, shape, strides, offset, dtype, ag: Mutex::new(None) }) }
    }

    /// A new handle with another layout over the same storage (no autograd state).
    /// A new handle with another layout over the same storage (no autograd state).
    pub(crate) fn with_layout(&self, shape: Shape, strides: Strides, offset: usize) -> NDArray {
        NDArray::from_parts(self.inner.storage.clone(), shape, strides, offset, self.dtype())
    }

    /// The shape.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    /// The strides, in elements.
    #[inline]
    pub fn strides(&self) -> &[isize] {
        &self.inner.strides
    }

    /// Offset of the first element in the storage, in elements.
    #[inline]
    pub fn offset(&self) -> usize {
        self.inner.offset
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// The device holding the data.
    #[inline]
    pub fn device(&self) -> Device {
        self.inner.storage.device()
    }

    /// The number of axes.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.inner.shape.len()
    }

    /// The number of elements.
    #[inline]
    pub fn size(&self) -> usize {
        numel(&self.inner.shape)
    }

    /// True for a traced (shape-only) array, which has no values.
    #[inline]
    pub fn is_meta(&self) -> bool {
        self.inner.storage.is_meta()
    }

    /// Errors for a traced array (one that has a shape but no values).
    #[inline]
    pub fn check_has_values(&self) -> Result<()> {
        self.inner.storage.check_has_values()
    }

    /// The shared storage.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.inner.storage
    }

    /// True when both handles view the same storage.
    pub fn shares_storage(&self, other: &NDArray) -> bool {
        Arc::ptr_eq(&self.inner.storage, &other.inner.storage)
    }

    /// True when both are the same handle (same array object).
    pub fn same_handle(&self, other: &NDArray) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// True when the elements are laid out densely in row-major order.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        if self.size() == 0 {
            return true;
        }
        let mut expect = 1isize;
        for (d, s) in self.shape().iter().zip(self.strides()).rev() {
            if *d != 1 && *s != expect {
                return false;
            }
            expect *= *d as isize;
        }
        true
    }

    /// A handle sharing data but carrying no autograd state (MXNet's `detach`).
    pub fn detach(&self) -> NDArray {
        self.with_layout(self.inner.shape.clone(), self.inner.strides.clone(), self.inner.offset)
    }

    pub(crate) fn ag_entry(&self) -> Option<AgEntry> {
        self.inner.ag.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn has_ag_entry(&self) -> bool {
        self.inner.ag.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    pub(crate) fn set_ag_entry(&self, entry: Option<AgEntry>) {
        *self.inner.ag.lock().unwrap_or_else(|e| e.into_inner()) = entry;
    }

    /// Pointer to element 0 (which may not be the storage's start).
    #[inline]
    pub fn data_ptr<T: Element>(&self) -> Result<*mut T> {
        self.check_dtype::<T>()?;
        self.inner.storage.check_has_values()?;
        Ok(self.raw_ptr() as *mut T)
    }

    /// Pointer to element 0 as bytes, whatever the dtype (for interop such
    /// as numpy's array interface and DLPack). Writing through it bypasses
    /// [`check_writable`](Self::check_writable).
    #[inline]
    pub fn raw_ptr(&self) -> *mut u8 {
        // SAFETY: the offset lies inside the storage by construction.
        unsafe { self.inner.storage.ptr().add(self.inner.offset * self.dtype().size()) }
    }

    #[inline]
    fn check_dtype<T: Element>(&self) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DType(format!("array holds {}, accessed as {}", self.dtype(), T::DTYPE)));
        }
        Ok(())
    }

    fn check_dense(&self) -> Result<()> {
        self.inner.storage.check_has_values()?;
        if !self.is_contiguous() {
            return Err(Error::Invalid("array is not contiguous; call .contiguous() first".into()));
        }
        self.device().ensure_host()
    }

    /// The elements as a slice (contiguous CPU arrays only).
    #[inline]
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_dtype::<T>()?;
        self.check_dense()?;
        // SAFETY: dtype and density checked; the storage outlives `self`.
        Ok(unsafe { std::slice::from_raw_parts(self.raw_ptr() as *const T, self.size()) })
    }

    /// The elements as a mutable slice (contiguous, writable CPU arrays only).
    ///
    /// Arrays are shared handles, as in MXNet: the engine hands kernels output
    /// arrays that nothing else reads during the call. Code holding two handles
    /// onto one buffer must not keep a slice from each alive at once.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice<T: Element>(&self) -> Result<&mut [T]> {
        self.check_dtype::<T>()?;
        self.check_dense()?;
        self.check_writable()?;
        // SAFETY: see above; exclusivity is the documented contract.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.raw_ptr() as *mut T, self.size()) })
    }

    /// Errors when the array's memory is an input of a user operator this
    /// thread is running (see [`protect_inputs`]): inputs are read-only.
    pub fn check_writable(&self) -> Result<()> {
        let storage = Arc::as_ptr(&self.inner.storage) as usize;
        let protected = PROTECTED_STORAGE.with(|p| p.borrow().contains(&storage));
        if protected {
            return Err(Error::Invalid(
                "this array is an operator input and is read-only; write to the outputs instead".into(),
            ));
        }
        Ok(())
    }

    /// Copies the elements, converted to `T`, in row-major order (any layout).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.inner.storage.check_has_values()?;
        if !self.device().is_host() {
            return self.to_device(Device::Cpu)?.to_vec();
        }
        let mut out = Vec::with_capacity(self.size());
        crate::with_dtype!(self.dtype(), S => {
            let p = self.raw_ptr() as *const S;
            for_each_offsets(self.shape(), [self.strides()], [0], |[o]| {
                // SAFETY: offsets stay inside the view.
                let v = unsafe { *p.offset(o) };
                out.push(T::from_f64(v.to_f64()));
            });
        });
        Ok(out)
    }

    /// The single element of a 1-element array, as `f64` (MXNet's `asscalar`).
    pub fn to_scalar(&self) -> Result<f64> {
        if self.size() != 1 {
            return Err(Error::Shape(format!(
                "asscalar needs exactly one element, the array has shape {:?}",
                self.shape()
            )));
        }
        Ok(self.to_vec::<f64>()?[0])
    }

    /// A contiguous array with the same values: `self` if already contiguous.
    pub fn contiguous(&self) -> Result<NDArray> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy()
    }

    /// A deep copy into fresh contiguous memory (no autograd state).
    pub fn copy(&self) -> Result<NDArray> {
        let out = NDArray::empty(self.shape(), self.dtype(), self.device())?;
        out.assign_from(self)?;
        Ok(out)
    }

    /// A copy on `device` (a host-to-GPU, GPU-to-host or GPU-to-GPU
    /// transfer; a plain copy on the same device), with no autograd state.
    /// Reading a GPU array's values waits for the work queued on its device.
    pub fn to_device(&self, device: Device) -> Result<NDArray> {
        let out = NDArray::empty(self.shape(), self.dtype(), device)?;
        out.assign_from(self)?;
        Ok(out)
    }

    /// A copy converted to `dtype`.
    pub fn astype(&self, dtype: DType) -> Result<NDArray> {
        let out = NDArray::empty(self.shape(), dtype, self.device())?;
        out.assign_from(self)?;
        Ok(out)
    }

    /// Copies `src` into `self`, broadcasting `src` to `self`'s shape and
    /// converting its dtype. Works for any layouts of both.
    pub fn assign_from(&self, src: &NDArray) -> Result<()> {
        self.check_writable()?;
        self.device().ensure_available()?;
        src.device().ensure_available()?;
        self.inner.storage.check_has_values()?;
        src.inner.storage.check_has_values()?;
        if !self.device().is_host() || !src.device().is_host() {
            #[cfg(feature = "cuda")]
            return crate::gpu::memory::assign(self, src);
            #[cfg(not(feature = "cuda"))]
            return Err(crate::gpu::unsupported("copying GPU arrays"));
        }
        let src_strides =
            crate::shape::broadcast_strides(src.shape(), src.strides(), self.shape()).map_err(|_| {
                Error::Shape(format!(
                    "cannot assign an array of shape {:?} to one of shape {:?}",
                    src.shape(),
                    self.shape()
                ))
            })?;
        if self.dtype() == src.dtype()
            && self.is_contiguous()
            && src.is_contiguous()
            && self.shape() == src.shape()
        {
            let n = self.size() * self.dtype().size();
            if n >= PARALLEL_COPY_BYTES && !self.shares_storage(src) {
                let (from, to) = (src.raw_ptr() as usize, self.raw_ptr() as usize);
                crate::parallel::for_each(n.div_ceil(COPY_PIECE_BYTES), |p| {
                    let start = p * COPY_PIECE_BYTES;
                    let len = COPY_PIECE_BYTES.min(n - start);
                    // SAFETY: both regions hold n bytes and belong to
                    // different storages (no overlap); pieces are disjoint.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (from as *const u8).add(start),
                            (to as *mut u8).add(start),
                            len,
                        )
                    };
                });
                return Ok(());
            }
            // SAFETY: both regions hold n bytes; `copy` tolerates overlap.
            unsafe { std::ptr::copy(src.raw_ptr(), self.raw_ptr(), n) };
            return Ok(());
        }
        if self.shares_storage(src) {
            // overlapping views: go through a temporary
            let tmp = src.copy()?;
            return self.assign_from(&tmp);
        }
        crate::with_dtype!(self.dtype(), D => {
            crate::with_dtype!(src.dtype(), S => {
                let dp = self.raw_ptr() as *mut D;
                let sp = src.raw_ptr() as *const S;
                for_each_offsets(self.shape(), [self.strides(), &src_strides], [0, 0], |[o, i]| {
                    // SAFETY: offsets stay inside both views.
                    unsafe { *dp.offset(o) = D::from_f64((*sp.offset(i)).to_f64()) };
                });
            })
        });
        Ok(())
    }

    /// Sets every element to `value`.
    pub fn fill(&self, value: f64) -> Result<()> {
        self.check_writable()?;
        self.inner.storage.check_has_values()?;
        self.device().ensure_available()?;
        if !self.device().is_host() {
            #[cfg(feature = "cuda")]
            return crate::gpu::memory::fill(self, value);
            #[cfg(not(feature = "cuda"))]
            return Err(crate::gpu::unsupported("filling GPU arrays"));
        }
        crate::with_dtype!(self.dtype(), D => {
            let v = D::from_f64(value);
            let dp = self.raw_ptr() as *mut D;
            for_each_offsets(self.shape(), [self.strides()], [0], |[o]| {
                // SAFETY: offsets stay inside the view.
                unsafe { *dp.offset(o) = v };
            });
        });
        Ok(())
    }
}

thread_local! {
    /// Storage of the inputs of the user operators this thread is running.
    static PROTECTED_STORAGE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes the memory of `inputs` read-only on this thread until the guard
/// drops: a user operator's forward or backward cannot write to its inputs
/// through any handle or view. Guards nest.
/// Memory that is also one of `outputs` (an in-place request) stays writable.
pub(crate) fn protect_inputs(inputs: &[NDArray], outputs: &[NDArray]) -> ProtectGuard {
    PROTECTED_STORAGE.with(|p| {
        let mut p = p.borrow_mut();
        let depth = p.len();
        for x in inputs {
            if !outputs.iter().any(|o| o.shares_storage(x)) {
                p.push(Arc::as_ptr(&x.inner.storage) as usize);
            }
        }
        ProtectGuard { depth }
    })
}

/// Ends the protection started by [`protect_inputs`].
pub(crate) struct ProtectGuard {
    depth: usize,
}

impl Drop for ProtectGuard {
    fn drop(&mut self) {
        PROTECTED_STORAGE.with(|p| p.borrow_mut().truncate(self.depth));
    }
}

impl std::fmt::Debug for NDArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod assign_tests {
    use crate::NDArray;

    /// Copies long enough to be split over the pool, with an uneven last
    /// piece, land every element; a long copy within one storage (no
    /// split) is right too.
    #[test]
    fn long_contiguous_copies_are_exact() {
        let n = 300_001usize;
        let src = NDArray::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>(), &[n]).unwrap();
        let dst = NDArray::from_vec(vec![0.0f32; n], &[n]).unwrap();
        dst.assign_from(&src).unwrap();
        assert_eq!(dst.to_vec::<f32>().unwrap(), src.to_vec::<f32>().unwrap());

        let same = src.copy().unwrap();
        let view = same.reshape_to(&[n]).unwrap();
        view.assign_from(&same).unwrap();
        assert_eq!(same.to_vec::<f32>().unwrap(), src.to_vec::<f32>().unwrap());
    }
}
