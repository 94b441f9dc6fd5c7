//! The `default` / `default_v2` subgraph backends: groups of operators
//! selected by name become `_CachedOp` nodes, cycles through unselected
//! nodes are broken as MXNet breaks them, and the partitioned graph keeps
//! the original's inputs and computes what it computes.

use oxnet_core::{Device, NDArray, Req};
use oxnet_graph::default_subgraph::{
    build_subgraph, remove_property_op_names, set_property_op_names, SUBGRAPH_OP,
};
use oxnet_graph::partition::optimize_for;
use oxnet_graph::{Executor, Symbol};
use std::collections::HashSet;

fn names(list: &[&str]) -> HashSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn op(name: &str, inputs: &[&Symbol], node: &str) -> Symbol {
    Symbol::op(name, inputs, &[], Some(node)).unwrap()
}

/// exp -> (cos, sin) -> add: selecting exp, sin and add would make a cycle
/// through cos.
fn diamond() -> Symbol {
    let x = Symbol::var("x");
    let e = op("exp", &[&x], "e");
    let c = op("cos", &[&e], "c");
    let s = op("sin", &[&e], "s");
    op("elemwise_add", &[&c, &s], "plus")
}

/// The graph a `_CachedOp` node runs.
fn subgraph_json(node: &oxnet_graph::Node) -> String {
    let call = node.op.as_ref().expect("an operator node");
    call.params.iter().find(|(k, _)| k == "subgraph_sym_json").expect("a subgraph").1.clone()
}

/// Operators of the graph's nodes in order, `_CachedOp` nodes followed by
/// their subgraph's operators in brackets.
fn ops(sym: &Symbol) -> Vec<String> {
    let g = sym.indexed().unwrap();
    g.nodes
        .iter()
        .filter(|n| !n.is_variable())
        .map(|n| {
            if n.op_name() == SUBGRAPH_OP {
                let json = subgraph_json(n);
                let inner = oxnet_graph::json::from_json(&json).unwrap();
                format!("{}[{}]", n.name, ops(&inner).join(","))
            } else {
                n.op_name().to_string()
            }
        })
        .collect()
}

fn run(sym: &Symbol, x: &[f64]) -> Vec<Vec<f64>> {
    let args = vec![NDArray::from_vec(x.to_vec(), &[x.len()]).unwrap()];
    let mut exe = Executor::new(sym, Device::Cpu, args, vec![None], vec![Req::Null], vec![]).unwrap();
    exe.forward(false).unwrap().iter().map(|o| o.to_vec::<f64>().unwrap()).collect()
}

#[test]
fn a_cycle_through_an_unselected_node_excludes_the_latest_member() {
    let sym = diamond();
    let part = build_subgraph(&sym, &names(&["exp", "sin", "elemwise_add"]), false).unwrap();
    // as MXNet 1.9.1: {exp, sin} and {add}; cos stays outside
    assert_eq!(ops(&part), ["_CachedOp0[exp,sin]", "cos", "_CachedOp1[elemwise_add]"]);
    assert_eq!(part.list_inputs().unwrap(), ["x"]);
    let x = [0.1, 0.7, -1.3];
    assert_eq!(run(&part, &x), run(&sym, &x));
}

#[test]
fn each_use_of_an_input_is_one_subgraph_input_unless_deduplicated() {
    let x = Symbol::var("x");
    let sym = op("elemwise_add", &[&x, &x], "twice");
    let plain = build_subgraph(&sym, &names(&["elemwise_add"]), false).unwrap();
    let g = plain.indexed().unwrap();
    let node = g.nodes.iter().find(|n| n.op_name() == SUBGRAPH_OP).unwrap();
    assert_eq!(node.inputs.len(), 2);
    assert_eq!(node.name, "_CachedOp0");
    let inner = oxnet_graph::json::from_json(&subgraph_json(node)).unwrap();
    assert_eq!(inner.list_inputs().unwrap(), ["x0", "x1"]);
    let dedup = build_subgraph(&sym, &names(&["elemwise_add"]), true).unwrap();
    let g = dedup.indexed().unwrap();
    let node = g.nodes.iter().find(|n| n.op_name() == SUBGRAPH_OP).unwrap();
    assert_eq!(node.inputs.len(), 1);
    let x = [1.5, -2.0];
    assert_eq!(run(&plain, &x), vec![vec![3.0, -4.0]]);
    assert_eq!(run(&dedup, &x), vec![vec![3.0, -4.0]]);
}

#[test]
fn repeated_outputs_are_one_output_each_unless_deduplicated() {
    let x = Symbol::var("x");
    let e = op("exp", &[&x], "e");
    let sym = Symbol::group(&[e.clone(), e.clone(), e]);
    let plain = build_subgraph(&sym, &names(&["exp"]), false).unwrap();
    let g = plain.indexed().unwrap();
    let node = g.nodes.iter().find(|n| n.op_name() == SUBGRAPH_OP).unwrap();
    assert_eq!(node.num_outputs().unwrap(), 3);
    let dedup = build_subgraph(&sym, &names(&["exp"]), true).unwrap();
    let g = dedup.indexed().unwrap();
    let node = g.nodes.iter().find(|n| n.op_name() == SUBGRAPH_OP).unwrap();
    assert_eq!(node.num_outputs().unwrap(), 1);
    let want = vec![vec![1.0f64.exp()]; 3];
    assert_eq!(run(&plain, &[1.0]), want);
    assert_eq!(run(&dedup, &[1.0]), want);
}

#[test]
fn aux_states_inside_a_subgraph_stay_aux_states_in_order() {
    let x = Symbol::var("x");
    let e = op("exp", &[&x], "e");
    let bn = Symbol::op("BatchNorm", &[&e], &[], Some("bn")).unwrap();
    let part = build_subgraph(&bn, &names(&["exp", "BatchNorm"]), false).unwrap();
    assert_eq!(ops(&part), ["_CachedOp0[exp,BatchNorm]"]);
    assert_eq!(part.list_inputs().unwrap(), bn.list_inputs().unwrap());
    assert_eq!(part.list_arguments().unwrap(), ["x", "bn_gamma", "bn_beta"]);
    assert_eq!(part.list_auxiliary_states().unwrap(), ["bn_moving_mean", "bn_moving_var"]);
}

#[test]
fn optimize_for_uses_the_names_set_for_the_backend() {
    let sym = diamond();
    remove_property_op_names("default_v2").unwrap();
    let err = optimize_for(&sym, "default_v2", &[]).err().unwrap().to_string();
    assert!(err.contains("MXSetSubgraphPropertyOpNamesV2"), "{err}");
    set_property_op_names("default_v2", &["cos".to_string(), "sin".to_string()]).unwrap();
    let part = optimize_for(&sym, "default_v2", &[]).unwrap().symbol;
    // cos and sin are not connected to each other: two subgraphs
    assert_eq!(ops(&part), ["exp", "_CachedOp0[cos]", "_CachedOp1[sin]", "elemwise_add"]);
    remove_property_op_names("default_v2").unwrap();
    assert!(set_property_op_names("no_such_backend", &[]).is_err());
}
