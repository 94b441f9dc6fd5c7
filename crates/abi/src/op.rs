//! Operator descriptors and their callbacks.

use crate::call::{Attrs, Error, Resource, Shape};
use crate::dlpack::{DLDevice, DLTensor};
use crate::NUM_DEVICE_SLOTS;
use std::ffi::{c_char, c_void};

/// Sets the number of inputs and outputs from the attributes.
pub type ParseAttrsFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    num_in: *mut i32,
    num_out: *mut i32,
    err: *mut Error,
) -> i32;

/// Fills output dtypes (may fill unknown input dtypes; unknown is `DTYPE_UNKNOWN`).
pub type InferTypeFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    in_types: *mut i32,
    num_in: i32,
    out_types: *mut i32,
    num_out: i32,
    err: *mut Error,
) -> i32;

/// Fills output shapes (may fill unknown input shapes).
pub type InferShapeFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    in_shapes: *mut Shape,
    num_in: i32,
    out_shapes: *mut Shape,
    num_out: i32,
    err: *mut Error,
) -> i32;

/// Writes the indices of mutated inputs into `indices` (room for `capacity`)
/// and their number into `*count`.
pub type MutateInputsFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    indices: *mut i32,
    capacity: i32,
    count: *mut i32,
    err: *mut Error,
) -> i32;

/// A stateless kernel. Backward inputs: out_grads, then the forward inputs,
/// then the forward outputs; outputs: one gradient per forward input.
pub type KernelFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    inputs: *const DLTensor,
    num_in: i32,
    outputs: *const DLTensor,
    num_out: i32,
    req: *const i32,
    res: *const Resource,
    err: *mut Error,
) -> i32;

/// A stateful kernel, receiving the state object.
pub type StateKernelFn = unsafe extern "C" fn(
    state: *mut c_void,
    inputs: *const DLTensor,
    num_in: i32,
    outputs: *const DLTensor,
    num_out: i32,
    req: *const i32,
    res: *const Resource,
    err: *mut Error,
) -> i32;

/// A per-instance state object; the host calls `destroy` once when the
/// operator instance dies.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct State {
    /// The library's object.
    pub state: *mut c_void,
    /// Forward (required).
    pub forward: Option<StateKernelFn>,
    /// Backward (NULL: no gradient).
    pub backward: Option<StateKernelFn>,
    /// Frees the object (may be NULL).
    pub destroy: Option<unsafe extern "C" fn(state: *mut c_void)>,
}

/// Creates the state of one operator instance; fills `*out` (zeroed by the host).
pub type CreateStateFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    attrs: *const Attrs,
    device: DLDevice,
    in_shapes: *const Shape,
    in_types: *const i32,
    num_in: i32,
    out: *mut State,
    err: *mut Error,
) -> i32;

/// An operator descriptor. Kernel arrays are indexed by `SLOT_CPU` / `SLOT_GPU`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// `size_of::<Op>()` as the library compiled it.
    pub struct_size: u32,
    /// Nonzero for a subgraph operator.
    pub is_subgraph_op: i32,
    /// The registered name (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// Passed back to every callback of this operator.
    pub user_data: *mut c_void,
    /// Number of inputs and outputs (required).
    pub parse_attrs: Option<ParseAttrsFn>,
    /// Dtype inference (required).
    pub infer_type: Option<InferTypeFn>,
    /// Shape inference (required).
    pub infer_shape: Option<InferShapeFn>,
    /// Mutated inputs (may be NULL).
    pub mutate_inputs: Option<MutateInputsFn>,
    /// Stateless forward kernels per device slot.
    pub forward: [Option<KernelFn>; NUM_DEVICE_SLOTS],
    /// Stateless backward kernels per device slot.
    pub backward: [Option<KernelFn>; NUM_DEVICE_SLOTS],
    /// State constructors per device slot.
    pub create_state: [Option<CreateStateFn>; NUM_DEVICE_SLOTS],
}
