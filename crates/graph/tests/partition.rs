//! optimize_for with partitioners and graph passes written in Rust: the
//! partitioned graph computes and differentiates what the original does,
//! and exports to JSON and back.

use oxnet_core::{DType, Device, NDArray, Req, Result};
use oxnet_graph::json::{from_json, to_json};
use oxnet_graph::partition::{
    optimize_for, register_backend, Backend, GraphPass, PartitionStrategy, PassParam,
};
use oxnet_graph::{Executor, Symbol};
use std::sync::Arc;

/// Takes every tanh and relu node; one subgraph id for all (the host splits
/// them into connected groups).
struct Activations;

impl PartitionStrategy for Activations {
    fn name(&self) -> String {
        "activations".into()
    }
    fn subgraph_op(&self) -> String {
        "_test_act_subgraph".into()
    }
    fn select(&self, graph_json: &str, num_nodes: usize, options: &[(&str, &str)]) -> Result<Vec<i32>> {
        let v: serde_json::Value = serde_json::from_str(graph_json).unwrap();
        let nodes = v["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), num_nodes);
        let skip = options.iter().find(|(k, _)| *k == "skip").map(|(_, v)| *v);
        Ok(nodes
            .iter()
            .map(|n| {
                let op = n["op"].as_str().unwrap();
                let take = (op == "tanh" || op == "relu") && Some(n["name"].as_str().unwrap()) != skip;
                if take {
                    0
                } else {
                    -1
                }
            })
            .collect())
    }
    fn review(
        &self,
        subgraph_json: &str,
        id: i32,
        options: &[(&str, &str)],
    ) -> Result<(bool, Vec<(String, String)>)> {
        let v: serde_json::Value = serde_json::from_str(subgraph_json).unwrap();
        let ops = v["nodes"].as_array().unwrap().iter().filter(|n| n["op"] != "null").count();
        let reject = options.iter().any(|(k, v)| *k == "reject" && *v == "1");
        Ok((!reject, vec![("num_ops".into(), ops.to_string()), ("reviewed".into(), format!("id{id}"))]))
    }
}

/// Adds 1 to the first output through a new parameter `extra`.
struct AddOne;

impl GraphPass for AddOne {
    fn name(&self) -> String {
        "add_one".into()
    }
    fn run(&self, graph_json: &str, _options: &[(&str, &str)]) -> Result<(String, Vec<PassParam>)> {
        let sym = from_json(graph_json)?;
        let extra = Symbol::var("extra");
        let out = Symbol::op("broadcast_add", &[&sym.get(0)?, &extra], &[], Some("plus_extra"))?;
        let array = NDArray::ones(&[1], DType::F64, Device::Cpu)?;
        Ok((to_json(&out)?, vec![PassParam { name: "extra".into(), is_aux: false, array }]))
    }
}

fn register() {
    register_backend("test_act", Backend::Partitioner(vec![Arc::new(Activations)]));
    register_backend("test_add_one", Backend::Pass(Arc::new(AddOne)));
}

/// x -> tanh -> relu -> FullyConnected -> tanh, all float64.
fn net() -> Symbol {
    let x = Symbol::var("x");
    let a = Symbol::op("tanh", &[&x], &[], Some("t0")).unwrap();
    let b = Symbol::op("relu", &[&a], &[], Some("r0")).unwrap();
    let c = Symbol::op("FullyConnected", &[&b], &[("num_hidden", 2.into())], Some("fc")).unwrap();
    Symbol::op("tanh", &[&c], &[], Some("t1")).unwrap()
}

fn run(sym: &Symbol, values: &[(&str, Vec<f64>, Vec<usize>)]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let names = sym.list_arguments().unwrap();
    let args: Vec<NDArray> = names
        .iter()
        .map(|n| {
            let (_, v, s) =
                values.iter().find(|(k, _, _)| k == n).unwrap_or_else(|| panic!("no value for {n}"));
            NDArray::from_vec(v.clone(), s).unwrap()
        })
        .collect();
    let grads = args.iter().map(|a| Some(NDArray::zeros_like(a).unwrap())).collect();
    let mut exe =
        Executor::new(sym, Device::Cpu, args, grads, vec![Req::Write; names.len()], vec![]).unwrap();
    let out = exe.forward(true).unwrap()[0].to_vec::<f64>().unwrap();
    exe.backward(&[]).unwrap();
    let grads = exe.grad_arrays().iter().map(|g| g.as_ref().unwrap().to_vec::<f64>().unwrap()).collect();
    (out, grads)
}

fn values() -> Vec<(&'static str, Vec<f64>, Vec<usize>)> {
    vec![
        ("x", vec![0.5, -1.0, 2.0, 0.25, -0.75, 1.5], vec![2, 3]),
        ("fc_weight", vec![0.1, -0.2, 0.3, 0.4, 0.5, -0.6], vec![2, 3]),
        ("fc_bias", vec![0.05, -0.05], vec![2]),
    ]
}

#[test]
fn a_partitioned_graph_computes_and_differentiates_like_the_original() {
    register();
    let original = net();
    let opt = optimize_for(&original, "test_act", &[]).unwrap().symbol;
    let json = to_json(&opt).unwrap();
    // t0 and r0 form one subgraph node, t1 another (not connected to it)
    assert_eq!(json.matches("\"_test_act_subgraph\"").count(), 2, "{json}");
    assert!(json.contains("\"num_ops\": \"2\"") && json.contains("\"num_ops\": \"1\""), "{json}");
    assert!(json.contains("subgraph_sym_json"));
    assert_eq!(opt.list_arguments().unwrap(), original.list_arguments().unwrap());
    let (want, want_grads) = run(&original, &values());
    let (got, got_grads) = run(&opt, &values());
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(&want) {
        assert!((a - b).abs() < 1e-12);
    }
    for (ga, gb) in got_grads.iter().zip(&want_grads) {
        for (a, b) in ga.iter().zip(gb) {
            assert!((a - b).abs() < 1e-10, "{got_grads:?} vs {want_grads:?}");
        }
    }
    // exported and re-imported, it still runs
    let back = from_json(&json).unwrap();
    let (again, _) = run(&back, &values());
    assert_eq!(again, got);
}

#[test]
fn options_reach_the_strategy_and_rejected_subgraphs_stay() {
    register();
    let opt = optimize_for(&net(), "test_act", &[("skip", "r0")]).unwrap().symbol;
    let json = to_json(&opt).unwrap();
    assert!(json.contains("\"r0\""), "{json}");
    let kept = optimize_for(&net(), "test_act", &[("reject", "1")]).unwrap().symbol;
    assert_eq!(to_json(&kept).unwrap(), to_json(&net()).unwrap());
}

#[test]
fn a_pass_rewrites_the_graph_and_creates_parameters() {
    register();
    let out = optimize_for(&net(), "test_add_one", &[]).unwrap();
    assert_eq!(out.new_params.len(), 1);
    assert_eq!(out.new_params[0].name, "extra");
    let mut vals = values();
    vals.push(("extra", vec![1.0], vec![1]));
    let (got, _) = run(&out.symbol, &vals);
    let (want, _) = run(&net(), &values());
    for (a, b) in got.iter().zip(&want) {
        assert!((a - (b + 1.0)).abs() < 1e-12);
    }
}

#[test]
fn an_unknown_backend_is_a_clear_error() {
    let err = optimize_for(&net(), "no_such_backend", &[]).err().unwrap().to_string();
    assert!(err.contains("no backend `no_such_backend`"), "{err}");
}
