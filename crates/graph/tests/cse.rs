//! Common subexpression elimination: which nodes merge, what the merged
//! graph computes, and the copies that keep outputs distinct (the counts
//! are those MXNet 1.9.1's `get_optimized_symbol` gives).

use oxnet_core::{AttrValue, NDArray};
use oxnet_graph::cse::eliminate_common_expr;
use oxnet_graph::Symbol;

fn op(name: &str, inputs: &[&Symbol], attrs: &[(&str, AttrValue)]) -> Symbol {
    Symbol::op(name, inputs, attrs, None).unwrap()
}

fn internals(s: &Symbol) -> usize {
    s.internals().unwrap().list_outputs().unwrap().len()
}

#[test]
fn equal_calls_on_equal_inputs_merge_and_outputs_stay_distinct() {
    let (a, b, c) = (Symbol::var("a"), Symbol::var("b"), Symbol::var("c"));
    let add = |x: &Symbol, y: &Symbol| op("elemwise_add", &[x, y], &[]);
    let plus = |x: &Symbol, v: f64| op("_plus_scalar", &[x], &[("scalar", v.into())]);
    let cases: Vec<(Symbol, usize)> = vec![
        (add(&plus(&a, 1.0), &plus(&a, 2.0)), 0),
        (add(&add(&a, &b), &add(&a, &b)), 1),
        (add(&add(&add(&a, &b), &c), &add(&add(&a, &b), &c)), 2),
    ];
    for (sym, savings) in cases {
        let opt = eliminate_common_expr(&sym).unwrap();
        assert_eq!(internals(&opt) + savings, internals(&sym));
        assert_eq!(opt.list_arguments().unwrap(), sym.list_arguments().unwrap());
    }
    // two outputs that become one entry: a copy keeps them apart
    let d = plus(&a, 1.0);
    let mul = |x: &Symbol, y: &Symbol| op("elemwise_mul", &[x, y], &[]);
    let group = Symbol::group(&[mul(&a, &d), mul(&a, &d)]);
    let opt = eliminate_common_expr(&group).unwrap();
    assert_eq!(internals(&opt), internals(&group));
    let outs = opt.entries();
    assert!(!std::sync::Arc::ptr_eq(&outs[0].node, &outs[1].node));
    assert_eq!(outs[1].node.op_name(), "identity"); // registered as identity, alias _copy
    let group = Symbol::group(&[add(&mul(&a, &d), &b), add(&mul(&a, &d), &b)]);
    assert_eq!(internals(&eliminate_common_expr(&group).unwrap()) + 1, internals(&group));
}

#[test]
fn random_operators_never_merge() {
    let a = Symbol::var("a");
    let drop = || op("Dropout", &[&a], &[]);
    let sym = op("elemwise_add", &[&drop(), &drop()], &[]);
    assert_eq!(internals(&eliminate_common_expr(&sym).unwrap()), internals(&sym));
}

#[test]
fn the_merged_graph_computes_the_same_values() {
    let (a, b) = (Symbol::var("a"), Symbol::var("b"));
    let ab = || op("elemwise_mul", &[&a, &b], &[]);
    let sym = op("elemwise_add", &[&ab(), &ab()], &[]);
    let opt = eliminate_common_expr(&sym).unwrap();
    let x = NDArray::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let y = NDArray::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    let mut exe = oxnet_graph::Executor::new(
        &opt,
        oxnet_core::Device::Cpu,
        vec![x, y],
        vec![None, None],
        vec![oxnet_core::Req::Null; 2],
        vec![],
    )
    .unwrap();
    let out = exe.forward(false).unwrap()[0].to_vec::<f64>().unwrap();
    assert_eq!(out, vec![6.0, 16.0]);
}
