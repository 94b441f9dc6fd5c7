//! Symbols to and from the NNVM JSON that MXNet 1.x writes (`-symbol.json`):
//! `nodes` (each with `op`, `name`, `attrs`, `inputs`), `arg_nodes`,
//! `node_row_ptr`, `heads` and `attrs.mxnet_version`. The legacy per-node
//! keys `param` (operator attributes) and `attr` (user attributes) of older
//! files are read too. Control-flow nodes (`_foreach`, `_while_loop`,
//! `_cond`) keep their bodies in MXNet's per-node `subgraphs` list, which
//! oxnet holds as the node's attributes (`subgraph_sym_json`, ...; see
//! `control_flow::subgraph_attrs`). Malformed input is an error naming the
//! node or key, never a panic.

use crate::indexed::IndexedGraph;
use crate::node::{Entry, Node, OpCall};
use crate::symbol::Symbol;
use oxnet_core::{Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// The version oxnet writes into `attrs.mxnet_version` (MXNet 1.9.1's), so
/// MXNet 1.x reads the file without upgrading it.
pub const MXNET_VERSION: i64 = 10901;

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

/// Writes `sym` as NNVM JSON, laid out as MXNet lays it out.
pub fn to_json(sym: &Symbol) -> Result<String> {
    to_json_with(sym, false)
}

/// Like [`to_json`]; with `np_shape`, the graph's attributes also say
/// `is_np_shape` (what MXNet writes under NumPy-shape semantics, where 0 is a
/// real extent rather than an unknown one).
pub fn to_json_with(sym: &Symbol, np_shape: bool) -> Result<String> {
    let g = IndexedGraph::new(sym.entries())?;
    let mut out = String::from("{\n  \"nodes\": [\n");
    for (i, node) in g.nodes.iter().enumerate() {
        out.push_str("    {\n");
        let _ = writeln!(out, "      \"op\": {}, ", quote(node.op_name()));
        let _ = write!(out, "      \"name\": {}, ", quote(&node.name));
        let mut attrs = node.all_attrs();
        // control flow's bodies go into MXNet's `subgraphs` field, not attributes
        // (compact, as they read back, so a graph's JSON survives a round trip unchanged)
        let bodies: Vec<String> = crate::control_flow::subgraph_attrs(node.op_name())
            .unwrap_or_default()
            .iter()
            .filter_map(|k| attrs.remove(*k).map(|text| (k, text)))
            .map(|(k, text)| {
                serde_json::from_str::<Value>(&text)
                    .map(|v| v.to_string())
                    .map_err(|e| bad(format!("node `{}`: its `{k}` is not JSON: {e}", node.name)))
            })
            .collect::<Result<_>>()?;
        if !attrs.is_empty() {
            out.push_str("\n      \"attrs\": {");
            let items: Vec<String> =
                attrs.iter().map(|(k, v)| format!("{}: {}", quote(k), quote(v))).collect();
            out.push_str(&items.join(", "));
            out.push_str("}, ");
        }
        let inputs: Vec<String> = g.inputs[i].iter().map(|(m, k)| format!("[{m}, {k}, 0]")).collect();
        let _ = write!(out, "\n      \"inputs\": [{}]", inputs.join(", "));
        if !bodies.is_empty() {
            let _ = write!(out, ", \n      \"subgraphs\": [{}]", bodies.join(", "));
        }
        out.push_str("\n    }");
        out.push_str(if i + 1 < g.nodes.len() { ", \n" } else { "\n" });
    }
    let ids = |v: Vec<usize>| v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(out, "  ], \n  \"arg_nodes\": [{}], ", ids(g.variables()));
    let _ = writeln!(out, "  \"node_row_ptr\": [{}], ", ids(g.row_ptr.clone()));
    let heads: Vec<String> = g.heads.iter().map(|(m, k)| format!("[{m}, {k}, 0]")).collect();
    let _ = writeln!(out, "  \"heads\": [{}], ", heads.join(", "));
    let np = if np_shape { ", \"is_np_shape\": [\"int\", 1]" } else { "" };
    let _ = write!(out, "  \"attrs\": {{\"mxnet_version\": [\"int\", {MXNET_VERSION}]{np}}}\n}}");
    Ok(out)
}

/// The attributes that hold the graphs of a node's `subgraphs` list, in
/// order: a control-flow operator's bodies, or the one subgraph of a
/// partitioned node.
fn subgraph_attrs(op: &str) -> &'static [&'static str] {
    crate::control_flow::subgraph_attrs(op).unwrap_or(&[crate::partition::SUBGRAPH_ATTR])
}

/// The JSON texts of the graphs in a node's `subgraphs` list, each marked
/// with MXNet's version (MXNet leaves it out of subgraphs), with the
/// attribute each goes into.
fn subgraph_texts(list: &Value, op: &str, what: &str) -> Result<Vec<(&'static str, String)>> {
    let graphs = list.as_array().ok_or_else(|| bad(format!("{what} `subgraphs` is not a list")))?;
    let keys = subgraph_attrs(op);
    if graphs.len() != keys.len() {
        return Err(bad(format!("{what} has {} subgraphs; `{op}` takes {}", graphs.len(), keys.len())));
    }
    keys.iter()
        .zip(graphs)
        .map(|(key, graph)| {
            let mut graph =
                graph.as_object().ok_or_else(|| bad(format!("{what}'s subgraph is not an object")))?.clone();
            graph
                .entry("attrs")
                .or_insert_with(|| serde_json::json!({"mxnet_version": ["int", MXNET_VERSION]}));
            Ok((*key, Value::Object(graph).to_string()))
        })
        .collect()
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("graph JSON: {msg}"))
}

fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>> {
    let Some(v) = v else { return Ok(BTreeMap::new()) };
    let obj = v.as_object().ok_or_else(|| bad(format!("{what} is not an object")))?;
    obj.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                other => return Err(bad(format!("{what} `{k}` holds {other}, not a string"))),
            };
            Ok((k.clone(), s))
        })
        .collect()
}

/// Reads `[node, index]` or `[node, index, version]`, checking that the
/// node comes earlier (`limit`) and has that output.
fn read_entry(v: &Value, nodes: &[Arc<Node>], limit: usize, what: &str) -> Result<Entry> {
    let a = v.as_array().ok_or_else(|| bad(format!("{what} is not a list [node, index, version]")))?;
    if a.len() < 2 || a.len() > 3 {
        return Err(bad(format!("{what} has {} numbers; expected [node, index, version]", a.len())));
    }
    let num = |x: &Value| x.as_u64().and_then(|n| usize::try_from(n).ok());
    let (Some(node), Some(index)) = (num(&a[0]), num(&a[1])) else {
        return Err(bad(format!("{what} holds {v}, not non-negative integers")));
    };
    if node >= limit {
        return Err(bad(format!(
            "{what} reads node {node}, which does not come before it: the graph has a cycle or is not in topological order"
        )));
    }
    let source = &nodes[node];
    let n_out = source.num_outputs()?;
    if index >= n_out {
        return Err(bad(format!(
            "{what} reads output {index} of node {node} (`{}`), which has {n_out}",
            source.name
        )));
    }
    Ok(Entry { node: source.clone(), index })
}

/// True for user attribute keys (`__shape__`, `__init__`, ...).
fn is_hidden_key(k: &str) -> bool {
    k.len() > 4 && k.starts_with("__") && k.ends_with("__")
}

/// Files from MXNet before 0.9 wrote scope attributes without underscores.
fn upgrade_legacy_attrs(attrs: &mut BTreeMap<String, String>) {
    for key in ["ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage"] {
        if let Some(v) = attrs.remove(key) {
            attrs.insert(format!("__{key}__"), v);
        }
    }
}

/// Files from MXNet before 0.9 kept `<input>_lr_mult`/`<input>_wd_mult` on
/// the operator node; they belong to the input variable as `__lr_mult__`.
fn move_legacy_multipliers(user: &mut BTreeMap<String, String>, input_names: &[String], inputs: &[Entry]) {
    for (arg, e) in input_names.iter().zip(inputs) {
        if !e.node.is_variable() {
            continue;
        }
        for mult in ["lr_mult", "wd_mult"] {
            if let Some(v) = user.remove(&format!("{arg}_{mult}")) {
                e.node.set_attr(&format!("__{mult}__"), &v);
            }
        }
    }
}

/// Reads NNVM JSON (as MXNet 1.x writes it, or the legacy form) into a symbol.
pub fn from_json(text: &str) -> Result<Symbol> {
    let root: Value = serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let root = root.as_object().ok_or_else(|| bad("the top level is not an object"))?;
    let nodes_v =
        root.get("nodes").and_then(Value::as_array).ok_or_else(|| bad("there is no `nodes` list"))?;
    let version = root
        .get("attrs")
        .and_then(|a| a.get("mxnet_version"))
        .and_then(|v| v.get(1))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let legacy = version < 900;
    let mut nodes: Vec<Arc<Node>> = Vec::with_capacity(nodes_v.len());
    for (i, nv) in nodes_v.iter().enumerate() {
        let obj: &Map<String, Value> =
            nv.as_object().ok_or_else(|| bad(format!("node {i} is not an object")))?;
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("node {i} has no `name` string")))?
            .to_string();
        let op_name = obj
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("node {i} (`{name}`) has no `op` string")))?;
        let what = format!("node {i} (`{name}`)");
        let mut attrs = string_map(obj.get("attrs"), &format!("{what} attrs"))?;
        if let Some(bodies) = obj.get("subgraphs") {
            for (key, text) in subgraph_texts(bodies, op_name, &what)? {
                attrs.insert(key.to_string(), text);
            }
        }
        // Legacy files: operator attributes under `param`, user ones under `attr`.
        let legacy_params = string_map(obj.get("param"), &format!("{what} param"))?;
        attrs.extend(string_map(obj.get("attr"), &format!("{what} attr"))?);
        if legacy {
            upgrade_legacy_attrs(&mut attrs);
        }
        let inputs_v = match obj.get("inputs") {
            Some(v) => v.as_array().ok_or_else(|| bad(format!("{what} `inputs` is not a list")))?.as_slice(),
            None => &[],
        };
        let inputs = inputs_v
            .iter()
            .enumerate()
            .map(|(k, v)| read_entry(v, &nodes, i, &format!("input {k} of {what}")))
            .collect::<Result<Vec<_>>>()?;
        let node = if op_name == "null" {
            if !inputs.is_empty() {
                return Err(bad(format!("{what} is a variable but has inputs")));
            }
            attrs.extend(legacy_params);
            Node::variable(&name, attrs)
        } else {
            let op = oxnet_core::registry::get(op_name)
                .map_err(|_| bad(format!("{what}: unknown operator `{op_name}`")))?;
            let mut params: Vec<(String, String)> = legacy_params.into_iter().collect();
            let mut user = BTreeMap::new();
            for (k, v) in attrs {
                let declared = op.attrs.iter().any(|a| a.name == k);
                if declared || (op.allow_extra_attrs && !is_hidden_key(&k)) {
                    params.push((k, v));
                } else {
                    user.insert(k, v);
                }
            }
            let call = OpCall::new(op_name, params, &name)?;
            let expected = call.input_names()?;
            if expected.len() != inputs.len() {
                return Err(bad(format!(
                    "{what}: operator `{op_name}` takes {} inputs ({}), the node has {}",
                    expected.len(),
                    expected.join(", "),
                    inputs.len()
                )));
            }
            if legacy {
                move_legacy_multipliers(&mut user, &expected, &inputs);
            }
            Node::operator(&name, call, inputs, user)
        };
        nodes.push(node);
    }
    let heads_v =
        root.get("heads").and_then(Value::as_array).ok_or_else(|| bad("there is no `heads` list"))?;
    if heads_v.is_empty() {
        return Err(bad("`heads` is empty"));
    }
    let heads = heads_v
        .iter()
        .enumerate()
        .map(|(k, v)| read_entry(v, &nodes, nodes.len(), &format!("head {k}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Symbol::from_entries(heads))
}

/// Writes `sym` to `path` as NNVM JSON (`sym.save`).
pub fn save(sym: &Symbol, path: &std::path::Path) -> Result<()> {
    std::fs::write(path, to_json(sym)?)
        .map_err(|e| Error::Invalid(format!("cannot write symbol file {}: {e}", path.display())))
}

/// Reads a symbol from an NNVM JSON file (`mx.sym.load`).
pub fn load(path: &std::path::Path) -> Result<Symbol> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Invalid(format!("cannot read symbol file {}: {e}", path.display())))?;
    from_json(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
}
