//! DLPack export of arrays (`__dlpack__`), sharing memory with the engine.
//!
//! The capsule holds a `DLManagedTensor` whose manager context keeps the
//! engine array alive until the consumer calls the deleter.

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

/// DLPack's (device type, id) for `a`: kDLCPU = 1, kDLCUDA = 2.
pub fn device_of(a: &NDArray) -> (i32, i32) {
    match a.device() {
        Device::Cpu => (1, 0),
        Device::Gpu(i) => (2, i as i32),
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
