//! Cases for the control-flow operators (`_foreach`, `_while_loop`,
//! `_cond`): their bodies built with the Symbol API, their positions taken
//! from the bodies' inputs.

use super::{pos, vals, x, Case};
use oxnet_graph::Symbol;
use std::collections::BTreeMap;

fn op(name: &str, inputs: &[Symbol]) -> Symbol {
    op_with(name, inputs, &[])
}

fn op_with(name: &str, inputs: &[Symbol], params: &[(&str, &str)]) -> Symbol {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Symbol::compose_op(name, inputs, &[], params, None, BTreeMap::new()).expect("a body operator")
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn json(body: &Symbol) -> &'static str {
    leak(oxnet_graph::json::to_json(body).expect("the body as JSON"))
}

/// The positions of `names` among `body`'s inputs, as a tuple attribute.
fn positions(body: &Symbol, names: &[&str]) -> &'static str {
    let inputs = body.list_inputs().expect("the body's inputs");
    let at: Vec<String> =
        names.iter().map(|n| inputs.iter().position(|m| m == n).expect("a body input").to_string()).collect();
    leak(format!("({},)", at.join(",")))
}

/// The node input (named in `node`) feeding each input of `body`.
fn locs(body: &Symbol, node: &[&str]) -> &'static str {
    let inputs = body.list_inputs().expect("the body's inputs");
    let at: Vec<String> =
        inputs.iter().map(|n| node.iter().position(|m| m == n).expect("a node input").to_string()).collect();
    leak(format!("({},)", at.join(",")))
}

pub fn cases() -> Vec<Case> {
    vec![foreach_case(), while_loop_case(), cond_case(true), cond_case(false)]
}

/// `_foreach` over 3 steps of a body `(x_t, s; w) -> (tanh(x_t * w + s), [x_t * w + s])`.
fn foreach_case() -> Case {
    let (xs, s, w) = (Symbol::var("x"), Symbol::var("s"), Symbol::var("w"));
    let next = op("elemwise_add", &[op("elemwise_mul", &[xs, w]), s]);
    let body = Symbol::group(&[op("tanh", std::slice::from_ref(&next)), next]);
    let attrs = vec![
        ("subgraph_sym_json", json(&body)),
        ("num_args", "4"),
        ("num_outputs", "2"),
        ("num_out_data", "1"),
        ("in_data_locs", positions(&body, &["x"])),
        ("in_state_locs", positions(&body, &["s"])),
        ("remain_locs", positions(&body, &["w"])),
    ];
    // the node's inputs: the sequence (3 steps), the state, the weight
    Case { op: "_foreach", attrs, inputs: vec![x(&[3, 2]), x(&[2]), x(&[2])], property: None }
}

/// `_while_loop` with loop variables `(i, s)` and a weight `w`: while
/// `i < 3` (at most 5 steps), step output `s * w`, next `(i + 1, tanh(s * w))`.
/// It runs 3 steps, so the outputs hold two rows of padding.
fn while_loop_case() -> Case {
    let (i, s, w) = (Symbol::var("i"), Symbol::var("s"), Symbol::var("w"));
    let cond = op_with("_lesser_scalar", std::slice::from_ref(&i), &[("scalar", "3")]);
    let prod = op("elemwise_mul", &[s, w]);
    let func = Symbol::group(&[
        prod.clone(),
        op_with("_plus_scalar", &[i], &[("scalar", "1")]),
        op("tanh", &[prod]),
    ]);
    let node = ["i", "s", "w"];
    let attrs = vec![
        ("cond_sym_json", json(&cond)),
        ("func_sym_json", json(&func)),
        ("num_args", "5"),
        ("num_outputs", "3"),
        ("num_out_data", "1"),
        ("max_iterations", "5"),
        ("cond_input_locs", locs(&cond, &node)),
        ("func_input_locs", locs(&func, &node)),
        ("func_var_locs", positions(&func, &["i", "s"])),
    ];
    Case { op: "_while_loop", attrs, inputs: vec![vals(&[0.0], &[1]), x(&[2]), x(&[2])], property: None }
}

/// `_cond` on `a, b`: if `sum(a) > 0` then `a * b` else `exp(b)`; `a` is
/// positive (then) or negative (else), far from the switch.
fn cond_case(then: bool) -> Case {
    let (a, b) = (Symbol::var("a"), Symbol::var("b"));
    let cond = op_with("_greater_scalar", &[op("sum", std::slice::from_ref(&a))], &[("scalar", "0")]);
    let then_g = op("elemwise_mul", &[a.clone(), b.clone()]);
    let else_g = op("exp", &[b]);
    let node = ["a", "b"];
    let attrs = vec![
        ("cond_sym_json", json(&cond)),
        ("then_sym_json", json(&then_g)),
        ("else_sym_json", json(&else_g)),
        ("num_args", "5"),
        ("num_outputs", "1"),
        ("cond_input_locs", locs(&cond, &node)),
        ("then_input_locs", locs(&then_g, &node)),
        ("else_input_locs", locs(&else_g, &node)),
    ];
    let a_in = if then { pos(&[2]) } else { vals(&[-1.5, -0.75], &[2]) };
    Case { op: "_cond", attrs, inputs: vec![a_in, x(&[2])], property: None }
}
