//! Partitioners and graph passes on real graphs: `optimize_for`.
//!
//! Backends are an open registry, like operators: whoever provides a
//! partitioner (a loaded library, Rust code) or a graph pass registers it
//! under a name with [`register_backend`]; [`optimize_for`] looks the name
//! up. A partitioner's strategies run in order: each marks the nodes it
//! supports (per node a subgraph id, or -1), each connected group of marked
//! nodes that can become one node (no path leaves it and comes back) is
//! handed to the strategy's review as NNVM JSON, and an accepted group is
//! replaced by one node of the strategy's subgraph operator, carrying the
//! group as `subgraph_sym_json` plus the attributes the review gave. A pass
//! rewrites the whole graph's JSON and may create parameters.
//!
//! When the subgraph operator is not registered (a library may name one it
//! does not define), oxnet registers a host subgraph operator under that
//! name that runs the subgraph with oxnet's own executor, infers through it
//! and differentiates it.

use crate::cached::{graph_gradient, CachedGraph};
use crate::indexed::IndexedGraph;
use crate::infer::{infer_dtypes_with_heads, infer_shapes_with_heads, is_complete};
use crate::json::{from_json, to_json};
use crate::node::{Entry, Node, OpCall};
use crate::symbol::Symbol;
use oxnet_core::op::OpDef;
use oxnet_core::{autograd, AttrKind, AttrSpec, Error, NDArray, Result, Shape};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

/// The attribute holding a subgraph node's graph (MXNet's name).
pub const SUBGRAPH_ATTR: &str = "subgraph_sym_json";

/// One strategy of a partitioner.
pub trait PartitionStrategy: Send + Sync {
    /// The strategy's name (for messages).
    fn name(&self) -> String;
    /// The operator whose nodes replace accepted subgraphs.
    fn subgraph_op(&self) -> String;
    /// Per node of `graph_json` (NNVM JSON with `num_nodes` nodes): -1, or
    /// the id of the subgraph the node joins.
    fn select(&self, graph_json: &str, num_nodes: usize, options: &[(&str, &str)]) -> Result<Vec<i32>>;
    /// Whether to replace subgraph `id`, and the attributes of its node.
    fn review(
        &self,
        subgraph_json: &str,
        id: i32,
        options: &[(&str, &str)],
    ) -> Result<(bool, Vec<(String, String)>)>;
}

/// A parameter a graph pass created.
#[derive(Debug, Clone)]
pub struct PassParam {
    /// Its variable's name in the new graph.
    pub name: String,
    /// True for an auxiliary state.
    pub is_aux: bool,
    /// Its value.
    pub array: NDArray,
}

/// A graph pass: NNVM JSON in, NNVM JSON (and new parameters) out.
pub trait GraphPass: Send + Sync {
    /// The pass's name.
    fn name(&self) -> String;
    /// Rewrites `graph_json`.
    fn run(&self, graph_json: &str, options: &[(&str, &str)]) -> Result<(String, Vec<PassParam>)>;
}

/// What a backend name stands for.
#[derive(Clone)]
pub enum Backend {
    /// A partitioner: its strategies, applied in order.
    Partitioner(Vec<Arc<dyn PartitionStrategy>>),
    /// A graph pass.
    Pass(Arc<dyn GraphPass>),
    /// A pass over the symbol itself (oxnet's built-in `default` and
    /// `default_v2` subgraph backends).
    Symbolic(Arc<dyn SymbolPass>),
}

/// A backend that rewrites a symbol directly (no JSON round trip).
pub trait SymbolPass: Send + Sync {
    /// The backend's name (for messages).
    fn name(&self) -> String;
    /// The rewritten symbol.
    fn run(&self, sym: &Symbol, options: &[(&str, &str)]) -> Result<Symbol>;
}

static BACKENDS: RwLock<Option<HashMap<String, Backend>>> = RwLock::new(None);

/// Registers `backend` under `name` (replacing one of that name).
pub fn register_backend(name: &str, backend: Backend) {
    BACKENDS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(name.to_string(), backend);
}

/// Names of the registered backends, sorted.
pub fn backend_names() -> Vec<String> {
    crate::default_subgraph::register_default_backends();
    let guard = BACKENDS.read().unwrap_or_else(|e| e.into_inner());
    let mut names: Vec<String> = guard.as_ref().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    names.sort();
    names
}

/// The backend registered as `name`.
pub fn find_backend(name: &str) -> Result<Backend> {
    crate::default_subgraph::register_default_backends();
    let found =
        BACKENDS.read().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(name).cloned());
    found.ok_or_else(|| {
        Error::Invalid(format!(
            "optimize_for: no backend `{name}` (registered: {}); load the library that provides it first",
            backend_names().join(", ")
        ))
    })
}

/// The result of [`optimize_for`]: the new symbol and, for a pass, the
/// parameters it created.
pub struct Optimized {
    /// The optimized graph.
    pub symbol: Symbol,
    /// New argument and aux parameters (a pass's `alloc_param`).
    pub new_params: Vec<PassParam>,
}

/// Runs backend `backend` on `sym` with string `options`.
pub fn optimize_for(sym: &Symbol, backend: &str, options: &[(&str, &str)]) -> Result<Optimized> {
    match find_backend(backend)? {
        Backend::Pass(pass) => {
            let (json, params) = pass.run(&to_json(sym)?, options)?;
            let symbol = from_json(&json).map_err(|e| {
                Error::Invalid(format!(
                    "graph pass `{}` returned a graph oxnet cannot read: {e}",
                    pass.name()
                ))
            })?;
            Ok(Optimized { symbol, new_params: params })
        }
        Backend::Symbolic(pass) => Ok(Optimized { symbol: pass.run(sym, options)?, new_params: Vec::new() }),
        Backend::Partitioner(strategies) => {
            let mut current = sym.clone();
            for s in strategies {
                current = partition(&current, s.as_ref(), options)?;
            }
            Ok(Optimized { symbol: current, new_params: Vec::new() })
        }
    }
}

/// An accepted subgraph: the node that replaces it.
struct Replacement {
    name: String,
    op_name: String,
    params: Vec<(String, String)>,
    /// The nodes it replaces.
    members: Vec<usize>,
    /// Entries it reads (node, output) and entries it stands for.
    inputs: Vec<(usize, usize)>,
    outputs: Vec<(usize, usize)>,
}

/// Applies one strategy.
fn partition(sym: &Symbol, strategy: &dyn PartitionStrategy, options: &[(&str, &str)]) -> Result<Symbol> {
    let g = sym.indexed()?;
    let ids = strategy.select(&to_json(sym)?, g.nodes.len(), options)?;
    if ids.len() != g.nodes.len() {
        return Err(Error::Invalid(format!(
            "strategy `{}` marked {} nodes of a graph of {}",
            strategy.name(),
            ids.len(),
            g.nodes.len()
        )));
    }
    let mut groups: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (n, &id) in ids.iter().enumerate() {
        if id >= 0 && !g.nodes[n].is_variable() {
            groups.entry(id).or_default().push(n);
        }
    }
    let op_name = strategy.subgraph_op();
    let mut replacements = Vec::new();
    let mut next_id = 0;
    for members in groups.values() {
        for component in connected_components(&g, members) {
            if !is_convex(&g, &component) {
                continue;
            }
            let (sub, inputs, outputs) = extract(&g, &component)?;
            let sub_json = to_json(&sub)?;
            let (accept, attrs) = strategy.review(&sub_json, next_id, options)?;
            next_id += 1;
            if !accept {
                continue;
            }
            let mut params = attrs;
            params.push((SUBGRAPH_ATTR.to_string(), sub_json));
            let name = format!("{}{}", op_name.trim_start_matches('_'), replacements.len());
            replacements.push(Replacement {
                name,
                op_name: op_name.clone(),
                params,
                members: component,
                inputs,
                outputs,
            });
        }
    }
    if replacements.is_empty() {
        return Ok(sym.clone());
    }
    ensure_subgraph_op(&op_name)?;
    rewire(&g, &replacements)
}

/// A copy of `g` in which each replacement's node stands for its entries.
fn rewire(g: &IndexedGraph, replacements: &[Replacement]) -> Result<Symbol> {
    let mut owner: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    for (r, rep) in replacements.iter().enumerate() {
        for (k, &e) in rep.outputs.iter().enumerate() {
            owner.insert(e, (r, k));
        }
    }
    let mut copies: Vec<Option<Arc<Node>>> = vec![None; g.nodes.len()];
    let mut built: Vec<Option<Arc<Node>>> = vec![None; replacements.len()];
    fn entry(
        e: (usize, usize),
        owner: &HashMap<(usize, usize), (usize, usize)>,
        replacements: &[Replacement],
        copies: &[Option<Arc<Node>>],
        built: &mut [Option<Arc<Node>>],
    ) -> Result<Entry> {
        let Some(&(r, k)) = owner.get(&e) else {
            let node = copies[e.0].clone().ok_or_else(|| {
                Error::Invalid("partitioning: a node was read before it was rebuilt".into())
            })?;
            return Ok(Entry { node, index: e.1 });
        };
        if built[r].is_none() {
            let rep = &replacements[r];
            let inputs = rep
                .inputs
                .iter()
                .map(|&i| entry(i, owner, replacements, copies, built))
                .collect::<Result<Vec<_>>>()?;
            let call = OpCall::new(&rep.op_name, rep.params.clone(), &rep.name)?;
            let node = Node::operator(&rep.name, call, inputs, BTreeMap::new());
            let n_out = node.num_outputs()?;
            if n_out != rep.outputs.len() {
                return Err(Error::Invalid(format!(
                    "subgraph operator `{}` gives {n_out} outputs for a subgraph with {}",
                    rep.op_name,
                    rep.outputs.len()
                )));
            }
            built[r] = Some(node);
        }
        Ok(Entry { node: built[r].clone().expect("built"), index: k })
    }
    let members: HashSet<usize> = replacements.iter().flat_map(|r| r.members.iter().copied()).collect();
    for n in 0..g.nodes.len() {
        if members.contains(&n) {
            continue; // whoever reads a member's output reads the subgraph node
        }
        let inputs = g.inputs[n]
            .iter()
            .map(|&e| entry(e, &owner, replacements, &copies, &mut built))
            .collect::<Result<Vec<_>>>()?;
        copies[n] = Some(Arc::new(Node::copy_with_inputs(&g.nodes[n], inputs)));
    }
    let heads = g
        .heads
        .iter()
        .map(|&e| entry(e, &owner, replacements, &copies, &mut built))
        .collect::<Result<Vec<_>>>()?;
    Ok(Symbol::from_entries(heads))
}

/// Splits `members` into groups connected through edges among them.
fn connected_components(g: &IndexedGraph, members: &[usize]) -> Vec<Vec<usize>> {
    let set: HashSet<usize> = members.iter().copied().collect();
    let mut adj: HashMap<usize, Vec<usize>> = HashMap::new();
    for &n in members {
        for &(m, _) in &g.inputs[n] {
            if set.contains(&m) {
                adj.entry(n).or_default().push(m);
                adj.entry(m).or_default().push(n);
            }
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &start in members {
        if !seen.insert(start) {
            continue;
        }
        let mut comp = vec![start];
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            for &m in adj.get(&n).into_iter().flatten() {
                if seen.insert(m) {
                    comp.push(m);
                    stack.push(m);
                }
            }
        }
        comp.sort_unstable();
        out.push(comp);
    }
    out
}

/// True when no path leaves `component` and comes back into it (so it can
/// become one node without a cycle).
fn is_convex(g: &IndexedGraph, component: &[usize]) -> bool {
    let inside: HashSet<usize> = component.iter().copied().collect();
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for (n, ins) in g.inputs.iter().enumerate() {
        for &(m, _) in ins {
            consumers[m].push(n);
        }
    }
    // outside nodes reachable from the component
    let mut stack: Vec<usize> = component
        .iter()
        .flat_map(|&n| consumers[n].iter().copied())
        .filter(|n| !inside.contains(n))
        .collect();
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        for &c in &consumers[n] {
            if inside.contains(&c) {
                return false;
            }
            stack.push(c);
        }
    }
    true
}

/// The subgraph of `component` as a symbol whose variables stand for the
/// entries it reads from outside (returned in order) and whose heads are
/// the entries read outside it or heads of `g` (returned in order).
#[allow(clippy::type_complexity)]
fn extract(
    g: &IndexedGraph,
    component: &[usize],
) -> Result<(Symbol, Vec<(usize, usize)>, Vec<(usize, usize)>)> {
    let inside: HashSet<usize> = component.iter().copied().collect();
    let mut inputs: Vec<(usize, usize)> = Vec::new();
    let mut copies: HashMap<usize, Arc<Node>> = HashMap::new();
    let mut input_vars: HashMap<(usize, usize), Entry> = HashMap::new();
    for &n in component {
        let node = &g.nodes[n];
        let mut entries = Vec::new();
        for &(m, k) in &g.inputs[n] {
            if inside.contains(&m) {
                entries.push(Entry { node: copies[&m].clone(), index: k });
            } else {
                let e = input_vars.entry((m, k)).or_insert_with(|| {
                    inputs.push((m, k));
                    let name = g.nodes[m].output_name(k).unwrap_or_else(|_| g.nodes[m].name.clone());
                    Entry { node: Node::variable(&name, BTreeMap::new()), index: 0 }
                });
                entries.push(e.clone());
            }
        }
        copies.insert(n, Arc::new(Node::copy_with_inputs(node, entries)));
    }
    let heads: HashSet<(usize, usize)> = g.heads.iter().copied().collect();
    let mut outputs = Vec::new();
    for &n in component {
        for k in 0..g.num_outputs(n) {
            let read_outside =
                (0..g.nodes.len()).filter(|m| !inside.contains(m)).any(|m| g.inputs[m].contains(&(n, k)));
            if read_outside || heads.contains(&(n, k)) {
                outputs.push((n, k));
            }
        }
    }
    let sym = Symbol::from_entries(
        outputs.iter().map(|&(n, k)| Entry { node: copies[&n].clone(), index: k }).collect(),
    );
    Ok((sym, inputs, outputs))
}

/// Registers a host subgraph operator under `name` unless an operator of
/// that name exists.
pub fn ensure_subgraph_op(name: &str) -> Result<()> {
    if oxnet_core::registry::contains(name) {
        return Ok(());
    }
    oxnet_core::registry::register(host_subgraph_op(name));
    Ok(())
}

/// A parsed subgraph: its symbol and a cached graph running it.
pub(crate) struct Subgraph {
    pub(crate) symbol: Symbol,
    pub(crate) graph: IndexedGraph,
    pub(crate) cached: CachedGraph,
    /// Positions (in `list_inputs` order) of the aux states.
    pub(crate) aux_positions: Vec<usize>,
    /// For each input the cached graph takes, its position in `list_inputs`.
    pub(crate) call_order: Vec<usize>,
}

/// Subgraphs by their JSON text (parsed once).
static SUBGRAPHS: Mutex<Option<HashMap<String, Arc<Subgraph>>>> = Mutex::new(None);

pub(crate) fn subgraph_of(json: &str) -> Result<Arc<Subgraph>> {
    if json.is_empty() {
        return Err(Error::attr(SUBGRAPH_ATTR, "a subgraph operator needs its subgraph in this attribute"));
    }
    let cache = || SUBGRAPHS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = cache().as_ref().and_then(|map| map.get(json)) {
        return Ok(s.clone());
    }
    // parsed without the lock: a subgraph's nodes may hold subgraphs of their own
    let symbol = from_json(json).map_err(|e| Error::attr(SUBGRAPH_ATTR, e))?;
    let graph = symbol.indexed()?;
    let cached = CachedGraph::new(&symbol)?;
    let inputs = graph.variables();
    let aux_positions = (0..inputs.len()).filter(|&i| graph.is_aux[inputs[i]]).collect();
    let position: HashMap<&str, usize> =
        inputs.iter().enumerate().map(|(i, &n)| (graph.nodes[n].name.as_str(), i)).collect();
    let call_order = cached
        .input_names()
        .iter()
        .map(|name| {
            position
                .get(name.as_str())
                .copied()
                .ok_or_else(|| Error::attr(SUBGRAPH_ATTR, format!("the subgraph has no input `{name}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let sub = Arc::new(Subgraph { graph, cached, symbol, aux_positions, call_order });
    let mut guard = cache();
    let map = guard.get_or_insert_with(HashMap::new);
    if map.len() > 256 {
        map.clear();
    }
    map.insert(json.to_string(), sub.clone());
    Ok(sub)
}

/// An operator that runs the subgraph in its `subgraph_sym_json` attribute
/// with oxnet's executor (inputs in the subgraph's `list_inputs` order).
pub fn host_subgraph_op(name: &str) -> OpDef {
    OpDef::new(name)
        .doc("Runs the subgraph in its `subgraph_sym_json` attribute with oxnet's graph executor.")
        .attr(AttrSpec::optional(SUBGRAPH_ATTR, AttrKind::Str, "", "the subgraph as NNVM JSON"))
        .allow_extra_attrs()
        .prepare(|attrs| Ok(subgraph_of(attrs.str(SUBGRAPH_ATTR)?)? as Arc<dyn std::any::Any + Send + Sync>))
        .arguments_fn(|a| prepared(a)?.symbol.list_inputs())
        .outputs_fn(|a| prepared(a)?.symbol.list_outputs())
        .arity_fn(|a| {
            let s = prepared(a)?;
            Ok([s.symbol.list_inputs()?.len(), 0, s.symbol.num_outputs()])
        })
        // the subgraph's aux states stay aux states of the graph around it
        .mutate_inputs(|a| prepared(a).map(|s| s.aux_positions.clone()).unwrap_or_default())
        .infer_shape(|a, ins, outs| {
            let s = prepared(a)?;
            let names = s.symbol.list_inputs()?;
            let given = names
                .iter()
                .zip(ins.iter())
                .filter_map(|(n, x)| x.as_ref().map(|x| (n.clone(), x.to_vec())))
                .collect();
            let heads: Vec<Option<Vec<usize>>> =
                outs.iter().map(|o| o.as_ref().map(|o| o.to_vec())).collect();
            // forward from the inputs and backward from known outputs (a
            // weight's shape from the operator that reads it)
            let shapes = infer_shapes_with_heads(&s.graph, &given, &heads)?;
            let complete = |e: usize| {
                if is_complete(&shapes[e]) {
                    shapes[e].as_deref().map(Shape::from_slice)
                } else {
                    None
                }
            };
            for (slot, n) in ins.iter_mut().zip(s.graph.variables()) {
                if let Some(x) = complete(s.graph.entry(n, 0)) {
                    *slot = Some(x);
                }
            }
            for (o, &(n, k)) in outs.iter_mut().zip(&s.graph.heads) {
                if let Some(x) = complete(s.graph.entry(n, k)) {
                    *o = Some(x);
                }
            }
            Ok(())
        })
        .infer_type(|a, ins, outs| {
            let s = prepared(a)?;
            let names = s.symbol.list_inputs()?;
            let given = names.iter().zip(ins.iter()).filter_map(|(n, x)| x.map(|x| (n.clone(), x))).collect();
            let types = infer_dtypes_with_heads(&s.graph, &given, outs)?;
            for (slot, n) in ins.iter_mut().zip(s.graph.variables()) {
                if let Some(t) = types[s.graph.entry(n, 0)] {
                    *slot = Some(t);
                }
            }
            for (o, &(n, k)) in outs.iter_mut().zip(&s.graph.heads) {
                if let Some(t) = types[s.graph.entry(n, k)] {
                    *o = Some(t);
                }
            }
            Ok(())
        })
        .forward(|ctx, inputs, outputs| {
            let s = prepared(ctx.attrs)?;
            let _quiet = autograd::pause();
            let _mode = if ctx.is_train { autograd::train_mode() } else { autograd::predict_mode() };
            // inputs come in the subgraph's list_inputs order; the cached
            // graph takes its arguments, then its aux states
            let refs: Vec<&NDArray> = s.call_order.iter().map(|&i| &inputs[i]).collect();
            let results = s.cached.call(&refs)?;
            for ((o, r), req) in outputs.iter().zip(&results).zip(ctx.req) {
                oxnet_core::custom::assign(o, *req, r)?;
            }
            Ok(())
        })
        .grad_rule(|g| {
            let s = prepared(g.attrs)?;
            graph_gradient(&s.symbol, s.symbol.list_arguments()?.len(), g)
        })
}

fn prepared(attrs: &oxnet_core::Attrs) -> Result<&Subgraph> {
    attrs
        .prepared::<Subgraph>()
        .ok_or_else(|| Error::Invalid("the subgraph attribute was not prepared".into()))
}
