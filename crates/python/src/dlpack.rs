//! DLPack exchange of arrays, sharing memory with the engine both ways.
//!
//! Export (`__dlpack__`, `to_dlpack_for_read`): the capsule holds a
//! `DLManagedTensor` whose manager context keeps the engine array alive
//! until the consumer calls the deleter. Import (`nd.from_dlpack`): the
//! engine array's storage owns the producer's tensor and calls its deleter
//! when the last view of it goes.

use crate::errors::IntoPyResult;
use oxnet_core::{DType, Device, NDArray};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_void, CStr};

#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What the capsule owns: the array and the shape/stride arrays the tensor points into.
struct Owner {
    _array: NDArray,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

unsafe extern "C" fn delete_managed(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: both boxes were leaked by `export` and are freed once, here.
    let managed = unsafe { Box::from_raw(m) };
    drop(unsafe { Box::from_raw(managed.manager_ctx as *mut Owner) });
}

const CAPSULE_NAME: &CStr = c"dltensor";
const USED_CAPSULE_NAME: &CStr = c"used_dltensor";

/// An imported tensor: its producer's deleter runs when the storage drops.
struct Imported(*mut DLManagedTensor);

// SAFETY: the tensor is only touched again by its deleter, once, on drop;
// DLPack producers' deleters may run on any thread.
unsafe impl Send for Imported {}
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from a valid capsule and is released once.
        unsafe {
            if let Some(deleter) = (*self.0).deleter {
                deleter(self.0);
            }
        }
    }
}

fn dtype_of(t: &DLDataType) -> Option<DType> {
    Some(match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => DType::F32,
        (2, 64, 1) => DType::F64,
        (2, 16, 1) => DType::F16,
        (4, 16, 1) => DType::BF16,
        (1, 8, 1) => DType::U8,
        (0, 8, 1) => DType::I8,
        (0, 32, 1) => DType::I32,
        (0, 64, 1) => DType::I64,
        (6, 8, 1) | (1, 1, 1) => DType::Bool,
        _ => return None,
    })
}

/// `nd.from_dlpack(capsule)`: the array a DLPack capsule (or an object
/// with `__dlpack__`) holds, sharing its memory.
#[pyfunction]
pub fn from_dlpack<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, crate::array::PyNDArray>> {
    crate::array::wrap(obj.py(), import(obj)?)
}

/// The array a `dltensor` capsule (or an object with `__dlpack__`) holds,
/// sharing its memory; the capsule is marked used, as DLPack requires.
pub fn import(obj: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    use pyo3::exceptions::{PyTypeError, PyValueError};
    let capsule = if obj.cast::<PyCapsule>().is_ok() { obj.clone() } else { obj.call_method0("__dlpack__")? };
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live Python object for the duration of this call.
    let valid = unsafe { pyo3::ffi::PyCapsule_IsValid(raw, CAPSULE_NAME.as_ptr()) } == 1;
    if !valid {
        return Err(PyValueError::new_err(
            "from_dlpack: not an unused DLPack capsule (a capsule can be consumed only once)",
        ));
    }
    // SAFETY: the capsule is valid and named "dltensor", so it holds a DLManagedTensor.
    let m = unsafe { pyo3::ffi::PyCapsule_GetPointer(raw, CAPSULE_NAME.as_ptr()) } as *mut DLManagedTensor;
    // SAFETY: the producer keeps the tensor valid until its deleter runs.
    let t = unsafe { &(*m).dl_tensor };
    if t.device.device_type != 1 {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: the tensor lives on DLPack device type {}; oxnet imports CPU tensors (type 1)",
            t.device.device_type
        )));
    }
    let dtype = dtype_of(&t.dtype).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "from_dlpack: DLPack dtype (code {}, bits {}, lanes {}) has no oxnet dtype",
            t.dtype.code, t.dtype.bits, t.dtype.lanes
        ))
    })?;
    let ndim = t.ndim.max(0) as usize;
    // SAFETY: DLPack promises `ndim` entries behind `shape` (and `strides` when not null).
    let shape: Vec<usize> = (0..ndim).map(|i| unsafe { *t.shape.add(i) }.max(0) as usize).collect();
    let strides: Vec<isize> = if t.strides.is_null() {
        oxnet_core::shape::contiguous_strides(&shape).to_vec()
    } else {
        (0..ndim).map(|i| unsafe { *t.strides.add(i) } as isize).collect()
    };
    let span = if shape.contains(&0) {
        0
    } else {
        1 + shape.iter().zip(&strides).map(|(&d, &s)| (d - 1) * s.max(0) as usize).sum::<usize>()
    };
    // SAFETY: the data pointer plus byte_offset starts the tensor's elements.
    let data = unsafe { (t.data as *mut u8).add(t.byte_offset as usize) };
    // SAFETY: the capsule is ours to consume now: renaming it hands the
    // deleter call to the storage's owner.
    unsafe { pyo3::ffi::PyCapsule_SetName(raw, USED_CAPSULE_NAME.as_ptr()) };
    let storage = unsafe {
        oxnet_core::storage::Storage::foreign(data, span * dtype.size(), Device::Cpu, Box::new(Imported(m)))
    };
    NDArray::from_foreign(storage, &shape, &strides, dtype).py()
}

/// DLPack's (device type, id) for `a`: kDLCPU = 1, kDLCUDA = 2.
pub fn device_of(a: &NDArray) -> (i32, i32) {
    match a.device() {
        Device::Gpu(i) => (2, i as i32),
        _ => (1, 0),
    }
}

fn dl_dtype(dt: DType) -> DLDataType {
    // codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
    let (code, bits) = match dt {
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::U8 => (1, 8),
        DType::I8 => (0, 8),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::Bool => (6, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

/// A `dltensor` capsule viewing `a`'s memory.
pub fn export(py: Python<'_>, a: NDArray) -> PyResult<Bound<'_, PyAny>> {
    a.check_has_values().py()?;
    let mut shape: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
    let mut strides: Vec<i64> = a.strides().iter().map(|&s| s as i64).collect();
    let (device_type, device_id) = device_of(&a);
    let tensor = DLTensor {
        data: a.raw_ptr() as *mut c_void,
        device: DLDevice { device_type, device_id },
        ndim: shape.len() as i32,
        dtype: dl_dtype(a.dtype()),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let owner = Box::into_raw(Box::new(Owner { _array: a, _shape: shape, _strides: strides }));
    let managed = Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: tensor,
        manager_ctx: owner as *mut c_void,
        deleter: Some(delete_managed),
    }));
    // SAFETY: `managed` is a valid leaked box; the destructor below frees it
    // only if no consumer renamed the capsule to "used_dltensor".
    let pointer = std::ptr::NonNull::new(managed as *mut c_void).expect("Box pointers are not null");
    let capsule = unsafe {
        PyCapsule::new_with_pointer_and_destructor(py, pointer, CAPSULE_NAME, Some(capsule_destructor))
    }?;
    Ok(capsule.into_any())
}

unsafe extern "C" fn capsule_destructor(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with our capsule; a consumer that took the
    // tensor renames it, and then owns the deleter call.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, CAPSULE_NAME.as_ptr()) == 1 {
            let m = pyo3::ffi::PyCapsule_GetPointer(capsule, CAPSULE_NAME.as_ptr()) as *mut DLManagedTensor;
            delete_managed(m);
        }
    }
}
