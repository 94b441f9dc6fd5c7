//! The tape: variables, recorded nodes, and the reverse walk.

use super::mode;
use crate::attrs::Attrs;
use crate::dispatch;
use crate::op::{BackwardArgs, GradCtx, GradInto, Gradient, OpContext, OpState, ReadyFn, Req};
use crate::registry::Op;
use crate::shape::Shape;
use crate::{DType, Error, NDArray, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A differentiable leaf: an array the user called `attach_grad` on.
pub(crate) struct Variable {
    grad: Option<NDArray>,
    req: Req,
    /// Set when a backward pass writes the gradient; cleared by whoever
    /// consumes it (the Gluon Trainer, which reports stale gradients).
    fresh: AtomicBool,
    /// Run by a `backward` pass once this variable's gradient is complete
    /// in its buffer (see [`set_grad_ready_hook`]).
    ready: Mutex<Option<ReadyFn>>,
}

impl Variable {
    fn new(grad: Option<NDArray>, req: Req) -> Variable {
        Variable { grad, req, fresh: AtomicBool::new(false), ready: Mutex::new(None) }
    }

    fn ready_hook(&self) -> Option<ReadyFn> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stores a backward pass's gradient into the buffer under the request.
    fn store(&self, g: &NDArray) -> Result<()> {
        let Some(buf) = &self.grad else { return Ok(()) };
        match self.req {
            Req::Null => return Ok(()),
            Req::Write | Req::Inplace => buf.assign_from(g)?,
            Req::Add => {
                let sum = crate::invoke1("elemwise_add", &[buf, g], &[])?;
                buf.assign_from(&sum)?;
            }
        }
        self.fresh.store(true, Ordering::Release);
        Ok(())
    }
}

/// One recorded operator call.
pub(crate) struct Node {
    op: Op,
    attrs: Attrs,
    state: Option<OpState>,
    is_train: bool,
    /// Where each input came from (`None`: a constant).
    parents: Vec<Option<AgEntry>>,
    /// Shapes and dtypes of the inputs and outputs (for gradient buffers).
    in_meta: Vec<(Shape, DType)>,
    out_meta: Vec<(Shape, DType)>,
    device: crate::Device,
    /// What the gradient reads; `None` once freed by a backward pass.
    saved: Mutex<Option<Saved>>,
}

impl Node {
    /// Where each input came from (`None`: a constant).
    pub(crate) fn parents(&self) -> &[Option<AgEntry>] {
        &self.parents
    }

    /// The operator's registry name.
    pub(crate) fn op_name(&self) -> &str {
        &self.op.name
    }

    /// The call's attributes in string form.
    pub(crate) fn attr_strings(&self) -> Vec<(String, String)> {
        self.attrs.to_strings()
    }

    /// How many outputs the call made.
    pub(crate) fn num_outputs(&self) -> usize {
        self.out_meta.len()
    }
}

struct Saved {
    inputs: Vec<Option<NDArray>>,
    outputs: Vec<Option<NDArray>>,
}

/// The autograd identity of an array.
#[derive(Clone)]
pub(crate) enum AgEntry {
    Var(Arc<Variable>),
    Out { node: Arc<Node>, index: usize },
}

impl AgEntry {
    /// True for the output of a node whose graph a backward pass freed.
    fn is_freed(&self) -> bool {
        match self {
            AgEntry::Var(_) => false,
            AgEntry::Out { node, .. } => node.saved.lock().unwrap_or_else(|e| e.into_inner()).is_none(),
        }
    }

    fn key(&self) -> (usize, usize) {
        match self {
            AgEntry::Var(v) => (Arc::as_ptr(v) as usize, usize::MAX),
            AgEntry::Out { node, index } => (Arc::as_ptr(node) as usize, *index),
        }
    }
}

/// Marks `x` as a variable with a fresh zeroed gradient buffer and `req`
/// (`Write` or `Add`; `Null` means no gradient is kept).
pub fn attach_grad(x: &NDArray, req: Req) -> Result<()> {
    let grad = if req == Req::Null { None } else { Some(NDArray::zeros_like(x)?) };
    x.set_ag_entry(Some(AgEntry::Var(Arc::new(Variable::new(grad, req)))));
    Ok(())
}

/// Marks arrays as variables with caller-provided gradient buffers.
pub fn mark_variables(vars: &[&NDArray], grads: &[&NDArray], reqs: &[Req]) -> Result<()> {
    if vars.len() != grads.len() || vars.len() != reqs.len() {
        return Err(Error::Autograd(format!(
            "mark_variables: {} variables, {} gradients and {} requests must match",
            vars.len(),
            grads.len(),
            reqs.len()
        )));
    }
    for ((v, g), r) in vars.iter().zip(grads).zip(reqs) {
        if v.shape() != g.shape() {
            return Err(Error::Shape(format!(
                "mark_variables: variable of shape {:?} got a gradient buffer of shape {:?}",
                v.shape(),
                g.shape()
            )));
        }
        v.set_ag_entry(Some(AgEntry::Var(Arc::new(Variable::new(Some((*g).clone()), *r)))));
    }
    Ok(())
}

/// The gradient buffer of a variable (`None` if `x` is no variable or its
/// request is `Null`).
pub fn grad_of(x: &NDArray) -> Option<NDArray> {
    match x.ag_entry() {
        Some(AgEntry::Var(v)) => v.grad.clone(),
        _ => None,
    }
}

/// Whether a backward pass wrote this variable's gradient since the flag
/// was last cleared (`None` if `x` is no variable). MXNet's `_fresh_grad`.
pub fn fresh_grad(x: &NDArray) -> Option<bool> {
    match x.ag_entry() {
        Some(AgEntry::Var(v)) => Some(v.fresh.load(Ordering::Acquire)),
        _ => None,
    }
}

/// Sets or clears the fresh-gradient flag of a variable (no effect on
/// other arrays).
pub fn set_fresh_grad(x: &NDArray, fresh: bool) {
    if let Some(AgEntry::Var(v)) = x.ag_entry() {
        v.fresh.store(fresh, Ordering::Release);
    }
}

/// Sets (or with `None` removes) the *gradient-ready hook* of a variable
/// and returns true; returns false when `x` is no variable. A `backward`
/// pass runs the hook as soon as the variable's gradient is complete in its
/// buffer: after the last node that contributes to it, or, inside a cached
/// graph, after the graph step that writes it, while the rest of the pass
/// still runs. A data-parallel trainer starts summing the gradient over the
/// workers from it. The hook runs on the thread of the backward pass and
/// must return quickly; it does not run for `autograd.grad` (which leaves
/// the buffers alone) nor for a variable no gradient reached.
pub fn set_grad_ready_hook(x: &NDArray, hook: Option<ReadyFn>) -> bool {
    match x.ag_entry() {
        Some(AgEntry::Var(v)) => {
            *v.ready.lock().unwrap_or_else(|e| e.into_inner()) = hook;
            true
        }
        _ => false,
    }
}

/// The gradient request of a variable.
pub fn grad_req_of(x: &NDArray) -> Option<Req> {
    match x.ag_entry() {
        Some(AgEntry::Var(v)) => Some(v.req),
        _ => None,
    }
}

/// Records a finished operator call (called by the dispatcher).
pub(crate) fn record_node(
    op: &Op,
    attrs: &Attrs,
    inputs: &[&NDArray],
    outputs: &[NDArray],
    state: Option<OpState>,
) -> Result<()> {
    // As in MXNet, an array whose graph a backward pass has freed enters a
    // new recording as a constant (a carried state, say).
    let parents: Vec<Option<AgEntry>> =
        inputs.iter().map(|x| x.ag_entry().filter(|e| !e.is_freed())).collect();
    let (keep_in, keep_out): (Vec<bool>, Vec<bool>) = match &op.gradient {
        Gradient::Kernel { deps, .. } => {
            let d = deps(attrs);
            (
                (0..inputs.len()).map(|i| d.inputs.contains(&i)).collect(),
                (0..outputs.len()).map(|i| d.outputs.contains(&i)).collect(),
            )
        }
        Gradient::Zero | Gradient::None => (vec![false; inputs.len()], vec![false; outputs.len()]),
        Gradient::Rule(_) => (vec![true; inputs.len()], vec![true; outputs.len()]),
    };
    let saved = Saved {
        inputs: inputs.iter().zip(&keep_in).map(|(x, k)| k.then(|| x.detach())).collect(),
        outputs: outputs.iter().zip(&keep_out).map(|(x, k)| k.then(|| x.detach())).collect(),
    };
    let node = Arc::new(Node {
        op: op.clone(),
        attrs: attrs.clone(),
        state,
        is_train: mode::is_training(),
        parents,
        in_meta: inputs.iter().map(|x| (Shape::from_slice(x.shape()), x.dtype())).collect(),
        out_meta: outputs.iter().map(|o| (Shape::from_slice(o.shape()), o.dtype())).collect(),
        device: outputs.first().or(inputs.first().copied()).map(|a| a.device()).unwrap_or_default(),
        saved: Mutex::new(Some(saved)),
    });
    for (i, out) in outputs.iter().enumerate() {
        out.set_ag_entry(Some(AgEntry::Out { node: node.clone(), index: i }));
    }
    Ok(())
}

/// Options of a backward pass.
#[derive(Debug, Clone, Copy)]
pub struct BackwardOptions {
    /// Keep the tape so that another backward pass can run through it.
    pub retain_graph: bool,
    /// Record the gradient computation, for higher-order gradients.
    pub create_graph: bool,
    /// Run the gradient computation in train mode.
    pub train_mode: bool,
}

impl Default for BackwardOptions {
    fn default() -> Self {
        BackwardOptions { retain_graph: false, create_graph: false, train_mode: true }
    }
}

/// Back-propagates from `heads` (with `head_grads`, ones where `None`) and
/// stores the gradients of every reached variable into its gradient buffer,
/// honouring its request (`write` overwrites, `add` accumulates).
pub fn backward(heads: &[&NDArray], head_grads: &[Option<&NDArray>], opts: BackwardOptions) -> Result<()> {
    let grads = run(heads, head_grads, opts, true)?;
    for var in &grads.added_in_place {
        var.fresh.store(true, Ordering::Release);
    }
    for (var, g) in grads.vars.values() {
        var.store(g)?;
    }
    Ok(())
}

/// Returns the gradients of `heads` with respect to `variables` without
/// touching gradient buffers (`autograd.grad`). With `create_graph` the
/// results are themselves recorded and can be differentiated again.
pub fn grad(
    heads: &[&NDArray],
    variables: &[&NDArray],
    head_grads: &[Option<&NDArray>],
    opts: BackwardOptions,
) -> Result<Vec<NDArray>> {
    let mut keys = Vec::with_capacity(variables.len());
    for (i, v) in variables.iter().enumerate() {
        match v.ag_entry() {
            Some(e) => keys.push(e.key()),
            None => {
                return Err(Error::Autograd(format!(
                    "variable {i} takes no part in differentiation: call attach_grad on it before recording"
                )))
            }
        }
    }
    let grads = run(heads, head_grads, opts, false)?;
    keys.iter()
        .zip(variables)
        .map(|(k, v)| match grads.all.get(k) {
            Some(g) => Ok(g.clone()),
            None => NDArray::zeros_like(v),
        })
        .collect()
}

struct Gradients {
    /// Gradient of every entry reached, by entry key.
    all: HashMap<(usize, usize), NDArray>,
    /// Gradients of variables, with the variable.
    vars: HashMap<usize, (Arc<Variable>, NDArray)>,
    /// Variables whose buffers a node already wrote or added into.
    added_in_place: Vec<Arc<Variable>>,
}

/// The variables with a gradient-ready hook that a `backward` pass will
/// reach, with how many input slots of its nodes still have to contribute
/// to each (by address), and those whose hook already ran.
#[derive(Default)]
struct ReadyWatch {
    pending: HashMap<usize, usize>,
    announced: std::collections::HashSet<usize>,
}

impl ReadyWatch {
    fn new(order: &[Arc<Node>]) -> ReadyWatch {
        let mut watch = ReadyWatch::default();
        for entry in order.iter().flat_map(|n| n.parents.iter().flatten()) {
            if let AgEntry::Var(v) = entry {
                if v.req != Req::Null && v.grad.is_some() && v.ready_hook().is_some() {
                    *watch.pending.entry(Arc::as_ptr(v) as usize).or_insert(0) += 1;
                }
            }
        }
        watch
    }

    /// After `node`: stores and announces the watched variables whose last
    /// contribution it was.
    fn node_done(&mut self, node: &Node, grads: &mut Gradients) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        for p in node.parents.iter().flatten() {
            let AgEntry::Var(v) = p else { continue };
            let key = Arc::as_ptr(v) as usize;
            let Some(left) = self.pending.get_mut(&key) else { continue };
            *left -= 1;
            if *left > 0 {
                continue;
            }
            self.pending.remove(&key);
            let in_place = grads.added_in_place.iter().any(|w| Arc::ptr_eq(w, v));
            match grads.vars.remove(&key) {
                Some((var, g)) => var.store(&g)?,
                None if in_place => v.fresh.store(true, Ordering::Release),
                None => continue, // no gradient reached it
            }
            if self.announced.insert(key) {
                if let Some(ready) = v.ready_hook() {
                    ready();
                }
            }
        }
        Ok(())
    }
}

fn accumulate(grads: &mut Gradients, entry: &AgEntry, g: NDArray) -> Result<()> {
    let key = entry.key();
    let total = match grads.all.remove(&key) {
        Some(prev) => crate::invoke1("elemwise_add", &[&prev, &g], &[])?,
        None => g,
    };
    if let AgEntry::Var(v) = entry {
        grads.vars.insert(key.0, (v.clone(), total.clone()));
    }
    grads.all.insert(key, total);
    Ok(())
}

/// Nodes reachable from the heads, in reverse topological order (consumers first).
fn reverse_topo(heads: &[AgEntry]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut visited = std::collections::HashSet::new();
    let mut stack: Vec<(Arc<Node>, bool)> = Vec::new();
    for h in heads {
        if let AgEntry::Out { node, .. } = h {
            stack.push((node.clone(), false));
        }
    }
    while let Some((node, expanded)) = stack.pop() {
        let key = Arc::as_ptr(&node) as usize;
        if expanded {
            order.push(node);
            continue;
        }
        if !visited.insert(key) {
            continue;
        }
        stack.push((node.clone(), true));
        for p in node.parents.iter().flatten() {
            if let AgEntry::Out { node: parent, .. } = p {
                if !visited.contains(&(Arc::as_ptr(parent) as usize)) {
                    stack.push((parent.clone(), false));
                }
            }
        }
    }
    order.reverse();
    order
}

/// Runs the backward pass. With `into_buffers` (a `backward` call, not
/// `autograd.grad`), a backward kernel whose input is a variable with
/// `grad_req='add'` adds into that variable's buffer itself (it sees
/// request `add`, as MXNet's operators do).
fn run(
    heads: &[&NDArray],
    head_grads: &[Option<&NDArray>],
    opts: BackwardOptions,
    into_buffers: bool,
) -> Result<Gradients> {
    if !head_grads.is_empty() && head_grads.len() != heads.len() {
        return Err(Error::Autograd(format!(
            "{} heads but {} head gradients",
            heads.len(),
            head_grads.len()
        )));
    }
    let mut entries = Vec::with_capacity(heads.len());
    for (i, h) in heads.iter().enumerate() {
        let entry = h.ag_entry().ok_or_else(|| {
            Error::Autograd(format!(
                "head {i} was not computed under autograd.record() from a variable with attach_grad()"
            ))
        })?;
        entries.push(entry);
    }

    let _mode = if opts.create_graph { mode::record_with(opts.train_mode) } else { mode::pause() };
    if !opts.create_graph {
        mode::set_training(opts.train_mode);
    }

    let mut grads = Gradients { all: HashMap::new(), vars: HashMap::new(), added_in_place: Vec::new() };
    for (i, (h, e)) in heads.iter().zip(&entries).enumerate() {
        let g = match head_grads.get(i).copied().flatten() {
            Some(g) => {
                if g.shape() != h.shape() {
                    return Err(Error::Shape(format!(
                        "head gradient {i} has shape {:?}, the head has {:?}",
                        g.shape(),
                        h.shape()
                    )));
                }
                g.clone()
            }
            None => NDArray::ones_like(h)?,
        };
        accumulate(&mut grads, e, g)?;
    }

    let order = reverse_topo(&entries);
    let into_buffers = into_buffers && !opts.create_graph;
    let sole_writes =
        if into_buffers { sole_write_variables(&entries, &order) } else { std::collections::HashSet::new() };
    let mut watch = if into_buffers { ReadyWatch::new(&order) } else { ReadyWatch::default() };
    for node in &order {
        apply_node(node, &mut grads, &sole_writes, &mut watch, into_buffers, opts)?;
        watch.node_done(node, &mut grads)?;
    }

    if !opts.retain_graph {
        for node in &order {
            *node.saved.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
    Ok(grads)
}

/// Applies one node's gradient during [`run`], accumulating its inputs'
/// gradients into `grads`.
fn apply_node(
    node: &Arc<Node>,
    grads: &mut Gradients,
    sole_writes: &std::collections::HashSet<usize>,
    watch: &mut ReadyWatch,
    into_buffers: bool,
    opts: BackwardOptions,
) -> Result<()> {
    {
        let out_grads: Vec<Option<NDArray>> = (0..node.out_meta.len())
            .map(|i| grads.all.get(&(Arc::as_ptr(node) as usize, i)).cloned())
            .collect();
        if out_grads.iter().all(Option::is_none) {
            return Ok(());
        }
        let needs: Vec<bool> = node
            .parents
            .iter()
            .map(|p| match p {
                None => false,
                Some(AgEntry::Var(v)) => v.req != Req::Null || opts.create_graph,
                Some(AgEntry::Out { .. }) => true,
            })
            .collect();
        if !needs.iter().any(|n| *n) {
            return Ok(());
        }
        // Variables with grad_req 'add' that a backward kernel adds into directly.
        let add_into: Vec<Option<Arc<Variable>>> = node
            .parents
            .iter()
            .map(|p| match p {
                Some(AgEntry::Var(v))
                    if into_buffers
                        && v.req == Req::Add
                        && v.grad.is_some()
                        && matches!(node.op.gradient, Gradient::Kernel { .. }) =>
                {
                    Some(v.clone())
                }
                _ => None,
            })
            .collect();
        // Variables whose buffer a gradient rule may write itself.
        let offers: Vec<Option<Arc<Variable>>> = node
            .parents
            .iter()
            .map(|p| match p {
                Some(AgEntry::Var(v))
                    if matches!(node.op.gradient, Gradient::Rule(_))
                        && sole_writes.contains(&(Arc::as_ptr(v) as usize)) =>
                {
                    Some(v.clone())
                }
                _ => None,
            })
            .collect();
        let grad_into = offers.iter().any(Option::is_some).then(|| {
            let buffers = offers.iter().map(|v| v.as_ref().and_then(|v| v.grad.clone())).collect();
            // a watched variable's hook runs when the rule finishes its buffer
            let ready = offers
                .iter()
                .map(|v| {
                    let v = v.as_ref().filter(|v| watch.pending.contains_key(&(Arc::as_ptr(v) as usize)))?;
                    let (var, hook) = (v.clone(), v.ready_hook()?);
                    Some(Arc::new(move || {
                        var.fresh.store(true, Ordering::Release);
                        hook();
                    }) as ReadyFn)
                })
                .collect();
            GradInto::with_ready(buffers, ready)
        });
        let in_grads = node_gradient(node, out_grads, &needs, &add_into, grad_into.as_ref(), opts)
            .map_err(|e| e.in_op(&node.op.name))?;
        let stored = offers
            .iter()
            .enumerate()
            .filter(|(i, _)| grad_into.as_ref().is_some_and(|g| g.was_stored(*i)))
            .filter_map(|(_, v)| v.as_ref());
        for v in add_into.iter().flatten().chain(stored) {
            if !grads.added_in_place.iter().any(|w| Arc::ptr_eq(w, v)) {
                grads.added_in_place.push(v.clone());
            }
        }
        for (i, v) in offers.iter().enumerate() {
            if let (Some(v), Some(into)) = (v, &grad_into) {
                if into.was_announced(i) {
                    watch.announced.insert(Arc::as_ptr(v) as usize);
                }
            }
        }
        for (i, g) in in_grads.into_iter().enumerate() {
            let stored = grad_into.as_ref().is_some_and(|g| g.was_stored(i));
            if let (Some(g), Some(parent), true, false) = (g, &node.parents[i], needs[i], stored) {
                accumulate(grads, parent, g)?;
            }
        }
    }
    Ok(())
}

/// Variables with `grad_req='write'` and a buffer that exactly one input
/// slot of the nodes in `order` consumes (and that are not heads
/// themselves): a node may write such a variable's gradient straight into
/// its buffer, since nothing else adds to it. Variables by address.
fn sole_write_variables(heads: &[AgEntry], order: &[Arc<Node>]) -> std::collections::HashSet<usize> {
    let mut uses: HashMap<usize, (Arc<Variable>, usize)> = HashMap::new();
    for entry in order.iter().flat_map(|n| n.parents.iter().flatten()) {
        if let AgEntry::Var(v) = entry {
            uses.entry(Arc::as_ptr(v) as usize).or_insert_with(|| (v.clone(), 0)).1 += 1;
        }
    }
    for h in heads {
        if let AgEntry::Var(v) = h {
            // a head's gradient also comes from its head gradient
            uses.remove(&(Arc::as_ptr(v) as usize));
        }
    }
    uses.into_iter()
        .filter(|(_, (v, n))| *n == 1 && v.req == Req::Write && v.grad.is_some())
        .map(|(key, _)| key)
        .collect()
}

/// Applies one node's gradient. A backward kernel adds the gradients of
/// inputs listed in `add_into` straight into those variables' buffers
/// (request `add`) and returns `None` for them; a gradient rule is offered
/// `grad_into`.
fn node_gradient(
    node: &Arc<Node>,
    out_grads: Vec<Option<NDArray>>,
    needs: &[bool],
    add_into: &[Option<Arc<Variable>>],
    grad_into: Option<&GradInto>,
    opts: BackwardOptions,
) -> Result<Vec<Option<NDArray>>> {
    let (saved_in, saved_out) = {
        let guard = node.saved.lock().unwrap_or_else(|e| e.into_inner());
        let saved = guard.as_ref().ok_or_else(|| {
            Error::Autograd(
                "the graph was freed by an earlier backward pass; pass retain_graph=true to the first one to run backward twice"
                    .into(),
            )
        })?;
        (saved.inputs.clone(), saved.outputs.clone())
    };
    let n_in = node.parents.len();
    let check_len = |gs: Vec<Option<NDArray>>| -> Result<Vec<Option<NDArray>>> {
        if gs.len() != n_in {
            return Err(Error::Autograd(format!(
                "the gradient returned {} entries for {n_in} inputs",
                gs.len()
            )));
        }
        Ok(gs)
    };
    let _profiled = crate::profiler::backward_scope(&node.op.name);
    match &node.op.gradient {
        Gradient::None => Err(Error::Autograd("this operator is not differentiable".into())),
        Gradient::Zero => Ok(vec![None; n_in]),
        Gradient::Rule(rule) => {
            // Inputs carry their autograd identity when the gradient itself is
            // recorded, so that it can be differentiated again.
            let inputs: Vec<NDArray> = saved_in
                .iter()
                .zip(&node.parents)
                .map(|(x, p)| {
                    let x = x.clone().expect("rules keep every input");
                    if opts.create_graph {
                        x.set_ag_entry(p.clone());
                    }
                    x
                })
                .collect();
            let outputs: Vec<NDArray> = saved_out
                .iter()
                .enumerate()
                .map(|(i, y)| {
                    let y = y.clone().expect("rules keep every output");
                    if opts.create_graph {
                        y.set_ag_entry(Some(AgEntry::Out { node: node.clone(), index: i }));
                    }
                    y
                })
                .collect();
            let out_grads = fill_zeros(out_grads, &node.out_meta, node.device)?;
            let ctx = GradCtx {
                attrs: &node.attrs,
                inputs: &inputs,
                outputs: &outputs,
                out_grads: &out_grads,
                needs_grad: needs,
                state: node.state.as_ref(),
                is_train: node.is_train,
                grad_into,
            };
            let gs = check_len(rule(&ctx)?)?;
            for (i, (g, x)) in gs.iter().zip(&inputs).enumerate() {
                if let Some(g) = g {
                    if g.shape() != x.shape() {
                        return Err(Error::Shape(format!(
                            "the gradient of input {i} has shape {:?}, the input has {:?}",
                            g.shape(),
                            x.shape()
                        )));
                    }
                }
            }
            Ok(gs)
        }
        Gradient::Kernel { backward, .. } => {
            if opts.create_graph {
                return Err(Error::Autograd(
                    "this operator's gradient is a backward kernel, which cannot be differentiated again (create_graph)"
                        .into(),
                ));
            }
            let out_grads =
                fill_zeros(out_grads, &node.out_meta, node.device)?.into_iter().map(Some).collect::<Vec<_>>();
            let mut in_grads = Vec::with_capacity(n_in);
            let mut reqs = Vec::with_capacity(n_in);
            for (i, need) in needs.iter().enumerate() {
                let direct = add_into.get(i).and_then(|v| v.as_ref()).and_then(|v| v.grad.clone());
                if let (Some(buf), true) = (direct, *need) {
                    in_grads.push(buf);
                    reqs.push(Req::Add);
                    continue;
                }
                let (shape, dtype) = &node.in_meta[i];
                in_grads.push(NDArray::zeros(shape, *dtype, node.device)?);
                reqs.push(if *need { Req::Write } else { Req::Null });
            }
            let ctx = OpContext {
                op_name: &node.op.name,
                attrs: &node.attrs,
                req: &reqs,
                is_train: node.is_train,
                device: node.device,
                state: node.state.as_ref(),
            };
            let args = BackwardArgs { out_grads: &out_grads, inputs: &saved_in, outputs: &saved_out };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::gpu::fallback::call_backward(&node.op, backward, &ctx, &args, &in_grads)
            }));
            match result {
                Ok(r) => r?,
                Err(p) => return Err(Error::Panic(dispatch::panic_message(p.as_ref()))),
            }
            Ok(in_grads
                .into_iter()
                .zip(needs)
                .zip(&reqs)
                .map(|((g, n), r)| (*n && *r != Req::Add).then_some(g))
                .collect())
        }
    }
}

fn fill_zeros(
    grads: Vec<Option<NDArray>>,
    meta: &[(Shape, DType)],
    device: crate::Device,
) -> Result<Vec<NDArray>> {
    grads
        .into_iter()
        .zip(meta)
        .map(|(g, (s, d))| match g {
            Some(g) => Ok(g),
            None => NDArray::zeros(s, *d, device),
        })
        .collect()
}

impl NDArray {
    /// Marks this array as a variable with a zeroed gradient buffer
    /// (`x.attach_grad(grad_req)`).
    pub fn attach_grad(&self, req: Req) -> Result<()> {
        attach_grad(self, req)
    }

    /// True when this array is an autograd variable or the recorded result
    /// of an operation on one (so gradients can flow from it).
    pub fn takes_part_in_autograd(&self) -> bool {
        self.has_ag_entry()
    }

    /// The gradient buffer, if this array is a variable.
    pub fn grad(&self) -> Option<NDArray> {
        grad_of(self)
    }

    /// Back-propagates from this array with a gradient of ones (`y.backward()`).
    pub fn backward(&self) -> Result<()> {
        backward(&[self], &[], BackwardOptions::default())
    }
}
