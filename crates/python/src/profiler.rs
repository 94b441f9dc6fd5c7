//! The profiler's Python face (`mx.profiler`): configuration, state,
//! dumps, and the user's tasks, frames, events, counters and markers.

use crate::errors::MXNetError;
use oxnet_core::profiler::{self, Config, Format, MarkerScope, SortBy, State};
use pyo3::prelude::*;

/// The domain of API calls in traces and statistics.
pub const API_DOMAIN: &str = "oxnet API";

/// Times an API call (`profile_api`) until the guard is dropped.
pub fn api_span(name: &str) -> Option<profiler::Span> {
    profiler::span(profiler::API, API_DOMAIN, name)
}

/// Applies a configuration (already parsed and checked in Python).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn profiler_set_config(
    profile_imperative: bool,
    profile_symbolic: bool,
    profile_memory: bool,
    profile_api: bool,
    aggregate_stats: bool,
    filename: String,
    continuous_dump: bool,
) -> PyResult<()> {
    profiler::set_config(Config {
        profile_imperative,
        profile_symbolic,
        profile_memory,
        profile_api,
        aggregate_stats,
        filename,
        continuous_dump,
    })
    .map_err(crate::errors::to_py)
}

/// Runs (`true`) or stops the profiler.
#[pyfunction]
pub fn profiler_set_state(run: bool) {
    profiler::set_state(if run { State::Run } else { State::Stop });
}

/// Whether the profiler runs.
#[pyfunction]
pub fn profiler_is_running() -> bool {
    profiler::state() == State::Run
}

/// Pauses (`true`) or resumes recording.
#[pyfunction]
pub fn profiler_pause(paused: bool) {
    profiler::set_paused(paused);
}

/// Writes the trace file; returns its name.
#[pyfunction]
pub fn profiler_dump(py: Python<'_>, finished: bool) -> PyResult<String> {
    py.detach(|| profiler::dump(finished)).map_err(crate::errors::to_py)
}

/// The aggregate statistics as text.
#[pyfunction]
pub fn profiler_dumps(reset: bool, format: &str, sort_by: &str, ascending: bool) -> PyResult<String> {
    let format = Format::parse(format).ok_or_else(|| {
        MXNetError::new_err(format!("profiler.dumps: format must be 'table' or 'json', not {format:?}"))
    })?;
    let sort_by = SortBy::parse(sort_by).ok_or_else(|| {
        MXNetError::new_err(format!(
            "profiler.dumps: sort_by must be 'total', 'avg', 'min', 'max' or 'count', not {sort_by:?}"
        ))
    })?;
    Ok(profiler::aggregate(reset, format, sort_by, ascending))
}

/// Forgets every recorded event and the statistics.
#[pyfunction]
pub fn profiler_clear() {
    profiler::clear();
}

/// The profiler's clock, in ns.
#[pyfunction]
pub fn profiler_now() -> u64 {
    profiler::now_ns()
}

/// Records a span of user code.
#[pyfunction]
pub fn profiler_span(domain: &str, name: &str, start_ns: u64, end_ns: u64) {
    profiler::record_span(domain, name, start_ns, end_ns);
}

/// Records a counter's value.
#[pyfunction]
pub fn profiler_counter(domain: &str, name: &str, value: i64) {
    profiler::record_counter(domain, name, value);
}

/// Records a marker.
#[pyfunction]
pub fn profiler_marker(domain: &str, name: &str, scope: &str) -> PyResult<()> {
    let scope = MarkerScope::parse(scope).ok_or_else(|| {
        MXNetError::new_err(format!(
            "profiler.Marker.mark: scope must be 'global', 'process', 'thread', 'task' or 'marker', not {scope:?}"
        ))
    })?;
    profiler::record_marker(domain, name, scope);
    Ok(())
}

/// Bytes of arrays allocated on the host (or GPU `ordinal`) and not yet released.
#[pyfunction]
#[pyo3(signature = (gpu=None))]
pub fn profiler_bytes_in_use(gpu: Option<usize>) -> i64 {
    profiler::bytes_in_use(gpu.map(oxnet_core::Device::Gpu).unwrap_or(oxnet_core::Device::Cpu))
}
