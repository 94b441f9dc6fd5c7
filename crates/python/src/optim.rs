//! Optimizers, updaters and learning-rate schedulers of `oxnet-nn` for the
//! Python package `oxnet.optimizer` / `oxnet.lr_scheduler`.
//!
//! - [`OptimizerCore`] holds a Rust optimizer (a built-in one by registry
//!   name, or, for optimizers written in Python, one that only keeps the
//!   shared hyper-parameters and counts): the Python `Optimizer` classes
//!   keep every hyper-parameter, multiplier and count here.
//! - [`UpdaterCore`] is an [`Updater`] of that optimizer: a whole list of
//!   parameters is updated in one call.
//! - [`SchedulerCore`] wraps a Rust scheduler; a scheduler written in
//!   Python is called back instead.
//!
//! Entry points take the optimizer's lock without waiting: a Python
//! callback (a scheduler) re-entering the optimizer during its own update
//! gets an error instead of a deadlock. The GIL stays held, so Python
//! threads never contend for the lock.

use crate::array::{wrap, PyNDArray};
use crate::errors::{IntoPyResult, MXNetError};
use oxnet_core::{Error, NDArray};
use oxnet_nn::optim::lr_scheduler::{
    CosineScheduler, FactorScheduler, LrScheduler, MultiFactorScheduler, PolyScheduler, SharedScheduler,
    Warmup, WarmupMode,
};
use oxnet_nn::optim::states::StatesBlob;
use oxnet_nn::optim::{
    self, MultKey, Optimizer, OptimizerBase, ParamValue, SharedOptimizer, State, UpdateCounts, Updater,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// The optimizer behind a Python subclass of `Optimizer`: shared
/// hyper-parameters and counts only; Python implements the updates.
struct PythonDefined {
    base: OptimizerBase,
}

impl Optimizer for PythonDefined {
    fn name(&self) -> &'static str {
        "optimizer"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        Vec::new()
    }

    fn set_param(&mut self, _key: &str, _value: &str) -> oxnet_core::Result<bool> {
        Ok(false)
    }

    fn create_state(&self, _index: usize, _weight: &NDArray) -> oxnet_core::Result<State> {
        Ok(Vec::new())
    }

    fn update(&mut self, _: usize, _: &NDArray, _: &NDArray, _: &[NDArray]) -> oxnet_core::Result<()> {
        Err(Error::Invalid("this optimizer's update is written in Python".into()))
    }
}

/// Takes a lock without waiting (see the module documentation).
fn try_lock<'a, T: ?Sized>(m: &'a Mutex<T>, what: &str) -> PyResult<MutexGuard<'a, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(TryLockError::WouldBlock) => Err(MXNetError::new_err(format!(
            "the {what} is in use: it was called back into during its own update (from an LR scheduler?)"
        ))),
        Err(TryLockError::Poisoned(_)) => {
            Err(MXNetError::new_err(format!("the {what} failed during an earlier update and is unusable")))
        }
    }
}

/// The text form of a Python hyper-parameter value.
fn param_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if obj.is_none() {
        return Ok("None".into());
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(if b.is_true() { "True" } else { "False" }.into());
    }
    Ok(obj.str()?.to_string())
}

fn param_py(py: Python<'_>, v: &ParamValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        ParamValue::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        ParamValue::OptFloat(Some(x)) => x.into_pyobject(py)?.into_any().unbind(),
        ParamValue::OptFloat(None) => py.None(),
        ParamValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        ParamValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        ParamValue::Str(s) => PyString::new(py, s).into_any().unbind(),
    })
}

fn mult_key(obj: &Bound<'_, PyAny>) -> PyResult<MultKey> {
    if obj.is_instance_of::<PyInt>() {
        let i: i64 = obj.extract()?;
        return usize::try_from(i)
            .map(MultKey::Index)
            .map_err(|_| PyValueError::new_err(format!("parameter index {i} is negative")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(MultKey::Name(s.to_string()));
    }
    Err(PyTypeError::new_err(format!("a multiplier's key must be an index or a name, got {}", obj.repr()?)))
}

fn mults_from(dict: &Bound<'_, PyDict>) -> PyResult<HashMap<MultKey, f64>> {
    dict.iter().map(|(k, v)| Ok((mult_key(&k)?, v.extract::<f64>()?))).collect()
}

fn mults_to<'py>(py: Python<'py>, m: &HashMap<MultKey, f64>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in m {
        match k {
            MultKey::Index(i) => d.set_item(i, v)?,
            MultKey::Name(n) => d.set_item(n, v)?,
        }
    }
    Ok(d)
}

/// Installs the multipliers read from gluon Parameters (`param_dict`) for
/// `indices` (`None`: the index has no Parameter).
fn install_mults(base: &mut OptimizerBase, indices: &[usize], mults: &[Option<(f64, f64)>]) -> PyResult<()> {
    if mults.len() != indices.len() {
        return Err(PyValueError::new_err("one multiplier entry per index is needed"));
    }
    for (&i, m) in indices.iter().zip(mults) {
        match m {
            Some(m) => base.param_mult.insert(i, *m),
            None => base.param_mult.remove(&i),
        };
    }
    Ok(())
}

fn arrays(list: &[PyRef<'_, PyNDArray>]) -> Vec<NDArray> {
    list.iter().map(|a| a.inner.clone()).collect()
}

fn state_list<'py>(py: Python<'py>, state: &[NDArray]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, state.iter().map(|a| wrap(py, a.clone())).collect::<PyResult<Vec<_>>>()?)
}

/// A Rust optimizer as the Python `Optimizer` classes see it.
#[pyclass(frozen, name = "OptimizerCore", module = "oxnet._oxnet")]
pub struct OptimizerCore {
    inner: SharedOptimizer,
}

impl OptimizerCore {
    fn with<R>(&self, f: impl FnOnce(&mut dyn Optimizer) -> oxnet_core::Result<R>) -> PyResult<R> {
        let mut g = try_lock(&self.inner, "optimizer")?;
        f(g.as_mut()).py()
    }

    fn set(&self, key: &str, value: String) -> PyResult<()> {
        self.with(|o| optim::set_param(o, key, &value))
    }

    /// Reads the shared hyper-parameters and counts.
    fn get<R>(&self, f: impl FnOnce(&OptimizerBase) -> R) -> PyResult<R> {
        self.with(|o| Ok(f(o.base())))
    }

    /// Runs `f` on the shared part once the Parameters' multipliers `mults`
    /// of `indices` are installed.
    fn with_mults<R>(
        &self,
        indices: &[usize],
        mults: &[Option<(f64, f64)>],
        f: impl FnOnce(&OptimizerBase) -> oxnet_core::Result<R>,
    ) -> PyResult<R> {
        let mut g = try_lock(&self.inner, "optimizer")?;
        install_mults(g.base_mut(), indices, mults)?;
        f(g.base()).py()
    }

    /// Changes the shared hyper-parameters and counts.
    fn set_base(&self, f: impl FnOnce(&mut OptimizerBase)) -> PyResult<()> {
        self.with(|o| {
            f(o.base_mut());
            Ok(())
        })
    }
}

#[pymethods]
impl OptimizerCore {
    /// The optimizer registered as `name` (`""`: one whose updates Python
    /// implements) with hyper-parameters as `(key, text)` pairs.
    #[new]
    fn new(name: &str, params: Vec<(String, String)>) -> PyResult<Self> {
        let mut opt: Box<dyn Optimizer> = if name.is_empty() {
            Box::new(PythonDefined { base: OptimizerBase::new("optimizer", None) })
        } else {
            optim::create_default(name).py()?
        };
        for (k, v) in &params {
            optim::set_param(opt.as_mut(), k, v).py()?;
        }
        Ok(OptimizerCore { inner: Arc::new(Mutex::new(opt)) })
    }

    /// The registry name (`optimizer` for one implemented in Python).
    #[getter]
    fn name(&self) -> PyResult<&'static str> {
        self.with(|o| Ok(o.name()))
    }

    /// The learning rate now (the scheduler's at the current count).
    #[getter]
    fn learning_rate(&self) -> PyResult<f64> {
        self.with(|o| o.base().learning_rate())
    }

    /// The fixed learning rate (MXNet's `lr` attribute).
    #[getter]
    fn lr(&self) -> PyResult<f64> {
        self.get(|b| b.lr())
    }

    /// Sets the fixed learning rate (`None`: the default or the scheduler's).
    #[setter]
    fn set_lr(&self, lr: Option<f64>) -> PyResult<()> {
        self.set("learning_rate", lr.map_or("None".into(), |v| format!("{v:?}")))
    }

    /// Sets the fixed learning rate (an error while a scheduler owns it).
    fn set_learning_rate(&self, lr: f64) -> PyResult<()> {
        self.with(|o| o.base_mut().set_learning_rate(lr))
    }

    /// Weight decay.
    #[getter]
    fn wd(&self) -> PyResult<f64> {
        self.get(|b| b.wd)
    }

    /// Sets the weight decay.
    #[setter]
    fn set_wd(&self, wd: f64) -> PyResult<()> {
        self.set_base(|b| b.wd = wd)
    }

    /// The factor applied to every gradient first.
    #[getter]
    fn rescale_grad(&self) -> PyResult<f64> {
        self.get(|b| b.rescale_grad)
    }

    /// Sets the gradient factor.
    #[setter]
    fn set_rescale_grad(&self, v: f64) -> PyResult<()> {
        self.set_base(|b| b.rescale_grad = v)
    }

    /// The gradient clipping bound (`None`: no clipping).
    #[getter]
    fn clip_gradient(&self) -> PyResult<Option<f64>> {
        self.get(|b| b.clip_gradient)
    }

    /// Sets the gradient clipping bound.
    #[setter]
    fn set_clip_gradient(&self, v: Option<f64>) -> PyResult<()> {
        self.set_base(|b| b.clip_gradient = v)
    }

    /// Whether float16/bfloat16 weights get float32 master copies.
    #[getter]
    fn multi_precision(&self) -> PyResult<bool> {
        self.get(|b| b.multi_precision)
    }

    /// Turns float32 master copies on or off.
    #[setter]
    fn set_multi_precision(&self, v: bool) -> PyResult<()> {
        self.set_base(|b| b.multi_precision = v)
    }

    /// The largest update count of any parameter.
    #[getter]
    fn num_update(&self) -> PyResult<u64> {
        self.get(|b| b.num_update())
    }

    /// Sets the update count the scheduler sees.
    #[setter]
    fn set_num_update(&self, n: u64) -> PyResult<()> {
        self.set_base(|b| b.set_num_update(n))
    }

    /// The count every parameter starts from.
    #[getter]
    fn begin_num_update(&self) -> PyResult<u64> {
        self.get(|b| b.begin_num_update())
    }

    /// Sets the starting count (and the current one).
    #[setter]
    fn set_begin_num_update(&self, n: u64) -> PyResult<()> {
        self.set_base(|b| b.set_begin_num_update(n))
    }

    /// Installs a scheduler: a `SchedulerCore` (shared with its Python
    /// object), any callable taking the update count (called back), or None.
    fn set_lr_scheduler(&self, scheduler: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let shared: Option<SharedScheduler> = match scheduler {
            None => None,
            Some(s) => match s.cast::<SchedulerCore>() {
                Ok(core) => Some(core.get().inner.clone()),
                Err(_) => Some(Arc::new(Mutex::new(PyScheduler { obj: s.unbind() }))),
            },
        };
        self.with(|o| o.base_mut().set_lr_scheduler(shared))
    }

    /// Counts one update of each index (MXNet's `_update_count`).
    fn update_count(&self, indices: Vec<usize>) -> PyResult<()> {
        self.set_base(|b| b.update_count(&indices))
    }

    /// Switches the per-index counts to device `device_id`'s (MXNet's
    /// `_set_current_context`).
    fn set_current_context(&self, device_id: usize) -> PyResult<()> {
        self.set_base(|b| b.set_current_context(device_id))
    }

    /// Updates received by parameter `index`.
    fn index_update_count(&self, index: usize) -> PyResult<u64> {
        self.with(|o| Ok(o.base().index_update_count(index)))
    }

    /// `(num_update, {index: count})`.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<(u64, Bound<'py, PyDict>)> {
        let c = self.get(|b| b.counts().clone())?;
        let d = PyDict::new(py);
        for (i, n) in &c.per_index {
            d.set_item(i, n)?;
        }
        Ok((c.num_update, d))
    }

    /// Replaces the update counts.
    fn set_counts(&self, num_update: u64, per_index: BTreeMap<usize, u64>) -> PyResult<()> {
        self.set_base(|b| b.set_counts(UpdateCounts { num_update, per_index }))
    }

    /// Learning rates of `indices` with the Parameters' multipliers `mults`.
    fn lrs(&self, indices: Vec<usize>, mults: Vec<Option<(f64, f64)>>) -> PyResult<Vec<f64>> {
        self.with_mults(&indices, &mults, |b| b.lrs(&indices))
    }

    /// Weight decays of `indices` with the Parameters' multipliers `mults`.
    fn wds(&self, indices: Vec<usize>, mults: Vec<Option<(f64, f64)>>) -> PyResult<Vec<f64>> {
        self.with_mults(&indices, &mults, |b| Ok(b.wds(&indices)))
    }

    /// The learning-rate multipliers by index or name.
    fn lr_mult<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.get(|b| b.lr_mult().clone())?;
        mults_to(py, &m)
    }

    /// The weight-decay multipliers by index or name (with the defaults from names).
    fn wd_mult<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.get(|b| b.wd_mult().clone())?;
        mults_to(py, &m)
    }

    /// Replaces the learning-rate multipliers.
    fn set_lr_mult(&self, mult: &Bound<'_, PyDict>) -> PyResult<()> {
        let m = mults_from(mult)?;
        self.set_base(|b| b.set_lr_mult(m))
    }

    /// Replaces the weight-decay multipliers (named parameters not ending in `_weight` get 0).
    fn set_wd_mult(&self, mult: &Bound<'_, PyDict>) -> PyResult<()> {
        let m = mults_from(mult)?;
        self.set_base(|b| b.set_wd_mult(m))
    }

    /// The index → name map.
    fn idx2name(&self) -> PyResult<BTreeMap<usize, String>> {
        self.get(|b| b.idx2name().clone())
    }

    /// Sets the index → name map (recomputing the default weight-decay multipliers).
    fn set_idx2name(&self, map: BTreeMap<usize, String>) -> PyResult<()> {
        self.set_base(|b| b.set_idx2name(map))
    }

    /// The optimizer's own hyper-parameter names (not the shared ones).
    fn param_names(&self) -> PyResult<Vec<&'static str>> {
        self.with(|o| Ok(o.params().into_iter().map(|(k, _)| k).collect()))
    }

    /// A hyper-parameter's value.
    fn get_param(&self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        let all = self.with(|o| Ok(optim::all_params(o)))?;
        match all.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => param_py(py, v),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!("no hyper-parameter `{key}`"))),
        }
    }

    /// Sets a hyper-parameter from a Python value.
    fn set_param(&self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set(key, param_text(value)?)
    }

    /// Every hyper-parameter as `(key, text)` pairs (for pickling).
    fn param_texts(&self) -> PyResult<Vec<(&'static str, String)>> {
        self.with(|o| Ok(optim::all_params(o).into_iter().map(|(k, v)| (k, v.to_string())).collect()))
    }

    /// A new parameter's state (a list of arrays), with a float32 master
    /// copy when `multi_precision` applies.
    #[pyo3(signature = (index, weight, multi_precision=true))]
    fn create_state<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        weight: PyRef<'py, PyNDArray>,
        multi_precision: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let w = weight.inner.clone();
        let state = self.with(|o| {
            if multi_precision {
                o.create_state_multi_precision(index, &w)
            } else {
                o.create_state(index, &w)
            }
        })?;
        state_list(py, &state)
    }

    /// Updates `weight` in place from `grad` and `state` (a list of arrays).
    #[pyo3(signature = (index, weight, grad, state, multi_precision=true, mult=None))]
    fn update(
        &self,
        index: usize,
        weight: PyRef<'_, PyNDArray>,
        grad: PyRef<'_, PyNDArray>,
        state: Vec<PyRef<'_, PyNDArray>>,
        multi_precision: bool,
        mult: Option<(f64, f64)>,
    ) -> PyResult<()> {
        let (w, g, s) = (weight.inner.clone(), grad.inner.clone(), arrays(&state));
        let mut o = try_lock(&self.inner, "optimizer")?;
        install_mults(o.base_mut(), &[index], &[mult])?;
        let _no_tape = oxnet_core::autograd::pause();
        if multi_precision {
            o.update_multi_precision(index, &w, &g, &s).py()
        } else {
            o.update(index, &w, &g, &s).py()
        }
    }
}

/// An updater: a shared optimizer and the states of its parameters.
#[pyclass(frozen, name = "UpdaterCore", module = "oxnet._oxnet")]
pub struct UpdaterCore {
    inner: Mutex<Updater>,
}

#[pymethods]
impl UpdaterCore {
    /// An updater of `optimizer` (shared: hyper-parameter changes apply).
    #[new]
    fn new(optimizer: &OptimizerCore) -> Self {
        UpdaterCore { inner: Mutex::new(Updater::from_shared(optimizer.inner.clone())) }
    }

    /// Updates `weights[k]` from `grads[k]` for every `indices[k]`, in one
    /// call; `mults[k]` are parameter `k`'s `(lr_mult, wd_mult)` (or None).
    fn update_multi(
        &self,
        indices: Vec<usize>,
        grads: Vec<PyRef<'_, PyNDArray>>,
        weights: Vec<PyRef<'_, PyNDArray>>,
        mults: Vec<Option<(f64, f64)>>,
    ) -> PyResult<()> {
        let mut up = try_lock(&self.inner, "updater")?;
        {
            let mut o = try_lock(up.optimizer(), "optimizer")?;
            install_mults(o.base_mut(), &indices, &mults)?;
        }
        up.update_multi(&indices, &arrays(&grads), &arrays(&weights)).py()
    }

    /// `{index: [arrays]}`: the live states.
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let up = try_lock(&self.inner, "updater")?;
        let d = PyDict::new(py);
        for (i, s) in up.states() {
            d.set_item(i, state_list(py, s)?)?;
        }
        Ok(d)
    }

    /// The saved form of the states and counts (and hyper-parameters with
    /// `dump_optimizer`).
    fn get_states<'py>(&self, py: Python<'py>, dump_optimizer: bool) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = try_lock(&self.inner, "updater")?.get_states(dump_optimizer).py()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Restores states saved by `get_states`; a bad blob changes nothing.
    fn set_states(&self, blob: &[u8]) -> PyResult<()> {
        try_lock(&self.inner, "updater")?.set_states(blob).py()
    }
}

/// A scheduler written in Python: called back with the update count.
struct PyScheduler {
    obj: Py<PyAny>,
}

impl LrScheduler for PyScheduler {
    fn lr(&mut self, num_update: u64) -> oxnet_core::Result<f64> {
        Python::attach(|py| self.obj.call1(py, (num_update,)).and_then(|v| v.extract::<f64>(py)))
            .map_err(Error::custom)
    }

    fn base_lr(&self) -> f64 {
        Python::attach(|py| {
            self.obj.getattr(py, "base_lr").and_then(|v| v.extract::<f64>(py)).unwrap_or(f64::NAN)
        })
    }

    fn set_base_lr(&mut self, lr: f64) {
        Python::attach(|py| {
            // a scheduler without a settable base_lr keeps its own
            let _ = self.obj.setattr(py, "base_lr", lr);
        })
    }
}

/// A Rust learning-rate scheduler.
#[pyclass(frozen, name = "SchedulerCore", module = "oxnet._oxnet")]
pub struct SchedulerCore {
    inner: SharedScheduler,
}

fn warmup(steps: i64, begin_lr: f64, mode: &str) -> PyResult<Warmup> {
    Ok(Warmup::new(
        steps,
        begin_lr,
        WarmupMode::parse(mode).map_err(|e| PyValueError::new_err(e.to_string()))?,
    ))
}

fn make(s: oxnet_core::Result<impl LrScheduler + 'static>) -> PyResult<SchedulerCore> {
    let s = s.map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(SchedulerCore { inner: Arc::new(Mutex::new(s)) })
}

#[pymethods]
impl SchedulerCore {
    /// MXNet's `FactorScheduler`.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn factor(
        step: i64,
        factor: f64,
        stop_factor_lr: f64,
        base_lr: f64,
        warmup_steps: i64,
        warmup_begin_lr: f64,
        warmup_mode: &str,
    ) -> PyResult<Self> {
        let w = warmup(warmup_steps, warmup_begin_lr, warmup_mode)?;
        make(FactorScheduler::new(step, factor, stop_factor_lr, base_lr, w))
    }

    /// MXNet's `MultiFactorScheduler`.
    #[staticmethod]
    fn multifactor(
        step: Vec<i64>,
        factor: f64,
        base_lr: f64,
        warmup_steps: i64,
        warmup_begin_lr: f64,
        warmup_mode: &str,
    ) -> PyResult<Self> {
        let w = warmup(warmup_steps, warmup_begin_lr, warmup_mode)?;
        make(MultiFactorScheduler::new(&step, factor, base_lr, w))
    }

    /// MXNet's `PolyScheduler`.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn poly(
        max_update: i64,
        base_lr: f64,
        pwr: f64,
        final_lr: f64,
        warmup_steps: i64,
        warmup_begin_lr: f64,
        warmup_mode: &str,
    ) -> PyResult<Self> {
        let w = warmup(warmup_steps, warmup_begin_lr, warmup_mode)?;
        make(PolyScheduler::new(max_update, base_lr, pwr, final_lr, w))
    }

    /// MXNet's `CosineScheduler`.
    #[staticmethod]
    fn cosine(
        max_update: i64,
        base_lr: f64,
        final_lr: f64,
        warmup_steps: i64,
        warmup_begin_lr: f64,
        warmup_mode: &str,
    ) -> PyResult<Self> {
        let w = warmup(warmup_steps, warmup_begin_lr, warmup_mode)?;
        make(CosineScheduler::new(max_update, base_lr, final_lr, w))
    }

    /// The learning rate after `num_update` updates.
    fn __call__(&self, num_update: i64) -> PyResult<f64> {
        let n = u64::try_from(num_update)
            .map_err(|_| PyValueError::new_err(format!("num_update must be 0 or more, got {num_update}")))?;
        try_lock(&self.inner, "LR scheduler")?.lr(n).py()
    }

    #[getter]
    fn base_lr(&self) -> PyResult<f64> {
        Ok(try_lock(&self.inner, "LR scheduler")?.base_lr())
    }

    #[setter]
    fn set_base_lr(&self, lr: f64) -> PyResult<()> {
        try_lock(&self.inner, "LR scheduler")?.set_base_lr(lr);
        Ok(())
    }

    /// The scheduler's current values by name.
    fn describe(&self) -> PyResult<Vec<(&'static str, f64)>> {
        Ok(try_lock(&self.inner, "LR scheduler")?.describe())
    }
}

/// Encodes named arrays and a JSON text in the optimizer-states format
/// (for optimizers written in Python).
#[pyfunction]
pub fn encode_states<'py>(
    py: Python<'py>,
    arrays: Vec<(String, PyRef<'py, PyNDArray>)>,
    meta: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let arrays = arrays.into_iter().map(|(n, a)| (n, a.inner.clone())).collect();
    let bytes = StatesBlob::with_json_meta(arrays, meta).py()?.to_bytes().py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// Named arrays as Python receives them.
type NamedArrays<'py> = Vec<(String, Bound<'py, PyNDArray>)>;

/// Decodes what `encode_states` wrote: `([(name, NDArray)], meta JSON text)`.
#[pyfunction]
pub fn decode_states<'py>(py: Python<'py>, blob: &[u8]) -> PyResult<(NamedArrays<'py>, String)> {
    let b = StatesBlob::from_bytes(blob).py()?;
    let meta = b.meta_json();
    let arrays = b.arrays.into_iter().map(|(n, a)| Ok((n, wrap(py, a)?))).collect::<PyResult<Vec<_>>>()?;
    Ok((arrays, meta))
}

/// The registry names of the built-in optimizers.
#[pyfunction]
pub fn optimizer_names() -> Vec<&'static str> {
    optim::NAMES.to_vec()
}
