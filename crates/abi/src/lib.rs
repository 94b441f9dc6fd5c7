//! # oxnet-abi
//!
//! The C ABI between oxnet and operator libraries loaded at run time: the
//! exact Rust mirror of `include/oxnet/oxnet_ext.h`. It has no dependencies:
//! plugin authors depend on this crate (or on the C and C++ headers) and on
//! nothing else of oxnet's.
//!
//! A library exports one function, [`ENTRY_NAME`] (`oxnet_ext_entry`, of type
//! [`EntryFn`]). The host calls it with its [`Host`] table and receives the
//! library's [`Library`] table: the ABI version, the struct sizes the library
//! was compiled with, an `initialize` hook and the descriptors of its
//! operators ([`Op`]), partitioners ([`Partitioner`]) and graph passes
//! ([`Pass`]). The host refuses a library whose version or sizes differ.
//!
//! Conventions for every callback: it returns [`OK`] or a failure status, and
//! reports its failure message through the [`Error`] sink it received (the
//! host copies the text: there is no global error list). Memory belongs to the
//! side that allocated it. Tensors cross as DLPack [`DLTensor`]s; dtypes in
//! inference callbacks use the `DTYPE_*` codes (MXNet's numbering). Every
//! kernel receives one request per output (`REQ_*`).

#![allow(non_camel_case_types)]

mod call;
mod dlpack;
mod graph;
mod op;
mod tables;

pub use call::*;
pub use dlpack::*;
pub use graph::*;
pub use op::*;
pub use tables::*;

/// The version of the ABI described by this crate. A host refuses a
/// library built against another version.
pub const ABI_VERSION: u32 = 1;

/// The most dimensions a shape may have in shape inference.
pub const MAX_NDIM: usize = 32;

/// Number of device slots in an operator's kernel arrays.
pub const NUM_DEVICE_SLOTS: usize = 2;
/// Slot of CPU kernels.
pub const SLOT_CPU: usize = 0;
/// Slot of GPU kernels: they get device pointers and the device's CUDA stream.
pub const SLOT_GPU: usize = 1;

/// Status: success.
pub const OK: i32 = 0;
/// Status: failure (the message went through the call's [`Error`]).
pub const FAIL: i32 = 1;

/// Request: skip this output.
pub const REQ_NULL: i32 = 0;
/// Request: overwrite the buffer.
pub const REQ_WRITE: i32 = 1;
/// Request: overwrite; the buffer may alias an input.
pub const REQ_INPLACE: i32 = 2;
/// Request: add the result to what the buffer holds.
pub const REQ_ADD: i32 = 3;

/// Dtype code: not known yet.
pub const DTYPE_UNKNOWN: i32 = -1;
/// Dtype code: float32.
pub const DTYPE_FLOAT32: i32 = 0;
/// Dtype code: float64.
pub const DTYPE_FLOAT64: i32 = 1;
/// Dtype code: float16.
pub const DTYPE_FLOAT16: i32 = 2;
/// Dtype code: uint8.
pub const DTYPE_UINT8: i32 = 3;
/// Dtype code: int32.
pub const DTYPE_INT32: i32 = 4;
/// Dtype code: int8.
pub const DTYPE_INT8: i32 = 5;
/// Dtype code: int64.
pub const DTYPE_INT64: i32 = 6;
/// Dtype code: bool (one byte holding 0 or 1).
pub const DTYPE_BOOL: i32 = 7;
/// Dtype code: bfloat16.
pub const DTYPE_BFLOAT16: i32 = 12;

/// The name of the one exported entry point (without the trailing NUL).
pub const ENTRY_NAME: &str = "oxnet_ext_entry";
