//! Common subexpression elimination (MXNet's `MXNET_ELIMINATE_COMMON_EXPR`,
//! on by default): operator nodes that call the same operator with the same
//! attributes on the same inputs are computed once.
//!
//! Nodes that draw random numbers or write to their inputs (auxiliary
//! states) are never merged, nor are stateful operators. When two outputs
//! of the symbol become one entry, the later one reads it through a
//! `_copy` node, so that the outputs stay distinct arrays (as MXNet does).

use crate::indexed::topo_order;
use crate::node::{Entry, Node, OpCall};
use crate::symbol::Symbol;
use oxnet_core::{Resource, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// True when the environment leaves elimination on (`MXNET_ELIMINATE_COMMON_EXPR`
/// unset or anything but `0`).
pub fn enabled_by_env() -> bool {
    std::env::var("MXNET_ELIMINATE_COMMON_EXPR").map_or(true, |v| v.trim() != "0")
}

fn address(node: &Arc<Node>) -> usize {
    Arc::as_ptr(node) as usize
}

/// What makes two operator calls interchangeable.
type CallKey = (String, BTreeMap<String, String>, BTreeMap<String, String>, Vec<(usize, usize)>);

fn mergeable(call: &OpCall) -> bool {
    !call.op.resources.contains(&Resource::Random)
        && (call.op.mutate_inputs)(&call.attrs).is_empty()
        && call.op.create_state.is_none()
}

/// `sym` with common subexpressions computed once.
pub fn eliminate_common_expr(sym: &Symbol) -> Result<Symbol> {
    let mut replaced: HashMap<usize, Arc<Node>> = HashMap::new();
    let mut first: HashMap<CallKey, Arc<Node>> = HashMap::new();
    let map = |e: &Entry, replaced: &HashMap<usize, Arc<Node>>| Entry {
        node: replaced.get(&address(&e.node)).cloned().unwrap_or_else(|| e.node.clone()),
        index: e.index,
    };
    for node in topo_order(sym.entries()) {
        let inputs: Vec<Entry> = node.inputs.iter().map(|e| map(e, &replaced)).collect();
        let same_inputs = inputs.iter().zip(&node.inputs).all(|(a, b)| Arc::ptr_eq(&a.node, &b.node));
        let rebuilt =
            if same_inputs { node.clone() } else { Arc::new(Node::copy_with_inputs(&node, inputs)) };
        let kept = match &rebuilt.op {
            Some(call) if mergeable(call) => {
                let key: CallKey = (
                    call.op.name.clone(),
                    call.params.iter().cloned().collect(),
                    rebuilt.user_attrs(),
                    rebuilt.inputs.iter().map(|e| (address(&e.node), e.index)).collect(),
                );
                first.entry(key).or_insert_with(|| rebuilt.clone()).clone()
            }
            _ => rebuilt,
        };
        replaced.insert(address(&node), kept);
    }
    let mut seen = HashSet::new();
    let mut outputs = Vec::with_capacity(sym.entries().len());
    for (i, e) in sym.entries().iter().enumerate() {
        let merged = map(e, &replaced);
        let key = (address(&merged.node), merged.index);
        // an output that was its own array before and now shares one gets a copy
        let was_distinct =
            !sym.entries()[..i].iter().any(|o| Arc::ptr_eq(&o.node, &e.node) && o.index == e.index);
        if !seen.insert(key) && was_distinct {
            let name = format!("{}_copy{i}", e.node.name);
            let call = OpCall::new("_copy", Vec::new(), &name)?;
            let copy = Node::operator(&name, call, vec![merged], BTreeMap::new());
            outputs.push(Entry { node: copy, index: 0 });
        } else {
            outputs.push(merged);
        }
    }
    Ok(Symbol::from_entries(outputs))
}
