//! [`Parameter`]: an array a block learns, with its gradient, its
//! initialisation (possibly deferred until its shape is known) and the
//! multipliers the optimizer applies to it. MXNet 1.x's `gluon.Parameter`.
//!
//! A `Parameter` is a cheap handle: clones share one parameter, so a block,
//! its parent's collection and a [`crate::trainer::Trainer`] all see the same
//! data. Unknown dimensions of the shape are written `0`; they are filled
//! by [`Parameter::set_shape`] (layers call it with what the first input
//! tells them), and initialisation waits for them.
//!
//! ```
//! use oxnet_nn::init::Constant;
//! use oxnet_nn::parameter::{shared_init, Parameter};
//!
//! let w = Parameter::new("dense0_weight", &[2, 0]).allow_deferred_init(true);
//! w.initialize(&shared_init(Constant::new(0.5))).unwrap();
//! assert!(w.data().is_err()); // the second dimension is not known yet
//! w.set_shape(&[2, 3]).unwrap();
//! assert_eq!(w.data().unwrap().to_vec::<f32>().unwrap(), vec![0.5; 6]);
//! assert_eq!(w.grad().unwrap().shape(), &[2, 3]);
//! ```

use crate::init::{InitDesc, Initializer};
use oxnet_core::{autograd, DType, Device, Error, NDArray, Req, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

/// A shared initializer, as parameters keep it until their shape is known.
pub type SharedInit = Arc<dyn Initializer>;

/// `init` as a [`SharedInit`]: `block.initialize(&shared_init(Xavier::default()))`.
pub fn shared_init<I: Initializer + 'static>(init: I) -> SharedInit {
    Arc::new(init)
}

/// How a backward pass treats a parameter's gradient buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GradReq {
    /// Each backward pass overwrites the gradient.
    Write,
    /// Each backward pass adds to the gradient (reset it with `zero_grad`).
    Add,
    /// No gradient is kept.
    Null,
}

impl GradReq {
    /// MXNet's string form: `write`, `add` or `null`.
    pub fn as_str(self) -> &'static str {
        match self {
            GradReq::Write => "write",
            GradReq::Add => "add",
            GradReq::Null => "null",
        }
    }

    /// The core request autograd honours.
    pub fn as_req(self) -> Req {
        match self {
            GradReq::Write => Req::Write,
            GradReq::Add => Req::Add,
            GradReq::Null => Req::Null,
        }
    }
}

impl FromStr for GradReq {
    type Err = Error;

    fn from_str(s: &str) -> Result<GradReq> {
        match s {
            "write" => Ok(GradReq::Write),
            "add" => Ok(GradReq::Add),
            "null" => Ok(GradReq::Null),
            other => Err(Error::Invalid(format!("grad_req must be one of write, add, null; got `{other}`"))),
        }
    }
}

impl fmt::Display for GradReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Formats a shape with `?` for unknown dimensions: `(10, ?)`.
pub fn shape_string(shape: &[usize]) -> String {
    let dims: Vec<String> =
        shape.iter().map(|&d| if d == 0 { "?".to_string() } else { d.to_string() }).collect();
    format!("({})", dims.join(", "))
}

/// True when the shape has at least one axis and no unknown (0) dimension.
pub fn shape_is_known(shape: &[usize]) -> bool {
    !shape.is_empty() && shape.iter().all(|&d| d > 0)
}

/// `expected` with its unknown dimensions taken from `given`; an error
/// naming `what` when the ranks or a known dimension disagree. An empty
/// `expected` (nothing declared) takes `given` whole.
pub fn merge_shapes(expected: &[usize], given: &[usize], what: &str) -> Result<Vec<usize>> {
    if expected.is_empty() {
        return Ok(given.to_vec());
    }
    if expected.len() != given.len() || expected.iter().zip(given).any(|(&e, &g)| e != 0 && g != 0 && e != g)
    {
        return Err(Error::Shape(format!(
            "{what}: expected shape {} is incompatible with given shape {}",
            shape_string(expected),
            shape_string(given)
        )));
    }
    Ok(expected.iter().zip(given).map(|(&e, &g)| if e != 0 { e } else { g }).collect())
}

/// An initialisation waiting for the shape: the default initializer given
/// to `initialize`, and values `set_data` gave meanwhile.
struct Pending {
    default_init: SharedInit,
    values: Option<NDArray>,
}

struct State {
    shape: Vec<usize>,
    dtype: DType,
    grad_req: GradReq,
    differentiable: bool,
    lr_mult: f64,
    wd_mult: f64,
    init: Option<SharedInit>,
    allow_deferred_init: bool,
    data: Option<NDArray>,
    grad: Option<NDArray>,
    pending: Option<Pending>,
    /// Run once with the values when an initialisation gives them.
    on_initialized: Vec<InitHook>,
}

/// What [`Parameter::on_initialized`] runs: it gets the new values.
pub type InitHook = Arc<dyn Fn(&NDArray) -> Result<()> + Send + Sync>;

struct Inner {
    name: String,
    state: Mutex<State>,
}

/// A learnable array of a block (a cheap-to-clone handle).
#[derive(Clone)]
pub struct Parameter {
    inner: Arc<Inner>,
}

impl fmt::Debug for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state();
        write!(f, "Parameter {} (shape={}, dtype={})", self.inner.name, shape_string(&s.shape), s.dtype)
    }
}

/// What `Parameter::data` hands out while a block's `forward` is traced or
/// shape-checked (see [`ParameterScope`]).
enum Scope {
    /// Each parameter (by identity) stands for this traced array.
    Traced(HashMap<usize, NDArray>),
    /// Shape inference only: parameters of known shape are shape-only arrays.
    ShapesOnly,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// While alive, [`Parameter::data`] on this thread hands out traced arrays
/// instead of real data: what a hybridized block does while it traces its
/// `forward` into a graph (each parameter becomes a graph input).
#[must_use = "the scope ends when the guard is dropped"]
pub struct ParameterScope {
    previous: Option<Scope>,
}

impl ParameterScope {
    /// Parameters in `mapping` stand for their traced arrays; any other
    /// parameter's `data()` is an error naming it.
    pub fn traced(mapping: &[(Parameter, NDArray)]) -> ParameterScope {
        let map = mapping.iter().map(|(p, a)| (p.key(), a.clone())).collect();
        ParameterScope::install(Scope::Traced(map))
    }

    /// Every parameter of known shape hands out a shape-only array (no
    /// values); one of unknown shape is an error. For shape inference runs.
    pub fn shapes_only() -> ParameterScope {
        ParameterScope::install(Scope::ShapesOnly)
    }

    fn install(scope: Scope) -> ParameterScope {
        let previous = SCOPE.with(|s| s.borrow_mut().replace(scope));
        ParameterScope { previous }
    }
}

impl Drop for ParameterScope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SCOPE.with(|s| *s.borrow_mut() = previous);
    }
}

impl Parameter {
    /// A parameter named `name` of `shape` (`0` marks a dimension to be
    /// inferred; an empty shape means not declared yet), float32,
    /// `grad_req` write, multipliers 1, no initializer of its own, deferred
    /// initialisation not allowed (see [`Parameter::allow_deferred_init`]).
    pub fn new(name: impl Into<String>, shape: &[usize]) -> Parameter {
        Parameter {
            inner: Arc::new(Inner {
                name: name.into(),
                state: Mutex::new(State {
                    shape: shape.to_vec(),
                    dtype: DType::F32,
                    grad_req: GradReq::Write,
                    differentiable: true,
                    lr_mult: 1.0,
                    wd_mult: 1.0,
                    init: None,
                    allow_deferred_init: false,
                    data: None,
                    grad: None,
                    pending: None,
                    on_initialized: Vec::new(),
                }),
            }),
        }
    }

    /// A constant: a parameter holding `value` that no gradient reaches
    /// (`grad_req` null) and that initialises to `value` whatever the
    /// block's initializer (MXNet's `gluon.Constant`).
    pub fn constant(name: impl Into<String>, value: &NDArray) -> Result<Parameter> {
        let init: SharedInit = Arc::new(crate::init::Constant::from_array(value.copy()?));
        let p = Parameter::new(name, value.shape()).with_dtype(value.dtype()).with_init(init);
        {
            let mut s = p.state();
            s.differentiable = false;
            s.grad_req = GradReq::Null;
        }
        Ok(p)
    }

    /// Sets the element type (builder; before initialisation).
    pub fn with_dtype(self, dtype: DType) -> Parameter {
        self.state().dtype = dtype;
        self
    }

    /// Sets the gradient request (builder).
    pub fn with_grad_req(self, req: GradReq) -> Parameter {
        {
            let mut s = self.state();
            s.grad_req = if s.differentiable { req } else { GradReq::Null };
        }
        self
    }

    /// Gives the parameter its own initializer, used instead of the one
    /// passed to `initialize` (builder).
    pub fn with_init(self, init: SharedInit) -> Parameter {
        self.state().init = Some(init);
        self
    }

    /// Sets the learning-rate multiplier (builder).
    pub fn with_lr_mult(self, mult: f64) -> Parameter {
        self.state().lr_mult = mult;
        self
    }

    /// Sets the weight-decay multiplier (builder).
    pub fn with_wd_mult(self, mult: f64) -> Parameter {
        self.state().wd_mult = mult;
        self
    }

    /// Allows `initialize` to wait until the shape is known (builder).
    pub fn allow_deferred_init(self, allow: bool) -> Parameter {
        self.state().allow_deferred_init = allow;
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn key(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// True when both handles are the same parameter.
    pub fn same(&self, other: &Parameter) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The full name, such as `dense0_weight`.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The shape; unknown dimensions are 0.
    pub fn shape(&self) -> Vec<usize> {
        self.state().shape.clone()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.state().dtype
    }

    /// The gradient request.
    pub fn grad_req(&self) -> GradReq {
        self.state().grad_req
    }

    /// False for constants, which never get a gradient.
    pub fn differentiable(&self) -> bool {
        self.state().differentiable
    }

    /// The learning-rate multiplier.
    pub fn lr_mult(&self) -> f64 {
        self.state().lr_mult
    }

    /// The weight-decay multiplier.
    pub fn wd_mult(&self) -> f64 {
        self.state().wd_mult
    }

    /// Sets the learning-rate multiplier.
    pub fn set_lr_mult(&self, mult: f64) {
        self.state().lr_mult = mult;
    }

    /// Sets the weight-decay multiplier.
    pub fn set_wd_mult(&self, mult: f64) {
        self.state().wd_mult = mult;
    }

    /// The parameter's own initializer, if it has one.
    pub fn init(&self) -> Option<SharedInit> {
        self.state().init.clone()
    }

    /// True once the data exists.
    pub fn is_initialized(&self) -> bool {
        self.state().data.is_some()
    }

    /// True while initialisation waits for the shape.
    pub fn is_deferred(&self) -> bool {
        let s = self.state();
        s.data.is_none() && s.pending.is_some()
    }

    /// Fills unknown dimensions from `shape`; an error naming the parameter
    /// when a known dimension (or the rank) disagrees. A parameter whose
    /// data exists cannot change shape.
    pub fn set_shape(&self, shape: &[usize]) -> Result<()> {
        let mut s = self.state();
        let merged = merge_shapes(&s.shape, shape, &format!("Parameter `{}`", self.inner.name))?;
        if s.data.is_some() && merged != s.shape {
            return Err(Error::Shape(format!(
                "Parameter `{}`: its data has shape {}, it cannot become {}",
                self.inner.name,
                shape_string(&s.shape),
                shape_string(&merged)
            )));
        }
        s.shape = merged;
        Ok(())
    }

    /// Changes the gradient request (constants stay `null`); the gradient
    /// buffer is re-created for `write`/`add`, dropped for `null`.
    pub fn set_grad_req(&self, req: GradReq) -> Result<()> {
        let mut s = self.state();
        let req = if s.differentiable { req } else { GradReq::Null };
        if s.grad_req == req {
            return Ok(());
        }
        s.grad_req = req;
        if s.data.is_some() {
            attach_grad(&mut s)?;
        }
        Ok(())
    }

    /// Initialises the data with this parameter's own initializer, else
    /// `default_init`. Nothing happens if the data already exists. With an
    /// unknown shape the work waits for the shape (if deferred
    /// initialisation is allowed; an error naming the parameter otherwise).
    pub fn initialize(&self, default_init: &SharedInit) -> Result<()> {
        if self.is_initialized() {
            return Ok(());
        }
        self.start_init(default_init)
    }

    /// Initialises again, replacing existing data (MXNet's `force_reinit`).
    pub fn reinitialize(&self, default_init: &SharedInit) -> Result<()> {
        {
            let mut s = self.state();
            s.data = None;
            s.grad = None;
        }
        self.start_init(default_init)
    }

    fn start_init(&self, default_init: &SharedInit) -> Result<()> {
        {
            let mut s = self.state();
            if !shape_is_known(&s.shape) && !s.allow_deferred_init {
                return Err(Error::Shape(format!(
                    "cannot initialize Parameter `{}` because its shape {} is not known; give its full shape \
                     or allow deferred initialization",
                    self.inner.name,
                    shape_string(&s.shape)
                )));
            }
            s.pending = Some(Pending { default_init: default_init.clone(), values: None });
            if !shape_is_known(&s.shape) {
                return Ok(());
            }
        }
        self.finish_deferred_init()
    }

    /// Runs an initialisation that waited for the shape. Nothing happens
    /// when none waits; an error names the parameter when the shape is still
    /// unknown. Not allowed while a trace runs.
    pub fn finish_deferred_init(&self) -> Result<()> {
        let mut s = self.state();
        let Some(pending) = s.pending.as_ref() else { return Ok(()) };
        if !shape_is_known(&s.shape) {
            return Err(self.deferred_error(&s.shape));
        }
        if oxnet_core::trace::is_tracing() {
            return Err(Error::Invalid(format!(
                "Parameter `{}` cannot be initialized while a graph is traced; run one batch through the \
                 block first",
                self.inner.name
            )));
        }
        let _pause = autograd::pause();
        let data = NDArray::zeros(&s.shape, s.dtype, Device::Cpu)?;
        match &pending.values {
            Some(v) => data.assign_from(v)?,
            None => {
                let init = s.init.clone().unwrap_or_else(|| pending.default_init.clone());
                init.init_weight(&InitDesc::new(self.inner.name.clone()), &data).map_err(|e| {
                    Error::Invalid(format!("initializing Parameter `{}`: {e}", self.inner.name))
                })?;
            }
        }
        s.pending = None;
        s.data = Some(data);
        attach_grad(&mut s)?;
        self.run_init_hooks(s)
    }

    /// Runs the hooks waiting for an initialisation that just gave the
    /// values, after releasing the lock `s`.
    fn run_init_hooks(&self, mut s: std::sync::MutexGuard<'_, State>) -> Result<()> {
        let hooks = std::mem::take(&mut s.on_initialized);
        let values = s.data.clone();
        drop(s);
        if let Some(values) = values {
            for hook in hooks {
                hook(&values).map_err(|e| {
                    Error::Invalid(format!("initializing Parameter `{}`: {e}", self.inner.name))
                })?;
            }
        }
        Ok(())
    }

    /// Runs `hook` once with the values the next initialisation gives
    /// (deferred ones included), right after it, outside the parameter's
    /// lock; an error from the hook is the initialisation's error. The
    /// distributed [`Trainer`](crate::trainer::Trainer) broadcasts rank 0's
    /// values this way.
    pub fn on_initialized(&self, hook: InitHook) {
        self.state().on_initialized.push(hook);
    }

    fn deferred_error(&self, shape: &[usize]) -> Error {
        Error::Invalid(format!(
            "Parameter `{}` has not been initialized yet because initialization was deferred: its shape {} \
             is only known after the first forward pass. Pass one batch through the block first, or give \
             the full shape (in_units, ...) when creating the layer",
            self.inner.name,
            shape_string(shape)
        ))
    }

    fn not_initialized_error(&self) -> Error {
        Error::Invalid(format!(
            "Parameter `{}` has not been initialized: call initialize() on it (or on the block holding it, \
             with collect_params() for nested blocks)",
            self.inner.name
        ))
    }

    /// The data (a handle sharing it). While a block's `forward` is traced
    /// ([`ParameterScope`]) it is the traced array standing for this
    /// parameter. A deferred initialisation whose shape has become known
    /// runs now; before that, an error names the parameter.
    pub fn data(&self) -> Result<NDArray> {
        if let Some(traced) = self.scoped_data()? {
            return Ok(traced);
        }
        {
            let s = self.state();
            if let Some(d) = &s.data {
                return Ok(d.clone());
            }
            match &s.pending {
                None => return Err(self.not_initialized_error()),
                Some(_) if !shape_is_known(&s.shape) => return Err(self.deferred_error(&s.shape)),
                Some(_) => {}
            }
        }
        self.finish_deferred_init()?;
        self.state().data.clone().ok_or_else(|| self.not_initialized_error())
    }

    fn scoped_data(&self) -> Result<Option<NDArray>> {
        SCOPE.with(|scope| match &*scope.borrow() {
            None => Ok(None),
            Some(Scope::Traced(map)) => map.get(&self.key()).cloned().map(Some).ok_or_else(|| {
                Error::Invalid(format!(
                    "Parameter `{}` is used by the traced block but is not among its parameters \
                     (collect_params)",
                    self.inner.name
                ))
            }),
            Some(Scope::ShapesOnly) => {
                let s = self.state();
                if !shape_is_known(&s.shape) {
                    return Err(self.deferred_error(&s.shape));
                }
                Ok(Some(NDArray::meta(&s.shape, s.dtype, Device::Cpu)))
            }
        })
    }

    /// The gradient buffer; an error for `grad_req` null or before
    /// initialisation.
    pub fn grad(&self) -> Result<NDArray> {
        let s = self.state();
        if s.data.is_some() {
            return s.grad.clone().ok_or_else(|| {
                Error::Invalid(format!(
                    "cannot get the gradient of Parameter `{}` because its grad_req is null",
                    self.inner.name
                ))
            });
        }
        Err(if s.pending.is_some() { self.deferred_error(&s.shape) } else { self.not_initialized_error() })
    }

    /// Sets the gradient to zero (needed between steps with `grad_req` add).
    pub fn zero_grad(&self) -> Result<()> {
        match &self.state().grad {
            Some(g) => g.fill(0.0),
            None => Ok(()),
        }
    }

    /// Replaces the values (converted to this parameter's dtype). Before a
    /// deferred initialisation runs, they become the values it will use.
    pub fn set_data(&self, values: &NDArray) -> Result<()> {
        let mut s = self.state();
        let name = &self.inner.name;
        if s.data.is_none() && s.pending.is_none() {
            return Err(Error::Invalid(format!("Parameter `{name}` has not been initialized")));
        }
        let merged = merge_shapes(&s.shape, values.shape(), &format!("Parameter `{name}`"))?;
        if let Some(d) = &s.data {
            if merged != s.shape {
                return Err(Error::Shape(format!(
                    "Parameter `{name}` has shape {}, it cannot take values of shape {}",
                    shape_string(&s.shape),
                    shape_string(values.shape())
                )));
            }
            let _pause = autograd::pause();
            return d.assign_from(values);
        }
        let copy = values.copy()?;
        s.shape = merged;
        if let Some(p) = s.pending.as_mut() {
            p.values = Some(copy);
        }
        Ok(())
    }

    /// Checks that `values` can be loaded into this parameter (shape
    /// compatible; same dtype unless `cast_dtype`), changing nothing.
    pub fn check_loadable(&self, values: &NDArray, cast_dtype: bool) -> Result<()> {
        let s = self.state();
        merge_shapes(&s.shape, values.shape(), &format!("cannot load Parameter `{}`", self.inner.name))?;
        if !cast_dtype && values.dtype() != s.dtype {
            return Err(Error::DType(format!(
                "cannot load Parameter `{}`: it has dtype {}, the saved array has {} (allow casting to load it)",
                self.inner.name, s.dtype, values.dtype()
            )));
        }
        Ok(())
    }

    /// Takes loaded values: they become the data (initialising the
    /// parameter if needed, and ending a deferred initialisation), converted
    /// to this parameter's dtype. Check with [`Parameter::check_loadable`]
    /// first.
    pub fn load_values(&self, values: &NDArray) -> Result<()> {
        self.set_shape(values.shape())?;
        let mut s = self.state();
        let _pause = autograd::pause();
        if let Some(d) = &s.data {
            return d.assign_from(values);
        }
        let data = values.astype(s.dtype)?;
        s.pending = None;
        s.data = Some(data);
        attach_grad(&mut s)?;
        self.run_init_hooks(s)
    }

    /// Casts the data (and gradient) to `dtype`.
    pub fn cast(&self, dtype: DType) -> Result<()> {
        let mut s = self.state();
        s.dtype = dtype;
        if let Some(p) = s.pending.as_mut() {
            if let Some(v) = p.values.take() {
                p.values = Some(v.astype(dtype)?);
            }
        }
        if let Some(d) = s.data.take() {
            let _pause = autograd::pause();
            s.data = Some(d.astype(dtype)?);
            attach_grad(&mut s)?;
        }
        Ok(())
    }
}

/// (Re)creates the gradient buffer of initialised data for the request and
/// marks the data as an autograd variable.
fn attach_grad(s: &mut State) -> Result<()> {
    let Some(data) = s.data.take() else { return Ok(()) };
    // a new handle, so that earlier handles (and their tape) are left alone
    let data = data.detach();
    s.grad = None;
    if s.grad_req != GradReq::Null {
        let grad = NDArray::zeros(data.shape(), data.dtype(), data.device())?;
        autograd::mark_variables(&[&data], &[&grad], &[s.grad_req.as_req()])?;
        s.grad = Some(grad);
    }
    s.data = Some(data);
    Ok(())
}
