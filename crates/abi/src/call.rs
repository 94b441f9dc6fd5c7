//! Per-call services: the error sink, attributes, string sinks, shapes and
//! the kernel's resource.

use crate::dlpack::DLDevice;
use crate::MAX_NDIM;
use std::ffi::{c_char, c_void};

/// Where a callback reports its failure (valid only during the call).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Error {
    /// Host's private pointer; pass it back to `set_message`.
    pub host_data: *mut c_void,
    /// Records a UTF-8 message (copied by the host); calling again appends.
    pub set_message: Option<unsafe extern "C" fn(host_data: *mut c_void, message: *const c_char)>,
}

impl Error {
    /// Reports `message` through this sink (NUL bytes are replaced).
    ///
    /// # Safety
    /// `self` must be a sink the host passed to the current call.
    pub unsafe fn set(&self, message: &str) {
        if let Some(f) = self.set_message {
            let mut bytes: Vec<u8> = message.bytes().map(|b| if b == 0 { b' ' } else { b }).collect();
            bytes.push(0);
            f(self.host_data, bytes.as_ptr() as *const c_char);
        }
    }
}

/// Attributes: `count` (key, value) pairs of UTF-8 C strings, valid during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Attrs {
    /// `count` keys.
    pub keys: *const *const c_char,
    /// `count` values.
    pub values: *const *const c_char,
    /// Number of pairs.
    pub count: i32,
}

/// A place where a callback hands strings (or key/value pairs) to the host.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Sink {
    /// Host's private pointer; pass it back to `push`.
    pub host_data: *mut c_void,
    /// Adds one entry (copied by the host); `key` may be NULL for plain strings.
    pub push: Option<unsafe extern "C" fn(host_data: *mut c_void, key: *const c_char, value: *const c_char)>,
}

/// A shape in shape inference: `ndim == -1` is unknown; a dimension of -1 is unknown.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Number of dimensions, or -1 when unknown.
    pub ndim: i32,
    /// Padding (zero).
    pub reserved: i32,
    /// The extents (the first `ndim` are meaningful).
    pub dims: [i64; MAX_NDIM],
}

impl Shape {
    /// The unknown shape.
    pub const UNKNOWN: Shape = Shape { ndim: -1, reserved: 0, dims: [0; MAX_NDIM] };
}

/// What a kernel receives besides its tensors.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Resource {
    /// `size_of::<Resource>()` as the host compiled it.
    pub struct_size: u32,
    /// Nonzero in training mode.
    pub is_train: i32,
    /// The device the kernel runs on.
    pub device: DLDevice,
    /// Host's private pointer; pass it back to the functions below.
    pub host_data: *mut c_void,
    /// `size` bytes of 64-byte aligned CPU memory valid until the kernel
    /// returns; each call a distinct region; the host frees it. NULL if it cannot.
    pub alloc_cpu: Option<unsafe extern "C" fn(host_data: *mut c_void, size: u64) -> *mut c_void>,
    /// `size` bytes of GPU memory on the call's device, valid until the
    /// kernel's work on `cuda_stream` is done; the host frees it. NULL in a
    /// CPU call or if it cannot.
    pub alloc_gpu: Option<unsafe extern "C" fn(host_data: *mut c_void, size: u64) -> *mut c_void>,
    /// A fresh seed drawn from oxnet's global generator.
    pub random_seed: Option<unsafe extern "C" fn(host_data: *mut c_void) -> u64>,
    /// The CUDA stream of the call (NULL on CPU).
    pub cuda_stream: *mut c_void,
}
