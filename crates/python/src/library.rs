//! `oxnet.library.load`: operator libraries loaded at run time.

use crate::errors::IntoPyResult;
use pyo3::prelude::*;

/// Loads the library at `path` and registers its operators; returns their names.
#[pyfunction]
pub fn load_library(py: Python<'_>, path: &str, verbose: bool) -> PyResult<Vec<String>> {
    let library = py.detach(|| oxnet_library::load(path, verbose)).py()?;
    Ok(library.op_names().to_vec())
}
