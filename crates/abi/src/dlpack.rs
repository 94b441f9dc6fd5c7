//! DLPack tensor structs (written for oxnet; same layout as `dlpack.h`
//! 0.8 / 1.x).

use std::ffi::c_void;

/// DLPack device type: CPU.
pub const K_DL_CPU: i32 = 1;
/// DLPack device type: CUDA.
pub const K_DL_CUDA: i32 = 2;
/// DLPack device type: pinned CUDA host memory.
pub const K_DL_CUDA_HOST: i32 = 3;

/// DLPack type code: signed integer.
pub const K_DL_INT: u8 = 0;
/// DLPack type code: unsigned integer.
pub const K_DL_UINT: u8 = 1;
/// DLPack type code: IEEE float.
pub const K_DL_FLOAT: u8 = 2;
/// DLPack type code: opaque handle.
pub const K_DL_OPAQUE_HANDLE: u8 = 3;
/// DLPack type code: bfloat16.
pub const K_DL_BFLOAT: u8 = 4;
/// DLPack type code: complex.
pub const K_DL_COMPLEX: u8 = 5;
/// DLPack type code: boolean.
pub const K_DL_BOOL: u8 = 6;

/// Where a tensor lives: a `K_DL_*` device type and an ordinal.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    /// The device type (`DLDeviceType`, an `int` enum in C).
    pub device_type: i32,
    /// The device ordinal.
    pub device_id: i32,
}

impl DLDevice {
    /// The CPU.
    pub const CPU: DLDevice = DLDevice { device_type: K_DL_CPU, device_id: 0 };
}

/// An element type: kind (`K_DL_*`), bits per lane and lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    /// The kind of number.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// A strided view of memory. oxnet always fills `strides` (in elements).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    /// Start of the allocation (add `byte_offset` for the first element).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements (NULL means compact row-major).
    pub strides: *mut i64,
    /// Offset of the first element from `data`, in bytes.
    pub byte_offset: u64,
}

/// The DLPack type of an oxnet dtype code (`DTYPE_*`), if it has one.
pub fn dl_dtype_of(code: i32) -> Option<DLDataType> {
    let (c, bits) = match code {
        crate::DTYPE_FLOAT32 => (K_DL_FLOAT, 32),
        crate::DTYPE_FLOAT64 => (K_DL_FLOAT, 64),
        crate::DTYPE_FLOAT16 => (K_DL_FLOAT, 16),
        crate::DTYPE_UINT8 => (K_DL_UINT, 8),
        crate::DTYPE_INT32 => (K_DL_INT, 32),
        crate::DTYPE_INT8 => (K_DL_INT, 8),
        crate::DTYPE_INT64 => (K_DL_INT, 64),
        crate::DTYPE_BOOL => (K_DL_BOOL, 8),
        crate::DTYPE_BFLOAT16 => (K_DL_BFLOAT, 16),
        _ => return None,
    };
    Some(DLDataType { code: c, bits, lanes: 1 })
}

/// The oxnet dtype code (`DTYPE_*`) of a DLPack type, if oxnet has it.
pub fn dtype_code_of(dt: DLDataType) -> Option<i32> {
    if dt.lanes != 1 {
        return None;
    }
    Some(match (dt.code, dt.bits) {
        (K_DL_FLOAT, 32) => crate::DTYPE_FLOAT32,
        (K_DL_FLOAT, 64) => crate::DTYPE_FLOAT64,
        (K_DL_FLOAT, 16) => crate::DTYPE_FLOAT16,
        (K_DL_UINT, 8) => crate::DTYPE_UINT8,
        (K_DL_INT, 32) => crate::DTYPE_INT32,
        (K_DL_INT, 8) => crate::DTYPE_INT8,
        (K_DL_INT, 64) => crate::DTYPE_INT64,
        (K_DL_BOOL, 8) => crate::DTYPE_BOOL,
        (K_DL_BFLOAT, 16) => crate::DTYPE_BFLOAT16,
        _ => return None,
    })
}
