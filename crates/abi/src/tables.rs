//! The host's and the library's tables, the entry point, and layout checks.

use crate::call::{Error, Resource, Shape};
use crate::dlpack::{DLDataType, DLDevice, DLTensor};
use crate::graph::{Partitioner, Pass, PassResource, Selector, Strategy};
use crate::op::{Op, State};
use std::ffi::{c_char, c_void};
use std::mem::size_of;

/// What the host hands the library.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Host {
    /// The host's `ABI_VERSION`.
    pub abi_version: u32,
    /// `size_of::<Host>()` on the host.
    pub struct_size: u32,
    /// oxnet's version as major*10000 + minor*100 + patch.
    pub host_version: i32,
    /// `size_of::<Resource>()` on the host.
    pub resource_size: u32,
    /// `size_of::<DLTensor>()` on the host.
    pub tensor_size: u32,
    /// `size_of::<Shape>()` on the host.
    pub shape_size: u32,
    /// Host's private pointer for `log`.
    pub host_data: *mut c_void,
    /// Prints a message from the library (level 0 info, 1 warning). May be NULL.
    pub log: Option<unsafe extern "C" fn(host_data: *mut c_void, level: i32, message: *const c_char)>,
}

/// What the library hands the host; lives as long as the library is loaded.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Library {
    /// The library's `ABI_VERSION` (always the first field).
    pub abi_version: u32,
    /// `size_of::<Library>()` in the library (always the second field).
    pub struct_size: u32,
    /// `size_of::<Op>()` in the library.
    pub op_size: u32,
    /// `size_of::<Partitioner>()` in the library.
    pub partitioner_size: u32,
    /// `size_of::<Pass>()` in the library.
    pub pass_size: u32,
    /// `size_of::<DLTensor>()` in the library.
    pub tensor_size: u32,
    /// `size_of::<Shape>()` in the library.
    pub shape_size: u32,
    /// `size_of::<Resource>()` in the library.
    pub resource_size: u32,
    /// Called once after the checks with the host's version; failing refuses the load.
    pub initialize: Option<unsafe extern "C" fn(host_version: i32, err: *mut Error) -> i32>,
    /// `num_ops` operators.
    pub ops: *const Op,
    /// `num_partitioners` partitioners.
    pub partitioners: *const Partitioner,
    /// `num_passes` graph passes.
    pub passes: *const Pass,
    /// Number of operators.
    pub num_ops: i32,
    /// Number of partitioners.
    pub num_partitioners: i32,
    /// Number of passes.
    pub num_passes: i32,
    /// Padding (zero).
    pub reserved: i32,
}

impl Library {
    /// A table with this crate's version and sizes, and no entries.
    pub const fn empty() -> Library {
        Library {
            abi_version: crate::ABI_VERSION,
            struct_size: size_of::<Library>() as u32,
            op_size: size_of::<Op>() as u32,
            partitioner_size: size_of::<Partitioner>() as u32,
            pass_size: size_of::<Pass>() as u32,
            tensor_size: size_of::<DLTensor>() as u32,
            shape_size: size_of::<Shape>() as u32,
            resource_size: size_of::<Resource>() as u32,
            initialize: None,
            ops: std::ptr::null(),
            partitioners: std::ptr::null(),
            passes: std::ptr::null(),
            num_ops: 0,
            num_partitioners: 0,
            num_passes: 0,
            reserved: 0,
        }
    }
}

/// The entry point's type: returns the library's table (never freed by the
/// host) or NULL to refuse the host.
pub type EntryFn = unsafe extern "C" fn(host: *const Host) -> *const Library;

/// Sizes of every ABI struct on a 64-bit target, as `include/oxnet/oxnet_ext.h`
/// gives them (`name`, size, alignment); the tests compare them with a C compiler's.
pub const LAYOUT_64: [(&str, usize, usize); 17] = [
    ("DLDevice", 8, 4),
    ("DLDataType", 4, 2),
    ("DLTensor", 48, 8),
    ("oxnet_ext_error", 16, 8),
    ("oxnet_ext_attrs", 24, 8),
    ("oxnet_ext_sink", 16, 8),
    ("oxnet_ext_shape", 264, 8),
    ("oxnet_ext_resource", 56, 8),
    ("oxnet_ext_state", 32, 8),
    ("oxnet_ext_op", 104, 8),
    ("oxnet_ext_selector", 56, 8),
    ("oxnet_ext_strategy", 40, 8),
    ("oxnet_ext_partitioner", 32, 8),
    ("oxnet_ext_pass_resource", 16, 8),
    ("oxnet_ext_pass", 32, 8),
    ("oxnet_ext_host", 40, 8),
    ("oxnet_ext_library", 80, 8),
];

/// Size and alignment of each Rust mirror, in the order of [`LAYOUT_64`].
pub const fn rust_layout() -> [(usize, usize); 17] {
    use std::mem::align_of;
    macro_rules! l {
        ($($t:ty),*) => { [$((size_of::<$t>(), align_of::<$t>())),*] };
    }
    l!(
        DLDevice,
        DLDataType,
        DLTensor,
        Error,
        crate::call::Attrs,
        crate::call::Sink,
        Shape,
        Resource,
        State,
        Op,
        Selector,
        Strategy,
        Partitioner,
        PassResource,
        Pass,
        Host,
        Library
    )
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    let r = rust_layout();
    let mut i = 0;
    while i < r.len() {
        assert!(
            r[i].0 == LAYOUT_64[i].1 && r[i].1 == LAYOUT_64[i].2,
            "ABI struct layout drifted from the C header"
        );
        i += 1;
    }
};
