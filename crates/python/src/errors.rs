//! Engine errors as Python exceptions.
//!
//! An error that started as a Python exception (raised inside a custom
//! operator's hook) comes back as an exception of the same type, its message
//! prefixed with the operator that raised it and its `__cause__` the original
//! exception (whose traceback points into the user's code). An error whose
//! message starts with `IndexError: ` (as MXNet's) becomes `IndexError`;
//! every other engine error becomes `oxnet.base.MXNetError`.

use oxnet_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

pyo3::create_exception!(
    oxnet.base,
    MXNetError,
    PyRuntimeError,
    "An error raised by the oxnet engine (the reference's name, kept for compatibility)."
);

/// Converts an engine error into the exception Python code sees.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| match original_exception(&err) {
        Some(original) => rethrow_with_context(py, original, &err),
        // as MXNet's error-type prefixes: an operator's "IndexError: ..." is an IndexError
        None if matches!(err.root(), Error::Invalid(m) if m.starts_with("IndexError: ")) => {
            pyo3::exceptions::PyIndexError::new_err(err.to_string())
        }
        None => MXNetError::new_err(err.to_string()),
    })
}

/// The Python exception inside `err`, if a Python hook raised it.
fn original_exception(err: &Error) -> Option<&PyErr> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(py_err) = e.downcast_ref::<PyErr>() {
            return Some(py_err);
        }
        source = e.source();
    }
    None
}

/// The operators an error passed through, outermost first: `Custom(op_type=x)`.
fn op_context(err: &Error) -> Vec<String> {
    let mut ops = Vec::new();
    let mut e = err;
    loop {
        match e {
            Error::Op { op, source } => {
                ops.push(op.clone());
                e = source;
            }
            Error::Node { node, op, source } => {
                ops.push(format!("{op} (graph node `{node}`)"));
                e = source;
            }
            _ => return ops,
        }
    }
}

/// An exception of the original's type whose message names the operator,
/// caused by the original. Falls back to the original exception when its type
/// cannot be built from one message.
fn rethrow_with_context(py: Python<'_>, original: &PyErr, err: &Error) -> PyErr {
    let original = original.clone_ref(py);
    let ops = op_context(err);
    if ops.is_empty() {
        return original;
    }
    let value = original.value(py);
    let text = value.str().map(|s| s.to_string()).unwrap_or_default();
    let message = if text.is_empty() {
        format!("in operator {}", ops.join(" <- "))
    } else {
        format!("in operator {}: {text}", ops.join(" <- "))
    };
    let ty = original.get_type(py);
    match PyTuple::new(py, [message]).and_then(|args| ty.call1(args)) {
        Ok(new_value) => {
            let new_err = PyErr::from_value(new_value);
            new_err.set_cause(py, Some(original));
            new_err
        }
        Err(_) => original,
    }
}

/// `Result<T, oxnet_core::Error>` into `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Converts the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for oxnet_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
