//! Engine errors as Python exceptions.
//!
//! An error that started as a Python exception (raised inside a custom
//! operator's hook) comes back as an exception of the same type (and of
//! `MXNetError`, which MXNet raised for it), its message
//! prefixed with the operator that raised it and its `__cause__` the original
//! exception (whose traceback points into the user's code). An error whose
//! message starts with `IndexError: ` (as MXNet's) becomes `IndexError`;
//! every other engine error becomes `oxnet.base.MXNetError`.

use oxnet_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

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
    let ty = operator_error_type(py, original.get_type(py));
    match PyTuple::new(py, [message]).and_then(|args| ty.call1(args)) {
        Ok(new_value) => {
            let new_err = PyErr::from_value(new_value);
            new_err.set_cause(py, Some(original));
            new_err
        }
        Err(_) => original,
    }
}

/// The class an exception raised inside an operator comes back as: its own
/// class and `MXNetError` both (a subclass of the two, made once per class
/// and named like the original), so that `except ValueError` and MXNet's
/// `except MXNetError` both catch it. The original class when it already is
/// an `MXNetError` or cannot be combined with one.
fn operator_error_type<'py>(py: Python<'py>, ty: Bound<'py, PyType>) -> Bound<'py, PyAny> {
    static COMBINED: pyo3::sync::PyOnceLock<Py<PyDict>> = pyo3::sync::PyOnceLock::new();
    let mxnet_error = py.get_type::<MXNetError>();
    if ty.is_subclass(&mxnet_error).unwrap_or(true) {
        return ty.into_any();
    }
    let cache = COMBINED.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    if let Ok(Some(known)) = cache.get_item(&ty) {
        return known;
    }
    let combined = (|| {
        let name = ty.getattr("__name__")?;
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", ty.getattr("__module__")?)?;
        namespace.set_item("__qualname__", ty.getattr("__qualname__")?)?;
        let bases = PyTuple::new(py, [ty.clone().into_any(), mxnet_error.into_any()])?;
        py.get_type::<PyType>().call1((name, bases, namespace))
    })()
    .unwrap_or_else(|_| ty.clone().into_any()); // an instance-layout conflict
    let _ = cache.set_item(&ty, &combined);
    combined
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
