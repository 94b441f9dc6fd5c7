//! # oxnet-python
//!
//! The `oxnet._oxnet` extension module: thin bindings from Python to
//! `oxnet-core`. The Python package `oxnet` (in `python/oxnet`) builds the
//! MXNet-compatible API on top of it; no kernel lives here or there.

/// Rust allocations of the module go through mimalloc: kernels allocate
/// and free large temporaries on every call, which the system allocator
/// returns to the OS and faults back in each time (docs/gluon.md,
/// "Benchmarks").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod advanced_index;
mod array;
mod autograd;
mod check;
mod context;
mod create;
mod custom;
mod dlpack;
mod dtype;
mod errors;
mod features;
mod grad_signals;
mod image;
mod indexing;
mod init;
mod invoke;
mod io;
mod library;
mod numpy_interop;
mod optim;
mod pack;
mod profiler;
mod recordio;
mod rtc;
mod subgraph;
mod symbol;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _oxnet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MXNetError", m.py().get_type::<errors::MXNetError>())?;
    m.add_class::<array::PyNDArray>()?;
    m.add_class::<grad_signals::GradSignals>()?;
    m.add_function(wrap_pyfunction!(array::ndarray_from_state, m)?)?;
    m.add_class::<invoke::OpHandle>()?;
    m.add_function(wrap_pyfunction!(invoke::op_handle, m)?)?;
    m.add_function(wrap_pyfunction!(pack::packed_size, m)?)?;
    m.add_function(wrap_pyfunction!(pack::pack_host, m)?)?;
    m.add_function(wrap_pyfunction!(invoke::invoke, m)?)?;
    m.add_function(wrap_pyfunction!(invoke::list_ops, m)?)?;
    m.add_function(wrap_pyfunction!(features::runtime_features, m)?)?;
    m.add_function(wrap_pyfunction!(create::array, m)?)?;
    m.add_function(wrap_pyfunction!(create::full, m)?)?;
    m.add_function(wrap_pyfunction!(create::empty, m)?)?;
    m.add_function(wrap_pyfunction!(create::arange, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(numpy_interop::from_numpy_shared, m)?)?;
    m.add_function(wrap_pyfunction!(create::seed, m)?)?;
    m.add_function(wrap_pyfunction!(create::waitall, m)?)?;
    m.add_function(wrap_pyfunction!(create::num_gpus, m)?)?;
    m.add_function(wrap_pyfunction!(create::gpu_host_fallbacks, m)?)?;
    m.add_function(wrap_pyfunction!(create::gpu_memory_info, m)?)?;
    m.add_function(wrap_pyfunction!(create::gpu_compute_capability, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::set_recording, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::set_training, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_training, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::backward, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::grad, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::mark_variables, m)?)?;
    m.add_function(wrap_pyfunction!(custom::register_prop, m)?)?;
    m.add_function(wrap_pyfunction!(custom::unregister_prop, m)?)?;
    m.add_function(wrap_pyfunction!(custom::registered_props, m)?)?;
    m.add_function(wrap_pyfunction!(custom::register_function, m)?)?;
    m.add_function(wrap_pyfunction!(custom::unregister_function, m)?)?;
    m.add_function(wrap_pyfunction!(check::check_op, m)?)?;
    m.add_function(wrap_pyfunction!(library::load_library, m)?)?;
    m.add_class::<rtc::RtcModule>()?;
    m.add_class::<recordio::RecordFile>()?;
    m.add_class::<image::ImageRecordPipeline>()?;
    m.add_class::<image::DetRecordPipeline>()?;
    m.add_function(wrap_pyfunction!(image::image_decode, m)?)?;
    m.add_function(wrap_pyfunction!(image::image_encode, m)?)?;
    m.add_function(wrap_pyfunction!(image::image_resize, m)?)?;
    m.add_class::<symbol::SymbolHandle>()?;
    m.add_class::<symbol::ExecutorHandle>()?;
    m.add_function(wrap_pyfunction!(symbol::sym_var, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::sym_group, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::recorded_symbol, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::sym_compose_op, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::sym_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::sym_cut_scope, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::executor_bind, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::executor_simple_bind, m)?)?;
    m.add_class::<symbol::CachedOpHandle>()?;
    m.add_function(wrap_pyfunction!(symbol::trace_function, m)?)?;
    m.add_function(wrap_pyfunction!(symbol::sym_optimize_for, m)?)?;
    subgraph::register(m)?;
    m.add_function(wrap_pyfunction!(symbol::backend_names, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_set_config, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_set_state, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_is_running, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_pause, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_dump, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_now, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_clear, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_span, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_counter, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_marker, m)?)?;
    m.add_function(wrap_pyfunction!(profiler::profiler_bytes_in_use, m)?)?;
    m.add_function(wrap_pyfunction!(io::params_save, m)?)?;
    m.add_function(wrap_pyfunction!(io::params_load, m)?)?;
    m.add_function(wrap_pyfunction!(io::params_load_frombuffer, m)?)?;
    m.add_function(wrap_pyfunction!(io::params_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(init::init_fill, m)?)?;
    m.add_function(wrap_pyfunction!(init::init_constant, m)?)?;
    m.add_function(wrap_pyfunction!(init::init_canonical, m)?)?;
    m.add_function(wrap_pyfunction!(init::init_names, m)?)?;
    m.add_class::<optim::OptimizerCore>()?;
    m.add_class::<optim::UpdaterCore>()?;
    m.add_class::<optim::SchedulerCore>()?;
    m.add_function(wrap_pyfunction!(optim::encode_states, m)?)?;
    m.add_function(wrap_pyfunction!(optim::decode_states, m)?)?;
    m.add_function(wrap_pyfunction!(optim::optimizer_names, m)?)?;
    Ok(())
}
