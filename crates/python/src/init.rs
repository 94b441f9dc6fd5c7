//! Initializers for `oxnet.initializer`: the Python classes describe an
//! initializer by its JSON spec and the filling runs here, in `oxnet-nn`.

use crate::array::PyNDArray;
use crate::errors::to_py;
use oxnet_core::{Error, NDArray};
use oxnet_nn::init::{self, Constant, InitDesc, Initializer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// Bad specs, arguments and shapes are `ValueError`s, as MXNet raises them;
/// anything else is the engine's usual error.
fn to_py_init(err: Error) -> PyErr {
    match err.root() {
        Error::Invalid(_) | Error::Shape(_) | Error::Attr { .. } => PyValueError::new_err(err.to_string()),
        _ => to_py(err),
    }
}

/// Runs one method of initializer `init` on `arr` for parameter `desc`.
fn run(init: &dyn Initializer, method: &str, desc: &InitDesc, arr: &NDArray) -> oxnet_core::Result<()> {
    match method {
        "weight" => init.init_weight(desc, arr),
        "bias" => init.init_bias(desc, arr),
        "gamma" => init.init_gamma(desc, arr),
        "beta" => init.init_beta(desc, arr),
        "zero" => init.init_zero(desc, arr),
        "one" => init.init_one(desc, arr),
        "quantized_weight" => init.init_quantized_weight(desc, arr),
        "quantized_bias" => init.init_quantized_bias(desc, arr),
        "bilinear" => init.init_bilinear(desc, arr),
        "loc_bias" => init.init_loc_bias(desc, arr),
        "default" => init.init_default(desc, arr),
        "call" => init.init(desc, arr),
        "legacy" => init.init_legacy(&desc.name, arr),
        other => Err(Error::Invalid(format!(
            "unknown initializer method `{other}` (weight, bias, gamma, beta, zero, one, quantized_weight, \
             quantized_bias, bilinear, loc_bias, default, call or legacy)"
        ))),
    }
}

/// `init_fill(spec, name, arr, method="weight", attrs=None)`: builds the
/// initializer `spec` (a name or `dumps()` JSON) and fills `arr` in place
/// for parameter `name` with its `method` (`"call"` applies MXNet's dispatch
/// by name and `attrs["__init__"]`).
#[pyfunction]
#[pyo3(signature = (spec, name, arr, method="weight", attrs=None))]
pub fn init_fill(
    py: Python<'_>,
    spec: &str,
    name: &str,
    arr: PyRef<'_, PyNDArray>,
    method: &str,
    attrs: Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    let target = arr.inner.clone();
    let desc = InitDesc::with_attrs(name, attrs.unwrap_or_default());
    py.detach(|| {
        let init = init::from_json(spec)?;
        run(init.as_ref(), method, &desc, &target)
    })
    .map_err(to_py_init)
}

/// `init_constant(name, arr, value)`: fills `arr` from the array `value`,
/// broadcast as MXNet's `Constant` does.
#[pyfunction]
pub fn init_constant(
    py: Python<'_>,
    name: &str,
    arr: PyRef<'_, PyNDArray>,
    value: PyRef<'_, PyNDArray>,
) -> PyResult<()> {
    let (target, value) = (arr.inner.clone(), value.inner.clone());
    let desc = InitDesc::new(name);
    py.detach(|| Constant::from_array(value).init_weight(&desc, &target)).map_err(to_py_init)
}

/// `init_canonical(spec)`: the spec as the engine serialises it (validates
/// the name and every argument).
#[pyfunction]
pub fn init_canonical(spec: &str) -> PyResult<String> {
    init::from_json(spec).and_then(|i| i.to_json()).map_err(to_py_init)
}

/// `init_names()`: the initializer names the engine knows, sorted.
#[pyfunction]
pub fn init_names() -> Vec<String> {
    init::registered_names()
}
