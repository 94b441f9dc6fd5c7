//! [`Symbol`]: MXNet 1.x's symbolic handle, a list of output entries of a
//! shared graph. Symbols are built from variables and operator calls,
//! grouped, indexed, composed and copied; they need no shapes until bound.
//!
//! ```
//! use oxnet_graph::Symbol;
//! let data = Symbol::var("data");
//! let fc = Symbol::op("FullyConnected", &[&data], &[("num_hidden", 8.into())], Some("fc")).unwrap();
//! assert_eq!(fc.list_arguments().unwrap(), ["data", "fc_weight", "fc_bias"]);
//! assert_eq!(fc.list_outputs().unwrap(), ["fc_output"]);
//! ```

use crate::indexed::{topo_order, IndexedGraph};
use crate::names;
use crate::node::{Entry, Node, OpCall};
use oxnet_core::{AttrValue, DType, Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A symbolic expression: one or more outputs of a graph.
#[derive(Clone)]
pub struct Symbol {
    outputs: Vec<Entry>,
}

/// Options of a variable (MXNet's `mx.sym.var` keywords).
#[derive(Debug, Clone, Default)]
pub struct VarOptions {
    /// Its shape; 0 marks an unknown dimension.
    pub shape: Option<Vec<usize>>,
    /// Its dtype.
    pub dtype: Option<DType>,
    /// Its initializer, in the serialized form Gluon writes.
    pub init: Option<String>,
    /// Learning-rate multiplier.
    pub lr_mult: Option<f64>,
    /// Weight-decay multiplier.
    pub wd_mult: Option<f64>,
    /// Further user attributes.
    pub attrs: BTreeMap<String, String>,
}

/// Formats a shape as MXNet writes it: `(3, 4)`, `(5,)`, `()`.
pub fn shape_string(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if shape.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// Parses a shape written as `(3, 4)`, `[3,4]` or `3`.
pub fn parse_shape(text: &str) -> Result<Vec<usize>> {
    let t = text.trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
    t.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.trim_end_matches('L');
            s.parse::<i64>()
                .ok()
                .and_then(|v| usize::try_from(v.max(0)).ok())
                .ok_or_else(|| Error::Invalid(format!("`{text}` is not a shape")))
        })
        .collect()
}

/// Keywords that MXNet treats as node attributes rather than operator
/// parameters when a symbol is composed.
const HIDDEN_KEYS: &[&str] =
    &["ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope"];

impl Symbol {
    /// A symbol of the given entries.
    pub fn from_entries(outputs: Vec<Entry>) -> Symbol {
        Symbol { outputs }
    }

    /// The output entries.
    pub fn entries(&self) -> &[Entry] {
        &self.outputs
    }

    /// A variable named `name`.
    pub fn var(name: &str) -> Symbol {
        Symbol::variable(name, VarOptions::default())
    }

    /// A variable with options (`mx.sym.var(name, shape=, dtype=, init=, ...)`).
    pub fn variable(name: &str, options: VarOptions) -> Symbol {
        let mut attrs = options.attrs;
        if let Some(s) = &options.shape {
            attrs.insert("__shape__".into(), shape_string(s));
        }
        if let Some(d) = options.dtype {
            attrs.insert("__dtype__".into(), (d as i32).to_string());
        }
        if let Some(i) = options.init {
            attrs.insert("__init__".into(), i);
        }
        if let Some(v) = options.lr_mult {
            attrs.insert("__lr_mult__".into(), v.to_string());
        }
        if let Some(v) = options.wd_mult {
            attrs.insert("__wd_mult__".into(), v.to_string());
        }
        Symbol { outputs: vec![Entry { node: Node::variable(name, attrs), index: 0 }] }
    }

    /// Calls operator `op_name` on single-output symbols given by position,
    /// with typed attributes; missing inputs become variables
    /// `<name>_<argument>`. Without a name one is made (`fullyconnected0`).
    pub fn op(
        op_name: &str,
        inputs: &[&Symbol],
        attrs: &[(&str, AttrValue)],
        name: Option<&str>,
    ) -> Result<Symbol> {
        let params = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let positional: Vec<Symbol> = inputs.iter().map(|s| (*s).clone()).collect();
        Symbol::compose_op(op_name, &positional, &[], params, name, BTreeMap::new())
    }

    /// The general form of [`Symbol::op`]: inputs by position and by
    /// argument name, attributes as strings, user attributes for the node.
    pub fn compose_op(
        op_name: &str,
        positional: &[Symbol],
        named: &[(String, Symbol)],
        mut params: Vec<(String, String)>,
        name: Option<&str>,
        mut user_attrs: BTreeMap<String, String>,
    ) -> Result<Symbol> {
        let op = oxnet_core::registry::get(op_name)?;
        // Variables made for missing inputs take the scope's attributes and,
        // as in MXNet, the hidden keys given to the operator (so that
        // `FullyConnected(..., lr_mult=0)` freezes its own weight).
        let mut var_attrs = user_attrs.clone();
        // MXNet's hidden keys (`lr_mult=`, `ctx_group=`, ...) given as
        // keywords are node attributes, kept both as given and as `__key__`,
        // unless the operator declares them itself.
        params.retain(|(k, v)| {
            let hidden = HIDDEN_KEYS.contains(&k.as_str()) && !op.attrs.iter().any(|a| a.name == *k);
            if hidden {
                for map in [&mut user_attrs, &mut var_attrs] {
                    map.insert(format!("__{k}__"), v.clone());
                    map.insert(k.clone(), v.clone());
                }
            }
            !hidden
        });
        if op.attrs.iter().any(|a| a.name == "num_args") && !params.iter().any(|(k, _)| k == "num_args") {
            params.push(("num_args".into(), (positional.len() + named.len()).to_string()));
        }
        let name = match name {
            Some(n) => n.to_string(),
            None => names::auto_name(op_name),
        };
        let call = OpCall::new(op_name, params, &name)?;
        let op_label = call.op.name.clone();
        let input_names = call.input_names().map_err(|e| e.in_node(&name, &op_label))?;
        if positional.len() > input_names.len() {
            return Err(Error::Invalid(format!(
                "{} inputs given, the operator takes {} ({})",
                positional.len(),
                input_names.len(),
                input_names.join(", ")
            ))
            .in_node(&name, &op_label));
        }
        let mut slots: Vec<Option<Entry>> = vec![None; input_names.len()];
        for (i, s) in positional.iter().enumerate() {
            slots[i] = Some(s.single_entry().map_err(|e| e.in_node(&name, &op_label))?);
        }
        for (key, s) in named {
            let i = input_names.iter().position(|n| n == key).ok_or_else(|| {
                Error::Invalid(format!("no input named `{key}` (inputs: {})", input_names.join(", ")))
                    .in_node(&name, &op_label)
            })?;
            if slots[i].is_some() {
                return Err(Error::Invalid(format!("input `{key}` given twice")).in_node(&name, &op_label));
            }
            slots[i] = Some(s.single_entry().map_err(|e| e.in_node(&name, &op_label))?);
        }
        let inputs = slots
            .into_iter()
            .zip(&input_names)
            .map(|(slot, arg)| match slot {
                Some(e) => e,
                // Scope attributes (mx.AttrScope, attr=) apply to the variables made here too.
                // The operator may add attributes of its own (BatchNorm's initializers).
                None => {
                    let mut attrs = var_attrs.clone();
                    if let Some(extra) = &call.op.input_var_attrs {
                        attrs.extend(extra(&call.attrs, arg));
                    }
                    Entry { node: Node::variable(&format!("{name}_{arg}"), attrs), index: 0 }
                }
            })
            .collect();
        let node = Node::operator(&name, call, inputs, user_attrs);
        let n = node.num_visible_outputs()?;
        Ok(Symbol { outputs: (0..n).map(|index| Entry { node: node.clone(), index }).collect() })
    }

    /// The one entry of a single-output symbol.
    pub fn single_entry(&self) -> Result<Entry> {
        match self.outputs.as_slice() {
            [e] => Ok(e.clone()),
            many => Err(Error::Invalid(format!(
                "a symbol with {} outputs cannot be an operator's input; pick one with sym[i]",
                many.len()
            ))),
        }
    }

    /// Groups symbols into one with all their outputs (`mx.sym.Group`).
    pub fn group(symbols: &[Symbol]) -> Symbol {
        Symbol { outputs: symbols.iter().flat_map(|s| s.outputs.iter().cloned()).collect() }
    }

    /// Number of outputs.
    pub fn num_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Output `i` as a symbol (`sym[i]`).
    pub fn get(&self, i: usize) -> Result<Symbol> {
        self.outputs.get(i).map(|e| Symbol { outputs: vec![e.clone()] }).ok_or_else(|| {
            Error::Invalid(format!(
                "output index {i} is out of range for a symbol with {} outputs",
                self.outputs.len()
            ))
        })
    }

    /// The output named `name` (`sym['fc1_output']`).
    pub fn get_by_name(&self, name: &str) -> Result<Symbol> {
        let names = self.list_outputs()?;
        let found: Vec<usize> = (0..names.len()).filter(|&i| names[i] == name).collect();
        match found.as_slice() {
            [i] => self.get(*i),
            [] => Err(Error::Invalid(format!(
                "the symbol has no output named `{name}` (outputs: {})",
                names.join(", ")
            ))),
            _ => Err(Error::Invalid(format!("the symbol has several outputs named `{name}`"))),
        }
    }

    /// Every output of every node, in topological order (`get_internals`).
    pub fn internals(&self) -> Result<Symbol> {
        let mut outputs = Vec::new();
        for node in topo_order(&self.outputs) {
            for index in 0..node.num_visible_outputs()? {
                outputs.push(Entry { node: node.clone(), index });
            }
        }
        Ok(Symbol { outputs })
    }

    /// The inputs of the (single) head node, grouped; `None` for a variable
    /// (`get_children`).
    pub fn children(&self) -> Option<Symbol> {
        // the inputs of each distinct output node, once (several outputs of
        // one node, such as a split's, share its inputs)
        let mut outputs = Vec::new();
        let mut seen: Vec<*const Node> = Vec::new();
        for e in &self.outputs {
            let node = Arc::as_ptr(&e.node);
            if !seen.contains(&node) {
                seen.push(node);
                outputs.extend(e.node.inputs.iter().cloned());
            }
        }
        if outputs.is_empty() {
            None
        } else {
            Some(Symbol { outputs })
        }
    }

    /// The numbered graph of this symbol.
    pub fn indexed(&self) -> Result<IndexedGraph> {
        IndexedGraph::new(&self.outputs)
    }

    /// The numbered graph, its outputs visited in the order `visit` lists
    /// them (see [`IndexedGraph::visiting`]).
    pub(crate) fn indexed_visiting(&self, visit: &[usize]) -> Result<IndexedGraph> {
        IndexedGraph::visiting(&self.outputs, visit)
    }

    /// Names of the arguments (variables that are not aux states), in MXNet's order.
    pub fn list_arguments(&self) -> Result<Vec<String>> {
        let g = self.indexed()?;
        Ok(g.arguments().into_iter().map(|i| g.nodes[i].name.clone()).collect())
    }

    /// Names of the auxiliary states.
    pub fn list_auxiliary_states(&self) -> Result<Vec<String>> {
        let g = self.indexed()?;
        Ok(g.aux_states().into_iter().map(|i| g.nodes[i].name.clone()).collect())
    }

    /// Names of all variables, arguments and aux states, in order.
    pub fn list_inputs(&self) -> Result<Vec<String>> {
        let g = self.indexed()?;
        Ok(g.variables().into_iter().map(|i| g.nodes[i].name.clone()).collect())
    }

    /// Names of the outputs (`fc1_output`, or a variable's own name).
    pub fn list_outputs(&self) -> Result<Vec<String>> {
        self.outputs.iter().map(|e| e.node.output_name(e.index)).collect()
    }

    /// The name of a single-output symbol's node (`None` for a group).
    pub fn name(&self) -> Option<String> {
        match self.outputs.as_slice() {
            [e] => Some(e.node.name.clone()),
            _ => None,
        }
    }

    /// A user or operator attribute of a single-output symbol's node.
    pub fn attr(&self, key: &str) -> Option<String> {
        match self.outputs.as_slice() {
            [e] => e.node.all_attrs().get(key).cloned(),
            _ => None,
        }
    }

    /// The attributes of a single-output symbol's node (`list_attr`).
    pub fn list_attr(&self) -> BTreeMap<String, String> {
        match self.outputs.as_slice() {
            [e] => e.node.all_attrs(),
            _ => BTreeMap::new(),
        }
    }

    /// Attributes of every node that has some, by node name (`attr_dict`).
    pub fn attr_dict(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        topo_order(&self.outputs)
            .into_iter()
            .map(|n| (n.name.clone(), n.all_attrs()))
            .filter(|(_, a)| !a.is_empty())
            .collect()
    }

    /// Sets a user attribute on every head node (`_set_attr`).
    pub fn set_attr(&self, key: &str, value: &str) {
        for e in &self.outputs {
            e.node.set_attr(key, value);
        }
    }

    /// A copy with variables replaced: `positional` replaces the arguments
    /// in `list_arguments` order, `named` replaces variables by name
    /// (`net(data=other)`). Unknown names are an error.
    pub fn compose(&self, positional: &[Symbol], named: &[(String, Symbol)]) -> Result<Symbol> {
        let args = self.list_arguments()?;
        if positional.len() > args.len() {
            return Err(Error::Invalid(format!(
                "compose: {} symbols given for {} arguments ({})",
                positional.len(),
                args.len(),
                args.join(", ")
            )));
        }
        let inputs = self.list_inputs()?;
        let mut by_name: HashMap<String, Entry> = HashMap::new();
        for (s, a) in positional.iter().zip(&args) {
            by_name.insert(a.clone(), s.single_entry()?);
        }
        for (k, s) in named {
            if !inputs.contains(k) {
                return Err(Error::Invalid(format!(
                    "compose: the symbol has no variable `{k}` (variables: {})",
                    inputs.join(", ")
                )));
            }
            if by_name.insert(k.clone(), s.single_entry()?).is_some() {
                return Err(Error::Invalid(format!("compose: variable `{k}` given twice")));
            }
        }
        Ok(self.rebuild(|node| if node.is_variable() { by_name.get(&node.name).cloned() } else { None }))
    }

    /// A deep copy: new nodes with the same structure and attributes.
    pub fn deep_copy(&self) -> Symbol {
        self.rebuild(|_| None)
    }

    /// Copies the graph, replacing the nodes for which `replace` gives an entry.
    fn rebuild(&self, replace: impl Fn(&Node) -> Option<Entry>) -> Symbol {
        let mut map: HashMap<usize, Arc<Node>> = HashMap::new();
        let mut substituted: HashMap<usize, Entry> = HashMap::new();
        for node in topo_order(&self.outputs) {
            let key = Arc::as_ptr(&node) as usize;
            if let Some(e) = replace(&node) {
                substituted.insert(key, e);
                continue;
            }
            let inputs = node.inputs.iter().map(|e| map_entry(e, &map, &substituted)).collect();
            let copy = Arc::new(Node::copy_with_inputs(&node, inputs));
            map.insert(key, copy);
        }
        Symbol { outputs: self.outputs.iter().map(|e| map_entry(e, &map, &substituted)).collect() }
    }
}

fn map_entry(e: &Entry, map: &HashMap<usize, Arc<Node>>, substituted: &HashMap<usize, Entry>) -> Entry {
    let key = Arc::as_ptr(&e.node) as usize;
    if let Some(s) = substituted.get(&key) {
        return s.clone();
    }
    Entry { node: map[&key].clone(), index: e.index }
}

impl std::fmt::Debug for Symbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.outputs.as_slice() {
            [e] => write!(f, "<Symbol {}>", e.node.name),
            _ => write!(
                f,
                "<Symbol group [{}]>",
                self.outputs.iter().map(|e| e.node.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}
