//! Shape inference over partially known shapes (0 = unknown extent), as
//! MXNet 1.9.1's `infer_shape_partial` gives it: the expected shapes below
//! are what MXNet 1.9.1 returned for the same graphs.

use oxnet_core::AttrValue;
use oxnet_graph::{infer, Symbol, VarOptions};
use std::collections::HashMap;

fn var(name: &str, shape: &[usize]) -> Symbol {
    Symbol::variable(name, VarOptions { shape: Some(shape.to_vec()), ..Default::default() })
}

fn op(name: &str, inputs: &[&Symbol], attrs: &[(&str, AttrValue)]) -> Symbol {
    Symbol::op(name, inputs, attrs, None).unwrap()
}

/// Every variable's and head's inferred (partial) shape, by name.
fn shapes(
    sym: &Symbol,
    given: &[(&str, &[usize])],
) -> oxnet_core::Result<HashMap<String, Option<Vec<usize>>>> {
    let g = sym.indexed()?;
    let given = given.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
    let s = infer::infer_shapes(&g, &given)?;
    let mut out: HashMap<String, Option<Vec<usize>>> =
        g.variables().into_iter().map(|n| (g.nodes[n].name.clone(), s[g.entry(n, 0)].clone())).collect();
    for (k, &(n, i)) in g.heads.iter().enumerate() {
        out.insert(format!("head{k}"), s[g.entry(n, i)].clone());
    }
    Ok(out)
}

fn known(v: &[usize]) -> Option<Vec<usize>> {
    Some(v.to_vec())
}

#[test]
fn element_wise_operands_fill_each_other() {
    let c = op("elemwise_add", &[&var("a", &[0, 10]), &var("b", &[12, 0])], &[]);
    let s = shapes(&c, &[]).unwrap();
    assert_eq!(s["a"], known(&[12, 10]));
    assert_eq!(s["b"], known(&[12, 10]));
}

#[test]
fn fully_connected_learns_its_batch_from_a_later_sum() {
    let b = op("FullyConnected", &[&var("a", &[0, 10])], &[("num_hidden", 21.into())]);
    let d = op("elemwise_add", &[&b, &var("c", &[5, 0])], &[]);
    let s = shapes(&d, &[]).unwrap();
    assert_eq!(s["a"], known(&[5, 10]));
    assert_eq!(s["c"], known(&[5, 21]));
    // flattening: the weight needs only data's trailing extents
    let f = op("FullyConnected", &[&Symbol::var("x")], &[("num_hidden", 4.into())]);
    let s = shapes(&f, &[("x", &[0, 2, 5])]).unwrap();
    assert_eq!(s["head0"], known(&[0, 4]));
    assert!(s.values().any(|v| v.as_deref() == Some(&[4, 10][..])));
}

#[test]
fn a_wrong_weight_is_an_error_even_with_other_inputs_unknown() {
    let fc1 = op("FullyConnected", &[&Symbol::var("data")], &[("num_hidden", 1000.into())]);
    let act = op("Activation", &[&fc1], &[("act_type", "relu".into())]);
    let fc2 = op("FullyConnected", &[&act], &[("num_hidden", 10.into())]);
    let name = fc1.name().unwrap();
    let w = format!("{name}_weight");
    let err = shapes(&fc2, &[("data", &[100, 100]), (&w, &[1, 100])]).unwrap_err().to_string();
    assert!(err.contains("FullyConnected") && err.contains("weight"), "{err}");
}

#[test]
fn split_and_concat_infer_backward() {
    let b = op(
        "SliceChannel",
        &[&var("a", &[0, 10])],
        &[("num_outputs", 10.into()), ("axis", 1.into()), ("squeeze_axis", true.into())],
    );
    let d = op("elemwise_add", &[&b.get(1).unwrap(), &var("c", &[5])], &[]);
    assert_eq!(shapes(&d, &[]).unwrap()["a"], known(&[5, 10]));

    let b = op("SliceChannel", &[&var("a", &[0, 15, 0])], &[("num_outputs", 3.into())]);
    let d = op("elemwise_add", &[&b.get(1).unwrap(), &var("c", &[3, 5, 2])], &[]);
    assert_eq!(shapes(&d, &[]).unwrap()["a"], known(&[3, 15, 2]));

    let c = op(
        "Concat",
        &[&var("a", &[0, 10]), &var("b", &[0, 5])],
        &[("num_args", 2.into()), ("dim", 1.into())],
    );
    let d = op("elemwise_add", &[&var("d", &[2, 0]), &c], &[]);
    let s = shapes(&d, &[]).unwrap();
    assert_eq!(s["a"], known(&[2, 10]));
    assert_eq!(s["b"], known(&[2, 5]));
    assert_eq!(s["d"], known(&[2, 15]));
}

#[test]
fn products_and_layout_operators_keep_an_unknown_batch() {
    let (x, y) = (Symbol::var("x"), Symbol::var("y"));
    let s = shapes(&op("dot", &[&x, &y], &[]), &[("x", &[0, 3, 4]), ("y", &[4, 5])]).unwrap();
    assert_eq!(s["head0"], known(&[0, 3, 5]));
    let bd = op("batch_dot", &[&x, &y], &[]);
    assert_eq!(shapes(&bd, &[("x", &[0, 3, 4]), ("y", &[0, 4, 5])]).unwrap()["head0"], known(&[0, 3, 5]));
    // as in MXNet, nothing comes out while a matrix axis is unknown
    assert_eq!(shapes(&bd, &[("x", &[0, 3, 4]), ("y", &[0, 0, 5])]).unwrap()["head0"], None);
    let t = op("transpose", &[&x], &[("axes", AttrValue::Raw("(0, 3, 2, 1)".into()))]);
    assert_eq!(shapes(&t, &[("x", &[0, 3, 224, 224])]).unwrap()["head0"], known(&[0, 224, 224, 3]));
    let e = op("Embedding", &[&x, &y], &[("input_dim", 100.into()), ("output_dim", 10.into())]);
    assert_eq!(shapes(&e, &[("x", &[0, 5]), ("y", &[100, 10])]).unwrap()["head0"], known(&[0, 5, 10]));
    let p = op("pick", &[&x, &y], &[("axis", 1.into())]);
    assert_eq!(shapes(&p, &[("x", &[0, 3, 3]), ("y", &[0, 3])]).unwrap()["head0"], known(&[0, 3]));
}

#[test]
fn where_waits_for_a_complete_condition() {
    let w = op("where", &[&Symbol::var("c"), &Symbol::var("x"), &Symbol::var("y")], &[]);
    let s = shapes(&w, &[("c", &[0, 2]), ("x", &[0, 2]), ("y", &[0, 2])]).unwrap();
    assert_eq!(s["head0"], None);
    let s = shapes(&w, &[("c", &[0]), ("x", &[2, 2]), ("y", &[2, 2])]).unwrap();
    assert_eq!(s["head0"], None);
    let s = shapes(&w, &[("c", &[2]), ("x", &[2, 0]), ("y", &[0, 3])]).unwrap();
    assert_eq!(s["head0"], known(&[2, 3]));
}

#[test]
fn a_shape_constraint_lets_a_weight_be_learnt_backward() {
    let w = Symbol::var("weight");
    let wt = op("broadcast_add", &[&w, &var("wshift", &[1])], &[]);
    let wt = op("_identity_with_attr_like_rhs", &[&wt, &w], &[]);
    let net = Symbol::op(
        "FullyConnected",
        &[&Symbol::var("data"), &wt],
        &[("num_hidden", 11.into()), ("no_bias", true.into())],
        None,
    )
    .unwrap();
    assert_eq!(shapes(&net, &[("data", &[7, 100])]).unwrap()["weight"], known(&[11, 100]));
}
