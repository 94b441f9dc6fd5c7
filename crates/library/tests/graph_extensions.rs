//! Partitioners and graph passes of a Rust SDK library
//! (`examples/extensions/rust/my_relu`, `src/graph.rs`), called through the
//! host-side API on hand-written NNVM graphs: selected node ids (by the
//! library's supported ops, and grown by the host from its selector),
//! reviews, a pass's rewritten graph and new parameter, and the faults (a
//! plugin's error, its panic, bad JSON, bad ids, a refused allocation).

mod common;

use oxnet_core::{invoke1, DType, NDArray};
use oxnet_library::{GraphPass, Library, PartitionStrategy};
use serde_json::Value;

fn lib() -> Library {
    oxnet_library::load(common::build_rust_example("my_relu"), false).expect("load")
}

fn strategy(name: &str) -> PartitionStrategy {
    lib().strategy("my_relu_part", name).expect("strategy")
}

fn pass(name: &str) -> GraphPass {
    lib().pass(name).expect("pass")
}

/// x -> a=my_relu -> b=my_relu -> c=sigmoid -> d=my_relu -> e=elemwise_add(d, a)
const GRAPH: &str = r#"{
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "my_relu", "name": "a", "inputs": [[0, 0, 0]]},
    {"op": "my_relu", "name": "b", "inputs": [[1, 0, 0]]},
    {"op": "sigmoid", "name": "c", "inputs": [[2, 0, 0]]},
    {"op": "my_relu", "name": "d", "inputs": [[3, 0, 0]]},
    {"op": "elemwise_add", "name": "e", "inputs": [[4, 0, 0], [1, 0, 0]]}
  ],
  "arg_nodes": [0], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6], "heads": [[5, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
}"#;

#[test]
fn the_library_declares_its_partitioner_passes_and_subgraph_op() {
    let lib = lib();
    let parts = lib.partitioners();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].name, "my_relu_part");
    let names: Vec<(&str, &str)> =
        parts[0].strategies.iter().map(|(s, o)| (s.as_str(), o.as_str())).collect();
    assert_eq!(
        names,
        [("by_op", "_my_relu_subgraph"), ("grow", "_my_relu_subgraph"), ("faulty", "_my_relu_subgraph")]
    );
    assert_eq!(lib.passes(), ["my_relu_from_relu", "my_relu_faulty"]);
    assert_eq!(lib.subgraph_op_names(), ["_my_relu_subgraph"]);
    let (by_op, grow) = (strategy("by_op"), strategy("grow"));
    assert!(!by_op.uses_selector() && grow.uses_selector());
    assert!(by_op.reviews_subgraphs() && grow.reviews_subgraphs());
    assert_eq!(grow.subgraph_op_name(), "_my_relu_subgraph");
    assert_eq!(grow.partitioner(), "my_relu_part");
    // the subgraph operator is registered and computes relu
    let x = NDArray::from_vec(vec![-1.5f32, 0.0, 2.5], &[3]).unwrap();
    let y = invoke1("_my_relu_subgraph", &[&x], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 2.5]);
    // lookups across loaded libraries, and their misses
    assert_eq!(oxnet_library::find_strategy("my_relu_part", "grow").unwrap().name(), "grow");
    assert_eq!(oxnet_library::find_pass("my_relu_faulty").unwrap().name(), "my_relu_faulty");
    let e = oxnet_library::find_strategy("my_relu_part", "nope").unwrap_err().to_string();
    assert!(e.contains("`my_relu_part`") && e.contains("`nope`"), "{e}");
    let e = lib.pass("nope").unwrap_err().to_string();
    assert!(e.contains("libmy_relu") && e.contains("no graph pass `nope`"), "{e}");
}

#[test]
fn supported_ops_come_from_the_library() {
    let ids = strategy("by_op").supported_ops(GRAPH, 6, &[]).unwrap();
    // a and b chain into subgraph 0, d starts subgraph 1
    assert_eq!(ids, [-1, 0, 0, -1, 1, -1]);
}

#[test]
fn the_host_grows_subgraphs_with_the_selector() {
    let grow = strategy("grow");
    // seed a grows into its consumer b (not into the variable x, the sigmoid or the add); d alone
    assert_eq!(grow.supported_ops(GRAPH, 6, &[]).unwrap(), [-1, 0, 0, -1, 1, -1]);
    // the filter keeps one node per subgraph: a, then b (a is taken), then d
    assert_eq!(grow.supported_ops(GRAPH, 6, &[("max_nodes", "1")]).unwrap(), [-1, 0, 1, -1, 2, -1]);
    // growth follows inputs too: from seed a into its consumer c, then from c into its
    // other input b, which no seed reached (the selector sees only ops and edges, so
    // c may read two nodes here)
    let g = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "my_relu", "name": "a", "inputs": [[0, 0, 0]]},
        {"op": "tanh", "name": "t", "inputs": [[0, 0, 0]]},
        {"op": "my_relu", "name": "b", "inputs": [[2, 0, 0]]},
        {"op": "my_relu", "name": "c", "inputs": [[1, 0, 0], [3, 0, 0]]},
        {"op": "sigmoid", "name": "s", "inputs": [[4, 0, 0]]}],
        "heads": [[5, 0, 0]]}"#;
    assert_eq!(grow.supported_ops(g, 6, &[]).unwrap(), [-1, 0, -1, 0, 0, -1]);
    // a filter that keeps a and b but drops c, which joined them: two subgraphs, then c alone
    assert_eq!(grow.supported_ops(g, 6, &[("max_nodes", "2")]).unwrap(), [-1, 0, -1, 1, 2, -1]);
    // a subgraph may not feed itself through an outside node: {a, c} would reach c
    // again through the sigmoid t, so c is left out and seeds its own subgraph
    let cyclic = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "my_relu", "name": "a", "inputs": [[0, 0, 0]]},
        {"op": "sigmoid", "name": "t", "inputs": [[1, 0, 0]]},
        {"op": "my_relu", "name": "c", "inputs": [[1, 0, 0], [2, 0, 0]]}],
        "heads": [[3, 0, 0]]}"#;
    assert_eq!(grow.supported_ops(cyclic, 4, &[]).unwrap(), [-1, 0, -1, 1]);
    // the options reach the selector: a malformed one is the library's error
    let e = grow.supported_ops(GRAPH, 6, &[("max_nodes", "many")]).unwrap_err().to_string();
    assert!(e.contains("create_selector failed") && e.contains("`max_nodes`"), "{e}");
}

#[test]
fn reviews_accept_single_output_subgraphs_and_set_attributes() {
    let two = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "my_relu", "name": "a", "inputs": [[0, 0, 0]]},
        {"op": "my_relu", "name": "b", "inputs": [[1, 0, 0]]}],
        "arg_nodes": [0], "heads": [[2, 0, 0]]}"#;
    let forked = two.replace("\"heads\": [[2, 0, 0]]", "\"heads\": [[2, 0, 0], [1, 0, 0]]");
    for name in ["by_op", "grow"] {
        let s = strategy(name);
        let (accept, attrs) = s.review_subgraph(two, 0, &[]).unwrap();
        assert!(accept);
        assert_eq!(attrs, [("num_relu".to_string(), "2".to_string())]);
        let (accept, attrs) = s.review_subgraph(&forked, 3, &[]).unwrap();
        assert!(!accept);
        assert_eq!(attrs, [("num_relu".to_string(), "2".to_string())]);
    }
}

#[test]
fn the_pass_rewrites_relus_and_creates_a_parameter() {
    let g = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]},
        {"op": "Activation", "name": "act", "inputs": [[1, 0, 0]], "attrs": {"act_type": "relu"}},
        {"op": "Activation", "name": "th", "inputs": [[2, 0, 0]], "attrs": {"act_type": "tanh"}}],
        "arg_nodes": [0], "heads": [[3, 0, 0]]}"#;
    let p = pass("my_relu_from_relu");
    let out = p.run_with_zeros(g, &[]).unwrap();
    assert!(out.params.is_empty());
    let v: Value = serde_json::from_str(&out.graph_json).unwrap();
    let ops: Vec<&str> = v["nodes"].as_array().unwrap().iter().map(|n| n["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["null", "my_relu", "my_relu", "Activation"]);
    assert_eq!(v["nodes"][3]["attrs"]["act_type"], "tanh");

    // with a bias: a new parameter, made by the host's allocator and filled by the pass
    let mut asked = Vec::new();
    let out = p
        .run(g, &[("bias", "0.25")], |name, is_aux, shape, dtype| {
            asked.push((name.to_string(), is_aux, shape.to_vec(), dtype));
            NDArray::from_vec(vec![7.0f32], &[1])
        })
        .unwrap();
    assert_eq!(asked, [("th_bias".to_string(), false, vec![1], DType::F32)]);
    assert_eq!(out.params.len(), 1);
    assert_eq!((out.params[0].name.as_str(), out.params[0].is_aux), ("th_bias", false));
    assert_eq!(out.params[0].array.to_vec::<f32>().unwrap(), vec![0.25]);
    let v: Value = serde_json::from_str(&out.graph_json).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 6);
    assert_eq!((nodes[4]["op"].as_str(), nodes[4]["name"].as_str()), (Some("null"), Some("th_bias")));
    assert_eq!(nodes[5]["op"], "broadcast_add");
    assert_eq!(nodes[5]["inputs"], serde_json::json!([[3, 0, 0], [4, 0, 0]]));
    assert_eq!(v["heads"], serde_json::json!([[5, 0, 0]]));
    assert_eq!(v["arg_nodes"], serde_json::json!([0, 4]));
}

fn expect_err(r: oxnet_core::Result<impl std::fmt::Debug>, wants: &[&str]) {
    let e = r.unwrap_err().to_string();
    for w in wants {
        assert!(e.contains(w), "`{w}` not in: {e}");
    }
}

#[test]
fn partitioner_faults_are_errors_naming_the_library_and_strategy() {
    let s = strategy("faulty");
    let who = "partitioner `my_relu_part` strategy `faulty`";
    let f = |k: &'static str| [("fault", k)];
    expect_err(
        s.supported_ops(GRAPH, 6, &f("error")),
        &["libmy_relu", who, "supported_ops failed: asked to fail"],
    );
    expect_err(s.supported_ops(GRAPH, 6, &f("panic")), &[who, "panicked: asked to panic"]);
    expect_err(s.supported_ops(GRAPH, 6, &f("bad_ids")), &[who, "node 0 the subgraph id -5"]);
    expect_err(s.review_subgraph(GRAPH, 0, &f("error")), &[who, "review_subgraph failed: asked to fail"]);
    expect_err(s.review_subgraph(GRAPH, 0, &f("panic")), &[who, "panicked: asked to panic"]);
    // the host's own checks of what it is given
    expect_err(s.supported_ops(GRAPH, 5, &[]), &[who, "6 nodes, but num_nodes is 5"]);
    expect_err(s.supported_ops("{\"nodes\": 1}", 1, &[]), &[who, "the graph given", "no `nodes` array"]);
    expect_err(s.review_subgraph("[", 0, &[]), &[who, "the subgraph given", "not valid JSON"]);
    // and the library still answers afterwards
    assert_eq!(s.supported_ops(GRAPH, 6, &[]).unwrap(), [-1; 6]);
    assert!(s.review_subgraph(GRAPH, 0, &[]).unwrap().0);
}

#[test]
fn pass_faults_are_errors_naming_the_library_and_pass() {
    let p = pass("my_relu_faulty");
    let who = "graph pass `my_relu_faulty`";
    let f = |k: &'static str| [("fault", k)];
    expect_err(p.run_with_zeros(GRAPH, &f("error")), &["libmy_relu", who, "run failed: asked to fail"]);
    expect_err(p.run_with_zeros(GRAPH, &f("panic")), &[who, "panicked: asked to panic"]);
    expect_err(p.run_with_zeros(GRAPH, &f("bad_json")), &[who, "malformed graph", "not valid JSON"]);
    expect_err(p.run_with_zeros(GRAPH, &f("not_a_graph")), &[who, "malformed graph", "not a JSON object"]);
    // a parameter the host refuses: the library's message and the host's reason
    expect_err(
        p.run_with_zeros(GRAPH, &f("bad_param")),
        &[who, "could not allocate parameter `w`", "alloc_param `w`: negative extent in [-1, 2]"],
    );
    // a failing or panicking allocator of the host's caller
    let good = pass("my_relu_from_relu");
    let bias = [("bias", "1")];
    let refuse = |_: &str, _: bool, _: &[usize], _: DType| -> oxnet_core::Result<NDArray> {
        Err(oxnet_core::Error::Invalid("out of parameter memory".into()))
    };
    expect_err(good.run(GRAPH, &bias, refuse), &["out of parameter memory", "could not allocate"]);
    let panicky =
        |_: &str, _: bool, _: &[usize], _: DType| -> oxnet_core::Result<NDArray> { panic!("allocator bug") };
    expect_err(good.run(GRAPH, &bias, panicky), &["the host's allocator panicked"]);
    let wrong = |_: &str, _: bool, _: &[usize], _: DType| NDArray::from_vec(vec![1.0f64, 2.0], &[2]);
    expect_err(good.run(GRAPH, &bias, wrong), &["allocator gave a [2] F64 array"]);
    // a malformed input graph never reaches the library
    expect_err(p.run_with_zeros("{\"nodes\": [{\"op\": 1}]}", &[]), &[who, "the graph given", "node 0"]);
    // the pass still works, and returns its input unchanged without a fault
    let out = p.run_with_zeros(GRAPH, &[]).unwrap();
    assert_eq!(out.graph_json, GRAPH);
}
