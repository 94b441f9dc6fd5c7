//! [`Executor`]: a symbol bound to arrays (MXNet's `bind`/`simple_bind`).
//!
//! Binding infers every entry's shape and dtype once, builds the backward
//! graph of the arguments that want gradients ([`crate::gradient`]), plans
//! the memory of every operator output over both ([`crate::plan`]) and
//! carves those buffers out of shared blocks once. `forward` runs the
//! forward nodes in order through the same operator kernels eager calls
//! use, writing into the planned buffers (no allocation per operator);
//! `backward` runs the backward nodes and stores each argument's gradient
//! under its request (`write`, `add`, `null`). Stateful operators get one
//! state, shared by their forward and `_backward_` nodes.

mod bind;
mod redirect;

pub use bind::{simple_bind, GradReqs};

use crate::indexed::IndexedGraph;
use crate::node::OpCall;
use crate::plan::MemoryPlan;
use crate::symbol::{shape_string, Symbol};
use oxnet_core::autograd;
use oxnet_core::op::ForwardFn;
use oxnet_core::{DType, Device, Error, NDArray, OpContext, OpState, Req, Result, Shape};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A callback shown each operator output after it is computed:
/// `(output name, array)`.
pub type MonitorFn = Box<dyn FnMut(&str, &NDArray) + Send>;

/// A symbol bound to argument, gradient and auxiliary arrays.
pub struct Executor {
    symbol: Symbol,
    /// The symbol as run: `symbol` after the graph passes (common
    /// subexpression elimination, see [`crate::cse`]).
    optimized: Symbol,
    /// The forward graph followed by the backward graph.
    graph: IndexedGraph,
    /// Operator nodes of the forward part, then of the backward part, in order.
    forward_steps: Vec<usize>,
    backward_steps: Vec<usize>,
    device: Device,
    arg_names: Vec<String>,
    aux_names: Vec<String>,
    args: Vec<NDArray>,
    grads: Vec<Option<NDArray>>,
    reqs: Vec<Req>,
    aux: Vec<NDArray>,
    /// The value of each variable node (arguments, aux states, output
    /// gradients, constants), by node id.
    var_values: Vec<Option<NDArray>>,
    /// Node ids of the argument and aux variables: (node, (is aux, position)).
    var_nodes: Vec<(usize, (bool, usize))>,
    /// The planned buffer of each operator output, by entry id.
    buffers: Vec<Option<NDArray>>,
    /// Operator state by node id (created on first use); backward nodes
    /// use their forward node's (`state_source`).
    states: Vec<Option<OpState>>,
    state_source: HashMap<usize, usize>,
    /// Entries of the forward heads, and of each argument's gradient.
    head_entries: Vec<usize>,
    grad_entries: Vec<Option<usize>>,
    /// Buffers for the gradients flowing into each forward head (`None`
    /// for a head whose gradient no backward step reads: as MXNet, the
    /// gradient given for it is not looked at).
    head_grad_buffers: Vec<Option<NDArray>>,
    plan: MemoryPlan,
    /// The memory blocks the plan carves buffers from (byte arrays); a
    /// reshaped executor reuses them where they are large enough.
    blocks: Vec<NDArray>,
    /// The operator nodes resolved for running: forward ones first.
    steps: Vec<Step>,
    /// Where steps read a variable: (variable node, step, input slot), so
    /// that rebinding an input updates only those slots.
    var_uses: Vec<(usize, usize, usize)>,
    outputs: Vec<NDArray>,
    monitor: Option<MonitorFn>,
    forwarded: bool,
    /// Per argument: whether its gradient could be written straight into
    /// an array of the caller's (see [`redirect_gradients`](Self::redirect_gradients)):
    /// a `write` request, an entry one backward step overwrites whole (not
    /// in place) and nothing else reads, that is neither an output nor
    /// another argument's gradient. With the step and output slot writing it.
    redirectable: Vec<Option<(usize, usize)>>,
    /// Per argument: the caller's array its gradient is written into
    /// instead of the planned buffer, if any.
    redirected: Vec<Option<NDArray>>,
}

/// One operator node, resolved for running.
struct Step {
    node: usize,
    /// The forward kernel, when it can be called directly.
    kernel: Option<ForwardFn>,
    inputs: Vec<NDArray>,
    outputs: Vec<NDArray>,
    reqs: Vec<Req>,
    visible: usize,
}

impl Executor {
    /// The array of entry `e`: a bound variable's or a planned buffer.
    fn value(&self, e: usize) -> Result<NDArray> {
        if let Some(b) = &self.buffers[e] {
            return Ok(b.clone());
        }
        let n = self.graph.row_ptr.partition_point(|&p| p <= e) - 1;
        self.var_values[n].clone().ok_or_else(|| {
            Error::Invalid(format!("bind: variable `{}` has no array bound", self.graph.nodes[n].name))
        })
    }

    /// The arrays, kernel and requests of each operator node, resolved once
    /// (again when the bound inputs change), so that a run only calls kernels.
    fn prepare_steps(&mut self) -> Result<()> {
        let mut steps = Vec::with_capacity(self.forward_steps.len() + self.backward_steps.len());
        let mut var_uses = Vec::new();
        for (s, &n) in self.forward_steps.iter().chain(&self.backward_steps).enumerate() {
            let node = &self.graph.nodes[n];
            let call = node.op.as_ref().expect("steps are operator nodes");
            let inputs: Vec<NDArray> = self.graph.inputs[n]
                .iter()
                .map(|&(m, k)| self.value(self.graph.entry(m, k)))
                .collect::<Result<_>>()?;
            for (slot, &(m, _)) in self.graph.inputs[n].iter().enumerate() {
                if self.graph.nodes[m].op.is_none() {
                    var_uses.push((m, s, slot));
                }
            }
            let first = self.graph.entry(n, 0);
            let outputs: Vec<NDArray> = (0..self.graph.num_outputs(n))
                .map(|k| self.buffers[first + k].clone().expect("planned"))
                .collect();
            let kernel = direct_kernel(call, &inputs, self.device);
            let reqs = (0..outputs.len())
                .map(|k| if self.plan.in_place[first + k] { Req::Inplace } else { Req::Write })
                .collect();
            steps.push(Step { node: n, kernel, inputs, outputs, reqs, visible: call.visible_outputs()? });
        }
        self.steps = steps;
        self.var_uses = var_uses;
        Ok(())
    }

    /// Runs the forward (or backward) operator nodes.
    /// `after_step` runs after each step with its index.
    fn run_steps(&mut self, backward: bool, after_step: &mut dyn FnMut(usize)) -> Result<()> {
        let range =
            if backward { self.forward_steps.len()..self.steps.len() } else { 0..self.forward_steps.len() };
        let is_train = autograd::is_training();
        let _graph = oxnet_core::profiler::graph_scope();
        for i in range {
            let n = self.steps[i].node;
            let node = self.graph.nodes[n].clone();
            let call = node.op.as_ref().expect("steps are operator nodes");
            let state = {
                let inputs = std::mem::take(&mut self.steps[i].inputs);
                let state = self.state_for(n, &inputs);
                self.steps[i].inputs = inputs;
                state.map_err(|e| e.in_node(&node.name, &call.op.name))?
            };
            let step = &self.steps[i];
            let result = match &step.kernel {
                Some(kernel) => {
                    let mut profiled = oxnet_core::profiler::op_scope(&call.op.name);
                    if let Some(p) = profiled.as_mut() {
                        p.set_node(&node.name);
                    }
                    let ctx = OpContext {
                        op_name: &call.op.name,
                        attrs: &call.attrs,
                        req: &step.reqs,
                        is_train,
                        device: self.device,
                        state: state.as_ref(),
                    };
                    match catch_unwind(AssertUnwindSafe(|| kernel(&ctx, &step.inputs, &step.outputs))) {
                        Ok(r) => r.map_err(|e| e.in_op(&call.op.name)),
                        Err(p) => Err(Error::Panic(oxnet_core::dispatch::panic_message(p.as_ref()))
                            .in_op(&call.op.name)),
                    }
                }
                None => {
                    let refs: Vec<&NDArray> = step.inputs.iter().collect();
                    oxnet_core::dispatch::invoke_into_with_state(
                        &call.op,
                        &refs,
                        &call.attrs,
                        &step.outputs,
                        &step.reqs,
                        state,
                    )
                }
            };
            result.map_err(|e| e.in_node(&node.name, &call.op.name))?;
            after_step(i);
            if let Some(monitor) = self.monitor.as_mut() {
                // As MXNet names them: a forward node's outputs by output
                // name, a backward kernel's as `<forward node>_backward_output[k]`.
                let forward_name = if backward {
                    self.state_source.get(&n).map(|&f| &self.graph.nodes[f].name)
                } else {
                    None
                };
                for (k, o) in step.outputs.iter().enumerate().take(step.visible) {
                    let name = match forward_name {
                        Some(f) if step.visible > 1 => format!("{f}_backward_output{k}"),
                        Some(f) => format!("{f}_backward_output"),
                        None => node.output_name(k)?,
                    };
                    monitor(&name, o);
                }
            }
        }
        Ok(())
    }

    /// The state node `n` runs with: its own (created on first use), or its
    /// forward node's for a `_backward_` node.
    fn state_for(&mut self, n: usize, inputs: &[NDArray]) -> Result<Option<OpState>> {
        let owner = self.state_source.get(&n).copied().unwrap_or(n);
        if let Some(s) = &self.states[owner] {
            return Ok(Some(s.clone()));
        }
        let call = self.graph.nodes[owner].op.as_ref().expect("operator node");
        let Some(create) = &call.op.create_state else { return Ok(None) };
        if owner != n {
            return Err(Error::Invalid("the backward node ran before its forward node".into()));
        }
        let shapes: Vec<Shape> = inputs.iter().map(|x| Shape::from_slice(x.shape())).collect();
        let dtypes: Vec<DType> = inputs.iter().map(|x| x.dtype()).collect();
        let state = create(&call.attrs, &shapes, &dtypes, self.device)?;
        self.states[owner] = Some(state.clone());
        Ok(Some(state))
    }

    /// Runs the graph's forward part (in train mode for `is_train`: Dropout
    /// is active, custom operators see `is_train`).
    pub fn forward(&mut self, is_train: bool) -> Result<&[NDArray]> {
        let _mode = autograd::pause();
        let _train = if is_train { autograd::train_mode() } else { autograd::predict_mode() };
        self.run_steps(false, &mut |_| {})?;
        self.forwarded = true;
        Ok(&self.outputs)
    }

    /// Runs the backward part after a forward pass (in either mode, as in
    /// MXNet: after a predict-mode forward, Dropout's mask is all ones and
    /// its gradient passes through): the gradient
    /// flowing into each output is `out_grads[i]` (ones where none is
    /// given; gradients beyond the outputs are ignored), and each argument's gradient is stored under its request
    /// (a `write` gradient that a single backward step overwrites whole, and
    /// nothing else reads, is written by that step straight into the bound
    /// array when the array is contiguous and shares memory with no input).
    pub fn backward(&mut self, out_grads: &[Option<NDArray>]) -> Result<()> {
        let Some(values) = self.backward_values(out_grads, &mut |_| {})? else { return Ok(()) };
        for (i, g) in values.iter().enumerate() {
            let (Some(g), Some(dst)) = (g, self.grads[i].clone()) else { continue };
            if g.same_handle(&dst) {
                continue; // the steps wrote it there
            }
            match self.reqs[i] {
                Req::Null => {}
                Req::Write | Req::Inplace => dst.assign_from(g)?,
                Req::Add => {
                    let op = oxnet_core::registry::get("elemwise_add")?;
                    oxnet_core::invoke_into(
                        &op,
                        &[&dst, g],
                        &oxnet_core::Attrs::empty(),
                        std::slice::from_ref(&dst),
                        &[Req::Write],
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Runs the backward part like [`backward`](Self::backward) but stores
    /// nothing under the requests itself: returns, per argument, its gradient
    /// where the graph computes one, as a view of the executor's own buffers
    /// (valid until the executor runs again) or the array it was redirected
    /// into ([`redirect_gradients`](Self::redirect_gradients)). `None` when
    /// every request is `null`. `finished(i)` runs as soon as a step has
    /// written argument `i`'s gradient, whole, into the array it was
    /// redirected into (while later steps still run).
    pub(crate) fn backward_values(
        &mut self,
        out_grads: &[Option<NDArray>],
        finished: &mut dyn FnMut(usize),
    ) -> Result<Option<Vec<Option<NDArray>>>> {
        if !self.forwarded {
            // MXNet runs the backward pass over whatever the forward
            // buffers hold; oxnet runs a train-mode forward pass first, so
            // the gradients are those of the bound arguments
            self.forward(true)?;
        }
        if self.backward_steps.is_empty() && self.grad_entries.iter().all(Option::is_none) {
            return Ok(None); // every grad_req is null
        }
        // as MXNet 1.9.1: one gradient per output is read and any beyond
        // the outputs are ignored (its tests pass LeakyReLU's prelu two)
        if !out_grads.is_empty() && out_grads.len() < self.outputs.len() {
            return Err(Error::Invalid(format!(
                "backward: {} output gradients given for {} outputs",
                out_grads.len(),
                self.outputs.len()
            )));
        }
        for (i, buf) in self.head_grad_buffers.iter().enumerate() {
            let Some(buf) = buf else { continue };
            match out_grads.get(i).and_then(|g| g.as_ref()) {
                Some(g) => buf
                    .assign_from(g)
                    .map_err(|e| Error::Shape(format!("backward: output gradient {i}: {e}")))?,
                None => buf.fill(1.0)?,
            }
        }
        let _mode = autograd::pause();
        let _train = autograd::train_mode();
        // (step, argument) for each gradient a step writes into its
        // destination, in step order: the steps run in that order
        let mut finals: Vec<(usize, usize)> = (0..self.args.len())
            .filter(|&i| self.redirected[i].is_some())
            .filter_map(|i| self.redirectable[i].map(|(s, _)| (s, i)))
            .collect();
        finals.sort_unstable();
        let mut next = 0;
        self.run_steps(true, &mut |s| {
            while let Some(&(_, i)) = finals.get(next).filter(|(t, _)| *t <= s) {
                finished(i);
                next += 1;
            }
        })?;
        let values = (0..self.grads.len())
            .map(|i| match (self.grad_entries[i], &self.redirected[i]) {
                (_, Some(dest)) => Ok(Some(dest.clone())),
                (Some(e), None) if self.reqs[i] != Req::Null => self.value(e).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(values))
    }

    /// The memory plan of the bound graph (forward and backward).
    pub fn memory_plan(&self) -> &MemoryPlan {
        &self.plan
    }

    /// Binds new argument and aux arrays of the same shapes and dtypes as
    /// the bound ones (a cached graph runs one executor on many inputs).
    pub fn set_inputs(&mut self, args: Vec<NDArray>, aux: Vec<NDArray>) -> Result<()> {
        if args.len() != self.args.len() || aux.len() != self.aux.len() {
            return Err(Error::Invalid(format!(
                "{} arguments and {} aux states given, the graph has {} and {}",
                args.len(),
                aux.len(),
                self.args.len(),
                self.aux.len()
            )));
        }
        let names = self.arg_names.iter().chain(&self.aux_names);
        for ((new, old), name) in args.iter().chain(&aux).zip(self.args.iter().chain(&self.aux)).zip(names) {
            if new.shape() != old.shape() || new.dtype() != old.dtype() {
                return Err(Error::Shape(format!(
                    "input `{name}` has shape {} and dtype {}; the graph was bound for {} and {}",
                    shape_string(new.shape()),
                    new.dtype(),
                    shape_string(old.shape()),
                    old.dtype()
                )));
            }
        }
        let mut changed = Vec::new();
        for &(n, slot) in &self.var_nodes {
            let value = match slot {
                (false, i) => &args[i],
                (true, i) => &aux[i],
            };
            if !self.var_values[n].as_ref().is_some_and(|old| old.same_handle(value)) {
                self.var_values[n] = Some(value.clone());
                changed.push(n);
            }
        }
        self.args = args;
        self.aux = aux;
        if changed.is_empty() {
            return Ok(());
        }
        // an output that is a variable shows the new array
        self.outputs = self.head_entries.iter().map(|&e| self.value(e)).collect::<Result<_>>()?;
        // only the steps reading a rebound variable change
        let mut touched = Vec::new();
        for &(n, s, slot) in &self.var_uses {
            if changed.contains(&n) {
                self.steps[s].inputs[slot] = self.var_values[n].clone().expect("bound above");
                touched.push(s);
            }
        }
        touched.dedup();
        for s in touched {
            let call = self.graph.nodes[self.steps[s].node].op.as_ref().expect("steps are operator nodes");
            self.steps[s].kernel = direct_kernel(call, &self.steps[s].inputs, self.device);
        }
        Ok(())
    }

    /// Sets a callback that sees every operator output during `forward` and
    /// `backward` (backward kernels named `<forward node>_backward_output[k]`).
    pub fn set_monitor_callback(&mut self, monitor: Option<MonitorFn>) {
        self.monitor = monitor;
    }

    /// The outputs of the last forward (the output buffers before any).
    pub fn outputs(&self) -> &[NDArray] {
        &self.outputs
    }

    /// The bound symbol.
    pub fn symbol(&self) -> &Symbol {
        &self.symbol
    }

    /// The symbol as it runs, after the graph passes (MXNet's
    /// `get_optimized_symbol`).
    pub fn optimized_symbol(&self) -> &Symbol {
        &self.optimized
    }

    /// The device the executor runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Argument names, in the order of [`Executor::arg_arrays`].
    pub fn arg_names(&self) -> &[String] {
        &self.arg_names
    }

    /// Aux-state names, in the order of [`Executor::aux_arrays`].
    pub fn aux_names(&self) -> &[String] {
        &self.aux_names
    }

    /// The argument arrays.
    pub fn arg_arrays(&self) -> &[NDArray] {
        &self.args
    }

    /// The gradient arrays (`None` where the request is `null`).
    pub fn grad_arrays(&self) -> &[Option<NDArray>] {
        &self.grads
    }

    /// The gradient requests.
    pub fn grad_reqs(&self) -> &[Req] {
        &self.reqs
    }

    /// The aux-state arrays.
    pub fn aux_arrays(&self) -> &[NDArray] {
        &self.aux
    }
}

/// The forward kernel of `call`, when the executor may call it directly:
/// the dispatcher would hand it these very arrays (contiguous inputs, or an
/// operator that takes strided ones; distinct planned outputs).
fn direct_kernel(call: &OpCall, inputs: &[NDArray], device: Device) -> Option<ForwardFn> {
    let direct = call.op.forward_dynamic.is_none()
        && (call.op.accepts_strided || inputs.iter().all(NDArray::is_contiguous));
    if direct {
        call.op.kernel_for(device).ok().cloned()
    } else {
        None
    }
}
