//! `my_swish`, registered at link time by its crate, behaves like a
//! built-in: values, the op checker (inference, requests, central
//! differences), second-order gradients, graphs, and errors naming it.

use my_linked_ops as _;
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, registry, DType, Device, NDArray, Req};
use oxnet_graph::{simple_bind, GradReqs, Symbol};
use std::collections::HashMap;

const XS: [f64; 5] = [-3.0, -0.5, 0.0, 0.7, 2.5];

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

#[test]
fn it_is_registered_by_linking_alone() {
    let op = registry::get("my_swish").unwrap();
    assert!(op.doc.contains("Swish"));
    assert!(registry::list_ops().iter().any(|o| o.name == "my_swish"));
}

#[test]
fn values_match_the_formula_in_both_dtypes() {
    for beta in [1.0, 1.7] {
        let want: Vec<f64> = XS.iter().map(|&x| x * sigmoid(beta * x)).collect();
        let x = NDArray::from_vec(XS.to_vec(), &[5]).unwrap();
        let y = invoke1("my_swish", &[&x], &[("beta", beta.into())]).unwrap().to_vec::<f64>().unwrap();
        y.iter().zip(&want).for_each(|(a, b)| assert!((a - b).abs() < 1e-14, "{a} vs {b}"));
        let x32 = x.astype(DType::F32).unwrap();
        let y32 = invoke1("my_swish", &[&x32], &[("beta", beta.into())]).unwrap();
        assert_eq!(y32.dtype(), DType::F32);
        y32.to_vec::<f64>().unwrap().iter().zip(&want).for_each(|(a, b)| assert!((a - b).abs() < 1e-6));
    }
}

#[test]
fn the_op_checker_passes() {
    let x = NDArray::from_vec(XS.to_vec(), &[5]).unwrap();
    OpChecker::new("my_swish", &[x.clone()]).run().unwrap();
    OpChecker::new("my_swish", &[x]).attr("beta", 0.6).run().unwrap();
}

#[test]
fn second_order_gradient_matches_the_analytic_one() {
    let beta = 1.3;
    let x = NDArray::from_vec(XS.to_vec(), &[5]).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("my_swish", &[&x], &[("beta", beta.into())]).unwrap()
    };
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let dy = {
        let _r = autograd::record();
        autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0)
    };
    dy.backward().unwrap();
    // f'' = beta·s·(1 − s)·(2 + beta·x·(1 − 2s)), s = sigmoid(beta·x)
    let got = x.grad().unwrap().to_vec::<f64>().unwrap();
    for (g, &v) in got.iter().zip(&XS) {
        let s = sigmoid(beta * v);
        let want = beta * s * (1.0 - s) * (2.0 + beta * v * (1.0 - 2.0 * s));
        assert!((g - want).abs() < 1e-12, "x={v}: {g} vs {want}");
    }
}

#[test]
fn it_runs_inside_a_bound_graph_like_eager_calls() {
    let data = Symbol::var("data");
    let y = Symbol::op("my_swish", &[&data], &[("beta", 2.0.into())], Some("swish")).unwrap();
    let shapes = HashMap::from([("data".to_string(), vec![5])]);
    let mut exe = simple_bind(&y, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
    let x = NDArray::from_vec(XS.iter().map(|&v| v as f32).collect(), &[5]).unwrap();
    exe.arg_arrays()[0].assign_from(&x).unwrap();
    let out = exe.forward(true).unwrap()[0].to_vec::<f32>().unwrap();
    exe.backward(&[]).unwrap();
    let grad = exe.grad_arrays()[0].as_ref().unwrap().to_vec::<f32>().unwrap();

    x.attach_grad(Req::Write).unwrap();
    let eager = {
        let _r = autograd::record();
        invoke1("my_swish", &[&x], &[("beta", 2.0.into())]).unwrap()
    };
    eager.backward().unwrap();
    assert_eq!(out, eager.to_vec::<f32>().unwrap());
    assert_eq!(grad, x.grad().unwrap().to_vec::<f32>().unwrap());
}

#[test]
fn errors_name_the_operator() {
    let ints = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
    let msg = invoke1("my_swish", &[&ints], &[]).unwrap_err().to_string();
    assert!(msg.contains("my_swish") && msg.contains("float32 or float64"), "{msg}");
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    let msg = invoke1("my_swish", &[&x], &[("beta", "steep".into())]).unwrap_err().to_string();
    assert!(msg.contains("beta"), "{msg}");
}
