//! Libraries built for MXNet 1.7 to 1.9 (`lib_api.h` with
//! `MX_LIBRARY_VERSION` 11), loaded unchanged.
//!
//! Such a library compiles MXNet's `lib_api.cc` in and exports C functions
//! (`_opVersion`, `initialize`, `_opRegGet`, `_opCallFCompute`, ...). This
//! module checks the version, calls `initialize(10901)` (oxnet answers as
//! MXNet 1.9.1), and presents each operator, partitioner strategy and graph
//! pass through oxnet's own extension ABI: the loader then registers them as
//! it registers any library's ([`adapt`] returns the ABI descriptors).
//!
//! What the host adds to MXNet's behaviour:
//! - requests: MXNet never passed them; outputs with request `add` are
//!   computed into scratch memory and added in (`kernel.rs`);
//! - errors: each failure carries the messages the library logged
//!   (`MX_ERROR_MSG`) during that call only, and C++ exceptions are caught
//!   (`guard.rs`) instead of ending the process;
//! - random states: 1024 `std::mt19937` engines that follow `oxnet.random.seed`
//!   (`rng.rs`).

mod graph;
mod guard;
mod kernel;
mod library;
mod ops;
mod rng;
mod symbols;

use graph::{MxPass, MxStrategy};
use library::MxLibrary;
use ops::MxOp;
use oxnet_abi as abi;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

/// The library version this module loads (`MX_LIBRARY_VERSION`).
pub(crate) const LIBRARY_VERSION: c_int = 11;

/// The MXNet version `initialize` receives: oxnet answers as MXNet 1.9.1.
pub(crate) const MXNET_VERSION: c_int = 10901;

/// Whether `lib` is an MXNet-style library (it exports `_opVersion`).
pub(crate) fn is_mxnet_library(lib: &libloading::Library) -> bool {
    symbols::version_fn(lib).is_some()
}

/// The objects the descriptors of an adapted library point to (in the
/// vectors' heap buffers, which stay where they are when the vectors move).
struct Owned {
    _ops: Vec<MxOp>,
    _strategies: Vec<Vec<MxStrategy>>,
    _strategy_tables: Vec<Vec<abi::Strategy>>,
    _partitioner_names: Vec<CString>,
    _passes: Vec<MxPass>,
}

// SAFETY: the strategy tables hold pointers into the other fields, which are
// Send and Sync themselves and never mutated.
unsafe impl Send for Owned {}
unsafe impl Sync for Owned {}

/// An MXNet-style library presented through oxnet's ABI.
pub(crate) struct Adapted {
    /// One descriptor per operator.
    pub ops: Vec<abi::Op>,
    /// One descriptor per partitioner.
    pub partitioners: Vec<abi::Partitioner>,
    /// Per partitioner and strategy: the user data of its callbacks.
    pub strategy_data: Vec<Vec<*mut c_void>>,
    /// One descriptor per graph pass.
    pub passes: Vec<abi::Pass>,
    /// What the descriptors point to; keep it as long as they are used.
    pub owned: Box<dyn std::any::Any + Send + Sync>,
}

/// Checks the library's version, initialises it and reads its registrations.
/// `Err` says why it cannot be loaded.
pub(crate) fn adapt(lib: &libloading::Library) -> Result<Adapted, String> {
    let version_fn = symbols::version_fn(lib).ok_or("it exports no `_opVersion`")?;
    // SAFETY: `_opVersion` takes nothing and returns an int.
    let version = guard::guarded(|| unsafe { version_fn() })?;
    if version != LIBRARY_VERSION {
        return Err(format!(
            "it was built against MXNet's lib_api.h with MX_LIBRARY_VERSION {version}; oxnet loads \
             version {LIBRARY_VERSION} (MXNet 1.7 to 1.9)"
        ));
    }
    let syms = symbols::resolve(lib).map_err(|missing| {
        format!("it exports `_opVersion` but not `{missing}`, which MXNet's lib_api.cc defines: a partial or damaged library?")
    })?;
    let lib = Arc::new(MxLibrary { syms });
    let init = syms.ops.initialize;
    lib.call(|| unsafe { init(MXNET_VERSION) }).map_err(|e| {
        format!("its initialize refused MXNet version {MXNET_VERSION} (oxnet answers as MXNet 1.9.1): {e}")
    })?;

    let mut count = 0;
    let reg_size = syms.ops.op_reg_size;
    lib.call_void(|| count = unsafe { reg_size() })?;
    let ops: Vec<MxOp> = (0..count).map(|i| MxOp::read(&lib, i)).collect::<Result<_, _>>()?;

    let mut strategies = Vec::new();
    let mut partitioner_names = Vec::new();
    if let Some(p) = syms.partitioners {
        let mut n = 0;
        lib.call_void(|| n = unsafe { (p.reg_size)() })?;
        for i in 0..n {
            let (name, list) = graph::read_partitioner(&lib, p, i)?;
            partitioner_names.push(name);
            strategies.push(list);
        }
    }
    let mut passes = Vec::new();
    if let Some(p) = syms.passes {
        let mut n = 0;
        lib.call_void(|| n = unsafe { (p.reg_size)() })?;
        for i in 0..n {
            passes.push(graph::read_pass(&lib, p, i)?);
        }
    }

    let strategy_tables: Vec<Vec<abi::Strategy>> =
        strategies.iter().map(|list| list.iter().map(|s| s.descriptor()).collect()).collect();
    let partitioners = partitioner_names
        .iter()
        .zip(&strategy_tables)
        .map(|(name, table)| abi::Partitioner {
            struct_size: std::mem::size_of::<abi::Partitioner>() as u32,
            num_strategies: table.len() as i32,
            name: name.as_ptr(),
            user_data: std::ptr::null_mut(),
            strategies: table.as_ptr(),
        })
        .collect();
    let strategy_data = strategies
        .iter()
        .map(|list| list.iter().map(|s| s as *const MxStrategy as *mut c_void).collect())
        .collect();
    Ok(Adapted {
        ops: ops.iter().map(|o| o.descriptor()).collect(),
        partitioners,
        strategy_data,
        passes: passes.iter().map(|p| p.descriptor()).collect(),
        owned: Box::new(Owned {
            _ops: ops,
            _strategies: strategies,
            _strategy_tables: strategy_tables,
            _partitioner_names: partitioner_names,
            _passes: passes,
        }),
    })
}

/// Reports `r` through an ABI error sink: [`abi::OK`] or [`abi::FAIL`].
///
/// # Safety
/// `err` is NULL or the sink of the current call.
unsafe fn status(err: *mut abi::Error, r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => abi::OK,
        Err(msg) => {
            if let Some(e) = err.as_ref() {
                e.set(&msg);
            }
            abi::FAIL
        }
    }
}

/// The (keys, values, count) of ABI attributes or options, as MXNet's
/// functions take them.
///
/// # Safety
/// `a` is NULL or valid for the current call.
unsafe fn pairs(a: *const abi::Attrs) -> (*const *const c_char, *const *const c_char, c_int) {
    match a.as_ref() {
        Some(a) => (a.keys, a.values, a.count),
        None => (std::ptr::null(), std::ptr::null(), 0),
    }
}
