//! Data types between Python (strings, numpy types and dtypes) and the engine.

use crate::errors::MXNetError;
use oxnet_core::DType;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Reads a dtype given as a name (`'float32'`), a numpy scalar type
/// (`np.float32`), a numpy dtype, or a Python type (`float` means float64 as
/// in numpy).
pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(name) = obj.cast::<PyString>() {
        let name = name.to_str()?;
        if let Ok(dt) = DType::from_name(name) {
            return Ok(dt);
        }
    }
    let py = obj.py();
    let name: String = py.import("numpy")?.getattr("dtype")?.call1((obj,))?.getattr("name")?.extract()?;
    DType::from_name(&name).map_err(|_| MXNetError::new_err(format!("oxnet has no dtype `{name}`")))
}

/// Like [`from_py`], with `None` meaning "not given".
pub fn from_py_opt(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(from_py(o)?)),
        _ => Ok(None),
    }
}

/// The numpy scalar type of `dt` (`numpy.float32`), as the reference's
/// `NDArray.dtype` returns it. bfloat16, which numpy lacks, is its name.
pub fn to_numpy_type<'py>(py: Python<'py>, dt: DType) -> PyResult<Bound<'py, PyAny>> {
    match dt {
        DType::BF16 => Ok(PyString::new(py, "bfloat16").into_any()),
        DType::Bool => py.import("numpy")?.getattr("bool_"),
        other => py.import("numpy")?.getattr(other.name()),
    }
}

/// The `__array_interface__` type string of `dt`, if numpy has the type.
pub fn typestr(dt: DType) -> Option<&'static str> {
    Some(match dt {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::Bool => "|b1",
        DType::BF16 => return None,
    })
}

/// The error for a dtype numpy cannot hold.
pub fn no_numpy_type(dt: DType) -> PyErr {
    MXNetError::new_err(format!("numpy has no {} type: convert with astype('float32') first", dt.name()))
}
