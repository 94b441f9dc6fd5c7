//! The `default` / `default_v2` subgraph backends' operator-name stores
//! and partitioning by operator names, for the Python shim of MXNet's
//! `MXSetSubgraphPropertyOpNames*`, `MXRemoveSubgraphPropertyOpNames*` and
//! `MXBuildSubgraphByOpNames`, and for executors that partition when
//! `MXNET_SUBGRAPH_BACKEND` names a backend.

use crate::errors::IntoPyResult;
use crate::symbol::SymbolHandle;
use oxnet_graph::default_subgraph as ds;
use pyo3::prelude::*;
use std::collections::HashSet;

/// Sets the operator names a backend selects: the executors' store
/// (`v2=False`, any backend name) or the backend's own (`v2=True`).
#[pyfunction]
pub fn subgraph_set_op_names(backend: &str, names: Vec<String>, v2: bool) -> PyResult<()> {
    if v2 {
        ds::set_property_op_names(backend, &names).py()
    } else {
        ds::set_executor_op_names(backend, &names);
        Ok(())
    }
}

/// Forgets the operator names set with `subgraph_set_op_names`.
#[pyfunction]
pub fn subgraph_remove_op_names(backend: &str, v2: bool) -> PyResult<()> {
    if v2 {
        ds::remove_property_op_names(backend).py()
    } else {
        ds::remove_executor_op_names(backend);
        Ok(())
    }
}

/// The operator names executors use for `backend` (sorted; empty when none).
#[pyfunction]
pub fn subgraph_executor_op_names(backend: &str) -> Vec<String> {
    let mut names: Vec<String> = ds::executor_op_names(backend).into_iter().collect();
    names.sort();
    names
}

/// `sym` partitioned by the operators named `names` (MXNet's
/// `MXBuildSubgraphByOpNames`); `backend` must be `default` or `default_v2`.
#[pyfunction]
pub fn subgraph_build_by_op_names(
    py: Python<'_>,
    sym: &SymbolHandle,
    backend: &str,
    names: Vec<String>,
    dedup: bool,
) -> PyResult<SymbolHandle> {
    if !ds::DEFAULT_BACKENDS.contains(&backend) {
        return Err(crate::errors::MXNetError::new_err(format!(
            "MXBuildSubgraphByOpNames: no subgraph backend `{backend}` selects operators by name (those that do: {})",
            ds::DEFAULT_BACKENDS.join(", ")
        )));
    }
    let set: HashSet<String> = names.into_iter().collect();
    let out = py.detach(|| ds::build_subgraph(&sym.inner, &set, dedup)).py()?;
    Ok(SymbolHandle { inner: out })
}

/// Registers this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(subgraph_set_op_names, m)?)?;
    m.add_function(wrap_pyfunction!(subgraph_remove_op_names, m)?)?;
    m.add_function(wrap_pyfunction!(subgraph_executor_op_names, m)?)?;
    m.add_function(wrap_pyfunction!(subgraph_build_by_op_names, m)?)?;
    Ok(())
}
