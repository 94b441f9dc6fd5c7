//! Conversions between oxnet values and their ABI forms: attributes as C
//! strings, arrays as DLTensors, dtype codes and inference shapes.

use oxnet_abi as abi;
use oxnet_core::{DType, Error, NDArray, Result, Shape};
use smallvec::SmallVec;
use std::ffi::{c_char, CString};

/// Attributes as owned C strings plus the pointer arrays the ABI wants.
pub(crate) struct CAttrs {
    _owned: Vec<CString>,
    keys: Vec<*const c_char>,
    values: Vec<*const c_char>,
}

// SAFETY: the pointers point into `_owned`, which this value owns and never mutates.
unsafe impl Send for CAttrs {}
unsafe impl Sync for CAttrs {}

impl CAttrs {
    /// Converts (key, value) pairs; an interior NUL is an error naming the key.
    pub(crate) fn new(pairs: &[(String, String)]) -> Result<CAttrs> {
        let mut owned = Vec::with_capacity(pairs.len() * 2);
        for (k, v) in pairs {
            let ck = CString::new(k.as_str()).map_err(|_| Error::attr(k, "contains a NUL byte"))?;
            let cv = CString::new(v.as_str()).map_err(|_| Error::attr(k, "value contains a NUL byte"))?;
            owned.push(ck);
            owned.push(cv);
        }
        let keys = owned.iter().step_by(2).map(|c| c.as_ptr()).collect();
        let values = owned.iter().skip(1).step_by(2).map(|c| c.as_ptr()).collect();
        Ok(CAttrs { _owned: owned, keys, values })
    }

    /// The ABI view (valid while `self` lives).
    pub(crate) fn abi(&self) -> abi::Attrs {
        abi::Attrs { keys: self.keys.as_ptr(), values: self.values.as_ptr(), count: self.keys.len() as i32 }
    }
}

/// The ABI code of a dtype (oxnet uses MXNet's numbering, as the ABI does).
pub(crate) fn dtype_code(d: DType) -> i32 {
    d as i32
}

/// The dtype of an ABI code.
pub(crate) fn dtype_of_code(code: i32) -> Option<DType> {
    oxnet_core::dtype::ALL_DTYPES.iter().copied().find(|d| *d as i32 == code)
}

/// Shape and strides storage for the DLTensors of one call.
pub(crate) struct Tensors {
    dims: SmallVec<[i64; 8]>,
    tensors: SmallVec<[abi::DLTensor; 3]>,
}

impl Tensors {
    /// DLTensors describing `arrays` (on their devices, compact or strided as they are).
    /// Their shape and stride pointers are set by [`Tensors::as_ptr`].
    #[inline(always)]
    pub(crate) fn new<'a>(arrays: impl Iterator<Item = &'a NDArray>) -> Tensors {
        let mut dims: SmallVec<[i64; 8]> = SmallVec::new();
        let mut tensors: SmallVec<[abi::DLTensor; 3]> = SmallVec::new();
        for a in arrays {
            dims.extend(a.shape().iter().map(|&d| d as i64));
            dims.extend(a.strides().iter().map(|&s| s as i64));
            tensors.push(abi::DLTensor {
                data: a.raw_ptr() as *mut std::ffi::c_void,
                device: crate::call::dl_device(a.device()),
                ndim: a.ndim() as i32,
                dtype: abi::dl_dtype_of(dtype_code(a.dtype())).unwrap_or(abi::DLDataType {
                    code: abi::K_DL_OPAQUE_HANDLE,
                    bits: 8,
                    lanes: 1,
                }),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            });
        }
        Tensors { dims, tensors }
    }

    /// Points each tensor's shape and strides into this value's storage and
    /// returns the first tensor; valid until `self` is moved or dropped.
    pub(crate) fn as_ptr(&mut self) -> *const abi::DLTensor {
        let base = self.dims.as_mut_ptr();
        let mut at = 0usize;
        for t in self.tensors.iter_mut() {
            let n = t.ndim as usize;
            // SAFETY: `at + 2n <= dims.len()` by construction in `new`.
            unsafe {
                t.shape = base.add(at);
                t.strides = base.add(at + n);
            }
            at += 2 * n;
        }
        self.tensors.as_ptr()
    }

    /// Number of tensors.
    pub(crate) fn len(&self) -> i32 {
        self.tensors.len() as i32
    }
}

/// An inference slot in ABI form.
pub(crate) fn shape_to_abi(op: &str, s: &Option<Shape>) -> Result<abi::Shape> {
    let mut out = abi::Shape::UNKNOWN;
    if let Some(s) = s {
        if s.len() > abi::MAX_NDIM {
            return Err(Error::Shape(format!(
                "`{op}`: {} dimensions exceed the extension ABI's limit of {}",
                s.len(),
                abi::MAX_NDIM
            )));
        }
        out.ndim = s.len() as i32;
        for (d, &x) in out.dims.iter_mut().zip(s.iter()) {
            *d = x as i64;
        }
    }
    Ok(out)
}

/// An ABI shape back: `None` when unknown (ndim -1 or a negative dimension).
pub(crate) fn shape_from_abi(what: &str, s: &abi::Shape) -> Result<Option<Shape>> {
    if s.ndim < 0 {
        return Ok(None);
    }
    let n = s.ndim as usize;
    if n > abi::MAX_NDIM {
        return Err(Error::Shape(format!("{what}: ndim {n} exceeds {}", abi::MAX_NDIM)));
    }
    if s.dims[..n].iter().any(|&d| d < 0) {
        return Ok(None);
    }
    Ok(Some(s.dims[..n].iter().map(|&d| d as usize).collect()))
}
