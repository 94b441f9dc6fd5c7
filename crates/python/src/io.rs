//! Parameter files from Python: thin bindings to `oxnet_nn::io` under
//! `python/oxnet/ndarray/utils.py` (`mx.nd.save`, `mx.nd.load`,
//! `mx.nd.load_frombuffer`, and their safetensors forms). The Python side
//! turns dicts and lists into (names, arrays) and back.

use crate::array::{wrap, PyNDArray};
use crate::errors::IntoPyResult;
use oxnet_core::NDArray;
use oxnet_nn::io::{self, ParamList};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::path::PathBuf;

/// What the loaders hand back: the arrays, and their names for a named list.
type Loaded<'py> = (Bound<'py, PyList>, Option<Vec<String>>);

fn to_list(arrays: Vec<PyRef<'_, PyNDArray>>, names: Option<Vec<String>>) -> PyResult<ParamList> {
    let arrays: Vec<NDArray> = arrays.iter().map(|a| a.inner.clone()).collect();
    match names {
        None => Ok(ParamList::Unnamed(arrays)),
        Some(names) if names.len() == arrays.len() => {
            Ok(ParamList::Named(names.into_iter().zip(arrays).collect()))
        }
        Some(names) => {
            Err(PyValueError::new_err(format!("{} names for {} arrays", names.len(), arrays.len())))
        }
    }
}

fn from_list(py: Python<'_>, list: ParamList) -> PyResult<Loaded<'_>> {
    let (names, arrays) = match list {
        ParamList::Named(v) => {
            let (names, arrays): (Vec<String>, Vec<NDArray>) = v.into_iter().unzip();
            (Some(names), arrays)
        }
        ParamList::Unnamed(v) => (None, v),
    };
    let wrapped = arrays.into_iter().map(|a| wrap(py, a)).collect::<PyResult<Vec<_>>>()?;
    Ok((PyList::new(py, wrapped)?, names))
}

/// `params_save(fname, arrays, names, safetensors)`: writes `arrays` (with
/// `names`, or unnamed when `names` is None) to `fname` atomically, in
/// MXNet's format or as safetensors.
#[pyfunction]
#[pyo3(signature = (fname, arrays, names=None, safetensors=false))]
pub fn params_save(
    py: Python<'_>,
    fname: PathBuf,
    arrays: Vec<PyRef<'_, PyNDArray>>,
    names: Option<Vec<String>>,
    safetensors: bool,
) -> PyResult<()> {
    let list = to_list(arrays, names)?;
    py.detach(|| if safetensors { io::save_safetensors(&fname, &list) } else { io::save(&fname, &list) }).py()
}

/// `params_load(fname, safetensors_only=False) -> (arrays, names or None)`:
/// reads a parameter file in either format (or only safetensors).
#[pyfunction]
#[pyo3(signature = (fname, safetensors_only=false))]
pub fn params_load(py: Python<'_>, fname: PathBuf, safetensors_only: bool) -> PyResult<Loaded<'_>> {
    let list =
        py.detach(|| if safetensors_only { io::load_safetensors(&fname) } else { io::load(&fname) }).py()?;
    from_list(py, list)
}

/// `params_load_frombuffer(buf) -> (arrays, names or None)`: parses a
/// parameter file's bytes in either format.
#[pyfunction]
pub fn params_load_frombuffer<'py>(py: Python<'py>, buf: &[u8]) -> PyResult<Loaded<'py>> {
    let list = py.detach(|| io::from_bytes(buf)).py()?;
    from_list(py, list)
}

/// `params_to_bytes(arrays, names=None, safetensors=False) -> bytes`: a
/// parameter file's content, without writing it.
#[pyfunction]
#[pyo3(signature = (arrays, names=None, safetensors=false))]
pub fn params_to_bytes<'py>(
    py: Python<'py>,
    arrays: Vec<PyRef<'py, PyNDArray>>,
    names: Option<Vec<String>>,
    safetensors: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let list = to_list(arrays, names)?;
    let bytes =
        py.detach(|| if safetensors { io::safetensors_to_bytes(&list) } else { io::to_bytes(&list) }).py()?;
    Ok(PyBytes::new(py, &bytes))
}
