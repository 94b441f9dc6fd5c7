//! [`IndexedGraph`]: the nodes reachable from a set of heads, numbered in
//! topological order, with every output numbered as an entry. Passes and
//! the executor work on this form.

use crate::node::{Entry, Node};
use oxnet_core::Result;
use std::collections::HashMap;
use std::sync::Arc;

/// A numbered view of a graph.
pub struct IndexedGraph {
    /// Nodes in topological order (inputs before their consumers), in the
    /// order MXNet's depth-first visit gives.
    pub nodes: Vec<Arc<Node>>,
    /// For each node, its inputs as (node id, output index).
    pub inputs: Vec<Vec<(usize, usize)>>,
    /// `row_ptr[n]` is the entry id of node `n`'s output 0; the last element
    /// is the number of entries (NNVM's `node_row_ptr`).
    pub row_ptr: Vec<usize>,
    /// The heads as (node id, output index).
    pub heads: Vec<(usize, usize)>,
    /// For each node: true for a variable read as an auxiliary state.
    pub is_aux: Vec<bool>,
}

impl IndexedGraph {
    /// Numbers the graph reachable from `heads`.
    pub fn new(heads: &[Entry]) -> Result<IndexedGraph> {
        let all: Vec<usize> = (0..heads.len()).collect();
        Self::visiting(heads, &all)
    }

    /// Numbers the graph reachable from `heads`, visiting the heads in the
    /// order `visit` lists their positions (every position once; the
    /// `heads` field keeps their own order). The visit decides the order of
    /// the nodes: an executor that visits its gradient heads last argument
    /// first computes the gradients of later layers early.
    pub fn visiting(heads: &[Entry], visit: &[usize]) -> Result<IndexedGraph> {
        debug_assert_eq!(visit.len(), heads.len());
        let visited: Vec<Entry> = visit.iter().map(|&i| heads[i].clone()).collect();
        let order = topo_order(&visited);
        let index: HashMap<usize, usize> =
            order.iter().enumerate().map(|(i, n)| (Arc::as_ptr(n) as usize, i)).collect();
        let id = |n: &Arc<Node>| index[&(Arc::as_ptr(n) as usize)];
        let mut inputs = Vec::with_capacity(order.len());
        let mut row_ptr = Vec::with_capacity(order.len() + 1);
        let mut is_aux = vec![false; order.len()];
        let mut next = 0;
        for node in &order {
            row_ptr.push(next);
            next += node.num_outputs()?;
            inputs.push(node.inputs.iter().map(|e| (id(&e.node), e.index)).collect::<Vec<_>>());
            if let Some(call) = &node.op {
                // aux states: inputs after the arguments, and inputs the
                // operator writes to (MXNet's FMutateInputs), wherever they sit
                let (n_args, _, _) = call.arity()?;
                let mutated = (call.op.mutate_inputs)(&call.attrs);
                for (i, e) in node.inputs.iter().enumerate() {
                    if e.node.is_variable() && (i >= n_args || mutated.contains(&i)) {
                        is_aux[id(&e.node)] = true;
                    }
                }
            }
        }
        row_ptr.push(next);
        let heads = heads.iter().map(|e| (id(&e.node), e.index)).collect();
        Ok(IndexedGraph { nodes: order, inputs, row_ptr, heads, is_aux })
    }

    /// The entry id of output `index` of node `node`.
    #[inline]
    pub fn entry(&self, node: usize, index: usize) -> usize {
        self.row_ptr[node] + index
    }

    /// Number of entries (outputs of all nodes).
    pub fn num_entries(&self) -> usize {
        *self.row_ptr.last().unwrap_or(&0)
    }

    /// Number of outputs of node `n`.
    pub fn num_outputs(&self, n: usize) -> usize {
        self.row_ptr[n + 1] - self.row_ptr[n]
    }

    /// Ids of the variable nodes, in order.
    pub fn variables(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].is_variable()).collect()
    }

    /// Ids of the argument variables (not aux states), in order.
    pub fn arguments(&self) -> Vec<usize> {
        self.variables().into_iter().filter(|&i| !self.is_aux[i]).collect()
    }

    /// Ids of the auxiliary-state variables, in order.
    pub fn aux_states(&self) -> Vec<usize> {
        self.variables().into_iter().filter(|&i| self.is_aux[i]).collect()
    }
}

/// Nodes reachable from `heads` in post-order of a depth-first visit that
/// takes heads, then each node's inputs, in order (MXNet's `DFSVisit`), so
/// argument lists come out in MXNet's order. Iterative: deep graphs do not
/// overflow the stack.
pub fn topo_order(heads: &[Entry]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut visited = std::collections::HashSet::new();
    for head in heads {
        if visited.contains(&(Arc::as_ptr(&head.node) as usize)) {
            continue;
        }
        // (node, next input to visit)
        let mut stack: Vec<(Arc<Node>, usize)> = vec![(head.node.clone(), 0)];
        visited.insert(Arc::as_ptr(&head.node) as usize);
        while let Some((node, next)) = stack.last_mut() {
            if let Some(input) = node.inputs.get(*next) {
                *next += 1;
                let child = input.node.clone();
                if visited.insert(Arc::as_ptr(&child) as usize) {
                    stack.push((child, 0));
                }
            } else {
                let (done, _) = stack.pop().expect("stack is non-empty");
                order.push(done);
            }
        }
    }
    order
}
