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

use crate::gradient::gradient;
use crate::indexed::IndexedGraph;
use crate::infer::{infer_complete, infer_dtypes, infer_shapes, is_complete};
use crate::node::OpCall;
use crate::plan::{plan_memory, MemoryPlan};
use crate::symbol::{shape_string, Symbol};
use oxnet_core::autograd;
use oxnet_core::op::ForwardFn;
use oxnet_core::{DType, Device, Error, NDArray, OpContext, OpState, Req, Result, Shape};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A callback shown each operator output after it is computed:
/// `(output name, array)`.
pub type MonitorFn = Box<dyn FnMut(&str, &NDArray) + Send>;

/// A symbol bound to argument, gradient and auxiliary arrays.
pub struct Executor {
    symbol: Symbol,
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
    /// Buffers for the gradients flowing into each forward head.
    head_grad_buffers: Vec<NDArray>,
    plan: MemoryPlan,
    /// The operator nodes resolved for running: forward ones first.
    steps: Vec<Step>,
    /// Where steps read a variable: (variable node, step, input slot), so
    /// that rebinding an input updates only those slots.
    var_uses: Vec<(usize, usize, usize)>,
    outputs: Vec<NDArray>,
    monitor: Option<MonitorFn>,
    trained: bool,
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

/// Gradient requests for [`simple_bind`]: one for all arguments or one per argument name.
#[derive(Debug, Clone)]
pub enum GradReqs {
    /// The same request for every argument.
    All(Req),
    /// A request per argument name; arguments not named get `null`.
    ByName(HashMap<String, Req>),
}

impl GradReqs {
    fn get(&self, name: &str) -> Req {
        match self {
            GradReqs::All(r) => *r,
            GradReqs::ByName(m) => m.get(name).copied().unwrap_or(Req::Null),
        }
    }
}

/// Binds `sym` with freshly allocated (zeroed) arrays whose shapes are
/// inferred from `shapes` (by variable name); dtypes from `types`, float32
/// for arguments that declare none (MXNet's `simple_bind`).
pub fn simple_bind(
    sym: &Symbol,
    device: Device,
    grad_req: &GradReqs,
    types: &HashMap<String, DType>,
    shapes: &HashMap<String, Vec<usize>>,
) -> Result<Executor> {
    let g = sym.indexed()?;
    let entry_shapes = infer_shapes(&g, shapes)?;
    let mut given_types = types.clone();
    for n in g.variables() {
        let node = &g.nodes[n];
        if node.attr("__dtype__").is_none() {
            given_types.entry(node.name.clone()).or_insert(DType::F32);
        }
    }
    let entry_types = infer_dtypes(&g, &given_types)?;
    let unknown: Vec<String> = g
        .variables()
        .into_iter()
        .filter(|&n| !is_complete(&entry_shapes[g.entry(n, 0)]))
        .map(|n| g.nodes[n].name.clone())
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Shape(format!(
            "simple_bind: cannot infer the shapes of {}; give them as keyword shapes",
            unknown.join(", ")
        )));
    }
    let alloc = |n: usize| -> Result<NDArray> {
        let e = g.entry(n, 0);
        let shape = entry_shapes[e].clone().expect("complete");
        NDArray::zeros(&shape, entry_types[e].unwrap_or(DType::F32), device)
    };
    let mut args = Vec::new();
    let mut grads = Vec::new();
    let mut reqs = Vec::new();
    for n in g.arguments() {
        let a = alloc(n)?;
        let req = grad_req.get(&g.nodes[n].name);
        grads.push(if req == Req::Null { None } else { Some(NDArray::zeros_like(&a)?) });
        reqs.push(req);
        args.push(a);
    }
    let aux = g.aux_states().into_iter().map(alloc).collect::<Result<Vec<_>>>()?;
    Executor::new(sym, device, args, grads, reqs, aux)
}

impl Executor {
    /// Binds `sym` to arrays given in `list_arguments` and
    /// `list_auxiliary_states` order, with one gradient buffer (or none) and
    /// one request per argument (MXNet's `bind`).
    pub fn new(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
    ) -> Result<Executor> {
        Self::build(sym, device, args, grads, reqs, aux, true)
    }

    /// An executor whose gradients are only read through
    /// [`backward_values`](Self::backward_values) (a cached graph's): no
    /// gradient arrays are bound, `reqs` only say which gradients to compute.
    pub(crate) fn without_gradient_arrays(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
    ) -> Result<Executor> {
        let grads = vec![None; args.len()];
        Self::build(sym, device, args, grads, reqs, aux, false)
    }

    fn build(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
        grads_bound: bool,
    ) -> Result<Executor> {
        let graph = sym.indexed()?;
        let arg_ids = graph.arguments();
        let aux_ids = graph.aux_states();
        let arg_names: Vec<String> = arg_ids.iter().map(|&n| graph.nodes[n].name.clone()).collect();
        let aux_names: Vec<String> = aux_ids.iter().map(|&n| graph.nodes[n].name.clone()).collect();
        let count = |what: &str, got: usize, names: &[String]| -> Result<()> {
            if got != names.len() {
                return Err(Error::Invalid(format!(
                    "bind: {got} {what} given, the symbol has {} ({})",
                    names.len(),
                    names.join(", ")
                )));
            }
            Ok(())
        };
        count("argument arrays", args.len(), &arg_names)?;
        count("gradient entries", grads.len(), &arg_names)?;
        count("gradient requests", reqs.len(), &arg_names)?;
        count("auxiliary arrays", aux.len(), &aux_names)?;
        for (i, (r, g)) in reqs.iter().zip(&grads).enumerate() {
            if grads_bound && *r != Req::Null && g.is_none() {
                return Err(Error::Invalid(format!(
                    "bind: argument `{}` has grad_req {r} but no gradient array",
                    arg_names[i]
                )));
            }
            if let Some(g) = g {
                if g.shape() != args[i].shape() {
                    return Err(Error::Shape(format!(
                        "bind: the gradient of `{}` has shape {}, the argument {}",
                        arg_names[i],
                        shape_string(g.shape()),
                        shape_string(args[i].shape())
                    )));
                }
            }
        }
        let mut given_shapes = HashMap::new();
        let mut given_types = HashMap::new();
        for (name, a) in arg_names.iter().zip(&args).chain(aux_names.iter().zip(&aux)) {
            given_shapes.insert(name.clone(), a.shape().to_vec());
            given_types.insert(name.clone(), a.dtype());
        }
        let fwd = sym.indexed()?;
        let (shapes, types) = infer_complete(&fwd, &given_shapes, &given_types).map_err(bind_error)?;

        // the backward graph of the arguments that want gradients
        let wrt: Vec<usize> =
            arg_ids.iter().zip(&reqs).filter(|(_, r)| **r != Req::Null).map(|(&n, _)| n).collect();
        let grad = if wrt.is_empty() { None } else { Some(gradient(&fwd, &shapes, &types, &wrt, device)?) };
        let full_symbol = match &grad {
            Some(gg) => Symbol::group(&[sym.clone(), gg.symbol.clone()]),
            None => sym.clone(),
        };
        let graph = full_symbol.indexed()?;
        let id_of: HashMap<usize, usize> =
            graph.nodes.iter().enumerate().map(|(i, n)| (Arc::as_ptr(n) as usize, i)).collect();
        // (a head gradient or constant the backward graph does not read is not in it)
        let id = |n: &Arc<crate::node::Node>| id_of.get(&(Arc::as_ptr(n) as usize)).copied();

        // shapes of every entry of the full graph: the forward part's as
        // inferred, the backward part's from its operators
        let mut var_values: Vec<Option<NDArray>> = vec![None; graph.nodes.len()];
        let mut var_nodes = Vec::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            if let Some(v) = id(&fwd.nodes[n]) {
                var_values[v] = Some(args[i].clone());
                var_nodes.push((v, (false, i)));
            }
        }
        for (i, &n) in aux_ids.iter().enumerate() {
            if let Some(v) = id(&fwd.nodes[n]) {
                var_values[v] = Some(aux[i].clone());
                var_nodes.push((v, (true, i)));
            }
        }
        let mut head_grad_buffers = Vec::new();
        let mut state_source = HashMap::new();
        if let Some(gg) = &grad {
            for (i, e) in gg.head_grads.iter().enumerate() {
                let (n, k) = fwd.heads[i];
                let fe = fwd.entry(n, k);
                let buf = NDArray::zeros(&shapes[fe], types[fe], device)?;
                if let Some(v) = id(&e.node) {
                    var_values[v] = Some(buf.clone());
                }
                head_grad_buffers.push(buf);
            }
            for (e, value) in &gg.constants {
                if let Some(v) = id(&e.node) {
                    var_values[v] = Some(value.clone());
                }
            }
            for (b, f) in &gg.shared_state {
                if let (Some(b), Some(f)) = (id(b), id(f)) {
                    state_source.insert(b, f);
                }
            }
        }
        let mut full_shapes = HashMap::new();
        let mut full_types = HashMap::new();
        for (n, v) in var_values.iter().enumerate() {
            if let Some(v) = v {
                full_shapes.insert(graph.nodes[n].name.clone(), v.shape().to_vec());
                full_types.insert(graph.nodes[n].name.clone(), v.dtype());
            }
        }
        let (all_shapes, all_types) =
            infer_complete(&graph, &full_shapes, &full_types).map_err(bind_error)?;

        let n_forward = fwd.nodes.len();
        let ops: Vec<usize> = (0..graph.nodes.len()).filter(|&n| !graph.nodes[n].is_variable()).collect();
        let forward_steps: Vec<usize> = ops.iter().copied().filter(|&n| n < n_forward).collect();
        let backward_steps: Vec<usize> = ops.iter().copied().filter(|&n| n >= n_forward).collect();
        let n_heads = sym.num_outputs();
        let head_entries: Vec<usize> =
            graph.heads[..n_heads].iter().map(|&(n, k)| graph.entry(n, k)).collect();
        let mut grad_entries = vec![None; arg_ids.len()];
        let mut slot = n_heads;
        for (i, r) in reqs.iter().enumerate() {
            if *r != Req::Null {
                let (n, k) = graph.heads[slot];
                grad_entries[i] = Some(graph.entry(n, k));
                slot += 1;
            }
        }
        let keep: HashSet<usize> =
            head_entries.iter().chain(grad_entries.iter().flatten()).copied().collect();
        let entry_bytes: Vec<usize> =
            all_shapes.iter().zip(&all_types).map(|(s, d)| s.iter().product::<usize>() * d.size()).collect();
        let steps: Vec<usize> = forward_steps.iter().chain(&backward_steps).copied().collect();
        // in-place candidates: declared by the operator, same size and dtype,
        // the input an operator output (variables are the user's arrays)
        let inplace: Vec<Vec<(usize, usize)>> = steps
            .iter()
            .map(|&n| {
                let call = graph.nodes[n].op.as_ref().expect("operator node");
                call.op
                    .inplace
                    .iter()
                    .filter_map(|&(i, o)| {
                        let &(m, k) = graph.inputs[n].get(i)?;
                        let (ie, oe) = (graph.entry(m, k), graph.entry(n, o));
                        let same = all_shapes[ie] == all_shapes[oe] && all_types[ie] == all_types[oe];
                        // a backward step never consumes a forward value:
                        // backward may run again without a new forward
                        let same_phase = (m < n_forward) == (n < n_forward);
                        (same && same_phase && !graph.nodes[m].is_variable()).then_some((ie, oe))
                    })
                    .collect()
            })
            .collect();
        let plan = plan_memory(&graph, &steps, &entry_bytes, &keep, &inplace);
        let blocks = plan
            .block_bytes
            .iter()
            .map(|&b| NDArray::zeros(&[b.max(1)], DType::U8, device))
            .collect::<Result<Vec<_>>>()?;
        let mut buffers: Vec<Option<NDArray>> = vec![None; graph.num_entries()];
        for (e, b) in plan.block_of.iter().enumerate() {
            if let Some(b) = b {
                buffers[e] = Some(blocks[*b].storage_view(&all_shapes[e], all_types[e])?);
            }
        }
        let states = vec![None; graph.nodes.len()];
        let mut exe = Executor {
            symbol: sym.clone(),
            graph,
            forward_steps,
            backward_steps,
            device,
            arg_names,
            aux_names,
            args,
            grads,
            reqs,
            aux,
            var_values,
            var_nodes,
            buffers,
            states,
            state_source,
            head_entries,
            grad_entries,
            head_grad_buffers,
            plan,
            steps: Vec::new(),
            var_uses: Vec::new(),
            outputs: Vec::new(),
            monitor: None,
            trained: false,
            redirectable: Vec::new(),
            redirected: Vec::new(),
        };
        exe.outputs = exe.head_entries.iter().map(|&e| exe.value(e)).collect::<Result<_>>()?;
        exe.prepare_steps()?;
        exe.redirectable = (0..exe.args.len()).map(|i| exe.redirectable_slot(i)).collect();
        exe.redirected = vec![None; exe.args.len()];
        if grads_bound {
            // bound `write` gradients are written by the steps themselves
            let bound: Vec<Option<NDArray>> = exe.grads.clone();
            exe.redirect_gradients(&bound)?;
        }
        Ok(exe)
    }

    /// The step and output slot that could write argument `i`'s gradient
    /// into a caller's array (see the field `redirectable`).
    fn redirectable_slot(&self, i: usize) -> Option<(usize, usize)> {
        if !matches!(self.reqs[i], Req::Write | Req::Inplace) {
            return None;
        }
        let e = self.grad_entries[i]?;
        let shared = self.grad_entries.iter().enumerate().any(|(j, g)| j != i && *g == Some(e));
        if shared || self.head_entries.contains(&e) || self.buffers[e].is_none() || self.plan.in_place[e] {
            return None;
        }
        let n = self.graph.row_ptr.partition_point(|&p| p <= e) - 1;
        let s = self.steps.iter().position(|st| st.node == n)?;
        let read = self
            .steps
            .iter()
            .any(|st| self.graph.inputs[st.node].iter().any(|&(m, k)| self.graph.entry(m, k) == e));
        (s >= self.forward_steps.len() && !read).then(|| (s, e - self.graph.entry(n, 0)))
    }

    /// Makes the backward steps write argument `i`'s gradient straight into
    /// `dests[i]` (such as the variable's own gradient buffer) instead of
    /// the planned buffer, which saves copying it there afterwards. Only
    /// where that is safe: see the field `redirectable`; besides, `dests[i]`
    /// must be contiguous, of the gradient's shape, dtype and device, and
    /// share memory with no bound input and no other destination. Elsewhere,
    /// and where `dests[i]` is `None`, the planned buffer is used again. The
    /// choice stays until the next call: offering the same arrays each time
    /// costs a few comparisons.
    pub(crate) fn redirect_gradients(&mut self, dests: &[Option<NDArray>]) -> Result<()> {
        for i in 0..self.args.len() {
            let Some((s, k)) = self.redirectable[i] else { continue };
            let want = dests.get(i).and_then(Option::as_ref).filter(|d| {
                let planned = &self.steps[s].outputs[k];
                d.shape() == planned.shape()
                    && d.dtype() == planned.dtype()
                    && d.device() == self.device
                    && d.is_contiguous()
                    && !self.args.iter().chain(&self.aux).any(|a| a.shares_storage(d))
                    && !dests
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != i && o.as_ref().is_some_and(|o| o.shares_storage(d)))
            });
            let unchanged = match (want, &self.redirected[i]) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same_handle(b),
                _ => false,
            };
            if unchanged {
                continue;
            }
            let e = self.grad_entries[i].expect("redirectable gradients have an entry");
            let target = match want {
                Some(d) => d.clone(),
                None => self.buffers[e].clone().expect("redirectable gradients are planned"),
            };
            self.steps[s].outputs[k] = target;
            self.redirected[i] = want.cloned();
        }
        Ok(())
    }

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
    fn run_steps(&mut self, backward: bool) -> Result<()> {
        let range =
            if backward { self.forward_steps.len()..self.steps.len() } else { 0..self.forward_steps.len() };
        let is_train = autograd::is_training();
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
            if !backward {
                if let Some(monitor) = self.monitor.as_mut() {
                    for (k, o) in step.outputs.iter().enumerate().take(step.visible) {
                        monitor(&node.output_name(k)?, o);
                    }
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
        self.run_steps(false)?;
        self.trained = is_train;
        Ok(&self.outputs)
    }

    /// Allows [`backward`](Self::backward) after a forward pass in predict
    /// mode: a cached graph recorded under `autograd.record(train_mode=False)`
    /// is differentiable, as in MXNet.
    pub(crate) fn allow_backward(&mut self) {
        self.trained = true;
    }

    /// Runs the backward part after a `forward(is_train=true)`: the gradient
    /// flowing into each output is `out_grads[i]` (ones where none is
    /// given), and each argument's gradient is stored under its request
    /// (a `write` gradient that a single backward step overwrites whole, and
    /// nothing else reads, is written by that step straight into the bound
    /// array when the array is contiguous and shares memory with no input).
    pub fn backward(&mut self, out_grads: &[Option<NDArray>]) -> Result<()> {
        let Some(values) = self.backward_values(out_grads)? else { return Ok(()) };
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
    /// every request is `null`.
    pub(crate) fn backward_values(
        &mut self,
        out_grads: &[Option<NDArray>],
    ) -> Result<Option<Vec<Option<NDArray>>>> {
        if !self.trained {
            return Err(Error::Autograd("backward needs a forward(is_train=True) first".into()));
        }
        if self.backward_steps.is_empty() && self.grad_entries.iter().all(Option::is_none) {
            return Ok(None); // every grad_req is null
        }
        if !out_grads.is_empty() && out_grads.len() != self.outputs.len() {
            return Err(Error::Invalid(format!(
                "backward: {} output gradients given for {} outputs",
                out_grads.len(),
                self.outputs.len()
            )));
        }
        for (i, buf) in self.head_grad_buffers.iter().enumerate() {
            match out_grads.get(i).and_then(|g| g.as_ref()) {
                Some(g) => buf
                    .assign_from(g)
                    .map_err(|e| Error::Shape(format!("backward: output gradient {i}: {e}")))?,
                None => buf.fill(1.0)?,
            }
        }
        let _mode = autograd::pause();
        let _train = autograd::train_mode();
        self.run_steps(true)?;
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

    /// Sets a callback that sees every operator output during `forward`.
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

    /// Copies `arg_params` and `aux_params` (by name) into the bound arrays.
    /// Names the executor lacks are an error unless `allow_extra`.
    pub fn copy_params_from(
        &self,
        arg_params: &HashMap<String, NDArray>,
        aux_params: &HashMap<String, NDArray>,
        allow_extra: bool,
    ) -> Result<()> {
        for (params, names, arrays, what) in [
            (arg_params, &self.arg_names, &self.args, "argument"),
            (aux_params, &self.aux_names, &self.aux, "aux state"),
        ] {
            for (name, value) in params {
                match names.iter().position(|n| n == name) {
                    Some(i) => arrays[i].assign_from(value).map_err(|e| {
                        Error::Invalid(format!("copy_params_from: {what} `{name}`: {e}"))
                    })?,
                    None if allow_extra => {}
                    None => {
                        return Err(Error::Invalid(format!(
                            "copy_params_from: the executor has no {what} `{name}` (pass allow_extra_params=True to skip it)"
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// A new executor for new input shapes. Arrays whose shape does not
    /// change are shared with this one; the others are new (zeroed). An
    /// argument not named in `shapes` that must change shape is an error
    /// unless `partial_shaping`.
    pub fn reshape(&self, shapes: &HashMap<String, Vec<usize>>, partial_shaping: bool) -> Result<Executor> {
        let entry_shapes = infer_shapes(&self.graph, shapes)?;
        let arg_ids = self.graph.arguments();
        let aux_ids = self.graph.aux_states();
        let renew = |n: usize, old: &NDArray| -> Result<Option<NDArray>> {
            let name = &self.graph.nodes[n].name;
            let e = self.graph.entry(n, 0);
            let new = entry_shapes[e].clone().filter(|_| is_complete(&entry_shapes[e])).ok_or_else(|| {
                Error::Shape(format!("reshape: the new shape of `{name}` cannot be inferred"))
            })?;
            if new == old.shape() {
                return Ok(None);
            }
            if !partial_shaping && !shapes.contains_key(name) {
                return Err(Error::Shape(format!(
                    "reshape: `{name}` would change shape from {} to {}; pass partial_shaping=True to allow it",
                    shape_string(old.shape()),
                    shape_string(&new)
                )));
            }
            Ok(Some(NDArray::zeros(&new, old.dtype(), self.device)?))
        };
        let mut args = Vec::new();
        let mut grads = Vec::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            match renew(n, &self.args[i])? {
                None => {
                    args.push(self.args[i].clone());
                    grads.push(self.grads[i].clone());
                }
                Some(a) => {
                    grads.push(match &self.grads[i] {
                        Some(_) => Some(NDArray::zeros_like(&a)?),
                        None => None,
                    });
                    args.push(a);
                }
            }
        }
        let aux = aux_ids
            .iter()
            .enumerate()
            .map(|(i, &n)| Ok(renew(n, &self.aux[i])?.unwrap_or_else(|| self.aux[i].clone())))
            .collect::<Result<Vec<_>>>()?;
        Executor::new(&self.symbol, self.device, args, grads, self.reqs.clone(), aux)
    }
}

fn bind_error(e: Error) -> Error {
    Error::Invalid(format!("bind: {e}"))
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
