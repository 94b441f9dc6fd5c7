//! Reading and checking NNVM graph JSON, the form in which graphs cross the
//! extension ABI (see `docs/extensions.md`, "Graphs across the ABI").
//!
//! The host reads only what it needs to drive a selector (each node's op and
//! its input nodes) and checks the structure of the JSON a library hands back.

use serde_json::Value;

/// One node: its op (`"null"` for a variable) and the nodes its inputs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeView {
    /// The op name.
    pub op: String,
    /// The node ids of its inputs, in order (with repeats).
    pub inputs: Vec<usize>,
}

impl NodeView {
    /// True for a variable (an input or parameter of the graph).
    pub fn is_variable(&self) -> bool {
        self.op == "null"
    }
}

/// The nodes of a graph, in the JSON's (topological) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphView {
    /// The nodes.
    pub nodes: Vec<NodeView>,
}

impl GraphView {
    /// For each node, the nodes that read one of its outputs (each once, in order).
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (id, n) in self.nodes.iter().enumerate() {
            for &i in &n.inputs {
                if out[i].last() != Some(&id) {
                    out[i].push(id);
                }
            }
        }
        out
    }
}

fn entry(v: &Value, num_nodes: usize, what: &str) -> Result<usize, String> {
    let a = v.as_array().ok_or_else(|| format!("{what} is not an array [node, index, version]"))?;
    if a.len() < 2 || a.len() > 3 {
        return Err(format!(
            "{what} has {} numbers; expected [node, index] or [node, index, version]",
            a.len()
        ));
    }
    let mut nums = [0u64; 3];
    for (slot, x) in nums.iter_mut().zip(a) {
        *slot = x.as_u64().ok_or_else(|| format!("{what} holds `{x}`, not a non-negative integer"))?;
    }
    let node = usize::try_from(nums[0]).unwrap_or(usize::MAX);
    if node >= num_nodes {
        return Err(format!("{what} refers to node {node}; the graph has {num_nodes} nodes"));
    }
    Ok(node)
}

fn string_map(v: &Value, what: &str, pairs_allowed: bool) -> Result<(), String> {
    let m = v.as_object().ok_or_else(|| format!("{what} is not an object"))?;
    for (k, x) in m {
        let ok = x.is_string()
            || (pairs_allowed
                && x.as_array().is_some_and(|a| a.len() == 2 && a[0].is_string() && !a[1].is_object()));
        if !ok {
            return Err(format!("{what}: `{k}` holds `{x}`, not a string"));
        }
    }
    Ok(())
}

/// Parses and checks `text`: an object whose `nodes` each have a string
/// `op` and `name`, `inputs` referring to existing nodes, and string
/// attributes; `heads` and `arg_nodes`, when present, refer to existing
/// nodes. The error says what is wrong, in words.
pub(crate) fn read(text: &str) -> Result<GraphView, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    let nodes = obj.get("nodes").and_then(Value::as_array).ok_or("it has no `nodes` array")?;
    let n = nodes.len();
    let mut out = Vec::with_capacity(n);
    for (id, node) in nodes.iter().enumerate() {
        let node = node.as_object().ok_or_else(|| format!("node {id} is not an object"))?;
        let field = |k: &str| {
            node.get(k).and_then(Value::as_str).ok_or_else(|| format!("node {id} has no string `{k}`"))
        };
        let op = field("op")?.to_string();
        field("name")?;
        let mut inputs = Vec::new();
        if let Some(ins) = node.get("inputs") {
            let ins = ins.as_array().ok_or_else(|| format!("node {id}'s `inputs` is not an array"))?;
            for (k, e) in ins.iter().enumerate() {
                inputs.push(entry(e, n, &format!("input {k} of node {id}"))?);
            }
        }
        for key in ["attrs", "attr"] {
            if let Some(a) = node.get(key) {
                string_map(a, &format!("node {id}'s `{key}`"), false)?;
            }
        }
        out.push(NodeView { op, inputs });
    }
    if let Some(heads) = obj.get("heads") {
        let heads = heads.as_array().ok_or("`heads` is not an array")?;
        for (k, h) in heads.iter().enumerate() {
            entry(h, n, &format!("head {k}"))?;
        }
    }
    if let Some(args) = obj.get("arg_nodes") {
        let args = args.as_array().ok_or("`arg_nodes` is not an array")?;
        for a in args {
            if a.as_u64().is_none_or(|i| (i as usize) >= n) {
                return Err(format!("`arg_nodes` holds `{a}`, not a node id"));
            }
        }
    }
    if let Some(a) = obj.get("attrs") {
        string_map(a, "the graph's `attrs`", true)?;
    }
    Ok(GraphView { nodes: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: &str = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "relu", "name": "r0", "inputs": [[0, 0, 0]], "attrs": {"k": "v"}},
        {"op": "add", "name": "a", "inputs": [[1, 0], [1, 0, 0]]}],
        "arg_nodes": [0], "node_row_ptr": [0, 1, 2, 3], "heads": [[2, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10901], "note": "s"}}"#;

    #[test]
    fn reads_ops_and_edges() {
        let g = read(G).unwrap();
        assert_eq!(g.nodes.len(), 3);
        assert_eq!(g.nodes[2].op, "add");
        assert_eq!(g.nodes[2].inputs, vec![1, 1]);
        assert!(g.nodes[0].is_variable() && !g.nodes[1].is_variable());
        assert_eq!(g.consumers(), vec![vec![1], vec![2], vec![]]);
    }

    #[test]
    fn says_what_is_wrong() {
        let cases = [
            ("[1, 2]", "not a JSON object"),
            ("{\"nodes\": 3}", "no `nodes` array"),
            ("{\"nodes\": [", "not valid JSON"),
            (r#"{"nodes": [{"name": "x"}]}"#, "node 0 has no string `op`"),
            (r#"{"nodes": [{"op": "null", "name": "x", "inputs": [[3, 0, 0]]}]}"#, "refers to node 3"),
            (r#"{"nodes": [{"op": "null", "name": "x", "inputs": [[0]]}]}"#, "has 1 numbers"),
            (r#"{"nodes": [{"op": "a", "name": "x", "attrs": {"k": 1}}]}"#, "`k` holds `1`"),
            (r#"{"nodes": [], "heads": [[0, 0, 0]]}"#, "head 0 refers to node 0"),
            (r#"{"nodes": [], "attrs": {"a": {"b": "c"}}}"#, "not a string"),
        ];
        for (text, want) in cases {
            let e = read(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
