//! Python custom operators in the engine's one registry.
//!
//! `oxnet.operator.register(name)` hands a `CustomOpProp` subclass to
//! [`register_prop`]; the engine's `Custom` operator then builds a property
//! per set of keyword arguments ([`PyProp`]) and an operator per input
//! signature ([`PyOp`]). Every hook runs on the calling thread, taking the
//! GIL only for the Python call; a Python exception travels inside
//! `Error::Custom` and comes back to Python with its type (see `errors`).
//!
//! `oxnet.customop` functions become [`FunctionOp`]s through
//! [`register_function`].

use crate::array::{one_or_many, wrap, PyNDArray};
use crate::dtype;
use oxnet_core::custom::{self, CustomOp, CustomOpProp, Dependency, FunctionOp};
use oxnet_core::{DType, Device, Error, NDArray, Req, Result, Shape};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::Arc;

/// A Python exception as an engine error (keeping the exception).
fn py_err(e: PyErr) -> Error {
    Error::custom(e)
}

/// The Python names of requests, interned once per call site.
fn req_list<'py>(py: Python<'py>, req: &[Req]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, req.iter().map(|r| crate::autograd::req_name(*r)))
}

fn array_list<'py>(py: Python<'py>, arrays: &[NDArray]) -> PyResult<Bound<'py, PyList>> {
    let items = arrays.iter().map(|a| wrap(py, a.clone())).collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// A `CustomOpProp` instance made from one set of keyword arguments.
struct PyProp {
    obj: Py<PyAny>,
    need_top_grad: bool,
    arguments: Vec<String>,
    outputs: Vec<String>,
    aux: Vec<String>,
    /// `declare_backward_dependency`'s answer, computed once (it depends only on counts).
    deps: Vec<Dependency>,
}

fn names(obj: &Bound<'_, PyAny>, method: &str) -> PyResult<Vec<String>> {
    obj.call_method0(method)?.extract().map_err(|e| {
        pyo3::exceptions::PyTypeError::new_err(format!("{method}() must return a list of strings: {e}"))
    })
}

impl PyProp {
    fn new(obj: Bound<'_, PyAny>) -> PyResult<PyProp> {
        let arguments = names(&obj, "list_arguments")?;
        let outputs = names(&obj, "list_outputs")?;
        let aux = names(&obj, "list_auxiliary_states")?;
        let need_top_grad = match obj.getattr("need_top_grad_") {
            Ok(v) => v.is_truthy()?,
            Err(_) => true,
        };
        // ids as the reference numbers them: out_grad, then in_data, then out_data
        let (n_out, n_in) = (outputs.len(), arguments.len());
        let out_grad: Vec<usize> = (0..n_out).collect();
        let in_data: Vec<usize> = (n_out..n_out + n_in).collect();
        let out_data: Vec<usize> = (n_out + n_in..2 * n_out + n_in).collect();
        let chosen: Vec<usize> =
            obj.call_method1("declare_backward_dependency", (out_grad, in_data, out_data))?.extract()?;
        let deps = chosen
            .into_iter()
            .map(|id| match id {
                i if i < n_out => Ok(Dependency::OutGrad(i)),
                i if i < n_out + n_in => Ok(Dependency::InData(i - n_out)),
                i if i < 2 * n_out + n_in => Ok(Dependency::OutData(i - n_out - n_in)),
                i => Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "declare_backward_dependency returned {i}, which is none of the ids it was given"
                ))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyProp { obj: obj.unbind(), need_top_grad, arguments, outputs, aux, deps })
    }
}

/// Reads one list of shapes (or dtypes) from an inference hook's answer.
fn nth<'py>(answer: &Bound<'py, PyAny>, i: usize, hook: &str) -> Result<Option<Bound<'py, PyAny>>> {
    let n = answer.len().map_err(py_err)?;
    if !(2..=3).contains(&n) {
        return Err(Error::Invalid(format!("{hook} must return 2 or 3 lists, returned {n}")));
    }
    if i >= n {
        return Ok(None);
    }
    answer.get_item(i).map(Some).map_err(py_err)
}

fn shapes_of(list: Option<Bound<'_, PyAny>>, hook: &str) -> Result<Vec<Shape>> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let shapes: Vec<Vec<usize>> = list.extract().map_err(|e| {
        Error::Shape(format!("{hook} must return lists of shapes (tuples of non-negative ints): {e}"))
    })?;
    Ok(shapes.into_iter().map(Shape::from_vec).collect())
}

fn dtypes_of(list: Option<Bound<'_, PyAny>>, hook: &str) -> Result<Vec<DType>> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for item in list.try_iter().map_err(py_err)? {
        let item = item.map_err(py_err)?;
        out.push(dtype::from_py(&item).map_err(|e| Error::DType(format!("{hook}: {e}")))?);
    }
    Ok(out)
}

impl CustomOpProp for PyProp {
    fn need_top_grad(&self) -> bool {
        self.need_top_grad
    }

    fn list_arguments(&self) -> Vec<String> {
        self.arguments.clone()
    }

    fn list_outputs(&self) -> Vec<String> {
        self.outputs.clone()
    }

    fn list_auxiliary_states(&self) -> Vec<String> {
        self.aux.clone()
    }

    fn infer_shape(&self, in_shapes: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        Python::attach(|py| {
            let given = PyList::new(py, in_shapes.iter().map(|s| s.to_vec())).map_err(py_err)?;
            let answer = self.obj.bind(py).call_method1("infer_shape", (given,)).map_err(py_err)?;
            Ok((
                shapes_of(nth(&answer, 0, "infer_shape")?, "infer_shape")?,
                shapes_of(nth(&answer, 1, "infer_shape")?, "infer_shape")?,
                shapes_of(nth(&answer, 2, "infer_shape")?, "infer_shape")?,
            ))
        })
    }

    fn infer_type(&self, in_types: &[DType]) -> Result<(Vec<DType>, Vec<DType>, Vec<DType>)> {
        Python::attach(|py| {
            let given = in_types.iter().map(|d| dtype::to_numpy_type(py, *d)).collect::<PyResult<Vec<_>>>();
            let given = PyList::new(py, given.map_err(py_err)?).map_err(py_err)?;
            let answer = self.obj.bind(py).call_method1("infer_type", (given,)).map_err(py_err)?;
            Ok((
                dtypes_of(nth(&answer, 0, "infer_type")?, "infer_type")?,
                dtypes_of(nth(&answer, 1, "infer_type")?, "infer_type")?,
                dtypes_of(nth(&answer, 2, "infer_type")?, "infer_type")?,
            ))
        })
    }

    fn declare_backward_dependency(
        &self,
        _out_grad: &[Dependency],
        _in_data: &[Dependency],
        _out_data: &[Dependency],
    ) -> Vec<Dependency> {
        self.deps.clone()
    }

    fn create_operator(
        &self,
        device: Device,
        in_shapes: &[Shape],
        in_dtypes: &[DType],
    ) -> Result<Arc<dyn CustomOp>> {
        Python::attach(|py| {
            let ctx = crate::context::to_py(py, device).map_err(py_err)?;
            let shapes = PyList::new(
                py,
                in_shapes
                    .iter()
                    .map(|s| PyTuple::new(py, s.iter()).map_err(py_err))
                    .collect::<Result<Vec<_>>>()?,
            )
            .map_err(py_err)?;
            let dtypes = in_dtypes.iter().map(|d| dtype::to_numpy_type(py, *d)).collect::<PyResult<Vec<_>>>();
            let dtypes = PyList::new(py, dtypes.map_err(py_err)?).map_err(py_err)?;
            let op =
                self.obj.bind(py).call_method1("create_operator", (ctx, shapes, dtypes)).map_err(py_err)?;
            if op.is_none() {
                return Err(Error::Invalid("create_operator returned None instead of a CustomOp".into()));
            }
            Ok(Arc::new(PyOp { obj: op.unbind() }) as Arc<dyn CustomOp>)
        })
    }
}

/// A `CustomOp` instance.
struct PyOp {
    obj: Py<PyAny>,
}

impl CustomOp for PyOp {
    fn forward(
        &self,
        is_train: bool,
        req: &[Req],
        in_data: &[NDArray],
        out_data: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()> {
        Python::attach(|py| {
            let args = (
                is_train,
                req_list(py, req)?,
                array_list(py, in_data)?,
                array_list(py, out_data)?,
                array_list(py, aux)?,
            );
            self.obj.bind(py).call_method1(pyo3::intern!(py, "forward"), args).map(|_| ())
        })
        .map_err(py_err)
    }

    fn backward(
        &self,
        req: &[Req],
        out_grad: &[NDArray],
        in_data: &[NDArray],
        out_data: &[NDArray],
        in_grad: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()> {
        Python::attach(|py| {
            let args = (
                req_list(py, req)?,
                array_list(py, out_grad)?,
                array_list(py, in_data)?,
                array_list(py, out_data)?,
                array_list(py, in_grad)?,
                array_list(py, aux)?,
            );
            self.obj.bind(py).call_method1(pyo3::intern!(py, "backward"), args).map(|_| ())
        })
        .map_err(py_err)
    }

    fn profiler_label(&self) -> &str {
        "pure_python"
    }
}

/// Registers a `CustomOpProp` subclass under `name` (`@mx.operator.register(name)`).
/// Keyword arguments of `nd.Custom` reach the class as strings.
#[pyfunction]
pub fn register_prop(name: &str, prop_class: Py<PyAny>) {
    let class = Arc::new(prop_class);
    custom::register(name, move |kwargs: &[(String, String)]| {
        Python::attach(|py| {
            let kw = PyDict::new(py);
            for (k, v) in kwargs {
                kw.set_item(k, v).map_err(py_err)?;
            }
            let obj = class.bind(py).call((), Some(&kw)).map_err(py_err)?;
            let prop = PyProp::new(obj).map_err(py_err)?;
            Ok(Arc::new(prop) as Arc<dyn CustomOpProp>)
        })
    });
}

/// Removes a registered custom operator; returns whether it existed.
#[pyfunction]
pub fn unregister_prop(name: &str) -> bool {
    custom::unregister(name)
}

/// Names of the registered custom operators.
#[pyfunction]
pub fn registered_props() -> Vec<String> {
    custom::registered_names()
}

/// Registers a function-style operator (`oxnet.customop`,
/// `autograd.Function`): `forward(inputs)` returns the output arrays (named
/// `outputs`, one `output` by default); `grads[i]`, when not None, is
/// `grad(outputs, inputs, out_grads)` returning argument i's gradient.
#[pyfunction]
#[pyo3(signature = (name, arguments, forward, grads, doc, outputs=None))]
pub fn register_function(
    name: &str,
    arguments: Vec<String>,
    forward: Py<PyAny>,
    grads: Vec<Option<Py<PyAny>>>,
    doc: &str,
    outputs: Option<Vec<String>>,
) {
    let args: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let forward = Arc::new(forward);
    let mut op = FunctionOp::new(name, &args, move |inputs| {
        Python::attach(|py| {
            let out = forward.bind(py).call1((array_list(py, inputs)?,))?;
            one_or_many(&out)
        })
        .map_err(py_err)
    })
    .doc(doc);
    if let Some(outputs) = &outputs {
        op = op.outputs(&outputs.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for (i, g) in grads.into_iter().enumerate() {
        let Some(g) = g else { continue };
        let g = Arc::new(g);
        op = op.def_grad(i, move |outputs, inputs, out_grads| {
            Python::attach(|py| {
                let out = g.bind(py).call1((
                    array_list(py, outputs)?,
                    array_list(py, inputs)?,
                    array_list(py, out_grads)?,
                ))?;
                Ok(out.cast::<PyNDArray>()?.get().inner.clone())
            })
            .map_err(py_err)
        });
    }
    // a new gradient re-defines the same function: replace it without the registry's warning
    oxnet_core::registry::unregister(name);
    op.register();
}

/// Removes a function-style operator from the registry (arrays recorded
/// through it keep what their gradients need).
#[pyfunction]
pub fn unregister_function(name: &str) {
    oxnet_core::registry::unregister(name);
}
