//! NNVM graph JSON, the form in which graphs cross the ABI: a small reader
//! and writer so that partitioners and passes can work on nodes rather than
//! text.
//!
//! ```
//! use oxnet_sdk::Graph;
//! let mut g = Graph::parse(r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
//!     {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}"#).unwrap();
//! g.nodes[1].op = "my_relu".into();
//! assert_eq!(Graph::parse(&g.to_json()).unwrap().nodes[1].op, "my_relu");
//! ```

use crate::json::{self, quote, Value};
use crate::traits::OpResult;

/// An output of a node: `[node, index, version]` in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeEntry {
    /// The node's id (its position in [`Graph::nodes`]).
    pub node: usize,
    /// Which of its outputs.
    pub index: usize,
    /// The version (0 unless a variable was mutated).
    pub version: usize,
}

impl NodeEntry {
    /// Output `index` of `node`, version 0.
    pub fn new(node: usize, index: usize) -> NodeEntry {
        NodeEntry { node, index, version: 0 }
    }
}

/// One node: an operator call, or a variable when `op` is `"null"`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    /// The operator's name (`"null"` for a variable).
    pub op: String,
    /// The node's name.
    pub name: String,
    /// Where its inputs come from.
    pub inputs: Vec<NodeEntry>,
    /// Its attributes, in order.
    pub attrs: Vec<(String, String)>,
}

impl Node {
    /// True for a variable (an input or parameter of the graph).
    pub fn is_variable(&self) -> bool {
        self.op == "null"
    }

    /// The attribute `key`, if set.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A graph: nodes in topological order, its outputs (`heads`) and its
/// attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Graph {
    /// The nodes; inputs refer to earlier nodes by position.
    pub nodes: Vec<Node>,
    /// The graph's outputs.
    pub heads: Vec<NodeEntry>,
    /// Graph-level attributes (MXNet's `["type", value]` pairs are read as their value).
    pub attrs: Vec<(String, String)>,
    /// `node_row_ptr` as read; written back only while it still has one
    /// entry more than there are nodes (set it to `None` after changing outputs).
    pub node_row_ptr: Option<Vec<usize>>,
}

fn entry(v: &Value, n: usize, what: &str) -> OpResult<NodeEntry> {
    let bad = || format!("{what} is `{}`, not [node, index, version]", v.text());
    let Value::Array(a) = v else { return Err(bad()) };
    if !(2..=3).contains(&a.len()) {
        return Err(bad());
    }
    let nums: Vec<usize> = a.iter().map(|x| x.as_usize().ok_or_else(bad)).collect::<OpResult<_>>()?;
    if nums[0] >= n {
        return Err(format!("{what} refers to node {}; the graph has {n} nodes", nums[0]));
    }
    Ok(NodeEntry { node: nums[0], index: nums[1], version: nums.get(2).copied().unwrap_or(0) })
}

fn str_attrs(v: &Value, what: &str) -> OpResult<Vec<(String, String)>> {
    let Value::Object(m) = v else { return Err(format!("{what} is not an object")) };
    m.iter()
        .map(|(k, x)| match x {
            Value::Str(s) => Ok((k.clone(), s.clone())),
            // MXNet writes some graph attributes as ["type", value]
            Value::Array(p) if p.len() == 2 && matches!(p[0], Value::Str(_)) => Ok((
                k.clone(),
                match &p[1] {
                    Value::Str(s) => s.clone(),
                    other => other.text(),
                },
            )),
            other => Err(format!("{what}: `{k}` holds `{}`, not a string", other.text())),
        })
        .collect()
}

fn entry_json(e: &NodeEntry) -> String {
    format!("[{}, {}, {}]", e.node, e.index, e.version)
}

fn attrs_json(a: &[(String, String)]) -> String {
    let parts: Vec<String> = a.iter().map(|(k, v)| format!("{}: {}", quote(k), quote(v))).collect();
    format!("{{{}}}", parts.join(", "))
}

impl Graph {
    /// Reads NNVM graph JSON; the error says what is malformed.
    pub fn parse(text: &str) -> OpResult<Graph> {
        let v = json::parse(text)?;
        let Some(Value::Array(nodes)) = v.get("nodes") else {
            return Err("graph JSON has no `nodes` array".into());
        };
        let n = nodes.len();
        let mut g = Graph::default();
        for (id, node) in nodes.iter().enumerate() {
            let field = |k: &str| {
                node.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| format!("node {id} has no string `{k}`"))
            };
            let mut out = Node { op: field("op")?, name: field("name")?, ..Node::default() };
            match node.get("inputs") {
                None => {}
                Some(Value::Array(ins)) => {
                    for (k, e) in ins.iter().enumerate() {
                        out.inputs.push(entry(e, n, &format!("input {k} of node {id}"))?);
                    }
                }
                Some(_) => return Err(format!("node {id}'s `inputs` is not an array")),
            }
            if let Some(a) = node.get("attrs").or_else(|| node.get("attr")) {
                out.attrs = str_attrs(a, &format!("node {id}'s attributes"))?;
            }
            g.nodes.push(out);
        }
        match v.get("heads") {
            None => {}
            Some(Value::Array(h)) => {
                for (k, e) in h.iter().enumerate() {
                    g.heads.push(entry(e, n, &format!("head {k}"))?);
                }
            }
            Some(_) => return Err("`heads` is not an array".into()),
        }
        if let Some(a) = v.get("attrs") {
            g.attrs = str_attrs(a, "the graph's attributes")?;
        }
        if let Some(Value::Array(p)) = v.get("node_row_ptr") {
            g.node_row_ptr = p.iter().map(Value::as_usize).collect();
        }
        Ok(g)
    }

    /// Writes NNVM graph JSON. `arg_nodes` lists the variables.
    pub fn to_json(&self) -> String {
        let mut s = String::from("{\"nodes\": [");
        for (i, n) in self.nodes.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let ins: Vec<String> = n.inputs.iter().map(entry_json).collect();
            s.push_str(&format!(
                "{{\"op\": {}, \"name\": {}, \"inputs\": [{}]",
                quote(&n.op),
                quote(&n.name),
                ins.join(", ")
            ));
            if !n.attrs.is_empty() {
                s.push_str(&format!(", \"attrs\": {}", attrs_json(&n.attrs)));
            }
            s.push('}');
        }
        let args: Vec<String> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_variable())
            .map(|(i, _)| i.to_string())
            .collect();
        s.push_str(&format!("], \"arg_nodes\": [{}]", args.join(", ")));
        if let Some(p) = self.node_row_ptr.as_ref().filter(|p| p.len() == self.nodes.len() + 1) {
            let p: Vec<String> = p.iter().map(usize::to_string).collect();
            s.push_str(&format!(", \"node_row_ptr\": [{}]", p.join(", ")));
        }
        let heads: Vec<String> = self.heads.iter().map(entry_json).collect();
        s.push_str(&format!(", \"heads\": [{}], \"attrs\": {}}}", heads.join(", "), attrs_json(&self.attrs)));
        s
    }

    /// The id of the node named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// For each node, the ids of the nodes that read one of its outputs
    /// (each once, in order).
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (id, n) in self.nodes.iter().enumerate() {
            for e in &n.inputs {
                if out[e.node].last() != Some(&id) {
                    out[e.node].push(id);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: &str = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "my_relu", "name": "relu0", "inputs": [[0, 0, 0]], "attrs": {"k": "v"}},
        {"op": "add", "name": "a\"b", "inputs": [[1, 0], [0, 0, 1]]}],
        "arg_nodes": [0], "node_row_ptr": [0, 1, 2, 3], "heads": [[2, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10901], "s": "t"}}"#;

    #[test]
    fn reads_nodes_edges_and_attributes() {
        let g = Graph::parse(G).unwrap();
        assert_eq!(g.nodes.len(), 3);
        assert_eq!(g.nodes[1].attr("k"), Some("v"));
        assert_eq!(g.nodes[2].name, "a\"b");
        assert_eq!(
            g.nodes[2].inputs,
            vec![NodeEntry::new(1, 0), NodeEntry { node: 0, index: 0, version: 1 }]
        );
        assert_eq!(g.heads, vec![NodeEntry::new(2, 0)]);
        assert_eq!(g.attrs, vec![("mxnet_version".into(), "10901".into()), ("s".into(), "t".into())]);
        assert_eq!(g.consumers(), vec![vec![1, 2], vec![2], vec![]]);
        assert_eq!(g.find("relu0"), Some(1));
    }

    #[test]
    fn writes_what_it_reads() {
        let g = Graph::parse(G).unwrap();
        let text = g.to_json();
        assert!(
            text.contains("\"arg_nodes\": [0]") && text.contains("\"node_row_ptr\": [0, 1, 2, 3]"),
            "{text}"
        );
        assert_eq!(Graph::parse(&text).unwrap(), g);
        let mut h = g.clone();
        h.nodes.push(Node { op: "null".into(), name: "w".into(), ..Node::default() });
        let text = h.to_json();
        assert!(text.contains("\"arg_nodes\": [0, 3]") && !text.contains("node_row_ptr"), "{text}");
    }

    #[test]
    fn says_what_is_malformed() {
        let cases = [
            ("{}", "no `nodes`"),
            (r#"{"nodes": [{"op": "a"}]}"#, "node 0 has no string `name`"),
            (r#"{"nodes": [{"op": "a", "name": "b", "inputs": [[1, 0, 0]]}]}"#, "refers to node 1"),
            (r#"{"nodes": [{"op": "a", "name": "b", "inputs": [["x", 0]]}]}"#, "not [node, index, version]"),
            (r#"{"nodes": [{"op": "a", "name": "b", "attrs": {"k": 3}}]}"#, "`k` holds `3`"),
            (r#"{"nodes": [], "heads": 1}"#, "`heads` is not an array"),
            (r#"{"nodes": [}"#, "invalid JSON"),
        ];
        for (text, want) in cases {
            let e = Graph::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
