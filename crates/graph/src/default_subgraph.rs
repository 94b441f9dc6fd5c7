//! MXNet's built-in `default` and `default_v2` subgraph backends: partition
//! a graph by operator names.
//!
//! Each backend keeps the operator names it selects (MXNet's property
//! attribute `op_names`, set through `MXSetSubgraphPropertyOpNamesV2`).
//! A second store, by any backend name, holds the names executors use when
//! `MXNET_SUBGRAPH_BACKEND` makes `bind`/`simple_bind` partition (MXNet's
//! `SubgraphPropertyOpNameSet`, set through `MXSetSubgraphPropertyOpNames`).
//!
//! The partitioning follows MXNet's `BuildSubgraph` pass: seeds in
//! topological order grow through inputs and outputs over selected
//! operators; a group that would form a cycle with the nodes around it
//! excludes its latest offending node and grows again. Each group becomes
//! one `_CachedOp` node named `_CachedOp<i>` that runs the group (held in
//! its `subgraph_sym_json` attribute). Every use of an outside entry is one
//! input of the subgraph and every outside use of an inside entry one
//! output, unless `dedup_subgraph` merges repeated ones.

use crate::indexed::IndexedGraph;
use crate::json::to_json;
use crate::node::{Entry, Node, OpCall};
use crate::partition::{ensure_subgraph_op, register_backend, Backend, SymbolPass, SUBGRAPH_ATTR};
use crate::symbol::Symbol;
use oxnet_core::{Error, Result};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, Once};

/// The names of the built-in name-selecting backends.
pub const DEFAULT_BACKENDS: [&str; 2] = ["default", "default_v2"];

/// The operator of the nodes that stand for subgraphs (MXNet's name).
pub const SUBGRAPH_OP: &str = "_CachedOp";

type NameStore = Mutex<Option<HashMap<String, HashSet<String>>>>;

/// Per backend: the names its property selects (`MXSetSubgraphPropertyOpNamesV2`).
static PROPERTY_NAMES: NameStore = Mutex::new(None);
/// Per backend name: the names executors use (`MXSetSubgraphPropertyOpNames`).
static EXECUTOR_NAMES: NameStore = Mutex::new(None);

fn with_store<T>(store: &NameStore, f: impl FnOnce(&mut HashMap<String, HashSet<String>>) -> T) -> T {
    f(store.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new))
}

fn check_backend(function: &str, backend: &str) -> Result<()> {
    if DEFAULT_BACKENDS.contains(&backend) {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{function}: no subgraph backend `{backend}` selects operators by name (those that do: {})",
        DEFAULT_BACKENDS.join(", ")
    )))
}

/// Sets the operator names backend `backend` (`default` or `default_v2`)
/// selects (MXNet's `MXSetSubgraphPropertyOpNamesV2`).
pub fn set_property_op_names(backend: &str, names: &[String]) -> Result<()> {
    check_backend("MXSetSubgraphPropertyOpNamesV2", backend)?;
    with_store(&PROPERTY_NAMES, |m| m.insert(backend.to_string(), names.iter().cloned().collect()));
    Ok(())
}

/// Forgets the names set with [`set_property_op_names`]
/// (MXNet's `MXRemoveSubgraphPropertyOpNamesV2`).
pub fn remove_property_op_names(backend: &str) -> Result<()> {
    check_backend("MXRemoveSubgraphPropertyOpNamesV2", backend)?;
    with_store(&PROPERTY_NAMES, |m| m.remove(backend));
    Ok(())
}

/// Sets the operator names executors partition with when
/// `MXNET_SUBGRAPH_BACKEND` is `backend` (MXNet's `MXSetSubgraphPropertyOpNames`).
pub fn set_executor_op_names(backend: &str, names: &[String]) {
    with_store(&EXECUTOR_NAMES, |m| m.insert(backend.to_string(), names.iter().cloned().collect()));
}

/// Forgets the names set with [`set_executor_op_names`]
/// (MXNet's `MXRemoveSubgraphPropertyOpNames`).
pub fn remove_executor_op_names(backend: &str) {
    with_store(&EXECUTOR_NAMES, |m| m.remove(backend));
}

/// The names executors use for `backend` (empty when none were set).
pub fn executor_op_names(backend: &str) -> HashSet<String> {
    with_store(&EXECUTOR_NAMES, |m| m.get(backend).cloned().unwrap_or_default())
}

/// The `default` / `default_v2` backend as an `optimize_for` backend.
struct ByOpNames {
    backend: &'static str,
}

impl SymbolPass for ByOpNames {
    fn name(&self) -> String {
        self.backend.to_string()
    }

    fn run(&self, sym: &Symbol, options: &[(&str, &str)]) -> Result<Symbol> {
        let names = with_store(&PROPERTY_NAMES, |m| m.get(self.backend).cloned()).ok_or_else(|| {
            Error::Invalid(format!(
                "optimize_for: subgraph backend `{}` has no operator names; set them with \
                 MXSetSubgraphPropertyOpNamesV2 first",
                self.backend
            ))
        })?;
        let dedup = options.iter().any(|(k, v)| *k == "dedup_subgraph" && *v == "True");
        build_subgraph(sym, &names, dedup)
    }
}

/// Registers the `default` and `default_v2` backends (once).
pub fn register_default_backends() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for backend in DEFAULT_BACKENDS {
            register_backend(backend, Backend::Symbolic(Arc::new(ByOpNames { backend })));
        }
    });
}

/// One use of an entry: input `slot` of node `node`, or head `h` of the graph.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Use {
    Slot(usize, usize),
    Head(usize),
}

/// Partitions `sym`: maximal groups of operators named in `op_names`
/// become `_CachedOp` nodes. The result keeps `sym`'s inputs in order.
pub fn build_subgraph(sym: &Symbol, op_names: &HashSet<String>, dedup: bool) -> Result<Symbol> {
    if op_names.is_empty() {
        return Ok(sym.clone());
    }
    let g = sym.indexed()?;
    let selected: Vec<bool> =
        g.nodes.iter().map(|n| !n.is_variable() && op_names.contains(n.op_name())).collect();
    let groups = find_subgraphs(&g, &selected);
    if groups.is_empty() {
        return Ok(sym.clone());
    }
    ensure_subgraph_op(SUBGRAPH_OP)?;
    let order = use_order(&g);
    let mut group_of: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (i, members) in groups.iter().enumerate() {
        for &n in members {
            group_of[n] = Some(i);
        }
    }
    let mut plans: Vec<Plan> = Vec::with_capacity(groups.len());
    for (i, members) in groups.iter().enumerate() {
        let plan = plan_subgraph(&g, i, members, &group_of, &order, &plans, dedup)?;
        plans.push(plan);
    }
    rewire(&g, &group_of, &plans)
}

/// MXNet's `FindSubgraphs`: the groups, each sorted, in seed order.
fn find_subgraphs(g: &IndexedGraph, selected: &[bool]) -> Vec<Vec<usize>> {
    let n = g.nodes.len();
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, ins) in g.inputs.iter().enumerate() {
        for &(m, _) in ins {
            if !consumers[m].contains(&c) {
                consumers[m].push(c);
            }
        }
    }
    let mut label: Vec<i64> = vec![-1; n];
    let mut groups = Vec::new();
    for seed in 0..n {
        if label[seed] != -1 || !selected[seed] {
            continue;
        }
        let id = groups.len() as i64;
        let mut excluded: HashSet<usize> = HashSet::new();
        let mut found = None;
        let mut tries = 0;
        while tries < n * n {
            tries += 1;
            let before = excluded.len();
            match label_subgraph(g, selected, &consumers, &mut label, id, seed, &mut excluded) {
                Some(members) => {
                    found = Some(members);
                    break;
                }
                None if excluded.len() == before => break,
                None => {}
            }
        }
        let members = found.unwrap_or_else(|| {
            // a cycle is always found: the seed alone
            label[seed] = id;
            vec![seed]
        });
        groups.push(members);
    }
    groups
}

/// Of a node outside a group: the members that read it, and the members it reads.
type Around = (Vec<usize>, Vec<usize>);

/// MXNet's `LabelSubgraph`: grows from `seed`; on a cycle through outside
/// nodes, adds the node to exclude to `excluded`, unlabels and returns None.
fn label_subgraph(
    g: &IndexedGraph,
    selected: &[bool],
    consumers: &[Vec<usize>],
    label: &mut [i64],
    id: i64,
    seed: usize,
    excluded: &mut HashSet<usize>,
) -> Option<Vec<usize>> {
    let mut queue = VecDeque::from([seed]);
    label[seed] = id;
    let mut members = Vec::new();
    // outside node -> (members that read it, members it reads)
    let mut around: BTreeMap<usize, Around> = BTreeMap::new();
    while let Some(cur) = queue.pop_front() {
        members.push(cur);
        for &(m, _) in &g.inputs[cur] {
            if label[m] == -1 && !excluded.contains(&m) && selected[m] {
                label[m] = id;
                queue.push_back(m);
            } else if label[m] == -1 {
                around.entry(m).or_default().0.push(cur);
            }
        }
        for &c in &consumers[cur] {
            if label[c] == -1 && !excluded.contains(&c) && selected[c] {
                label[c] = id;
                queue.push_back(c);
            } else if label[c] == -1 {
                around.entry(c).or_default().1.push(cur);
            }
        }
    }
    for (readers, fed_by) in around.values_mut() {
        readers.sort_unstable();
        fed_by.sort_unstable();
    }
    let inside: HashSet<usize> = members.iter().copied().collect();
    let is_ancestor = |ancestor: usize, descendant: usize| {
        let mut stack = vec![descendant];
        let mut count = 0;
        while let Some(top) = stack.pop() {
            if count >= g.nodes.len() {
                break;
            }
            count += 1;
            if top == ancestor {
                return true;
            }
            stack.extend(g.inputs[top].iter().map(|&(m, _)| m).filter(|m| !inside.contains(m)));
        }
        false
    };
    let outside: Vec<(usize, &Around)> = around.iter().map(|(&k, v)| (k, v)).collect();
    let mut exclude: Option<usize> = None;
    for (i, &(node, (readers, fed_by))) in outside.iter().enumerate() {
        if let (Some(&r), Some(&f)) = (readers.last(), fed_by.last()) {
            exclude = exclude.max(Some(r.max(f)));
        } else if let Some(&f) = fed_by.last() {
            for &(later, (later_readers, _)) in &outside[i + 1..] {
                if let Some(&r) = later_readers.last() {
                    if is_ancestor(node, later) {
                        exclude = exclude.max(Some(f.max(r)));
                    }
                }
            }
        }
    }
    if let Some(x) = exclude {
        excluded.insert(x);
        for &m in &members {
            label[m] = -1;
        }
        return None;
    }
    members.sort_unstable();
    Some(members)
}

/// MXNet's `TopSortEntries`: a position for every use of an entry, in the
/// order a depth-first visit from the heads finishes them.
fn use_order(g: &IndexedGraph) -> HashMap<Use, usize> {
    let mut order = HashMap::new();
    let mut visited = vec![false; g.nodes.len()];
    for (h, &(node, _)) in g.heads.iter().enumerate() {
        if visited[node] {
            let next = order.len();
            order.insert(Use::Head(h), next);
            continue;
        }
        visited[node] = true;
        let mut stack: Vec<(usize, usize, Use)> = vec![(node, 0, Use::Head(h))];
        while let Some(top) = stack.last_mut() {
            let (n, next_input, u) = *top;
            if next_input == g.inputs[n].len() {
                let next = order.len();
                order.insert(u, next);
                stack.pop();
                continue;
            }
            top.1 += 1;
            let src = g.inputs[n][next_input].0;
            let this_use = Use::Slot(n, next_input);
            if visited[src] {
                let next = order.len();
                order.insert(this_use, next);
            } else {
                visited[src] = true;
                stack.push((src, 0, this_use));
            }
        }
    }
    order
}

/// What one group becomes.
struct Plan {
    name: String,
    params: Vec<(String, String)>,
    /// Per input of the node (the subgraph's `list_inputs` order): a member
    /// input slot it feeds.
    input_slots: Vec<(usize, usize)>,
    /// Per outside use of an inside entry: the node's output it reads.
    output_of: HashMap<Use, usize>,
    /// The names of the node's outputs (`<node>_<subgraph output>`).
    output_names: Vec<String>,
}

fn plan_subgraph(
    g: &IndexedGraph,
    id: usize,
    members: &[usize],
    group_of: &[Option<usize>],
    order: &HashMap<Use, usize>,
    earlier: &[Plan],
    dedup: bool,
) -> Result<Plan> {
    let inside = |n: usize| group_of[n] == Some(id);
    let rank = |u: &Use| order.get(u).copied().unwrap_or(usize::MAX);
    // uses of outside entries by members, in topological order
    let mut in_uses: Vec<(usize, usize)> = members
        .iter()
        .flat_map(|&m| (0..g.inputs[m].len()).map(move |s| (m, s)))
        .filter(|&(m, s)| !inside(g.inputs[m][s].0))
        .collect();
    in_uses.sort_by_key(|&(m, s)| rank(&Use::Slot(m, s)));
    // outside uses of inside entries, in topological order
    let mut out_uses: Vec<Use> = Vec::new();
    for (c, ins) in g.inputs.iter().enumerate() {
        if !inside(c) {
            out_uses
                .extend(ins.iter().enumerate().filter(|(_, e)| inside(e.0)).map(|(s, _)| Use::Slot(c, s)));
        }
    }
    out_uses.extend(g.heads.iter().enumerate().filter(|(_, e)| inside(e.0)).map(|(h, _)| Use::Head(h)));
    out_uses.sort_by_key(rank);
    let source = |u: &Use| match *u {
        Use::Slot(c, s) => g.inputs[c][s],
        Use::Head(h) => g.heads[h],
    };

    // the subgraph: members copied, outside entries cut into variables
    let mut vars: HashMap<(usize, usize), Vec<Entry>> = HashMap::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut var_slots: HashMap<String, (usize, usize)> = HashMap::new();
    let mut slot_var: HashMap<(usize, usize), Entry> = HashMap::new();
    for &(m, s) in &in_uses {
        let e = g.inputs[m][s];
        let base = current_name(g, e, Use::Slot(m, s), group_of, earlier)?;
        let reuse = if dedup { vars.get(&e).and_then(|v| v.first().cloned()) } else { None };
        let var = match reuse {
            Some(v) => v,
            None => {
                let count = counts.entry(base.clone()).or_insert(0);
                let name = format!("{base}{count}");
                *count += 1;
                let v = Entry { node: Node::variable(&name, BTreeMap::new()), index: 0 };
                var_slots.insert(name, (m, s));
                vars.entry(e).or_default().push(v.clone());
                v
            }
        };
        slot_var.insert((m, s), var);
    }
    let mut copies: HashMap<usize, Arc<Node>> = HashMap::new();
    for &m in members {
        let inputs = g.inputs[m]
            .iter()
            .enumerate()
            .map(|(s, &(src, k))| match slot_var.get(&(m, s)) {
                Some(v) => Ok(v.clone()),
                None => copies
                    .get(&src)
                    .map(|n| Entry { node: n.clone(), index: k })
                    .ok_or_else(|| Error::Invalid("partitioning: members out of order".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        copies.insert(m, Arc::new(Node::copy_with_inputs(&g.nodes[m], inputs)));
    }
    let mut heads: Vec<(usize, usize)> = Vec::new();
    let mut output_of = HashMap::new();
    for u in &out_uses {
        let e = source(u);
        if !(dedup && heads.last() == Some(&e)) {
            heads.push(e);
        }
        output_of.insert(*u, heads.len() - 1);
    }
    let sub = Symbol::from_entries(
        heads.iter().map(|&(n, k)| Entry { node: copies[&n].clone(), index: k }).collect(),
    );
    let input_slots =
        sub.list_inputs()?
            .iter()
            .map(|name| {
                var_slots.get(name).copied().ok_or_else(|| {
                    Error::Invalid(format!("partitioning: subgraph input `{name}` has no source"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
    let name = format!("{SUBGRAPH_OP}{id}");
    let output_names = sub.list_outputs()?.iter().map(|o| format!("{name}_{o}")).collect();
    Ok(Plan {
        name,
        params: vec![(SUBGRAPH_ATTR.to_string(), to_json(&sub)?)],
        input_slots,
        output_of,
        output_names,
    })
}

/// The name the entry read by `u` has when group `u`'s reader is cut: an
/// earlier group's output name when an earlier group produces it.
fn current_name(
    g: &IndexedGraph,
    e: (usize, usize),
    u: Use,
    group_of: &[Option<usize>],
    earlier: &[Plan],
) -> Result<String> {
    if let Some(plan) = group_of[e.0].and_then(|j| earlier.get(j)) {
        if let Some(&k) = plan.output_of.get(&u) {
            return Ok(plan.output_names[k].clone());
        }
    }
    g.nodes[e.0].output_name(e.1)
}

/// The graph with each group replaced by its node.
fn rewire(g: &IndexedGraph, group_of: &[Option<usize>], plans: &[Plan]) -> Result<Symbol> {
    struct Builder<'a> {
        g: &'a IndexedGraph,
        group_of: &'a [Option<usize>],
        plans: &'a [Plan],
        copies: Vec<Option<Arc<Node>>>,
        built: Vec<Option<Arc<Node>>>,
    }
    impl Builder<'_> {
        /// The new entry read by use `u`.
        fn read(&mut self, u: Use) -> Result<Entry> {
            let (src, k) = match u {
                Use::Slot(c, s) => self.g.inputs[c][s],
                Use::Head(h) => self.g.heads[h],
            };
            match self.group_of[src] {
                Some(j) if !matches!(u, Use::Slot(c, _) if self.group_of[c] == Some(j)) => {
                    let index = *self.plans[j].output_of.get(&u).ok_or_else(|| {
                        Error::Invalid("partitioning: a use of a subgraph has no output".into())
                    })?;
                    Ok(Entry { node: self.group(j)?, index })
                }
                _ => {
                    let node = self.copies[src].clone().ok_or_else(|| {
                        Error::Invalid("partitioning: a node was read before it was rebuilt".into())
                    })?;
                    Ok(Entry { node, index: k })
                }
            }
        }

        /// Group `j`'s node, built on first use.
        fn group(&mut self, j: usize) -> Result<Arc<Node>> {
            if let Some(n) = &self.built[j] {
                return Ok(n.clone());
            }
            let plan = &self.plans[j];
            let inputs = plan
                .input_slots
                .iter()
                .map(|&(m, s)| self.read(Use::Slot(m, s)))
                .collect::<Result<Vec<_>>>()?;
            let call = OpCall::new(SUBGRAPH_OP, plan.params.clone(), &plan.name)?;
            let node = Node::operator(&plan.name, call, inputs, BTreeMap::new());
            self.built[j] = Some(node.clone());
            Ok(node)
        }
    }
    let mut b =
        Builder { g, group_of, plans, copies: vec![None; g.nodes.len()], built: vec![None; plans.len()] };
    for (n, group) in group_of.iter().enumerate() {
        if group.is_some() {
            continue;
        }
        let inputs = (0..g.inputs[n].len()).map(|s| b.read(Use::Slot(n, s))).collect::<Result<Vec<_>>>()?;
        b.copies[n] = Some(Arc::new(Node::copy_with_inputs(&g.nodes[n], inputs)));
    }
    let heads = (0..g.heads.len()).map(|h| b.read(Use::Head(h))).collect::<Result<Vec<_>>>()?;
    Ok(Symbol::from_entries(heads))
}
