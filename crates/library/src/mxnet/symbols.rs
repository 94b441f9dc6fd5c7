//! The C functions an MXNet-style library exports (MXNet's `lib_api.h`,
//! `MX_LIBRARY_VERSION` 11), looked up once when the library is loaded.
//!
//! Every type is `extern "C-unwind"`: these functions run the author's C++
//! code without catching its exceptions, so an exception may unwind out of
//! them; oxnet calls them only inside the C++ guard (see `guard.rs`).

use std::ffi::{c_char, c_int, c_uint, c_void};

/// A library function pointer (`parseAttrs_t`, `fcomp_t`, ...): opaque to the
/// host, handed back to the matching `_opCall*` function.
pub(crate) type LibFn = *const c_void;

/// `xpu_malloc_t`: `alloc_cpu`/`alloc_gpu` of the resource.
pub(crate) type XpuMalloc = unsafe extern "C" fn(ctx: *mut c_void, size: c_int) -> *mut c_void;
/// `sparse_malloc_t`.
pub(crate) type SparseMalloc = unsafe extern "C" fn(
    ctx: *mut c_void,
    index: c_int,
    indices_len: c_int,
    indptr_len: c_int,
    data: *mut *mut c_void,
    indices: *mut *mut i64,
    indptr: *mut *mut i64,
);
/// `nd_malloc_t`: allocates a new parameter during a graph pass.
pub(crate) type NdMalloc = unsafe extern "C" fn(
    ctx: *const c_void,
    shape: *const i64,
    ndim: c_int,
    dev_type: *const c_char,
    dev_id: c_int,
    dtype: c_int,
    name: *const c_char,
    is_arg: c_int,
    data: *mut *mut c_void,
);

type OpVersion = unsafe extern "C-unwind" fn() -> c_int;
type Initialize = unsafe extern "C-unwind" fn(version: c_int) -> c_int;
type MsgSize = unsafe extern "C-unwind" fn() -> c_int;
type MsgGet = unsafe extern "C-unwind" fn(idx: c_int, msg: *mut *const c_char);
type RegSize = unsafe extern "C-unwind" fn() -> c_int;
type OpRegGet = unsafe extern "C-unwind" fn(
    idx: c_int,
    name: *mut *const c_char,
    is_subgraph_op: *mut c_int,
    forward_ctx: *mut *const *const c_char,
    forward_fp: *mut *const LibFn,
    forward_count: *mut c_int,
    backward_ctx: *mut *const *const c_char,
    backward_fp: *mut *const LibFn,
    backward_count: *mut c_int,
    create_op_ctx: *mut *const *const c_char,
    create_op_fp: *mut *const LibFn,
    create_op_count: *mut c_int,
    parse: *mut LibFn,
    infer_type: *mut LibFn,
    infer_stype: *mut LibFn,
    infer_shape: *mut LibFn,
    mutate: *mut LibFn,
);
type CallFree = unsafe extern "C-unwind" fn(ptr: *mut c_void);
type CallParseAttrs = unsafe extern "C-unwind" fn(
    f: LibFn,
    keys: *const *const c_char,
    vals: *const *const c_char,
    num: c_int,
    num_in: *mut c_int,
    num_out: *mut c_int,
) -> c_int;
type CallInferShape = unsafe extern "C-unwind" fn(
    f: LibFn,
    keys: *const *const c_char,
    vals: *const *const c_char,
    num: c_int,
    in_shapes: *mut *mut c_uint,
    in_dims: *mut c_int,
    num_in: c_int,
    mod_in_shapes: *mut *mut *mut c_uint,
    mod_in_dims: *mut *mut c_int,
    out_shapes: *mut *mut *mut c_uint,
    out_dims: *mut *mut c_int,
    num_out: c_int,
) -> c_int;
type CallInferType = unsafe extern "C-unwind" fn(
    f: LibFn,
    keys: *const *const c_char,
    vals: *const *const c_char,
    num: c_int,
    in_types: *mut c_int,
    num_in: c_int,
    out_types: *mut c_int,
    num_out: c_int,
) -> c_int;
type CallMutateInputs = unsafe extern "C-unwind" fn(
    f: LibFn,
    keys: *const *const c_char,
    vals: *const *const c_char,
    num: c_int,
    indices: *mut *mut c_int,
    count: *mut c_int,
) -> c_int;
type CallCreateOpState = unsafe extern "C-unwind" fn(
    f: LibFn,
    keys: *const *const c_char,
    vals: *const *const c_char,
    num: c_int,
    dev_type: *const c_char,
    dev_id: c_int,
    in_shapes: *mut *mut c_uint,
    in_dims: *mut c_int,
    num_in: c_int,
    in_types: *const c_int,
    state: *mut *mut c_void,
) -> c_int;
type CallDestroyOpState = unsafe extern "C-unwind" fn(state: *mut c_void);

/// The type of `_opCallFCompute` / `_opCallFStatefulCompute`: the leading
/// arguments `$head`, then the tail both share (tensors, allocators, stream,
/// sparse parts, random states).
macro_rules! compute_fn {
    ($($head:ty),+) => {
        unsafe extern "C-unwind" fn(
            $($head,)+
            // inputs: shapes, ndims, data, dtypes, version ids, device types and ids, count
            *const *const i64, *const c_int, *const *mut c_void, *const c_int, *const usize,
            *const *const c_char, *const c_int, c_int,
            // outputs: the same
            *const *const i64, *const c_int, *const *mut c_void, *const c_int, *const usize,
            *const *const c_char, *const c_int, c_int,
            // cpu_malloc, cpu_alloc, gpu_malloc, gpu_alloc, cuda_stream, sparse_malloc, sparse_alloc
            XpuMalloc, *mut c_void, XpuMalloc, *mut c_void, *mut c_void, SparseMalloc, *mut c_void,
            // storage types, sparse indices and pointers (in, out) and their lengths
            *const c_int, *const c_int, *const *mut c_void, *const *mut c_void, *const *mut c_void,
            *const *mut c_void, *const i64, *const i64, *const i64, *const i64,
            // rng_cpu_states, rng_gpu_states
            *mut c_void, *mut c_void,
        ) -> c_int
    };
}

/// `_opCallFCompute(fcomp, keys, vals, num, <tail>)`.
pub(crate) type CallFCompute = compute_fn!(LibFn, *const *const c_char, *const *const c_char, c_int);

/// `_opCallFStatefulCompute(is_forward, state, <tail>)`.
pub(crate) type CallFStatefulCompute = compute_fn!(c_int, *mut c_void);

/// The type of `_partCallReviewSubgraph` / `_passCallGraphPass`: the
/// leading arguments, then the graph's parameters (arguments, then auxiliary
/// states, each as names, count, data, shapes, ndims, dtypes, version ids,
/// device types and ids), then the trailing arguments.
macro_rules! with_params_fn {
    (($($head:ty),+), ($($tail:ty),*)) => {
        unsafe extern "C-unwind" fn(
            $($head,)+
            *const *const c_char, c_int, *const *mut c_void, *const *const i64, *const c_int,
            *const c_int, *const usize, *const *const c_char, *const c_int,
            *const *const c_char, c_int, *const *mut c_void, *const *const i64, *const c_int,
            *const c_int, *const usize, *const *const c_char, *const c_int,
            $($tail,)*
        ) -> c_int
    };
}

type PartRegGetCount = unsafe extern "C-unwind" fn(idx: c_int, name: *mut *const c_char) -> c_int;
type PartRegGet = unsafe extern "C-unwind" fn(
    part_idx: c_int,
    stg_idx: c_int,
    strategy: *mut *const c_char,
    supported_ops: *mut LibFn,
    create_selector: *mut LibFn,
    review_subgraph: *mut LibFn,
    op_name: *mut *const c_char,
);
type PartCallSupportedOps = unsafe extern "C-unwind" fn(
    f: LibFn,
    json: *const c_char,
    num_ids: c_int,
    ids: *mut c_int,
    opt_keys: *const *const c_char,
    opt_vals: *const *const c_char,
    num_opts: c_int,
) -> c_int;
type PartCallCreateSelector = unsafe extern "C-unwind" fn(
    f: LibFn,
    json: *const c_char,
    selector: *mut *mut c_void,
    opt_keys: *const *const c_char,
    opt_vals: *const *const c_char,
    num_opts: c_int,
) -> c_int;
type PartCallSelect = unsafe extern "C-unwind" fn(sel: *mut c_void, node: c_int, selected: *mut c_int);
type PartCallSelectNeighbour =
    unsafe extern "C-unwind" fn(sel: *mut c_void, node: c_int, other: c_int, selected: *mut c_int);
type PartCallFilter = unsafe extern "C-unwind" fn(
    sel: *mut c_void,
    candidates: *mut c_int,
    num_candidates: c_int,
    keep: *mut *mut c_int,
    num_keep: *mut c_int,
);
type PartCallReset = unsafe extern "C-unwind" fn(sel: *mut c_void);
type PartCallReviewSubgraph = with_params_fn!(
    (
        LibFn,                 // reviewSubgraph
        *const c_char,         // subgraph JSON
        c_int,                 // subgraph id
        *mut c_int,            // accept
        *const *const c_char,  // option keys
        *const *const c_char,  // option values
        c_int,                 // number of options
        *mut *mut *mut c_char, // attribute keys (library-allocated)
        *mut *mut *mut c_char, // attribute values
        *mut c_int             // number of attributes
    ),
    ()
);
type PassRegGet = unsafe extern "C-unwind" fn(idx: c_int, pass: *mut LibFn, name: *mut *const c_char);
type PassCallGraphPass = with_params_fn!(
    (
        LibFn,                // graphPass
        *const c_char,        // graph JSON
        *mut *mut c_char,     // output graph JSON (library-allocated)
        *const *const c_char, // option keys
        *const *const c_char, // option values
        c_int,                // number of options
        *const c_char         // pass name
    ),
    (NdMalloc, *const c_void) // nd_malloc, its context
);

/// The operator functions every version-11 library exports.
#[derive(Clone, Copy)]
pub(crate) struct OpSymbols {
    pub initialize: Initialize,
    pub msg_size: MsgSize,
    pub msg_get: MsgGet,
    pub op_reg_size: RegSize,
    pub op_reg_get: OpRegGet,
    pub free: CallFree,
    pub parse_attrs: CallParseAttrs,
    pub infer_shape: CallInferShape,
    pub infer_type: CallInferType,
    pub fcompute: CallFCompute,
    pub mutate_inputs: CallMutateInputs,
    pub create_op_state: CallCreateOpState,
    pub destroy_op_state: CallDestroyOpState,
    pub stateful_compute: CallFStatefulCompute,
}

/// The partitioner functions (MXNet 1.7 and later export them all).
#[derive(Clone, Copy)]
pub(crate) struct PartitionerSymbols {
    pub reg_size: RegSize,
    pub reg_get_count: PartRegGetCount,
    pub reg_get: PartRegGet,
    pub supported_ops: PartCallSupportedOps,
    pub create_selector: PartCallCreateSelector,
    pub select: PartCallSelect,
    pub select_input: PartCallSelectNeighbour,
    pub select_output: PartCallSelectNeighbour,
    pub filter: PartCallFilter,
    pub reset: PartCallReset,
    pub review_subgraph: PartCallReviewSubgraph,
}

/// The graph pass functions.
#[derive(Clone, Copy)]
pub(crate) struct PassSymbols {
    pub reg_size: RegSize,
    pub reg_get: PassRegGet,
    pub call: PassCallGraphPass,
}

/// Everything looked up in one library.
#[derive(Clone, Copy)]
pub(crate) struct Symbols {
    pub ops: OpSymbols,
    /// `None` when the library exports none of the `_part*` functions.
    pub partitioners: Option<PartitionerSymbols>,
    /// `None` when the library exports none of the `_pass*` functions.
    pub passes: Option<PassSymbols>,
}

/// The name of the version function: its presence marks an MXNet-style library.
pub(crate) const VERSION_SYMBOL: &str = "_opVersion";

/// The library's `_opVersion`, if it exports one.
pub(crate) fn version_fn(lib: &libloading::Library) -> Option<OpVersion> {
    // SAFETY: MXNet declares `_opVersion` as `int _opVersion()`.
    unsafe { lib.get::<OpVersion>(VERSION_SYMBOL.as_bytes()).ok().map(|s| *s) }
}

/// Looks the functions up; `Err` names the first required one missing.
pub(crate) fn resolve(lib: &libloading::Library) -> Result<Symbols, String> {
    // SAFETY (every `get` below): each name is looked up with the signature
    // MXNet 1.9's lib_api.h declares for it.
    macro_rules! required {
        ($name:literal) => {
            unsafe { *lib.get($name.as_bytes()).map_err(|_| $name.to_string())? }
        };
    }
    macro_rules! optional {
        ($name:literal) => {
            unsafe { lib.get($name.as_bytes()).ok().map(|s| *s) }
        };
    }
    let ops = OpSymbols {
        initialize: required!("initialize"),
        msg_size: required!("_msgSize"),
        msg_get: required!("_msgGet"),
        op_reg_size: required!("_opRegSize"),
        op_reg_get: required!("_opRegGet"),
        free: required!("_opCallFree"),
        parse_attrs: required!("_opCallParseAttrs"),
        infer_shape: required!("_opCallInferShape"),
        infer_type: required!("_opCallInferType"),
        fcompute: required!("_opCallFCompute"),
        mutate_inputs: required!("_opCallMutateInputs"),
        create_op_state: required!("_opCallCreateOpState"),
        destroy_op_state: required!("_opCallDestroyOpState"),
        stateful_compute: required!("_opCallFStatefulCompute"),
    };
    let partitioners = match optional!("_partRegSize") {
        None => None,
        Some(reg_size) => Some(PartitionerSymbols {
            reg_size,
            reg_get_count: required!("_partRegGetCount"),
            reg_get: required!("_partRegGet"),
            supported_ops: required!("_partCallSupportedOps"),
            create_selector: required!("_partCallCreateSelector"),
            select: required!("_partCallSelect"),
            select_input: required!("_partCallSelectInput"),
            select_output: required!("_partCallSelectOutput"),
            filter: required!("_partCallFilter"),
            reset: required!("_partCallReset"),
            review_subgraph: required!("_partCallReviewSubgraph"),
        }),
    };
    let passes = match optional!("_passRegSize") {
        None => None,
        Some(reg_size) => Some(PassSymbols {
            reg_size,
            reg_get: required!("_passRegGet"),
            call: required!("_passCallGraphPass"),
        }),
    };
    Ok(Symbols { ops, partitioners, passes })
}
