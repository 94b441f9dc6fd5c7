//! The Symbol API: naming, listings, grouping, indexing, composition,
//! attributes, inference and JSON, with MXNet 1.x's conventions.

use oxnet_core::{AttrValue, DType};
use oxnet_graph::json::{from_json, to_json};
use oxnet_graph::symbol::{parse_shape, shape_string};
use oxnet_graph::{infer, Symbol, VarOptions};
use std::collections::HashMap;

fn fc(x: &Symbol, hidden: usize, name: &str) -> Symbol {
    Symbol::op("FullyConnected", &[x], &[("num_hidden", hidden.into())], Some(name)).unwrap()
}

fn mlp() -> Symbol {
    let data = Symbol::var("data");
    let h = fc(&data, 16, "fc1");
    let a = Symbol::op("Activation", &[&h], &[("act_type", "relu".into())], Some("relu1")).unwrap();
    let o = fc(&a, 3, "fc2");
    Symbol::op("softmax", &[&o], &[], Some("out")).unwrap()
}

#[test]
fn missing_inputs_become_named_variables() {
    let net = mlp();
    assert_eq!(net.list_arguments().unwrap(), ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]);
    assert_eq!(net.list_outputs().unwrap(), ["out_output"]);
    assert!(net.list_auxiliary_states().unwrap().is_empty());
    assert_eq!(net.name().as_deref(), Some("out"));
    let nb = Symbol::op(
        "FullyConnected",
        &[&Symbol::var("x")],
        &[("num_hidden", 4.into()), ("no_bias", true.into())],
        Some("fc"),
    )
    .unwrap();
    assert_eq!(nb.list_arguments().unwrap(), ["x", "fc_weight"]);
}

#[test]
fn automatic_names_count_per_operator() {
    oxnet_graph::names::reset();
    let x = Symbol::var("x");
    let a = Symbol::op("tanh", &[&x], &[], None).unwrap();
    let b = Symbol::op("tanh", &[&a], &[], None).unwrap();
    assert_eq!(a.name().as_deref(), Some("tanh0"));
    assert_eq!(b.name().as_deref(), Some("tanh1"));
}

#[test]
fn internals_group_indexing_and_children() {
    let net = mlp();
    let internals = net.internals().unwrap();
    let names = internals.list_outputs().unwrap();
    assert_eq!(
        names,
        [
            "data",
            "fc1_weight",
            "fc1_bias",
            "fc1_output",
            "relu1_output",
            "fc2_weight",
            "fc2_bias",
            "fc2_output",
            "out_output"
        ]
    );
    let fc1 = internals.get_by_name("fc1_output").unwrap();
    assert_eq!(fc1.list_arguments().unwrap(), ["data", "fc1_weight", "fc1_bias"]);
    assert!(internals.get_by_name("nope").unwrap_err().to_string().contains("no output named `nope`"));
    let g = Symbol::group(&[fc1.clone(), net.clone()]);
    assert_eq!(g.num_outputs(), 2);
    assert_eq!(g.list_outputs().unwrap(), ["fc1_output", "out_output"]);
    assert_eq!(g.get(1).unwrap().name().as_deref(), Some("out"));
    assert!(g.get(2).is_err());
    let children = fc1.children().unwrap();
    assert_eq!(children.list_outputs().unwrap(), ["data", "fc1_weight", "fc1_bias"]);
    assert!(Symbol::var("v").children().is_none());
    // a multi-output symbol is no operator input
    let err = Symbol::op("tanh", &[&g], &[], Some("t")).unwrap_err().to_string();
    assert!(err.contains("2 outputs"), "{err}");
}

#[test]
fn composition_substitutes_variables() {
    let x = Symbol::var("x");
    let inner = Symbol::op("sigmoid", &[&x], &[], Some("inner")).unwrap();
    let data = Symbol::var("data");
    let net = fc(&data, 4, "fc");
    let composed = net.compose(&[], &[("data".to_string(), inner.clone())]).unwrap();
    assert_eq!(composed.list_arguments().unwrap(), ["x", "fc_weight", "fc_bias"]);
    // the original is untouched
    assert_eq!(net.list_arguments().unwrap(), ["data", "fc_weight", "fc_bias"]);
    let positional = net.compose(&[inner], &[]).unwrap();
    assert_eq!(positional.list_arguments().unwrap(), ["x", "fc_weight", "fc_bias"]);
    let err = net.compose(&[], &[("nothere".to_string(), x)]).unwrap_err().to_string();
    assert!(err.contains("no variable `nothere`"), "{err}");
}

#[test]
fn attributes_of_variables_and_nodes() {
    let opts = VarOptions {
        shape: Some(vec![3, 0]),
        dtype: Some(DType::F64),
        lr_mult: Some(0.5),
        attrs: [("mood".to_string(), "calm".to_string())].into(),
        ..Default::default()
    };
    let w = Symbol::variable("w", opts);
    assert_eq!(w.attr("__shape__").as_deref(), Some("(3, 0)"));
    assert_eq!(w.attr("__dtype__").as_deref(), Some("1"));
    assert_eq!(w.attr("__lr_mult__").as_deref(), Some("0.5"));
    assert_eq!(w.attr("mood").as_deref(), Some("calm"));
    let y = fc(&Symbol::var("x"), 7, "fc");
    assert_eq!(y.attr("num_hidden").as_deref(), Some("7"));
    y.set_attr("__ctx_group__", "dev1");
    let d = y.attr_dict();
    assert_eq!(d["fc"]["__ctx_group__"], "dev1");
    assert_eq!(d["fc"]["num_hidden"], "7");
}

#[test]
fn shape_strings_round_trip() {
    assert_eq!(shape_string(&[3, 4]), "(3, 4)");
    assert_eq!(shape_string(&[5]), "(5,)");
    assert_eq!(parse_shape("(3, 4)").unwrap(), vec![3, 4]);
    assert_eq!(parse_shape("[5]").unwrap(), vec![5]);
    assert_eq!(parse_shape("(5,)").unwrap(), vec![5]);
    assert!(parse_shape("(a, 4)").is_err());
}

#[test]
fn shapes_are_inferred_forward_and_backward() {
    let net = mlp();
    let g = net.indexed().unwrap();
    let shapes = infer::infer_shapes(&g, &HashMap::from([("data".to_string(), vec![8, 10])])).unwrap();
    let by_name: HashMap<String, Vec<usize>> = g
        .variables()
        .into_iter()
        .map(|n| (g.nodes[n].name.clone(), shapes[g.entry(n, 0)].clone().unwrap()))
        .collect();
    assert_eq!(by_name["fc1_weight"], vec![16, 10]);
    assert_eq!(by_name["fc1_bias"], vec![16]);
    assert_eq!(by_name["fc2_weight"], vec![3, 16]);
    let (n, k) = g.heads[0];
    assert_eq!(shapes[g.entry(n, k)].as_deref(), Some(&[8usize, 3][..]));

    // a partially known weight (64, 0) learns its second dimension
    let x = Symbol::var("x");
    let w = Symbol::variable("w", VarOptions { shape: Some(vec![5, 0]), ..Default::default() });
    let y = Symbol::compose_op(
        "FullyConnected",
        &[x, w],
        &[],
        vec![("num_hidden".into(), "5".into()), ("no_bias".into(), "True".into())],
        Some("fc"),
        Default::default(),
    )
    .unwrap();
    let g = y.indexed().unwrap();
    let shapes = infer::infer_shapes(&g, &HashMap::from([("x".to_string(), vec![2, 9])])).unwrap();
    assert_eq!(shapes[g.entry(1, 0)].as_deref(), Some(&[5usize, 9][..]));

    // the element-wise sum of a known and an unknown input fills the unknown one (backward)
    let a = Symbol::var("a");
    let b = Symbol::var("b");
    let s = Symbol::op("elemwise_add", &[&a, &b], &[], Some("s")).unwrap();
    let g = s.indexed().unwrap();
    let shapes = infer::infer_shapes(&g, &HashMap::from([("a".to_string(), vec![4, 2])])).unwrap();
    assert_eq!(shapes[g.entry(1, 0)].as_deref(), Some(&[4usize, 2][..]));
}

#[test]
fn conflicting_shapes_name_node_operator_and_both_shapes() {
    let x = Symbol::var("x");
    let w = Symbol::variable("w", VarOptions { shape: Some(vec![5, 3]), ..Default::default() });
    let y = Symbol::compose_op(
        "FullyConnected",
        &[x, w],
        &[],
        vec![("num_hidden".into(), "5".into()), ("no_bias".into(), "True".into())],
        Some("fc9"),
        Default::default(),
    )
    .unwrap();
    let g = y.indexed().unwrap();
    let err =
        infer::infer_shapes(&g, &HashMap::from([("x".to_string(), vec![2, 9])])).unwrap_err().to_string();
    assert!(err.contains("fc9") && err.contains("FullyConnected"), "{err}");
    assert!(err.contains("(5, 3)") && err.contains("(5, 9)"), "{err}");
}

#[test]
fn dtypes_are_inferred() {
    let x = Symbol::variable("x", VarOptions { dtype: Some(DType::F64), ..Default::default() });
    let y = Symbol::op("exp", &[&x], &[], Some("e")).unwrap();
    let g = y.indexed().unwrap();
    let types = infer::infer_dtypes(&g, &HashMap::new()).unwrap();
    assert_eq!(types[g.entry(1, 0)], Some(DType::F64));
}

#[test]
fn json_round_trip_keeps_structure_and_attributes() {
    let net = mlp();
    net.set_attr("__note__", "x");
    let text = to_json(&net).unwrap();
    assert!(text.contains("\"mxnet_version\": [\"int\", 10901]"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["arg_nodes"], serde_json::json!([0, 1, 2, 5, 6]));
    assert_eq!(v["node_row_ptr"].as_array().unwrap().len(), 10);
    let back = from_json(&text).unwrap();
    assert_eq!(back.list_arguments().unwrap(), net.list_arguments().unwrap());
    assert_eq!(back.list_outputs().unwrap(), net.list_outputs().unwrap());
    assert_eq!(back.attr("__note__").as_deref(), Some("x"));
    assert_eq!(to_json(&back).unwrap(), text);
}

#[test]
fn malformed_json_is_an_error_naming_the_problem() {
    let good = to_json(&mlp()).unwrap();
    let cases: Vec<(String, &str)> = vec![
        (good[..good.len() / 2].to_string(), "not valid JSON"),
        ("[]".into(), "top level"),
        ("{\"heads\": []}".into(), "no `nodes`"),
        (good.replace("\"softmax\"", "\"no_such_op\""), "unknown operator `no_such_op`"),
        (good.replace("[[7, 0, 0]]", "[[8, 0, 0]]"), "cycle"),
        (good.replace("[[7, 0, 0]]", "[[7, 4, 0]]"), "reads output 4"),
        (good.replace("\"num_hidden\": \"16\"", "\"num_hidden\": \"many\""), "num_hidden"),
        (good.replace("[[4, 0, 0], [5, 0, 0], [6, 0, 0]]", "[[4, 0, 0], [5, 0, 0]]"), "takes 3 inputs"),
    ];
    for (text, want) in cases {
        let err = from_json(&text)
            .err()
            .unwrap_or_else(|| panic!("accepted a bad graph (want `{want}`)"))
            .to_string();
        assert!(err.contains(want), "`{err}` lacks `{want}`");
    }
}

#[test]
fn custom_attributes_reach_json_as_strings() {
    let x = Symbol::var("x");
    let y = Symbol::op("clip", &[&x], &[("a_min", AttrValue::Float(-1.0)), ("a_max", 2.5.into())], Some("c"))
        .unwrap();
    let text = to_json(&y).unwrap();
    assert!(text.contains("\"a_max\": \"2.5\""), "{text}");
}
