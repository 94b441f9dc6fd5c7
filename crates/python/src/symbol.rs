//! Symbols and executors for `oxnet.symbol` (`mx.sym`): thin handles over
//! `oxnet-graph`. The Python class `oxnet.symbol.Symbol` wraps a
//! [`SymbolHandle`] and adds MXNet's Python conveniences (arithmetic,
//! keyword calls, name and attribute scopes).

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use oxnet_core::{DType, NDArray, Req};
use oxnet_graph::infer::{infer_dtypes, infer_shapes, is_complete, PartialShape};
use oxnet_graph::{json, simple_bind, Executor, GradReqs, Symbol};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A symbol: one or more outputs of a graph.
#[pyclass(frozen, from_py_object, name = "SymbolHandle", module = "oxnet._oxnet")]
#[derive(Clone)]
pub struct SymbolHandle {
    pub(crate) inner: Symbol,
}

fn wrap(inner: Symbol) -> SymbolHandle {
    SymbolHandle { inner }
}

/// Shapes of `ids` variable nodes (or entries) as Python values: a tuple,
/// or `None` when unknown (complete only, unless `partial`).
fn shape_list(shapes: &[PartialShape], entries: &[usize], partial: bool) -> Vec<Option<Vec<usize>>> {
    entries
        .iter()
        .map(|&e| if partial || is_complete(&shapes[e]) { shapes[e].clone() } else { None })
        .collect()
}

#[pymethods]
impl SymbolHandle {
    fn list_arguments(&self) -> PyResult<Vec<String>> {
        self.inner.list_arguments().py()
    }

    fn list_outputs(&self) -> PyResult<Vec<String>> {
        self.inner.list_outputs().py()
    }

    fn list_auxiliary_states(&self) -> PyResult<Vec<String>> {
        self.inner.list_auxiliary_states().py()
    }

    fn list_inputs(&self) -> PyResult<Vec<String>> {
        self.inner.list_inputs().py()
    }

    fn name(&self) -> Option<String> {
        self.inner.name()
    }

    fn attr(&self, key: &str) -> Option<String> {
        self.inner.attr(key)
    }

    fn list_attr(&self) -> BTreeMap<String, String> {
        self.inner.list_attr()
    }

    fn attr_dict(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.inner.attr_dict()
    }

    fn set_attr(&self, key: &str, value: &str) {
        self.inner.set_attr(key, value)
    }

    fn num_outputs(&self) -> usize {
        self.inner.num_outputs()
    }

    fn get(&self, i: usize) -> PyResult<SymbolHandle> {
        self.inner.get(i).map(wrap).py()
    }

    fn get_by_name(&self, name: &str) -> PyResult<SymbolHandle> {
        self.inner.get_by_name(name).map(wrap).py()
    }

    fn internals(&self) -> PyResult<SymbolHandle> {
        self.inner.internals().map(wrap).py()
    }

    fn children(&self) -> Option<SymbolHandle> {
        self.inner.children().map(wrap)
    }

    #[pyo3(signature = (np_shape=false))]
    fn tojson(&self, np_shape: bool) -> PyResult<String> {
        json::to_json_with(&self.inner, np_shape).py()
    }

    fn deep_copy(&self) -> SymbolHandle {
        wrap(self.inner.deep_copy())
    }

    /// Substitutes variables: by position (argument order) and by name.
    fn compose(
        &self,
        positional: Vec<SymbolHandle>,
        named: Vec<(String, SymbolHandle)>,
    ) -> PyResult<SymbolHandle> {
        let positional: Vec<Symbol> = positional.into_iter().map(|s| s.inner).collect();
        let named: Vec<(String, Symbol)> = named.into_iter().map(|(k, s)| (k, s.inner)).collect();
        self.inner.compose(&positional, &named).map(wrap).py()
    }

    /// `(arg_shapes, out_shapes, aux_shapes)` given shapes by variable name;
    /// unknown entries are `None` (partial shapes too, with 0 for unknown
    /// dimensions, when `partial`).
    #[allow(clippy::type_complexity)]
    fn infer_shape(
        &self,
        py: Python<'_>,
        shapes: HashMap<String, Vec<usize>>,
        partial: bool,
    ) -> PyResult<(Vec<Option<Vec<usize>>>, Vec<Option<Vec<usize>>>, Vec<Option<Vec<usize>>>)> {
        let sym = &self.inner;
        py.detach(|| {
            let g = sym.indexed()?;
            let s = infer_shapes(&g, &shapes)?;
            let args: Vec<usize> = g.arguments().iter().map(|&n| g.entry(n, 0)).collect();
            let aux: Vec<usize> = g.aux_states().iter().map(|&n| g.entry(n, 0)).collect();
            let outs: Vec<usize> = g.heads.iter().map(|&(n, k)| g.entry(n, k)).collect();
            Ok((
                shape_list(&s, &args, partial),
                shape_list(&s, &outs, partial),
                shape_list(&s, &aux, partial),
            ))
        })
        .py()
    }

    /// `(arg_types, out_types, aux_types)` as dtype names (`None` unknown).
    #[allow(clippy::type_complexity)]
    fn infer_type(
        &self,
        types: HashMap<String, String>,
    ) -> PyResult<(Vec<Option<String>>, Vec<Option<String>>, Vec<Option<String>>)> {
        let given = types
            .into_iter()
            .map(|(k, v)| Ok((k, DType::from_name(&v)?)))
            .collect::<oxnet_core::Result<HashMap<String, DType>>>()
            .py()?;
        let g = self.inner.indexed().py()?;
        let t = infer_dtypes(&g, &given).py()?;
        let names = |ids: Vec<usize>| ids.into_iter().map(|e| t[e].map(|d| d.name().to_string())).collect();
        Ok((
            names(g.arguments().iter().map(|&n| g.entry(n, 0)).collect()),
            names(g.heads.iter().map(|&(n, k)| g.entry(n, k)).collect()),
            names(g.aux_states().iter().map(|&n| g.entry(n, 0)).collect()),
        ))
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}

/// A variable with user attributes (`__shape__`, `__dtype__`, ... already formatted).
#[pyfunction]
pub fn sym_var(name: &str, attrs: BTreeMap<String, String>) -> SymbolHandle {
    let options = oxnet_graph::VarOptions { attrs, ..Default::default() };
    wrap(Symbol::variable(name, options))
}

/// Groups symbols.
#[pyfunction]
pub fn sym_group(symbols: Vec<SymbolHandle>) -> SymbolHandle {
    let symbols: Vec<Symbol> = symbols.into_iter().map(|s| s.inner).collect();
    wrap(Symbol::group(&symbols))
}

/// The symbol autograd recorded for `heads` (`mx.autograd.get_symbol`).
#[pyfunction]
pub fn recorded_symbol(heads: Vec<PyRef<'_, PyNDArray>>) -> PyResult<SymbolHandle> {
    let arrays: Vec<&NDArray> = heads.iter().map(|h| &h.inner).collect();
    Ok(wrap(oxnet_graph::recorded_symbol(&arrays).py()?))
}

/// Calls a registry operator on symbols; `params` are string attributes.
#[pyfunction]
#[pyo3(signature = (op_name, positional, named, params, name, attrs))]
pub fn sym_compose_op(
    op_name: &str,
    positional: Vec<SymbolHandle>,
    named: Vec<(String, SymbolHandle)>,
    params: Vec<(String, String)>,
    name: Option<String>,
    attrs: BTreeMap<String, String>,
) -> PyResult<SymbolHandle> {
    let positional: Vec<Symbol> = positional.into_iter().map(|s| s.inner).collect();
    let named: Vec<(String, Symbol)> = named.into_iter().map(|(k, s)| (k, s.inner)).collect();
    Symbol::compose_op(op_name, &positional, &named, params, name.as_deref(), attrs).map(wrap).py()
}

/// Cuts the nodes created in attribute scope `scope` (`__subgraph_name__`)
/// out of `sym`: the body, and for each of its inputs the value feeding it
/// (see `oxnet_graph::cut`).
#[pyfunction]
pub fn sym_cut_scope(sym: &SymbolHandle, scope: &str) -> PyResult<(SymbolHandle, Vec<SymbolHandle>)> {
    let cut = oxnet_graph::cut::cut_scope(&sym.inner, scope).py()?;
    Ok((wrap(cut.body), cut.feeds.into_iter().map(wrap).collect()))
}

/// Reads a symbol from NNVM JSON text.
#[pyfunction]
pub fn sym_from_json(text: &str) -> PyResult<SymbolHandle> {
    json::from_json(text).map(wrap).py()
}

/// A bound symbol.
#[pyclass(frozen, name = "ExecutorHandle", module = "oxnet._oxnet")]
pub struct ExecutorHandle {
    inner: Mutex<Executor>,
}

impl ExecutorHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Executor> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn arrays(v: &[NDArray]) -> Vec<PyNDArray> {
    v.iter().cloned().map(PyNDArray::from).collect()
}

#[pymethods]
impl ExecutorHandle {
    fn forward(&self, py: Python<'_>, is_train: bool) -> PyResult<Vec<PyNDArray>> {
        let _api = crate::profiler::api_span("ExecutorForward");
        py.detach(|| self.lock().forward(is_train).map(|o| o.to_vec())).py().map(|o| arrays(&o))
    }

    fn backward(&self, py: Python<'_>, out_grads: Vec<Option<PyRef<'_, PyNDArray>>>) -> PyResult<()> {
        let grads: Vec<Option<NDArray>> =
            out_grads.iter().map(|g| g.as_ref().map(|g| g.inner.clone())).collect();
        let _api = crate::profiler::api_span("ExecutorBackward");
        py.detach(|| self.lock().backward(&grads)).py()
    }

    fn outputs(&self) -> Vec<PyNDArray> {
        arrays(self.lock().outputs())
    }

    /// The symbol as it runs, after the graph passes.
    fn optimized_symbol(&self) -> SymbolHandle {
        wrap(self.lock().optimized_symbol().clone())
    }

    /// `(planned bytes, one-buffer-per-entry bytes, blocks)` of the memory
    /// plan for the operator outputs (forward and backward).
    fn memory_plan(&self) -> (usize, usize, usize) {
        let exe = self.lock();
        let plan = exe.memory_plan();
        (plan.planned_bytes(), plan.naive_bytes, plan.block_bytes.len())
    }

    fn arg_names(&self) -> Vec<String> {
        self.lock().arg_names().to_vec()
    }

    fn aux_names(&self) -> Vec<String> {
        self.lock().aux_names().to_vec()
    }

    fn output_names(&self) -> PyResult<Vec<String>> {
        self.lock().symbol().list_outputs().py()
    }

    fn arg_arrays(&self) -> Vec<PyNDArray> {
        arrays(self.lock().arg_arrays())
    }

    fn grad_arrays(&self) -> Vec<Option<PyNDArray>> {
        self.lock().grad_arrays().iter().map(|g| g.clone().map(PyNDArray::from)).collect()
    }

    fn grad_reqs(&self) -> Vec<String> {
        self.lock().grad_reqs().iter().map(|r| r.as_str().to_string()).collect()
    }

    fn aux_arrays(&self) -> Vec<PyNDArray> {
        arrays(self.lock().aux_arrays())
    }

    fn symbol(&self) -> SymbolHandle {
        wrap(self.lock().symbol().clone())
    }

    fn copy_params_from(
        &self,
        arg_params: HashMap<String, PyRef<'_, PyNDArray>>,
        aux_params: HashMap<String, PyRef<'_, PyNDArray>>,
        allow_extra: bool,
    ) -> PyResult<()> {
        let unwrap = |m: HashMap<String, PyRef<'_, PyNDArray>>| -> HashMap<String, NDArray> {
            m.into_iter().map(|(k, v)| (k, v.inner.clone())).collect()
        };
        self.lock().copy_params_from(&unwrap(arg_params), &unwrap(aux_params), allow_extra).py()
    }

    fn reshape(
        &self,
        shapes: HashMap<String, Vec<usize>>,
        partial_shaping: bool,
        allow_up_sizing: bool,
    ) -> PyResult<ExecutorHandle> {
        let exe = self.lock().reshape(&shapes, partial_shaping, allow_up_sizing).py()?;
        Ok(ExecutorHandle { inner: Mutex::new(exe) })
    }

    /// Calls `callback(name, array)` for every operator output during
    /// forward (`None` removes it).
    fn set_monitor(&self, callback: Option<Py<PyAny>>) {
        let monitor: Option<oxnet_graph::MonitorFn> = callback.map(|cb| {
            Box::new(move |name: &str, array: &NDArray| {
                Python::attach(|py| {
                    let arr = PyNDArray::from(array.clone());
                    if let Err(e) = cb.call1(py, (PyString::new(py, name), arr)) {
                        e.print(py);
                    }
                })
            }) as oxnet_graph::MonitorFn
        });
        self.lock().set_monitor_callback(monitor);
    }
}

/// Binds with given arrays (lists in argument / aux order).
#[pyfunction]
pub fn executor_bind(
    sym: &SymbolHandle,
    ctx: &Bound<'_, PyAny>,
    args: Vec<PyRef<'_, PyNDArray>>,
    grads: Vec<Option<PyRef<'_, PyNDArray>>>,
    reqs: Vec<String>,
    aux: Vec<PyRef<'_, PyNDArray>>,
) -> PyResult<ExecutorHandle> {
    let device = crate::context::from_py(ctx)?;
    let args: Vec<NDArray> = args.iter().map(|a| a.inner.clone()).collect();
    let grads: Vec<Option<NDArray>> = grads.iter().map(|g| g.as_ref().map(|g| g.inner.clone())).collect();
    let reqs = reqs.iter().map(|r| Req::parse(r)).collect::<oxnet_core::Result<Vec<_>>>().py()?;
    let aux: Vec<NDArray> = aux.iter().map(|a| a.inner.clone()).collect();
    let exe = Executor::new(&sym.inner, device, args, grads, reqs, aux).py()?;
    Ok(ExecutorHandle { inner: Mutex::new(exe) })
}

/// Binds with new arrays whose shapes are inferred (`simple_bind`).
/// `grad_req` is a string, or a dict by argument name.
#[pyfunction]
pub fn executor_simple_bind(
    sym: &SymbolHandle,
    ctx: &Bound<'_, PyAny>,
    grad_req: &Bound<'_, PyAny>,
    type_dict: HashMap<String, String>,
    shapes: HashMap<String, Vec<usize>>,
) -> PyResult<ExecutorHandle> {
    let device = crate::context::from_py(ctx)?;
    let reqs = if let Ok(s) = grad_req.extract::<String>() {
        GradReqs::All(Req::parse(&s).py()?)
    } else if let Ok(d) = grad_req.cast::<PyDict>() {
        let mut m = HashMap::new();
        for (k, v) in d.iter() {
            m.insert(k.extract::<String>()?, Req::parse(&v.extract::<String>()?).py()?);
        }
        GradReqs::ByName(m)
    } else if let Ok(l) = grad_req.cast::<PyList>() {
        let names = sym.inner.list_arguments().py()?;
        let mut m = HashMap::new();
        for (k, v) in names.into_iter().zip(l.iter()) {
            m.insert(k, Req::parse(&v.extract::<String>()?).py()?);
        }
        GradReqs::ByName(m)
    } else {
        return Err(crate::errors::MXNetError::new_err("grad_req must be a string, a list or a dict"));
    };
    let types = type_dict
        .into_iter()
        .map(|(k, v)| Ok((k, DType::from_name(&v)?)))
        .collect::<oxnet_core::Result<HashMap<_, _>>>()
        .py()?;
    let exe = simple_bind(&sym.inner, device, &reqs, &types, &shapes).py()?;
    Ok(ExecutorHandle { inner: Mutex::new(exe) })
}

/// A cached graph: `handle(*arrays)` runs it (`mx.nd.CachedOp`).
#[pyclass(frozen, name = "CachedOpHandle", module = "oxnet._oxnet")]
pub struct CachedOpHandle {
    inner: oxnet_graph::CachedGraph,
}

#[pymethods]
impl CachedOpHandle {
    #[new]
    fn new(sym: &SymbolHandle) -> PyResult<Self> {
        Ok(CachedOpHandle { inner: oxnet_graph::CachedGraph::new(&sym.inner).py()? })
    }

    fn input_names(&self) -> Vec<String> {
        self.inner.input_names().to_vec()
    }

    fn call(&self, py: Python<'_>, inputs: Vec<PyRef<'_, PyNDArray>>) -> PyResult<Vec<PyNDArray>> {
        let arrays: Vec<NDArray> = inputs.iter().map(|a| a.inner.clone()).collect();
        let outs = py
            .detach(|| {
                let refs: Vec<&NDArray> = arrays.iter().collect();
                self.inner.call(&refs)
            })
            .py()?;
        Ok(arrays_owned(outs))
    }
}

fn arrays_owned(v: Vec<NDArray>) -> Vec<PyNDArray> {
    v.into_iter().map(PyNDArray::from).collect()
}

/// Traces `func` called with traced arrays of the given `(name, shape,
/// dtype)`; its NDArray results become the symbol's outputs.
#[pyfunction]
pub fn trace_function(
    py: Python<'_>,
    func: Py<PyAny>,
    inputs: Vec<(String, Vec<usize>, String)>,
) -> PyResult<SymbolHandle> {
    let specs = inputs
        .iter()
        .map(|(n, s, d)| Ok((n.as_str(), s.as_slice(), DType::from_name(d)?)))
        .collect::<oxnet_core::Result<Vec<_>>>()
        .py()?;
    let mut py_error: Option<PyErr> = None;
    let traced = oxnet_graph::trace::trace(&specs, |xs| {
        let args: Vec<PyNDArray> = xs.iter().cloned().map(PyNDArray::from).collect();
        let call = || -> PyResult<Vec<NDArray>> {
            let args = pyo3::types::PyTuple::new(py, args)?;
            let result = func.call1(py, args)?.into_bound(py);
            crate::array::one_or_many(&result)
        };
        call().map_err(|e| {
            let msg = e.to_string();
            py_error = Some(e);
            oxnet_core::Error::Invalid(msg)
        })
    });
    match (traced, py_error) {
        (_, Some(e)) => Err(e),
        (Ok(t), None) => {
            if !t.constants.is_empty() {
                return Err(crate::errors::MXNetError::new_err(format!(
                    "trace: the function used {} array(s) that are not inputs; pass them as inputs",
                    t.constants.len()
                )));
            }
            Ok(wrap(t.symbol))
        }
        (Err(e), None) => Err(e).py(),
    }
}

/// Runs backend `backend` on `sym`: the new symbol and the parameters a pass
/// created, as `(name, is_aux, array)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn sym_optimize_for(
    py: Python<'_>,
    sym: &SymbolHandle,
    backend: &str,
    options: Vec<(String, String)>,
) -> PyResult<(SymbolHandle, Vec<(String, bool, PyNDArray)>)> {
    let out = py
        .detach(|| {
            let opts: Vec<(&str, &str)> = options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            oxnet_graph::partition::optimize_for(&sym.inner, backend, &opts)
        })
        .py()?;
    let params = out.new_params.into_iter().map(|p| (p.name, p.is_aux, PyNDArray::from(p.array))).collect();
    Ok((wrap(out.symbol), params))
}

/// Names of the registered `optimize_for` backends.
#[pyfunction]
pub fn backend_names() -> Vec<String> {
    oxnet_graph::partition::backend_names()
}
