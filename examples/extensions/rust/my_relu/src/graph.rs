//! The library's partitioner and graph passes.
//!
//! Partitioner `my_relu_part` gathers connected `my_relu` nodes into
//! subgraphs run by `_my_relu_subgraph` (one relu: relu(relu(x)) = relu(x)).
//! Strategy `by_op` marks the nodes itself; `grow` lets oxnet grow subgraphs
//! with a selector (option `max_nodes` caps a subgraph's size through the
//! selector's filter). Both review each subgraph: one output only, and the
//! subgraph node learns how many relus it replaces (`num_relu`).
//!
//! Pass `my_relu_from_relu` turns `relu` and `Activation(act_type=relu)`
//! nodes into `my_relu`; with option `bias=<v>` it also adds a new float32
//! parameter `<head>_bias` = [v] to the graph's first output.
//!
//! Strategy `faulty` and pass `my_relu_faulty` fail on request (option
//! `fault`): test hooks for the host's error handling.

use oxnet_sdk::*;

const RELU: &str = "my_relu";

/// `by_op`: a `my_relu` node joins the subgraph of its first `my_relu`
/// input, or starts the next one.
fn relu_chains(graph_json: &str, ids: &mut [i32], _options: &Attrs) -> OpResult<()> {
    let g = Graph::parse(graph_json)?;
    let mut next = 0;
    for (i, node) in g.nodes.iter().enumerate() {
        if node.op != RELU {
            continue;
        }
        // joins the subgraph of a my_relu input, if any
        let from = node.inputs.iter().map(|e| e.node).find(|&j| g.nodes[j].op == RELU);
        ids[i] = match from {
            Some(j) => ids[j],
            None => {
                next += 1;
                next - 1
            }
        };
    }
    Ok(())
}

/// `grow`: selects `my_relu` nodes and grows along `my_relu` neighbours.
struct ReluSelector {
    is_relu: Vec<bool>,
    max_nodes: usize,
}

impl Selector for ReluSelector {
    fn select(&mut self, node_id: usize) -> bool {
        self.is_relu[node_id]
    }

    fn select_input(&mut self, _node_id: usize, input_node_id: usize) -> bool {
        self.is_relu[input_node_id]
    }

    fn select_output(&mut self, _node_id: usize, output_node_id: usize) -> bool {
        self.is_relu[output_node_id]
    }

    fn filter(&mut self, candidates: &[usize]) -> Vec<usize> {
        candidates.iter().copied().take(self.max_nodes).collect()
    }
}

fn relu_selector(graph_json: &str, options: &Attrs) -> OpResult<Box<dyn Selector>> {
    let g = Graph::parse(graph_json)?;
    let max_nodes = options.parse_or("max_nodes", usize::MAX)?;
    Ok(Box::new(ReluSelector { is_relu: g.nodes.iter().map(|n| n.op == RELU).collect(), max_nodes }))
}

/// Accepts subgraphs with one output; tells the subgraph node how many relus it holds.
fn review(subgraph_json: &str, _id: i32, _options: &Attrs) -> OpResult<Review> {
    let g = Graph::parse(subgraph_json)?;
    let relus = g.nodes.iter().filter(|n| n.op == RELU).count();
    let verdict = if g.heads.len() == 1 { Review::accept() } else { Review::reject() };
    Ok(verdict.attr("num_relu", relus))
}

/// Fails as option `fault` asks (test hook).
fn fault(options: &Attrs) -> OpResult<()> {
    match options.get("fault") {
        Some("error") => Err("asked to fail".into()),
        Some("panic") => panic!("asked to panic"),
        _ => Ok(()),
    }
}

fn faulty_ops(_graph_json: &str, ids: &mut [i32], options: &Attrs) -> OpResult<()> {
    fault(options)?;
    if options.get("fault") == Some("bad_ids") {
        ids.fill(-5);
    }
    Ok(())
}

/// The library's partitioner.
pub fn partitioner() -> Partitioner {
    Partitioner::new("my_relu_part")
        .strategy(Strategy::supported_ops("by_op", "_my_relu_subgraph", relu_chains).review(review))
        .strategy(Strategy::selector("grow", "_my_relu_subgraph", relu_selector).review(review))
        .strategy(Strategy::supported_ops("faulty", "_my_relu_subgraph", faulty_ops).review(|_, _, o| {
            fault(o)?;
            Ok(Review::accept())
        }))
}

/// `my_relu_from_relu`.
pub fn from_relu(graph_json: &str, options: &Attrs, res: &mut PassResource) -> OpResult<String> {
    let mut g = Graph::parse(graph_json)?;
    for node in &mut g.nodes {
        if node.op == "relu" || (node.op == "Activation" && node.attr("act_type") == Some("relu")) {
            node.op = RELU.into();
            node.attrs.clear();
        }
    }
    if let Some(v) = options.get("bias") {
        let v: f32 = v.trim().parse().map_err(|_| format!("option `bias`: cannot parse `{v}`"))?;
        let head = *g.heads.first().ok_or("the graph has no output")?;
        let name = format!("{}_bias", g.nodes[head.node].name);
        res.alloc_arg(&name, &[1], DType::F32)?.as_mut_slice::<f32>()?[0] = v;
        g.nodes.push(Node { op: "null".into(), name: name.clone(), ..Node::default() });
        let bias = g.nodes.len() - 1;
        g.nodes.push(Node {
            op: "broadcast_add".into(),
            name: format!("{name}_add"),
            inputs: vec![head, NodeEntry::new(bias, 0)],
            attrs: Vec::new(),
        });
        g.heads[0] = NodeEntry::new(g.nodes.len() - 1, 0);
        g.node_row_ptr = None;
    }
    Ok(g.to_json())
}

/// `my_relu_faulty`: fails as option `fault` asks (test hook).
pub fn faulty_pass(graph_json: &str, options: &Attrs, res: &mut PassResource) -> OpResult<String> {
    fault(options)?;
    Ok(match options.get("fault") {
        Some("bad_json") => "{\"nodes\": [".into(),
        Some("not_a_graph") => "[1, 2]".into(),
        Some("bad_param") => {
            res.alloc_aux("w", &[-1, 2], DType::F32)?;
            graph_json.into()
        }
        _ => graph_json.into(),
    })
}
