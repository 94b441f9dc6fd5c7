//! [`OpDef`]: the one description of an operator, whether built in, written
//! in Rust by a user, in Python, or loaded from a library.
//!
//! Built-in operators are declared with exactly this API; see
//! [`crate::ops`] for examples.

use crate::attrs::{AttrSpec, Attrs};
use crate::shape::Shape;
use crate::{DType, Device, Error, NDArray, Result};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// How a kernel must store a result into an output buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Req {
    /// Skip this output: nobody needs it.
    Null,
    /// Overwrite the buffer.
    Write,
    /// Overwrite the buffer, which may alias an input (element-wise ops only).
    Inplace,
    /// Add the result to what the buffer already holds.
    Add,
}

impl Req {
    /// MXNet's string form: `null`, `write`, `inplace`, `add`.
    pub fn as_str(self) -> &'static str {
        match self {
            Req::Null => "null",
            Req::Write => "write",
            Req::Inplace => "inplace",
            Req::Add => "add",
        }
    }

    /// Parses MXNet's string form.
    pub fn parse(s: &str) -> Result<Req> {
        Ok(match s {
            "null" => Req::Null,
            "write" => Req::Write,
            "inplace" => Req::Inplace,
            "add" => Req::Add,
            other => {
                return Err(Error::Invalid(format!("unknown request `{other}` (null, write, inplace, add)")))
            }
        })
    }
}

impl fmt::Display for Req {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-instance state of a stateful operator (created by
/// [`OpDef::create_state`], shared by its forward and backward calls).
pub type OpState = Arc<dyn Any + Send + Sync>;

/// Resources an operator may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Temporary memory for the duration of one call.
    Workspace,
    /// A random generator seeded from oxnet's global seed.
    Random,
}

/// What a kernel sees of the call besides its arrays.
pub struct OpContext<'a> {
    /// The operator's name (for error messages).
    pub op_name: &'a str,
    /// The validated attributes.
    pub attrs: &'a Attrs,
    /// One request per output.
    pub req: &'a [Req],
    /// True in train mode (Dropout is active, custom ops see `is_train`).
    pub is_train: bool,
    /// Where the kernel runs.
    pub device: Device,
    /// The operator instance's state, for stateful operators.
    pub state: Option<&'a OpState>,
}

impl OpContext<'_> {
    /// A zeroed temporary buffer of `n` elements for this call (each call a
    /// distinct region).
    pub fn workspace<T: crate::Element>(&self, n: usize) -> Vec<T> {
        vec![T::zero(); n]
    }

    /// Runs `f` with oxnet's global random generator.
    pub fn with_rng<R>(&self, f: impl FnOnce(&mut crate::random::Generator) -> R) -> R {
        crate::random::with_rng(f)
    }
}

/// A forward kernel: reads `inputs` (arguments then auxiliary states),
/// stores into `outputs` according to `ctx.req`.
pub type ForwardFn = Arc<dyn Fn(&OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync>;

/// A forward kernel for operators whose output shapes depend on the data:
/// it allocates and returns its outputs.
pub type ForwardDynamicFn = Arc<dyn Fn(&OpContext, &[NDArray]) -> Result<Vec<NDArray>> + Send + Sync>;

/// Shape inference over inputs (arguments then aux) and outputs: fills
/// unknown entries, may fill unknown inputs, errors on inconsistency.
pub type InferShapeFn =
    Arc<dyn Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> + Send + Sync>;

/// Dtype inference, like [`InferShapeFn`].
pub type InferTypeFn =
    Arc<dyn Fn(&Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> + Send + Sync>;

/// Names that may depend on the attributes (e.g. `num_args` inputs).
pub type NamesFn = Arc<dyn Fn(&Attrs) -> Result<Vec<String>> + Send + Sync>;

/// Builds per-instance state from the attributes, input shapes and dtypes.
pub type CreateStateFn = Arc<dyn Fn(&Attrs, &[Shape], &[DType], Device) -> Result<OpState> + Send + Sync>;

/// Derives a value from the attributes once per call (a parsed parameter
/// struct, a looked-up custom-op property); kernels read it with
/// [`Attrs::prepared`].
pub type PrepareFn = Arc<dyn Fn(&Attrs) -> Result<Arc<dyn Any + Send + Sync>> + Send + Sync>;

/// What a gradient rule sees.
pub struct GradCtx<'a> {
    /// The forward call's attributes.
    pub attrs: &'a Attrs,
    /// The forward inputs (recorded: differentiating through them works).
    pub inputs: &'a [NDArray],
    /// The forward outputs.
    pub outputs: &'a [NDArray],
    /// The gradient flowing into each output (zeros where none flows).
    pub out_grads: &'a [NDArray],
    /// Which inputs need a gradient.
    pub needs_grad: &'a [bool],
    /// The instance state of a stateful operator.
    pub state: Option<&'a OpState>,
    /// True in train mode.
    pub is_train: bool,
    /// Buffers the rule may store some inputs' gradients straight into
    /// (see [`GradInto`]); `None` when none are offered.
    pub grad_into: Option<&'a GradInto>,
}

/// Gradient buffers offered to a gradient rule by a `backward` pass: for an
/// input that is a variable with `grad_req='write'` and no other consumer,
/// the variable's own gradient buffer. A rule may [`store`](Self::store)
/// that input's gradient there and return `None` for it, which saves the
/// backward pass a copy (a cached graph's rule does); a rule that ignores
/// the offer returns the gradient as usual.
///
/// A buffer may come with a *ready* callback (the backward pass's
/// [gradient-ready hook](crate::autograd::set_grad_ready_hook)): a rule
/// that computes its gradients in several steps calls
/// [`finished`](Self::finished) as soon as one of them is complete in its
/// buffer, so that a data-parallel trainer can start summing it over the
/// workers while the rest of the backward pass still runs.
#[derive(Default)]
pub struct GradInto {
    buffers: Vec<Option<NDArray>>,
    stored: Vec<std::sync::atomic::AtomicBool>,
    ready: Vec<Option<ReadyFn>>,
    announced: Vec<std::sync::atomic::AtomicBool>,
}

/// A callback run once a gradient is complete in its buffer.
pub type ReadyFn = Arc<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for GradInto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradInto").field("buffers", &self.buffers).field("stored", &self.stored).finish()
    }
}

impl GradInto {
    /// Offers `buffers[i]` for input `i`'s gradient.
    pub fn new(buffers: Vec<Option<NDArray>>) -> Self {
        let ready = vec![None; buffers.len()];
        Self::with_ready(buffers, ready)
    }

    /// Offers `buffers[i]` for input `i`'s gradient, with `ready[i]` to run
    /// once that gradient is complete there (see [`finished`](Self::finished)).
    pub fn with_ready(buffers: Vec<Option<NDArray>>, mut ready: Vec<Option<ReadyFn>>) -> Self {
        let flags = || buffers.iter().map(|_| std::sync::atomic::AtomicBool::new(false)).collect::<Vec<_>>();
        ready.resize(buffers.len(), None);
        Self { stored: flags(), announced: flags(), ready, buffers }
    }

    /// Declares input `i`'s gradient complete in its offered buffer (the
    /// rule wrote it there, in full, by some means of its own) and runs its
    /// ready callback, once. Nothing happens when no buffer is offered.
    pub fn finished(&self, i: usize) {
        if self.offered(i).is_none() {
            return;
        }
        self.stored[i].store(true, std::sync::atomic::Ordering::Release);
        if !self.announced[i].swap(true, std::sync::atomic::Ordering::AcqRel) {
            if let Some(ready) = &self.ready[i] {
                ready();
            }
        }
    }

    /// True when input `i`'s ready callback has run.
    pub fn was_announced(&self, i: usize) -> bool {
        self.announced.get(i).is_some_and(|a| a.load(std::sync::atomic::Ordering::Acquire))
    }

    /// The buffer offered for input `i`, if any.
    pub fn offered(&self, i: usize) -> Option<&NDArray> {
        self.buffers.get(i).and_then(Option::as_ref)
    }

    /// Copies `value` into the buffer offered for input `i` and returns
    /// true; returns false (and does nothing) when none is offered. A
    /// `value` that is the offered buffer itself (the rule computed into
    /// it) is only marked stored.
    pub fn store(&self, i: usize, value: &NDArray) -> Result<bool> {
        self.compute_into(i, |buf| {
            if buf.same_handle(value) {
                return Ok(());
            }
            if buf.shape() != value.shape() {
                return Err(Error::Shape(format!(
                    "the gradient of input {i} has shape {:?}, its buffer {:?}",
                    value.shape(),
                    buf.shape()
                )));
            }
            buf.assign_from(value)
        })
    }

    /// Lets `write` compute input `i`'s gradient straight into its offered
    /// buffer (it must overwrite every element, as under request `write`)
    /// and returns true; returns false without calling it when none is
    /// offered.
    pub fn compute_into(&self, i: usize, write: impl FnOnce(&NDArray) -> Result<()>) -> Result<bool> {
        let Some(buf) = self.offered(i) else { return Ok(false) };
        write(buf)?;
        self.stored[i].store(true, std::sync::atomic::Ordering::Release);
        Ok(true)
    }

    /// True when the rule stored input `i`'s gradient in its buffer.
    pub fn was_stored(&self, i: usize) -> bool {
        self.stored.get(i).is_some_and(|s| s.load(std::sync::atomic::Ordering::Acquire))
    }
}

/// A gradient rule composed of operator calls: returns one gradient per
/// input (`None` where not needed or zero). Because it calls operators, it
/// is itself differentiable, which gives higher-order gradients.
pub type GradRuleFn = Arc<dyn Fn(&GradCtx) -> Result<Vec<Option<NDArray>>> + Send + Sync>;

/// Arrays handed to a backward kernel; entries the operator did not declare
/// as dependencies are `None`.
pub struct BackwardArgs<'a> {
    /// Gradients of the outputs.
    pub out_grads: &'a [Option<NDArray>],
    /// The forward inputs.
    pub inputs: &'a [Option<NDArray>],
    /// The forward outputs.
    pub outputs: &'a [Option<NDArray>],
}

/// A backward kernel: stores input gradients into `in_grads` according to
/// `ctx.req` (one request per input).
pub type BackwardFn = Arc<dyn Fn(&OpContext, &BackwardArgs, &[NDArray]) -> Result<()> + Send + Sync>;

/// Which forward arrays a backward kernel reads (the rest can be freed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackwardDeps {
    /// Indices of outputs whose gradients are needed.
    pub out_grads: Vec<usize>,
    /// Indices of inputs needed.
    pub inputs: Vec<usize>,
    /// Indices of outputs needed.
    pub outputs: Vec<usize>,
}

/// Declares the backward dependencies from the attributes.
pub type BackwardDepsFn = Arc<dyn Fn(&Attrs) -> BackwardDeps + Send + Sync>;

/// How an operator differentiates.
#[derive(Clone)]
pub enum Gradient {
    /// Not differentiable: asking for a gradient through it is an error.
    None,
    /// Differentiable with zero gradient everywhere (comparisons, argmax, ...).
    Zero,
    /// A rule composed of operators (supports higher order).
    Rule(GradRuleFn),
    /// A backward kernel with its dependency declaration (first order only).
    Kernel {
        /// Which forward arrays the kernel reads.
        deps: BackwardDepsFn,
        /// The kernel.
        backward: BackwardFn,
    },
}

/// A complete operator description. Build one with [`OpDef::new`] and the
/// builder methods, then [`register`](crate::registry::register) it.
#[derive(Clone)]
pub struct OpDef {
    /// The registered name.
    pub name: String,
    /// Other names it answers to.
    pub aliases: Vec<String>,
    /// Documentation shown by listings and the Python face.
    pub doc: String,
    /// Declared attributes.
    pub attrs: Vec<AttrSpec>,
    /// Accept (and keep as strings) keywords that are not declared.
    pub allow_extra_attrs: bool,
    /// Names of the arguments (inputs that are not aux states). Set names
    /// through the builder methods, which keep the cached counts in step.
    pub arguments: NamesFn,
    /// Names of the outputs.
    pub outputs: NamesFn,
    /// Names of the auxiliary states (inputs after the arguments).
    pub aux_states: NamesFn,
    /// Shape inference.
    pub infer_shape: InferShapeFn,
    /// Shape inference over partially known shapes, for graph inference
    /// (MXNet's `infer_shape_partial`): a dimension of 0 is an unknown
    /// extent. It fills what it can, returns `Ok` when it knows too little,
    /// and errs only on a real conflict. `None`: the operator sees a shape
    /// only once it is complete (then [`OpDef::infer_shape`] runs).
    pub infer_shape_partial: Option<InferShapeFn>,
    /// Dtype inference.
    pub infer_type: InferTypeFn,
    /// Forward kernels by device kind (`Device::Cpu`, `Device::Gpu(0)` for any GPU).
    pub forward: Vec<(Device, ForwardFn)>,
    /// For data-dependent output shapes: a kernel that allocates its outputs
    /// (used instead of `forward`, and without shape inference).
    pub forward_dynamic: Option<ForwardDynamicFn>,
    /// Differentiation.
    pub gradient: Gradient,
    /// A [`Gradient::Kernel`] that takes GPU arrays (device pointers);
    /// otherwise a GPU call of the backward kernel runs on host copies.
    pub backward_on_gpu: bool,
    /// Indices of inputs the kernel writes to (aux states).
    pub mutate_inputs: MutateInputsFn,
    /// Resources the kernel uses.
    pub resources: Vec<Resource>,
    /// Per-instance state for stateful operators.
    pub create_state: Option<CreateStateFn>,
    /// Derives a value from the attributes once per call.
    pub prepare: Option<PrepareFn>,
    /// The kernel accepts non-contiguous inputs (otherwise the dispatcher
    /// hands it contiguous copies).
    pub accepts_strided: bool,
    /// Pairs `(input, output)`: the kernel may write that output over that
    /// input's buffer (request `inplace`; element-wise kernels). Graph
    /// memory planning uses them.
    pub inplace: Vec<(usize, usize)>,
    /// How many leading outputs callers see (the rest, such as Dropout's
    /// mask, are kept for the gradient). `None`: all of them.
    pub visible_outputs: Option<usize>,
    /// How many trailing outputs callers do not see, for operators whose
    /// output count depends on the attributes (RNN's workspace for its
    /// gradient follows one to three visible outputs). See
    /// [`OpDef::visible_count`].
    pub hidden_outputs: usize,
    /// Attributes of the variables that symbol composition makes for the
    /// inputs a caller leaves out (MXNet's `FSetInputVarAttrOnCompose`:
    /// BatchNorm's `moving_var` gets `__init__ = ["one", {}]`).
    pub input_var_attrs: Option<InputVarAttrsFn>,
    /// Counts of (arguments, aux states, outputs) when the names are fixed,
    /// so that calls need not build the name lists.
    pub(crate) fixed_counts: [Option<usize>; 3],
    /// Counts of (arguments, aux states, outputs) computed from the
    /// attributes without building name lists (see [`OpDef::arity_fn`]).
    pub(crate) arity: Option<ArityFn>,
}

/// Indices of the inputs a kernel writes to, from the attributes.
pub type MutateInputsFn = Arc<dyn Fn(&Attrs) -> Vec<usize> + Send + Sync>;

/// Attributes for the variable made for the input named by the second
/// argument, from the operator's attributes.
pub type InputVarAttrsFn = Arc<dyn Fn(&Attrs, &str) -> Vec<(String, String)> + Send + Sync>;

/// Counts of (arguments, aux states, outputs) from the attributes.
pub type ArityFn = Arc<dyn Fn(&Attrs) -> Result<[usize; 3]> + Send + Sync>;

fn fixed_names(names: &[&str]) -> NamesFn {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    Arc::new(move |_| Ok(names.clone()))
}

/// Shape inference for operators whose outputs all have the shape of their
/// (equally shaped) inputs; fills unknown inputs from known ones.
pub fn same_shape(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let known = ins.iter().chain(outs.iter()).flatten().next().cloned();
    let Some(shape) = known else {
        return Err(Error::Shape("no input shape is known".into()));
    };
    for s in ins.iter_mut().chain(outs.iter_mut()) {
        match s {
            Some(have) if *have != shape => {
                return Err(Error::Shape(format!("shapes {shape:?} and {have:?} must be equal")))
            }
            _ => *s = Some(shape.clone()),
        }
    }
    Ok(())
}

/// [`same_shape`] over partially known shapes: every input and output has
/// one shape, merged dimension by dimension (0 unknown); nothing known is
/// not an error.
pub fn same_shape_partial(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let mut merged: Option<Shape> = None;
    for s in ins.iter().chain(outs.iter()).flatten() {
        match &mut merged {
            None => merged = Some(s.clone()),
            Some(m) => crate::shape::merge_partial(m, s)?,
        }
    }
    if let Some(m) = merged {
        for s in ins.iter_mut().chain(outs.iter_mut()) {
            *s = Some(m.clone());
        }
    }
    Ok(())
}

/// Dtype inference: every input and output has one dtype.
pub fn same_dtype(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let known = ins.iter().chain(outs.iter()).flatten().next().copied();
    let Some(dt) = known else {
        return Err(Error::DType("no input dtype is known".into()));
    };
    for d in ins.iter_mut().chain(outs.iter_mut()) {
        match d {
            Some(have) if *have != dt => {
                return Err(Error::DType(format!("dtypes {dt} and {have} must be equal")))
            }
            _ => *d = Some(dt),
        }
    }
    Ok(())
}

impl OpDef {
    /// A new operator with one input `data`, one output `output`, no
    /// attributes, same-shape and same-dtype inference, no kernel and no gradient.
    pub fn new(name: &str) -> OpDef {
        OpDef {
            name: name.to_string(),
            aliases: Vec::new(),
            doc: String::new(),
            attrs: Vec::new(),
            allow_extra_attrs: false,
            arguments: fixed_names(&["data"]),
            outputs: fixed_names(&["output"]),
            aux_states: fixed_names(&[]),
            infer_shape: Arc::new(same_shape),
            infer_shape_partial: Some(Arc::new(same_shape_partial)),
            infer_type: Arc::new(same_dtype),
            forward: Vec::new(),
            forward_dynamic: None,
            gradient: Gradient::None,
            backward_on_gpu: false,
            mutate_inputs: Arc::new(|_| Vec::new()),
            resources: Vec::new(),
            create_state: None,
            prepare: None,
            accepts_strided: false,
            inplace: Vec::new(),
            visible_outputs: None,
            hidden_outputs: 0,
            input_var_attrs: None,
            fixed_counts: [Some(1), Some(0), Some(1)],
            arity: None,
        }
    }

    /// Sets the documentation.
    pub fn doc(mut self, doc: &str) -> Self {
        self.doc = doc.to_string();
        self
    }

    /// Adds another name.
    pub fn alias(mut self, alias: &str) -> Self {
        self.aliases.push(alias.to_string());
        self
    }

    /// Declares an attribute.
    pub fn attr(mut self, spec: AttrSpec) -> Self {
        self.attrs.push(spec);
        self
    }

    /// Accepts undeclared keywords.
    pub fn allow_extra_attrs(mut self) -> Self {
        self.allow_extra_attrs = true;
        self
    }

    /// Fixed argument names.
    pub fn arguments(mut self, names: &[&str]) -> Self {
        self.fixed_counts[0] = Some(names.len());
        self.arguments = fixed_names(names);
        self
    }

    /// Argument names computed from the attributes.
    pub fn arguments_fn(mut self, f: impl Fn(&Attrs) -> Result<Vec<String>> + Send + Sync + 'static) -> Self {
        self.fixed_counts[0] = None;
        self.arguments = Arc::new(f);
        self
    }

    /// A fast count of (arguments, aux states, outputs) for operators whose
    /// names depend on the attributes; it must agree with the name lists.
    pub fn arity_fn(mut self, f: impl Fn(&Attrs) -> Result<[usize; 3]> + Send + Sync + 'static) -> Self {
        self.arity = Some(Arc::new(f));
        self
    }

    /// Fixed output names.
    pub fn outputs(mut self, names: &[&str]) -> Self {
        self.fixed_counts[2] = Some(names.len());
        self.outputs = fixed_names(names);
        self
    }

    /// Output names computed from the attributes.
    pub fn outputs_fn(mut self, f: impl Fn(&Attrs) -> Result<Vec<String>> + Send + Sync + 'static) -> Self {
        self.fixed_counts[2] = None;
        self.outputs = Arc::new(f);
        self
    }

    /// Fixed auxiliary-state names.
    pub fn aux_states(mut self, names: &[&str]) -> Self {
        self.fixed_counts[1] = Some(names.len());
        self.aux_states = fixed_names(names);
        self
    }

    /// Aux-state names computed from the attributes.
    pub fn aux_states_fn(
        mut self,
        f: impl Fn(&Attrs) -> Result<Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        self.fixed_counts[1] = None;
        self.aux_states = Arc::new(f);
        self
    }

    /// Shape inference over complete shapes. It replaces any partial
    /// inference set before (see [`OpDef::infer_shape_partial`]).
    pub fn infer_shape(
        mut self,
        f: impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.infer_shape = Arc::new(f);
        self.infer_shape_partial = None;
        self
    }

    /// Shape inference that also understands partially known shapes (a
    /// dimension of 0 unknown), used for both: imperative calls pass
    /// complete shapes, graph inference partial ones. Use it when one
    /// function serves both (a zero-size extent then reads as unknown, as
    /// in MXNet's legacy shape semantics); otherwise set
    /// [`OpDef::infer_shape`] and then this with a second function.
    pub fn infer_shape_partial(
        mut self,
        f: impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.infer_shape_partial = Some(Arc::new(f));
        self
    }

    /// Dtype inference.
    pub fn infer_type(
        mut self,
        f: impl Fn(&Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.infer_type = Arc::new(f);
        self
    }

    /// The CPU forward kernel.
    pub fn forward(
        self,
        f: impl Fn(&OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.forward_on(Device::Cpu, f)
    }

    /// A forward kernel for a device kind.
    pub fn forward_on(
        mut self,
        device: Device,
        f: impl Fn(&OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        let key = kernel_key(device);
        self.forward.retain(|(d, _)| *d != key);
        self.forward.push((key, Arc::new(f)));
        self
    }

    /// A kernel that computes and allocates its outputs itself (output shapes
    /// depend on the data). Dtype inference still runs on the inputs.
    pub fn forward_dynamic(
        mut self,
        f: impl Fn(&OpContext, &[NDArray]) -> Result<Vec<NDArray>> + Send + Sync + 'static,
    ) -> Self {
        self.forward_dynamic = Some(Arc::new(f));
        self
    }

    /// A gradient rule composed of operators.
    pub fn grad_rule(
        mut self,
        f: impl Fn(&GradCtx) -> Result<Vec<Option<NDArray>>> + Send + Sync + 'static,
    ) -> Self {
        self.gradient = Gradient::Rule(Arc::new(f));
        self
    }

    /// A backward kernel with its dependencies.
    pub fn backward(
        mut self,
        deps: impl Fn(&Attrs) -> BackwardDeps + Send + Sync + 'static,
        f: impl Fn(&OpContext, &BackwardArgs, &[NDArray]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.gradient = Gradient::Kernel { deps: Arc::new(deps), backward: Arc::new(f) };
        self
    }

    /// Declares that the backward kernel (see [`OpDef::backward`]) takes
    /// arrays on any device, GPU arrays included. Without it a backward
    /// call on the GPU runs the kernel on host copies.
    pub fn backward_runs_on_gpu(mut self) -> Self {
        self.backward_on_gpu = true;
        self
    }

    /// Declares the gradient to be zero everywhere.
    pub fn zero_grad(mut self) -> Self {
        self.gradient = Gradient::Zero;
        self
    }

    /// Declares mutated inputs.
    pub fn mutate_inputs(mut self, f: impl Fn(&Attrs) -> Vec<usize> + Send + Sync + 'static) -> Self {
        self.mutate_inputs = Arc::new(f);
        self
    }

    /// Declares a resource.
    pub fn resource(mut self, r: Resource) -> Self {
        self.resources.push(r);
        self
    }

    /// Makes the operator stateful.
    pub fn create_state(
        mut self,
        f: impl Fn(&Attrs, &[Shape], &[DType], Device) -> Result<OpState> + Send + Sync + 'static,
    ) -> Self {
        self.create_state = Some(Arc::new(f));
        self
    }

    /// A hook deriving a value from the attributes once per call.
    pub fn prepare(
        mut self,
        f: impl Fn(&Attrs) -> Result<Arc<dyn Any + Send + Sync>> + Send + Sync + 'static,
    ) -> Self {
        self.prepare = Some(Arc::new(f));
        self
    }

    /// Lets the kernel see non-contiguous inputs.
    pub fn accepts_strided(mut self) -> Self {
        self.accepts_strided = true;
        self
    }

    /// Declares that output `o` may be written over input `i` for each
    /// `(i, o)` (the kernel handles request `inplace` with that aliasing).
    pub fn inplace(mut self, pairs: &[(usize, usize)]) -> Self {
        self.inplace = pairs.to_vec();
        self
    }

    /// Sets attributes on the variables that symbol composition makes for
    /// inputs left out, by input name (see [`OpDef::input_var_attrs`]).
    pub fn input_var_attrs(
        mut self,
        f: impl Fn(&Attrs, &str) -> Vec<(String, String)> + Send + Sync + 'static,
    ) -> Self {
        self.input_var_attrs = Some(Arc::new(f));
        self
    }

    /// Shows callers only the first `n` outputs (front ends such as Python
    /// return those); the others exist for the gradient.
    pub fn visible_outputs(mut self, n: usize) -> Self {
        self.visible_outputs = Some(n);
        self
    }

    /// Hides the last `n` outputs from callers, whatever the output count
    /// (they exist for the gradient).
    pub fn hidden_outputs(mut self, n: usize) -> Self {
        self.hidden_outputs = n;
        self
    }

    /// How many of a call's `total` outputs callers see: the first
    /// [`visible_outputs`](Self::visible_outputs) (when set), less the
    /// [`hidden_outputs`](Self::hidden_outputs).
    pub fn visible_count(&self, total: usize) -> usize {
        self.visible_outputs.map_or(total, |v| v.min(total)).saturating_sub(self.hidden_outputs)
    }

    /// Validates keyword attributes for this operator (and runs `prepare`).
    pub fn parse_attrs(&self, given: &[(&str, crate::AttrValue)]) -> Result<Attrs> {
        let mut attrs =
            Attrs::parse(&self.attrs, self.allow_extra_attrs, given).map_err(|e| e.in_op(&self.name))?;
        if let Some(prepare) = &self.prepare {
            let p = prepare(&attrs).map_err(|e| e.in_op(&self.name))?;
            attrs.set_prepared(p);
        }
        Ok(attrs)
    }

    /// The kernel for `device`.
    pub fn kernel_for(&self, device: Device) -> Result<&ForwardFn> {
        let key = kernel_key(device);
        self.forward
            .iter()
            .find(|(d, _)| *d == key)
            .map(|(_, f)| f)
            .ok_or_else(|| Error::Device(format!("operator `{}` has no kernel for {device}", self.name)))
    }
}

/// Kernels are registered per device kind: every GPU shares `Gpu(0)`'s entry.
fn kernel_key(device: Device) -> Device {
    match device {
        Device::Gpu(_) => Device::Gpu(0),
        _ => Device::Cpu,
    }
}

impl fmt::Debug for OpDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpDef")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("attrs", &self.attrs.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}
