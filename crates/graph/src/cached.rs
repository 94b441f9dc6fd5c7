//! [`CachedGraph`]: a graph called like an operator (MXNet's `CachedOp`,
//! what `hybridize()` runs).
//!
//! Calls are grouped by the shapes and dtypes of their inputs; each group
//! keeps a pool of bound [`Executor`]s (planned buffers, forward and
//! backward), so a call allocates no intermediate buffers, and several
//! threads can call one cached graph at once (each takes its own executor).
//!
//! Under `autograd.record()` the whole graph is one node on the tape: its
//! gradient runs the executor's backward part (the buffers of that call are
//! kept until then), or, when the gradient is itself recorded
//! (`create_graph`), evaluates the forward and backward graphs with
//! recorded operator calls, so higher orders follow. Graph and imperative
//! code therefore mix freely.

use crate::executor::Executor;
use crate::gradient::gradient;
use crate::indexed::IndexedGraph;
use crate::infer::{infer_complete, infer_head_dtypes, infer_head_shapes};
use crate::symbol::Symbol;
use oxnet_core::op::{GradCtx, OpDef, OpState};
use oxnet_core::{autograd, DType, Device, Error, NDArray, Req, Result, Shape};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Shapes and dtypes of a call's inputs, and which of them want a gradient.
type Signature = (Vec<(Vec<usize>, DType)>, Vec<bool>);

/// A graph called with arrays, as an operator.
pub struct CachedGraph {
    symbol: Symbol,
    input_names: Vec<String>,
    op: Arc<OpDef>,
    pools: Arc<Mutex<HashMap<Signature, Vec<Executor>>>>,
}

/// Per-call state of the tape node: the executor that ran the call, kept
/// for the backward pass.
struct CallState {
    exe: Mutex<Option<(Signature, Executor)>>,
    pools: Arc<Mutex<HashMap<Signature, Vec<Executor>>>>,
}

impl Drop for CallState {
    fn drop(&mut self) {
        let taken = self.exe.get_mut().map(Option::take).unwrap_or(None);
        if let Some((sig, exe)) = taken {
            give_back(&self.pools, sig, exe);
        }
    }
}

fn give_back(pools: &Mutex<HashMap<Signature, Vec<Executor>>>, sig: Signature, exe: Executor) {
    let mut pools = pools.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pools.entry(sig).or_default();
    // a few spares per signature are enough; more would only hold memory
    if pool.len() < 4 {
        pool.push(exe);
    }
}

impl CachedGraph {
    /// A cached graph of `symbol`; calls give arrays for `list_inputs()`
    /// (arguments, then aux states, in the graph's order).
    pub fn new(symbol: &Symbol) -> Result<CachedGraph> {
        let g = symbol.indexed()?;
        let args: Vec<String> = g.arguments().iter().map(|&n| g.nodes[n].name.clone()).collect();
        let aux: Vec<String> = g.aux_states().iter().map(|&n| g.nodes[n].name.clone()).collect();
        let n_args = args.len();
        let input_names: Vec<String> = args.iter().chain(&aux).cloned().collect();
        let pools: Arc<Mutex<HashMap<Signature, Vec<Executor>>>> = Arc::new(Mutex::new(HashMap::new()));
        let op = Arc::new(cached_op_def(symbol, &input_names, n_args, pools.clone())?);
        Ok(CachedGraph { symbol: symbol.clone(), input_names, op, pools })
    }

    /// The graph.
    pub fn symbol(&self) -> &Symbol {
        &self.symbol
    }

    /// Names of the inputs a call gives, in order.
    pub fn input_names(&self) -> &[String] {
        &self.input_names
    }

    /// Runs the graph on `inputs` (one per input name); recorded by autograd
    /// as one operator when recording.
    pub fn call(&self, inputs: &[&NDArray]) -> Result<Vec<NDArray>> {
        if inputs.len() != self.input_names.len() {
            return Err(Error::Invalid(format!(
                "the cached graph takes {} inputs ({}), got {}",
                self.input_names.len(),
                self.input_names.join(", "),
                inputs.len()
            )));
        }
        oxnet_core::invoke_op(&self.op, inputs, &oxnet_core::Attrs::empty())
    }

    /// How many executors are kept for reuse (for tests and statistics).
    pub fn pooled_executors(&self) -> usize {
        self.pools.lock().unwrap_or_else(|e| e.into_inner()).values().map(Vec::len).sum()
    }
}

/// Output facts (shapes or dtypes) of a cached graph by the facts of its
/// inputs: they depend on nothing else, and inferring the whole graph on
/// every call would cost more than running a small graph.
struct Memo<T>(Mutex<HashMap<Vec<T>, Vec<Option<T>>>>);

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(Mutex::new(HashMap::new()))
    }
}

impl<T: Clone + Eq + std::hash::Hash> Memo<T> {
    /// At most this many input signatures are remembered.
    const CAPACITY: usize = 64;

    /// Fills `outs` from the memo when every input is known and no output
    /// is, else with `infer` (remembering the answer in the first case).
    fn infer(
        &self,
        ins: &mut [Option<T>],
        outs: &mut [Option<T>],
        infer: impl FnOnce(&mut [Option<T>], &mut [Option<T>]) -> Result<()>,
    ) -> Result<()> {
        // Only the plain question (every input known, no output given) is
        // answered from the memo; anything else is inferred and checked.
        let key: Option<Vec<T>> =
            if outs.iter().all(Option::is_none) { ins.iter().cloned().collect() } else { None };
        if let Some(key) = &key {
            if let Some(known) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
                outs.clone_from_slice(known);
                return Ok(());
            }
        }
        infer(ins, outs)?;
        if let Some(key) = key {
            let mut memo = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if memo.len() >= Self::CAPACITY {
                memo.clear();
            }
            memo.insert(key, outs.to_vec());
        }
        Ok(())
    }
}

/// The signature of a call: while recording, the inputs that take part in
/// autograd get gradients (the others, such as data batches, do not cost a
/// backward computation).
fn signature(inputs: &[NDArray], n_args: usize) -> Signature {
    let recording = autograd::is_recording();
    (
        inputs.iter().map(|x| (x.shape().to_vec(), x.dtype())).collect(),
        inputs[..n_args].iter().map(|x| recording && x.takes_part_in_autograd()).collect(),
    )
}

/// An executor for `sig`: a pooled one, or a new one bound with `write`
/// gradients for the arguments that want one.
fn take_executor(
    symbol: &Symbol,
    pools: &Mutex<HashMap<Signature, Vec<Executor>>>,
    sig: &Signature,
    n_args: usize,
    device: Device,
) -> Result<Executor> {
    if let Some(exe) = pools.lock().unwrap_or_else(|e| e.into_inner()).get_mut(sig).and_then(Vec::pop) {
        return Ok(exe);
    }
    let (metas, wants) = sig;
    let zeros = |(s, d): &(Vec<usize>, DType)| NDArray::zeros(s, *d, device);
    let args = metas[..n_args].iter().map(zeros).collect::<Result<Vec<_>>>()?;
    let aux = metas[n_args..].iter().map(zeros).collect::<Result<Vec<_>>>()?;
    let reqs = wants.iter().map(|w| if *w { Req::Write } else { Req::Null }).collect();
    Executor::without_gradient_arrays(symbol, device, args, reqs, aux)
}

fn cached_op_def(
    symbol: &Symbol,
    input_names: &[String],
    n_args: usize,
    pools: Arc<Mutex<HashMap<Signature, Vec<Executor>>>>,
) -> Result<OpDef> {
    let outputs = symbol.list_outputs()?;
    let n_out = outputs.len();
    let names = input_names.to_vec();
    let graph = Arc::new(symbol.indexed()?);
    let (g_shape, g_type) = (graph.clone(), graph.clone());
    let (names_s, names_t) = (names.clone(), names.clone());
    let (sym_f, pools_f) = (symbol.clone(), pools.clone());
    let sym_g = symbol.clone();
    let n_in = names.len();
    let forward = move |ctx: &oxnet_core::OpContext, inputs: &[NDArray], outs: &[NDArray]| {
        let sig = signature(inputs, n_args);
        let mut exe = take_executor(&sym_f, &pools_f, &sig, n_args, ctx.device)?;
        exe.set_inputs(inputs[..n_args].to_vec(), inputs[n_args..].to_vec())?;
        let results = exe.forward(ctx.is_train)?.to_vec();
        for ((o, r), req) in outs.iter().zip(&results).zip(ctx.req) {
            oxnet_core::custom::assign(o, *req, r)?;
        }
        // keep this call's buffers for its backward pass while recording
        let state = ctx.state.and_then(|s| s.downcast_ref::<CallState>());
        match state {
            Some(st) if autograd::is_recording() => {
                *st.exe.lock().unwrap_or_else(|e| e.into_inner()) = Some((sig, exe));
            }
            _ => give_back(&pools_f, sig, exe),
        }
        Ok(())
    };
    Ok(OpDef::new("_CachedOp")
        .doc("A cached graph called as one operator.")
        .arguments_fn(move |_| Ok(names.clone()))
        .outputs_fn(move |_| Ok(outputs.clone()))
        .arity_fn(move |_| Ok([n_in, 0, n_out]))
        .infer_shape({
            let memo = Memo::default();
            move |_, ins, outs| {
                memo.infer(ins, outs, |ins, outs| infer_head_shapes(&g_shape, &names_s, ins, outs))
            }
        })
        .infer_type({
            let memo = Memo::default();
            move |_, ins, outs| {
                memo.infer(ins, outs, |ins, outs| infer_head_dtypes(&g_type, &names_t, ins, outs))
            }
        })
        .create_state({
            let pools = pools.clone();
            move |_, _, _, _| {
                Ok(Arc::new(CallState { exe: Mutex::new(None), pools: pools.clone() }) as OpState)
            }
        })
        // the same kernel on every device: the executor runs the graph where the arrays live
        .forward(forward.clone())
        .forward_on(Device::Gpu(0), forward)
        .grad_rule(move |g: &GradCtx| {
            let kept = g
                .state
                .and_then(|s| s.downcast_ref::<CallState>())
                .and_then(|st| st.exe.lock().unwrap_or_else(|e| e.into_inner()).take());
            match kept {
                Some((sig, mut exe))
                    if !autograd::is_recording()
                        && g.needs_grad.iter().zip(&sig.1).all(|(need, has)| !need || *has) =>
                {
                    let heads: Vec<Option<NDArray>> = g.out_grads.iter().cloned().map(Some).collect();
                    // Gradients whose variable's own buffer the backward pass
                    // offers are written there by the executor's steps; the
                    // others are views of its buffers, copied once before the
                    // executor goes back.
                    let offered: Vec<Option<NDArray>> = (0..n_args)
                        .map(|i| {
                            g.grad_into.filter(|_| g.needs_grad[i]).and_then(|into| into.offered(i)).cloned()
                        })
                        .collect();
                    exe.redirect_gradients(&offered)?;
                    // each gradient written into its variable's buffer is
                    // announced at once (a data-parallel trainer starts
                    // summing it while the later steps run)
                    let values = exe
                        .backward_values(&heads, &mut |i| {
                            if let Some(into) = g.grad_into {
                                into.finished(i);
                            }
                        })?
                        .unwrap_or_default();
                    let grads = values
                        .iter()
                        .zip(g.needs_grad)
                        .enumerate()
                        .map(|(i, (gr, need))| match (gr, need) {
                            (Some(gr), true) => {
                                let stored = match g.grad_into {
                                    Some(into) => into.store(i, gr)?,
                                    None => false,
                                };
                                if stored {
                                    Ok(None)
                                } else {
                                    gr.copy().map(Some)
                                }
                            }
                            _ => Ok(None),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    give_back(&pools, sig, exe);
                    let mut all = grads;
                    all.resize(n_in, None);
                    Ok(all)
                }
                other => {
                    if let Some((sig, exe)) = other {
                        give_back(&pools, sig, exe);
                    }
                    eager_gradient(&sym_g, n_args, g)
                }
            }
        }))
}

/// The gradient of running `symbol` on `g.inputs` (its `list_inputs`, the
/// first `n_args` of them arguments): the forward and backward graphs
/// evaluated with operator calls, recorded when autograd records (so it
/// differentiates again). Subgraph operators use it as their gradient rule.
pub fn graph_gradient(symbol: &Symbol, n_args: usize, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    eager_gradient(symbol, n_args, g)
}

/// The gradient of a cached call computed with recorded operator calls:
/// the forward graph and its backward graph evaluated eagerly on the call's
/// inputs (which carry their autograd identity), so the result can be
/// differentiated again.
fn eager_gradient(symbol: &Symbol, n_args: usize, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let fwd = symbol.indexed()?;
    let vars: Vec<usize> = fwd.arguments().into_iter().chain(fwd.aux_states()).collect();
    let mut given = HashMap::new();
    let mut given_t = HashMap::new();
    for (&n, x) in vars.iter().zip(g.inputs) {
        given.insert(fwd.nodes[n].name.clone(), x.shape().to_vec());
        given_t.insert(fwd.nodes[n].name.clone(), x.dtype());
    }
    let (shapes, types) = infer_complete(&fwd, &given, &given_t)?;
    let wrt: Vec<usize> = fwd.arguments().into_iter().take(n_args).collect();
    let device = g.inputs.first().map(|x| x.device()).unwrap_or_default();
    let grad = gradient(&fwd, &shapes, &types, &wrt, device)?;
    let full = Symbol::group(&[symbol.clone(), grad.symbol.clone()]);
    let graph = full.indexed()?;
    let mut values: HashMap<usize, NDArray> = HashMap::new();
    let key = |n: &Arc<crate::node::Node>| Arc::as_ptr(n) as usize;
    for (&n, x) in vars.iter().zip(g.inputs) {
        values.insert(key(&fwd.nodes[n]), x.clone());
    }
    for (e, og) in grad.head_grads.iter().zip(g.out_grads) {
        values.insert(key(&e.node), og.clone());
    }
    for (e, c) in &grad.constants {
        values.insert(key(&e.node), c.clone());
    }
    let shared: HashMap<usize, usize> = grad.shared_state.iter().map(|(b, f)| (key(b), key(f))).collect();
    let heads = evaluate(&graph, &values, &shared)?;
    let grads = &heads[symbol.num_outputs()..];
    let mut out: Vec<Option<NDArray>> = grads.iter().cloned().map(Some).collect();
    out.resize(g.inputs.len(), None);
    Ok(out.into_iter().zip(g.needs_grad).map(|(gr, need)| if *need { gr } else { None }).collect())
}

/// Evaluates `graph` with recorded operator calls, variables taken from
/// `values` (by node address); `_backward_` nodes use their forward node's state.
fn evaluate(
    graph: &IndexedGraph,
    values: &HashMap<usize, NDArray>,
    shared: &HashMap<usize, usize>,
) -> Result<Vec<NDArray>> {
    let mut entries: Vec<Option<NDArray>> = vec![None; graph.num_entries()];
    let mut states: HashMap<usize, OpState> = HashMap::new();
    for (n, node) in graph.nodes.iter().enumerate() {
        let addr = Arc::as_ptr(node) as usize;
        let Some(call) = &node.op else {
            let v = values.get(&addr).cloned().ok_or_else(|| {
                Error::Invalid(format!("cached graph: variable `{}` has no value", node.name))
            })?;
            entries[graph.entry(n, 0)] = Some(v);
            continue;
        };
        let inputs: Vec<NDArray> = graph.inputs[n]
            .iter()
            .map(|&(m, k)| entries[graph.entry(m, k)].clone().expect("topological order"))
            .collect();
        let refs: Vec<&NDArray> = inputs.iter().collect();
        let owner = shared.get(&addr).copied().unwrap_or(addr);
        let state = match (states.get(&owner), &call.op.create_state) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(create)) if owner == addr => {
                let shapes: Vec<Shape> = inputs.iter().map(|x| Shape::from_slice(x.shape())).collect();
                let dtypes: Vec<DType> = inputs.iter().map(|x| x.dtype()).collect();
                let s = create(
                    &call.attrs,
                    &shapes,
                    &dtypes,
                    inputs.first().map(|x| x.device()).unwrap_or_default(),
                )?;
                states.insert(addr, s.clone());
                Some(s)
            }
            _ => None,
        };
        let outs = oxnet_core::dispatch::invoke_op_with_state(&call.op, &refs, &call.attrs, state)
            .map_err(|e| e.in_node(&node.name, &call.op.name))?;
        for (k, o) in outs.into_iter().enumerate() {
            entries[graph.entry(n, k)] = Some(o);
        }
    }
    Ok(graph.heads.iter().map(|&(n, k)| entries[graph.entry(n, k)].clone().expect("computed")).collect())
}
