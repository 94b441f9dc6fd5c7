//! Cutting a subgraph out of a symbol by its scope (MXNet's
//! `MXSymbolCutSubgraph`), as `mx.sym.contrib.foreach`, `while_loop` and
//! `cond` build their bodies.
//!
//! The body function runs inside `AttrScope(__subgraph_name__=scope)`, so
//! every node it creates carries that attribute. The body may read values
//! computed outside it (an outer layer's output, a block's input): the cut
//! replaces each such outer operator output with a new variable named after
//! it, and the loop or branch node takes the outer value as an input. Outer
//! variables (weights) stay variables of the body.

use crate::indexed::topo_order;
use crate::node::{Entry, Node};
use crate::symbol::Symbol;
use oxnet_core::{Error, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// The user attribute naming the body a node belongs to.
pub const SCOPE_ATTR: &str = "__subgraph_name__";

/// A body cut out of its surroundings.
pub struct CutBody {
    /// The body: the nodes of the scope, reading variables only from outside.
    pub body: Symbol,
    /// For each of the body's inputs (`list_inputs` order), the value that
    /// feeds it: the outer output a cut variable stands for, or the
    /// variable itself (the caller replaces its placeholders).
    pub feeds: Vec<Symbol>,
}

/// Cuts the nodes of `scope` out of `sym` (whose heads must belong to the
/// scope or be variables). Outer operator outputs read by the scope become
/// variables named after the output (`fc1_output`), made unique among the
/// body's inputs.
pub fn cut_scope(sym: &Symbol, scope: &str) -> Result<CutBody> {
    let inside = |n: &Node| n.attr(SCOPE_ATTR).as_deref() == Some(scope);
    let order = topo_order(sym.entries());
    let mut cut = Cut {
        copies: HashMap::new(),
        cut_vars: HashMap::new(),
        outer_of: HashMap::new(),
        taken: order.iter().filter(|n| n.is_variable()).map(|n| n.name.clone()).collect(),
    };
    for node in &order {
        if inside(node) && !node.is_variable() {
            let inputs = node.inputs.iter().map(|e| cut.entry(e)).collect::<Result<Vec<_>>>()?;
            cut.copies.insert(Arc::as_ptr(node) as usize, Arc::new(Node::copy_with_inputs(node, inputs)));
        }
    }
    let mut heads = Vec::with_capacity(sym.entries().len());
    for e in sym.entries() {
        if !e.node.is_variable() && !inside(&e.node) {
            return Err(Error::Invalid(format!(
                "cutting the body `{scope}`: its output `{}` was computed outside it (pass it through identity inside the body)",
                e.node.output_name(e.index)?
            )));
        }
        heads.push(cut.entry(e)?);
    }
    let body = Symbol::from_entries(heads);
    let graph = body.indexed()?;
    let feeds = graph
        .variables()
        .into_iter()
        .map(|n| {
            let node = &graph.nodes[n];
            let outer = cut.outer_of.get(&node.name).cloned();
            Symbol::from_entries(vec![outer.unwrap_or(Entry { node: node.clone(), index: 0 })])
        })
        .collect();
    Ok(CutBody { body, feeds })
}

/// The cut in progress.
struct Cut {
    /// The scope's operator nodes, copied with their inputs mapped.
    copies: HashMap<usize, Arc<Node>>,
    /// Each outer operator output read by the scope, and its variable.
    cut_vars: HashMap<(usize, usize), Arc<Node>>,
    /// The variables' names and the outer outputs they stand for.
    outer_of: HashMap<String, Entry>,
    /// Variable names in use.
    taken: HashSet<String>,
}

impl Cut {
    /// Where the body reads `e`: a copied node, a variable, or a new
    /// variable standing for an outer operator output.
    fn entry(&mut self, e: &Entry) -> Result<Entry> {
        if let Some(copy) = self.copies.get(&(Arc::as_ptr(&e.node) as usize)) {
            return Ok(Entry { node: copy.clone(), index: e.index });
        }
        if e.node.is_variable() {
            return Ok(e.clone());
        }
        if let Some(v) = self.cut_vars.get(&e.key()) {
            return Ok(Entry { node: v.clone(), index: 0 });
        }
        let base = e.node.output_name(e.index)?;
        let mut name = base.clone();
        let mut k = 1;
        while !self.taken.insert(name.clone()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        let v = Node::variable(&name, BTreeMap::new());
        self.cut_vars.insert(e.key(), v.clone());
        self.outer_of.insert(name, e.clone());
        Ok(Entry { node: v, index: 0 })
    }
}
