//! `oxnet.autograd`'s engine calls (the context managers live in Python).

use crate::array::{one_or_many, wrap, PyNDArray};
use crate::errors::{IntoPyResult, MXNetError};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{NDArray, Req};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// A gradient request from its name.
pub fn parse_req(name: &str) -> PyResult<Req> {
    match name {
        "write" => Ok(Req::Write),
        "add" => Ok(Req::Add),
        "null" => Ok(Req::Null),
        "inplace" => Ok(Req::Inplace),
        other => Err(MXNetError::new_err(format!(
            "unknown grad_req `{other}` (expected 'write', 'add' or 'null')"
        ))),
    }
}

/// Optional head gradients: None, one array, or a list with None entries.
fn head_grads(obj: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<Option<NDArray>>> {
    match obj {
        None => Ok(vec![None; n]),
        Some(o) if o.is_none() => Ok(vec![None; n]),
        Some(o) => {
            if let Ok(a) = o.cast::<PyNDArray>() {
                return Ok(vec![Some(a.get().inner.clone())]);
            }
            o.extract::<Vec<Option<PyRef<'_, PyNDArray>>>>()
                .map(|v| v.into_iter().map(|g| g.map(|g| g.inner.clone())).collect())
        }
    }
}

/// Sets the recording flag of this thread; returns the previous one.
#[pyfunction]
pub fn set_recording(is_recording: bool) -> bool {
    autograd::set_recording(is_recording)
}

/// Sets the train-mode flag of this thread; returns the previous one.
#[pyfunction]
pub fn set_training(train_mode: bool) -> bool {
    autograd::set_training(train_mode)
}

/// Whether operator calls are being recorded.
#[pyfunction]
pub fn is_recording() -> bool {
    autograd::is_recording()
}

/// Whether train mode is on.
#[pyfunction]
pub fn is_training() -> bool {
    autograd::is_training()
}

/// Back-propagates from `heads` into the variables' gradient buffers.
#[pyfunction]
#[pyo3(signature = (heads, head_grads=None, retain_graph=false, train_mode=true))]
pub fn backward(
    py: Python<'_>,
    heads: &Bound<'_, PyAny>,
    head_grads: Option<&Bound<'_, PyAny>>,
    retain_graph: bool,
    train_mode: bool,
) -> PyResult<()> {
    let heads = one_or_many(heads)?;
    let grads = self::head_grads(head_grads, heads.len())?;
    let opts = BackwardOptions { retain_graph, create_graph: false, train_mode };
    let _api = crate::profiler::api_span("AutogradBackward");
    py.detach(|| {
        let h: Vec<&NDArray> = heads.iter().collect();
        let g: Vec<Option<&NDArray>> = grads.iter().map(Option::as_ref).collect();
        autograd::backward(&h, &g, opts)
    })
    .py()
}

/// The gradients of `heads` with respect to `variables`, without touching
/// gradient buffers; `create_graph` records them for higher orders.
#[pyfunction]
#[pyo3(signature = (heads, variables, head_grads=None, retain_graph=None, create_graph=false, train_mode=true))]
pub fn grad<'py>(
    py: Python<'py>,
    heads: &Bound<'py, PyAny>,
    variables: &Bound<'py, PyAny>,
    head_grads: Option<&Bound<'py, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    train_mode: bool,
) -> PyResult<Bound<'py, PyList>> {
    let heads = one_or_many(heads)?;
    let vars = one_or_many(variables)?;
    let grads = self::head_grads(head_grads, heads.len())?;
    let opts =
        BackwardOptions { retain_graph: retain_graph.unwrap_or(create_graph), create_graph, train_mode };
    let result = py
        .detach(|| {
            let h: Vec<&NDArray> = heads.iter().collect();
            let v: Vec<&NDArray> = vars.iter().collect();
            let g: Vec<Option<&NDArray>> = grads.iter().map(Option::as_ref).collect();
            autograd::grad(&h, &v, &g, opts)
        })
        .py()?;
    let items = result.into_iter().map(|a| wrap(py, a)).collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Marks arrays as variables with the given gradient buffers and requests.
#[pyfunction]
#[pyo3(signature = (variables, gradients, grad_reqs=None))]
pub fn mark_variables(
    variables: &Bound<'_, PyAny>,
    gradients: &Bound<'_, PyAny>,
    grad_reqs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let vars = one_or_many(variables)?;
    let grads = one_or_many(gradients)?;
    let reqs: Vec<Req> = match grad_reqs {
        None => vec![Req::Write; vars.len()],
        Some(r) => match r.extract::<String>() {
            Ok(one) => vec![parse_req(&one)?; vars.len()],
            Err(_) => r.extract::<Vec<String>>()?.iter().map(|s| parse_req(s)).collect::<PyResult<_>>()?,
        },
    };
    let v: Vec<&NDArray> = vars.iter().collect();
    let g: Vec<&NDArray> = grads.iter().collect();
    autograd::mark_variables(&v, &g, &reqs).py()
}

/// The Python name of a request ('null', 'write', 'inplace', 'add').
pub fn req_name(req: Req) -> &'static str {
    match req {
        Req::Null => "null",
        Req::Write => "write",
        Req::Inplace => "inplace",
        Req::Add => "add",
    }
}
