//! [`to_dot`]: a symbol's graph as Graphviz DOT source, for looking at a
//! network with `dot -Tsvg`. Variables are ellipses, operators are boxes
//! labelled with their name, operator and key attributes, and every edge
//! runs from an input to the node that reads it. The heads (the symbol's
//! outputs) are drawn with a double outline.
//!
//! ```
//! use oxnet_graph::{dot::to_dot, Symbol};
//! let x = Symbol::var("x");
//! let fc = Symbol::op("FullyConnected", &[&x], &[("num_hidden", 4.into())], Some("fc")).unwrap();
//! let text = to_dot(&fc).unwrap();
//! assert!(text.starts_with("digraph"));
//! assert!(text.contains(r#"label="fc\nFullyConnected\nnum_hidden=4""#));
//! ```

use crate::indexed::IndexedGraph;
use crate::symbol::Symbol;
use oxnet_core::Result;
use std::fmt::Write;

/// Operator attributes worth showing in a node's label, in the order shown.
const KEY_ATTRS: &[&str] = &[
    "op_type",
    "num_hidden",
    "num_filter",
    "kernel",
    "stride",
    "pad",
    "dilate",
    "num_group",
    "act_type",
    "pool_type",
    "global_pool",
    "num_outputs",
    "axis",
    "axes",
    "shape",
    "p",
    "scalar",
    "no_bias",
];

/// Quotes `text` as a DOT string: backslashes and double quotes escaped,
/// line breaks written as `\n`, so any name survives the trip through `dot`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Joins label lines, each escaped, with DOT's centred line break `\n`.
fn label(lines: &[String]) -> String {
    let escaped: Vec<String> = lines.iter().map(|l| quote(l)).collect();
    let inner: Vec<&str> = escaped.iter().map(|q| &q[1..q.len() - 1]).collect();
    format!("\"{}\"", inner.join("\\n"))
}

/// The Graphviz DOT source of `sym`'s graph: one node per variable and
/// operator (ids `n0`, `n1`, ... in topological order, so repeated names
/// stay distinct), one edge per input. Edges from a node with several
/// outputs are labelled with the output they carry.
pub fn to_dot(sym: &Symbol) -> Result<String> {
    let g = IndexedGraph::new(sym.entries())?;
    let mut out = String::from("digraph symbol {\n");
    out.push_str("  node [fontsize=10];\n  edge [fontsize=9];\n");
    for (i, node) in g.nodes.iter().enumerate() {
        let mut lines = vec![node.name.clone()];
        let shape = match &node.op {
            None => {
                if let Some(s) = node.attr("__shape__") {
                    lines.push(format!("shape={s}"));
                }
                "ellipse"
            }
            Some(call) => {
                lines.push(call.op.name.clone());
                for key in KEY_ATTRS {
                    if let Some((_, v)) = call.params.iter().find(|(k, _)| k == key) {
                        lines.push(format!("{key}={v}"));
                    }
                }
                "box"
            }
        };
        let head = g.heads.iter().any(|&(n, _)| n == i);
        let _ = write!(out, "  n{i} [label={}, shape={shape}", label(&lines));
        if node.is_variable() && g.is_aux[i] {
            out.push_str(", style=dashed");
        }
        if head {
            out.push_str(", peripheries=2");
        }
        out.push_str("];\n");
    }
    for (i, inputs) in g.inputs.iter().enumerate() {
        for &(src, index) in inputs {
            let _ = write!(out, "  n{src} -> n{i}");
            let source = &g.nodes[src];
            if source.num_visible_outputs()? > 1 {
                let name = match &source.op {
                    Some(call) => {
                        call.output_names()?.get(index).cloned().unwrap_or_else(|| format!("output{index}"))
                    }
                    None => format!("output{index}"),
                };
                let _ = write!(out, " [label={}]", quote(&name));
            }
            out.push_str(";\n");
        }
    }
    out.push_str("}\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::VarOptions;

    fn mlp() -> Symbol {
        let data = Symbol::variable("data", VarOptions { shape: Some(vec![1, 784]), ..Default::default() });
        let fc1 = Symbol::op("FullyConnected", &[&data], &[("num_hidden", 256.into())], Some("fc1")).unwrap();
        let act = Symbol::op("Activation", &[&fc1], &[("act_type", "relu".into())], Some("relu1")).unwrap();
        let fc2 = Symbol::op("FullyConnected", &[&act], &[("num_hidden", 10.into())], Some("fc2")).unwrap();
        Symbol::op("softmax", &[&fc2], &[], Some("out")).unwrap()
    }

    /// The node id DOT uses for the node labelled first with `name`.
    fn id_of(text: &str, name: &str) -> String {
        let (alone, first) = (format!("[label=\"{name}\""), format!("[label=\"{name}\\n"));
        let line = text
            .lines()
            .find(|l| l.contains(&alone) || l.contains(&first))
            .unwrap_or_else(|| panic!("no node {name}"));
        line.split_whitespace().next().unwrap().to_string()
    }

    #[test]
    fn mlp_nodes_edges_and_labels() {
        let text = to_dot(&mlp()).unwrap();
        assert!(text.starts_with("digraph symbol {\n") && text.ends_with("}\n"), "{text}");
        // One node per variable and operator: data, 2 x (weight, bias), 4 operators.
        assert_eq!(text.lines().filter(|l| l.contains("[label=")).count(), 9, "{text}");
        assert!(text.contains(r#"[label="data\nshape=(1, 784)", shape=ellipse]"#), "{text}");
        assert!(text.contains(r#"[label="fc1_weight", shape=ellipse]"#), "{text}");
        assert!(text.contains(r#"[label="fc1\nFullyConnected\nnum_hidden=256", shape=box]"#), "{text}");
        assert!(text.contains(r#"[label="relu1\nActivation\nact_type=relu", shape=box]"#), "{text}");
        assert!(text.contains(r#"[label="out\nsoftmax", shape=box, peripheries=2]"#), "{text}");
        // Edges run from inputs to consumers.
        for (from, to) in [
            ("data", "fc1"),
            ("fc1_weight", "fc1"),
            ("fc1_bias", "fc1"),
            ("fc1", "relu1"),
            ("relu1", "fc2"),
            ("fc2", "out"),
        ] {
            let edge = format!("  {} -> {};", id_of(&text, from), id_of(&text, to));
            assert!(text.lines().any(|l| l == edge), "missing edge {from} -> {to}: {text}");
        }
        assert_eq!(text.matches(" -> ").count(), 8, "{text}");
    }

    #[test]
    fn names_are_escaped() {
        let x = Symbol::var("we\"ird\\name\nx");
        let y = Symbol::op("sigmoid", &[&x], &[], Some("a \"b\"")).unwrap();
        let text = to_dot(&y).unwrap();
        assert!(text.contains(r#"n0 [label="we\"ird\\name\nx", shape=ellipse];"#), "{text}");
        assert!(text.contains(r#"n1 [label="a \"b\"\nsigmoid", shape=box, peripheries=2];"#), "{text}");
        assert!(text.contains("  n0 -> n1;\n"), "{text}");
        // Every double quote in the text is either a delimiter or escaped.
        for line in text.lines().filter(|l| l.contains("label=")) {
            let unescaped = line.match_indices('"').filter(|(i, _)| !line[..*i].ends_with('\\')).count();
            assert_eq!(unescaped, 2, "{line}");
        }
    }

    #[test]
    fn multi_output_edges_name_the_output() {
        let x = Symbol::var("x");
        let parts = Symbol::op("split", &[&x], &[("num_outputs", 2.into())], Some("sp")).unwrap();
        let y =
            Symbol::op("elemwise_add", &[&parts.get(0).unwrap(), &parts.get(1).unwrap()], &[], Some("sum"))
                .unwrap();
        let text = to_dot(&y).unwrap();
        assert!(text.contains(r#"[label="sp\nsplit\nnum_outputs=2", shape=box]"#), "{text}");
        assert!(text.contains(r#"n1 -> n2 [label="output0"];"#), "{text}");
        assert!(text.contains(r#"n1 -> n2 [label="output1"];"#), "{text}");
    }
}
