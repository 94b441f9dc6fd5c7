//! Copies between numpy arrays and engine arrays (one `memcpy` each way for
//! contiguous data), and the zero-copy `__array_interface__`.

use crate::dtype;
use crate::errors::{IntoPyResult, MXNetError};
use numpy::npyffi::{npy_intp, NpyTypes, PyArrayObject, PY_ARRAY_API};
use numpy::prelude::*;
use numpy::{PyArrayDescr, PyUntypedArray};
use oxnet_core::{DType, Device, NDArray};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict, PyTuple};
use std::os::raw::c_int;

/// The engine dtype of a numpy dtype.
fn dtype_of(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    let dt = match (descr.kind(), descr.itemsize()) {
        (b'f', 4) => DType::F32,
        (b'f', 8) => DType::F64,
        (b'f', 2) => DType::F16,
        (b'i', 1) => DType::I8,
        (b'i', 4) => DType::I32,
        (b'i', 8) => DType::I64,
        (b'u', 1) => DType::U8,
        (b'b', 1) => DType::Bool,
        _ => {
            return Err(MXNetError::new_err(format!(
                "numpy dtype {} has no oxnet equivalent (oxnet has float16/32/64, int8/32/64, uint8, bool)",
                descr.str()?
            )))
        }
    };
    Ok(dt)
}

/// An engine array sharing the memory of numpy array `arr`, which must be
/// C-contiguous and aligned (MXNet's `nd.from_numpy(a, zero_copy=True)`).
/// The engine array keeps `arr` alive; the caller makes `arr` read-only,
/// as MXNet does, so that numpy writes cannot race the engine's.
#[pyfunction]
pub fn from_numpy_shared<'py>(
    arr: &Bound<'py, PyUntypedArray>,
) -> PyResult<Bound<'py, crate::array::PyNDArray>> {
    let dt = dtype_of(&arr.dtype())?;
    if !arr.is_c_contiguous() || !arr.is_aligned_native() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "Only c-contiguous arrays are supported for zero-copy",
        ));
    }
    let shape = arr.shape().to_vec();
    let strides = oxnet_core::shape::contiguous_strides(&shape);
    let bytes = shape.iter().product::<usize>() * dt.size();
    // SAFETY: numpy keeps the buffer of `arr` valid and unmoved while the
    // owner (a reference to `arr`) lives.
    let storage = unsafe {
        let data = (*arr.as_array_ptr()).fields.data as *mut u8;
        let owner: Py<PyAny> = arr.clone().into_any().unbind();
        oxnet_core::storage::Storage::foreign(data, bytes, Device::Cpu, Box::new(owner))
    };
    let a = NDArray::from_foreign(storage, &shape, &strides, dt).py()?;
    crate::array::wrap(arr.py(), a)
}

/// A new engine array holding a copy of numpy array `arr` (any layout),
/// converted to `want` if given.
pub fn from_numpy(arr: &Bound<'_, PyUntypedArray>, want: Option<DType>) -> PyResult<NDArray> {
    let py = arr.py();
    let dt = dtype_of(&arr.dtype())?;
    let target = want.unwrap_or(dt);
    // `astype` and `copy` keep a 0-d array 0-d (`ascontiguousarray` would
    // make it 1-d) and return aligned, C-ordered memory
    let c_order = [("order", "C")].into_py_dict(py)?;
    let arr = if dt != target {
        let name = dtype::to_numpy_type(py, target)?;
        arr.call_method("astype", (name,), Some(&c_order))?.cast_into::<PyUntypedArray>()?
    } else if !arr.is_c_contiguous() || !arr.is_aligned_native() {
        arr.call_method("copy", (), Some(&c_order))?.cast_into::<PyUntypedArray>()?
    } else {
        arr.clone()
    };
    let shape = arr.shape().to_vec();
    let out = NDArray::empty(&shape, target, Device::Cpu).py()?;
    let bytes = out.size() * target.size();
    // SAFETY: `arr` is C-contiguous with `bytes` bytes of `target`; `out` is a
    // fresh contiguous buffer of the same size.
    unsafe {
        let src = (*arr.as_array_ptr()).fields.data as *const u8;
        std::ptr::copy_nonoverlapping(src, out.raw_ptr(), bytes);
    }
    Ok(out)
}

trait AlignedNative {
    fn is_aligned_native(&self) -> bool;
}

impl AlignedNative for Bound<'_, PyUntypedArray> {
    fn is_aligned_native(&self) -> bool {
        let flags = unsafe { (*self.as_array_ptr()).fields.flags };
        let aligned = flags & numpy::npyffi::NPY_ARRAY_ALIGNED != 0;
        aligned && self.dtype().is_native_byteorder().unwrap_or(true)
    }
}

/// A new numpy array holding a copy of `a` (the reference's `asnumpy()`).
pub fn to_numpy<'py>(py: Python<'py>, a: &NDArray) -> PyResult<Bound<'py, PyAny>> {
    let numpy_name =
        dtype::typestr(a.dtype()).map(|_| a.dtype().name()).ok_or_else(|| dtype::no_numpy_type(a.dtype()))?;
    a.check_has_values().py()?;
    let dense = if !a.device().is_host() {
        py.detach(|| a.to_device(oxnet_core::Device::Cpu)).py()?
    } else if a.is_contiguous() {
        a.clone()
    } else {
        a.contiguous().py()?
    };
    let descr = PyArrayDescr::new(py, numpy_name)?;
    let mut dims: Vec<npy_intp> = dense.shape().iter().map(|&d| d as npy_intp).collect();
    // SAFETY: numpy's documented constructor; it owns the new buffer, which
    // has exactly `size * itemsize` bytes that we fill before returning.
    unsafe {
        let obj = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            numpy::npyffi::get_type_object(py, NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        let out = Bound::from_owned_ptr_or_err(py, obj)?;
        let data = (*(obj as *mut PyArrayObject)).fields.data as *mut u8;
        let bytes = dense.size() * dense.dtype().size();
        if bytes > 0 {
            std::ptr::copy_nonoverlapping(dense.raw_ptr() as *const u8, data, bytes);
        }
        Ok(out)
    }
}

/// numpy's `__array_interface__` (version 3) describing `a`'s memory in
/// place: `np.asarray(x)` then shares it without a copy. Read-only while the
/// memory is an operator input.
pub fn array_interface<'py>(py: Python<'py>, a: &NDArray) -> PyResult<Bound<'py, PyDict>> {
    a.device().ensure_host().map_err(|e| pyo3::exceptions::PyAttributeError::new_err(e.to_string()))?;
    interface_dict(py, a)
}

/// The fields numpy's array interface and the CUDA array interface share
/// (version 3): typestr, shape, strides in bytes (None when contiguous) and
/// data (address, read-only while the memory is an operator input).
fn interface_dict<'py>(py: Python<'py>, a: &NDArray) -> PyResult<Bound<'py, PyDict>> {
    let typestr = dtype::typestr(a.dtype()).ok_or_else(|| dtype::no_numpy_type(a.dtype()))?;
    a.check_has_values().py()?;
    let d = PyDict::new(py);
    d.set_item("version", 3)?;
    d.set_item("typestr", typestr)?;
    d.set_item("shape", PyTuple::new(py, a.shape())?)?;
    let itemsize = a.dtype().size() as isize;
    if a.is_contiguous() {
        d.set_item("strides", py.None())?;
    } else {
        let strides: Vec<isize> = a.strides().iter().map(|s| s * itemsize).collect();
        d.set_item("strides", PyTuple::new(py, strides)?)?;
    }
    let read_only = a.check_writable().is_err();
    d.set_item("data", (a.raw_ptr() as usize, read_only))?;
    Ok(d)
}

/// The CUDA array interface (version 3) describing a GPU array's memory in
/// place. No wait: oxnet's stream is a blocking stream, so work a consumer
/// queues on the legacy default stream (CuPy's, Numba's and PyTorch's
/// default) runs after oxnet's queued work, and oxnet's later work after
/// the consumer's; a consumer on a non-blocking stream calls
/// `wait_to_read()` first.
pub fn cuda_array_interface<'py>(py: Python<'py>, a: &NDArray) -> PyResult<Bound<'py, PyDict>> {
    let oxnet_core::Device::Gpu(_) = a.device() else {
        return Err(pyo3::exceptions::PyAttributeError::new_err(
            "__cuda_array_interface__: the array is on the CPU (use __array_interface__)",
        ));
    };
    let d = interface_dict(py, a)?;
    d.set_item("stream", py.None())?;
    Ok(d)
}
