//! The core's operator checker from Python (`oxnet.test_utils.check_op`).

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use crate::invoke::attr_value;
use oxnet_core::check::OpChecker;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Checks operator `name` on `inputs`: shape/dtype inference against the
/// outputs, `req` write and add, gradients against central differences,
/// and malformed calls. Returns the largest gradient error found; raises
/// `MXNetError` describing the first failed check.
#[pyfunction]
#[pyo3(signature = (name, inputs, attrs=None, no_grad=Vec::new(), eps=None, rtol=None, atol=None, check_grad=true))]
#[allow(clippy::too_many_arguments)]
pub fn check_op(
    py: Python<'_>,
    name: &str,
    inputs: Vec<PyRef<'_, PyNDArray>>,
    attrs: Option<&Bound<'_, PyDict>>,
    no_grad: Vec<usize>,
    eps: Option<f64>,
    rtol: Option<f64>,
    atol: Option<f64>,
    check_grad: bool,
) -> PyResult<f64> {
    let arrays: Vec<_> = inputs.iter().map(|a| a.inner.clone()).collect();
    let mut checker = OpChecker::new(name, &arrays).no_grad(&no_grad);
    if let Some(attrs) = attrs {
        for (k, v) in attrs.iter() {
            checker = checker.attr(&k.extract::<String>()?, attr_value(&v)?);
        }
    }
    if let Some(eps) = eps {
        checker = checker.eps(eps);
    }
    if rtol.is_some() || atol.is_some() {
        checker = checker.tol(rtol.unwrap_or(1e-4), atol.unwrap_or(1e-5));
    }
    if !check_grad {
        checker = checker.skip_grad();
    }
    let report = py.detach(|| checker.run()).py()?;
    Ok(report.max_grad_error)
}
