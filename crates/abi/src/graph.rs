//! Partitioners and graph passes (graphs cross as oxnet graph JSON).

use crate::call::{Attrs, Error, Sink};
use crate::dlpack::DLTensor;
use std::ffi::{c_char, c_void};

/// A node selector grown from a seed node (alternative to `supported_ops`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Selector {
    /// The library's object.
    pub selector: *mut c_void,
    /// Whether to start a subgraph at `node_id`.
    pub select: Option<unsafe extern "C" fn(selector: *mut c_void, node_id: i32, selected: *mut i32) -> i32>,
    /// Whether to grow into an input node.
    pub select_input: Option<
        unsafe extern "C" fn(
            selector: *mut c_void,
            node_id: i32,
            input_node_id: i32,
            selected: *mut i32,
        ) -> i32,
    >,
    /// Whether to grow into an output node.
    pub select_output: Option<
        unsafe extern "C" fn(
            selector: *mut c_void,
            node_id: i32,
            output_node_id: i32,
            selected: *mut i32,
        ) -> i32,
    >,
    /// Writes the kept ids (room for `num_candidates`) and their count.
    pub filter: Option<
        unsafe extern "C" fn(
            selector: *mut c_void,
            candidates: *const i32,
            num_candidates: i32,
            keep: *mut i32,
            num_keep: *mut i32,
        ) -> i32,
    >,
    /// Resets the selector after a subgraph was grown.
    pub reset: Option<unsafe extern "C" fn(selector: *mut c_void)>,
    /// Frees the selector.
    pub destroy: Option<unsafe extern "C" fn(selector: *mut c_void)>,
}

/// Marks supported nodes: `ids[i]` receives -1 or a subgraph id (>= 0).
pub type SupportedOpsFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    graph_json: *const c_char,
    ids: *mut i32,
    num_nodes: i32,
    options: *const Attrs,
    err: *mut Error,
) -> i32;

/// Creates a selector into `*out` (zeroed by the host).
pub type CreateSelectorFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    graph_json: *const c_char,
    options: *const Attrs,
    out: *mut Selector,
    err: *mut Error,
) -> i32;

/// Reviews one subgraph: sets `*accept` and may push attributes for it.
pub type ReviewSubgraphFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    subgraph_json: *const c_char,
    subgraph_id: i32,
    options: *const Attrs,
    accept: *mut i32,
    attrs_out: *mut Sink,
    err: *mut Error,
) -> i32;

/// One partitioning strategy.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Strategy {
    /// The strategy's name.
    pub name: *const c_char,
    /// The subgraph operator replacing each accepted subgraph.
    pub subgraph_op_name: *const c_char,
    /// Supported-op selection (this or `create_selector`).
    pub supported_ops: Option<SupportedOpsFn>,
    /// Selector-based selection (may be NULL).
    pub create_selector: Option<CreateSelectorFn>,
    /// Subgraph review (NULL: accept all).
    pub review_subgraph: Option<ReviewSubgraphFn>,
}

/// A partitioner (MXNet's "backend"): named strategies.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Partitioner {
    /// `size_of::<Partitioner>()` as the library compiled it.
    pub struct_size: u32,
    /// Number of strategies.
    pub num_strategies: i32,
    /// The partitioner's name.
    pub name: *const c_char,
    /// Passed back to the strategies' callbacks.
    pub user_data: *mut c_void,
    /// `num_strategies` strategies.
    pub strategies: *const Strategy,
}

/// Services of a graph pass.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PassResource {
    /// Host's private pointer.
    pub host_data: *mut c_void,
    /// Allocates a new parameter (owned by the host). NULL on failure.
    pub alloc_param: Option<
        unsafe extern "C" fn(
            host_data: *mut c_void,
            name: *const c_char,
            is_aux: i32,
            shape: *const i64,
            ndim: i32,
            dtype: i32,
        ) -> *mut DLTensor,
    >,
}

/// A graph pass: reads `graph_json`, pushes the rewritten JSON through `out`.
pub type GraphPassFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    graph_json: *const c_char,
    options: *const Attrs,
    out: *mut Sink,
    res: *const PassResource,
    err: *mut Error,
) -> i32;

/// A graph pass descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    /// `size_of::<Pass>()` as the library compiled it.
    pub struct_size: u32,
    /// Padding (zero).
    pub reserved: i32,
    /// The pass's name.
    pub name: *const c_char,
    /// Passed back to `run`.
    pub user_data: *mut c_void,
    /// The pass.
    pub run: Option<GraphPassFn>,
}
