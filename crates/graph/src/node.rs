//! The nodes of the graph IR: variables and operator calls, linked by
//! entries `(node, output index)`.
//!
//! Nodes are shared (`Arc`) and immutable once built, except for their user
//! attributes, so symbols can share sub-graphs as MXNet's do.

use oxnet_core::registry::{self, Op};
use oxnet_core::{AttrValue, Attrs, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// An operator from the registry with its attributes, as a graph node holds it.
#[derive(Clone)]
pub struct OpCall {
    /// The operator.
    pub op: Op,
    /// The attributes in their string form (as written to JSON and shown by
    /// `list_attr`), in the order given.
    pub params: Vec<(String, String)>,
    /// The same attributes, parsed and validated by the operator.
    pub attrs: Attrs,
}

impl OpCall {
    /// Looks up `op_name` and parses `params` for it. Errors name the node.
    pub fn new(op_name: &str, params: Vec<(String, String)>, node_name: &str) -> Result<OpCall> {
        let op = registry::get(op_name).map_err(|e| e.in_node(node_name, op_name))?;
        let given: Vec<(&str, AttrValue)> =
            params.iter().map(|(k, v)| (k.as_str(), AttrValue::Raw(v.clone()))).collect();
        let attrs = op.parse_attrs(&given).map_err(|e| e.in_node(node_name, op_name))?;
        Ok(OpCall { op, params, attrs })
    }

    /// Counts of (arguments, aux states, outputs).
    pub fn arity(&self) -> Result<(usize, usize, usize)> {
        oxnet_core::dispatch::arity(&self.op, &self.attrs)
    }

    /// How many outputs users see (the rest, like Dropout's mask, exist for the gradient).
    pub fn visible_outputs(&self) -> Result<usize> {
        let (_, _, n) = self.arity()?;
        Ok(self.op.visible_count(n))
    }

    /// Names of the inputs: arguments then aux states.
    pub fn input_names(&self) -> Result<Vec<String>> {
        let mut names = (self.op.arguments)(&self.attrs)?;
        names.extend((self.op.aux_states)(&self.attrs)?);
        Ok(names)
    }

    /// Names of the outputs.
    pub fn output_names(&self) -> Result<Vec<String>> {
        (self.op.outputs)(&self.attrs)
    }
}

/// One node: a variable (no operator) or an operator call.
pub struct Node {
    /// The node's name (unique within a well-formed graph).
    pub name: String,
    /// The operator, or `None` for a variable.
    pub op: Option<OpCall>,
    /// Where each input comes from (arguments, then aux states).
    pub inputs: Vec<Entry>,
    /// User attributes: `__shape__`, `__dtype__`, `__init__`, `__lr_mult__`,
    /// `__wd_mult__`, `ctx_group`, ...
    attrs: RwLock<BTreeMap<String, String>>,
}

impl Node {
    /// A new variable.
    pub fn variable(name: &str, attrs: BTreeMap<String, String>) -> Arc<Node> {
        Arc::new(Node { name: name.to_string(), op: None, inputs: Vec::new(), attrs: RwLock::new(attrs) })
    }

    /// A new operator node.
    pub fn operator(
        name: &str,
        op: OpCall,
        inputs: Vec<Entry>,
        attrs: BTreeMap<String, String>,
    ) -> Arc<Node> {
        Arc::new(Node { name: name.to_string(), op: Some(op), inputs, attrs: RwLock::new(attrs) })
    }

    /// A node like `node` (name, operator, user attributes) reading `inputs`.
    pub fn copy_with_inputs(node: &Node, inputs: Vec<Entry>) -> Node {
        Node { name: node.name.clone(), op: node.op.clone(), inputs, attrs: RwLock::new(node.user_attrs()) }
    }

    /// True for a variable.
    pub fn is_variable(&self) -> bool {
        self.op.is_none()
    }

    /// The operator's name, or `"null"` for a variable (as in NNVM JSON).
    pub fn op_name(&self) -> &str {
        self.op.as_ref().map_or("null", |o| o.op.name.as_str())
    }

    /// Number of outputs (1 for a variable), hidden ones included.
    pub fn num_outputs(&self) -> Result<usize> {
        match &self.op {
            None => Ok(1),
            Some(c) => Ok(c.arity()?.2),
        }
    }

    /// Number of outputs a symbol of this node shows.
    pub fn num_visible_outputs(&self) -> Result<usize> {
        match &self.op {
            None => Ok(1),
            Some(c) => c.visible_outputs(),
        }
    }

    /// A user attribute.
    pub fn attr(&self, key: &str) -> Option<String> {
        self.attrs.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    /// All user attributes.
    pub fn user_attrs(&self) -> BTreeMap<String, String> {
        self.attrs.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sets a user attribute (MXNet's `_set_attr`).
    pub fn set_attr(&self, key: &str, value: &str) {
        self.attrs.write().unwrap_or_else(|e| e.into_inner()).insert(key.to_string(), value.to_string());
    }

    /// User attributes and operator attributes together (MXNet's `list_attr`).
    pub fn all_attrs(&self) -> BTreeMap<String, String> {
        let mut all = self.user_attrs();
        if let Some(c) = &self.op {
            for (k, v) in &c.params {
                all.insert(k.clone(), v.clone());
            }
        }
        all
    }

    /// The name of output `index`: the variable's name, or
    /// `<node>_<output name>` (`fc1_output`).
    pub fn output_name(&self, index: usize) -> Result<String> {
        match &self.op {
            None => Ok(self.name.clone()),
            Some(c) => {
                let names = c.output_names()?;
                let out = names.get(index).cloned().unwrap_or_else(|| format!("output{index}"));
                Ok(format!("{}_{out}", self.name))
            }
        }
    }
}

/// One output of one node.
#[derive(Clone)]
pub struct Entry {
    /// The node.
    pub node: Arc<Node>,
    /// Which of its outputs.
    pub index: usize,
}

impl Entry {
    /// The entry's identity (node address, output index).
    pub fn key(&self) -> (usize, usize) {
        (Arc::as_ptr(&self.node) as usize, self.index)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Entry {}
