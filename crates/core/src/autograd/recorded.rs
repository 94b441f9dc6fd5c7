//! What autograd recorded, as plain data: the operator calls that lead from
//! the variables to some arrays (MXNet's `autograd.get_symbol` builds a
//! symbol from it in the graph layer).

use super::tape::{AgEntry, Node};
use crate::{Error, NDArray, Result};
use std::collections::HashMap;
use std::sync::Arc;

/// Where a recorded call's input came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedInput {
    /// The `n`-th distinct variable (an array with `attach_grad`), in the
    /// order the walk meets them.
    Variable(usize),
    /// An array that took no part in autograd (a constant of the record).
    Constant,
    /// Output `index` of call `call`.
    Output {
        /// Index into [`RecordedGraph::calls`].
        call: usize,
        /// Which output of that call.
        index: usize,
    },
}

/// One recorded operator call.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// The operator's registry name.
    pub op: String,
    /// Its attributes in string form.
    pub attrs: Vec<(String, String)>,
    /// Its inputs (arguments then auxiliary states).
    pub inputs: Vec<RecordedInput>,
    /// How many outputs it has.
    pub num_outputs: usize,
}

/// The recorded computation behind some arrays, calls in topological order.
#[derive(Debug, Clone)]
pub struct RecordedGraph {
    /// Operator calls; every call comes after the calls it reads.
    pub calls: Vec<RecordedCall>,
    /// What each requested array is.
    pub heads: Vec<RecordedInput>,
    /// How many distinct variables the calls read.
    pub num_variables: usize,
}

/// The calls recorded between the variables and `heads`. An array that was
/// not recorded (computed outside `autograd.record()` from no variable) is
/// an error naming its position.
pub fn recorded_graph(heads: &[&NDArray]) -> Result<RecordedGraph> {
    let mut walk = Walk { calls: Vec::new(), call_of: HashMap::new(), var_of: HashMap::new() };
    let mut out = Vec::with_capacity(heads.len());
    for (i, h) in heads.iter().enumerate() {
        let entry = h.ag_entry().ok_or_else(|| {
            Error::Autograd(format!(
                "array {i} was not recorded: compute it under autograd.record() from a variable"
            ))
        })?;
        out.push(walk.input_of(&Some(entry)));
    }
    let num_variables = walk.var_of.len();
    Ok(RecordedGraph { calls: walk.calls, heads: out, num_variables })
}

struct Walk {
    calls: Vec<RecordedCall>,
    call_of: HashMap<usize, usize>,
    var_of: HashMap<usize, usize>,
}

impl Walk {
    fn input_of(&mut self, entry: &Option<AgEntry>) -> RecordedInput {
        match entry {
            None => RecordedInput::Constant,
            Some(AgEntry::Var(v)) => {
                let n = self.var_of.len();
                RecordedInput::Variable(*self.var_of.entry(Arc::as_ptr(v) as usize).or_insert(n))
            }
            Some(AgEntry::Out { node, index }) => {
                RecordedInput::Output { call: self.visit(node), index: *index }
            }
        }
    }

    /// Adds `root` and the calls it depends on (iteratively: records can be
    /// deep), returning `root`'s index.
    fn visit(&mut self, root: &Arc<Node>) -> usize {
        let key = |n: &Arc<Node>| Arc::as_ptr(n) as usize;
        let mut stack = vec![(root.clone(), false)];
        while let Some((node, ready)) = stack.pop() {
            if self.call_of.contains_key(&key(&node)) {
                continue;
            }
            if !ready {
                stack.push((node.clone(), true));
                for p in node.parents().iter().flatten() {
                    if let AgEntry::Out { node: parent, .. } = p {
                        if !self.call_of.contains_key(&key(parent)) {
                            stack.push((parent.clone(), false));
                        }
                    }
                }
                continue;
            }
            let inputs = node.parents().iter().map(|p| self.input_of(p)).collect();
            self.call_of.insert(key(&node), self.calls.len());
            self.calls.push(RecordedCall {
                op: node.op_name().to_string(),
                attrs: node.attr_strings(),
                inputs,
                num_outputs: node.num_outputs(),
            });
        }
        self.call_of[&key(root)]
    }
}
