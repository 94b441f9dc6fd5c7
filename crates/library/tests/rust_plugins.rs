//! The Rust SDK examples (`examples/extensions/rust`) loaded at run time:
//! values against the built-in relu, gradients against central differences,
//! requests, panics turned into errors. (`my_noisy_relu` has its own test
//! file: it reseeds the global generator, which other tests draw from.)

mod common;

use oxnet_core::autograd;
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, invoke_into, registry, DType, NDArray, Req};

fn load(name: &str) -> oxnet_library::Library {
    oxnet_library::load(common::build_rust_example(name), false).expect("load")
}

fn sample(shape: &[usize]) -> NDArray {
    // values away from relu's kink so that central differences are exact
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.2) * 0.37).collect();
    NDArray::from_vec(v, shape).unwrap()
}

#[test]
fn my_relu_matches_the_builtin_relu() {
    load("my_relu");
    for dt in [DType::F32, DType::F64] {
        let x = sample(&[3, 4]).astype(dt).unwrap();
        let got = invoke1("my_relu", &[&x], &[]).unwrap();
        let want = invoke1("relu", &[&x], &[]).unwrap();
        assert_eq!(got.dtype(), dt);
        assert_eq!(got.shape(), &[3, 4]);
        assert_eq!(got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    }
    let ints = NDArray::from_vec(vec![1i32, -2], &[2]).unwrap();
    let err = invoke1("my_relu", &[&ints], &[]).unwrap_err().to_string();
    assert!(err.contains("my_relu") && err.contains("float32 or float64"), "{err}");
}

#[test]
fn my_relu_passes_the_op_checker() {
    load("my_relu");
    let x = sample(&[2, 5]).astype(DType::F64).unwrap();
    let report = OpChecker::new("my_relu", &[x]).run().unwrap();
    assert_eq!(report.grad_entries, 10);
    assert!(report.max_grad_error < 1e-6);
}

#[test]
fn requests_reach_the_plugin() {
    load("my_relu");
    let op = registry::get("my_relu").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    let x = NDArray::from_vec(vec![-1.0f32, 2.0, 3.0], &[3]).unwrap();
    let out = NDArray::from_vec(vec![10.0f32, 10.0, 10.0], &[3]).unwrap();
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![10.0, 12.0, 13.0]);
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Write]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 3.0]);
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Null]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 3.0]);
}

#[test]
fn grad_req_add_accumulates_through_a_loaded_op() {
    load("my_relu");
    let x = NDArray::from_vec(vec![-1.0f32, 2.0, 0.5], &[3]).unwrap();
    x.attach_grad(Req::Add).unwrap();
    for _ in 0..3 {
        let y = {
            let _r = autograd::record();
            let h = invoke1("my_relu", &[&x], &[]).unwrap();
            invoke1("_mul_scalar", &[&h], &[("scalar", 2.0.into())]).unwrap()
        };
        y.backward().unwrap();
    }
    // d/dx 2 relu(x) = 2 where x > 0; three passes accumulate
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0.0, 6.0, 6.0]);
}

#[test]
fn a_panic_in_a_plugin_is_an_error_and_the_engine_stays_usable() {
    load("my_relu");
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    let err = invoke1("my_relu_panic", &[&x], &[]).unwrap_err().to_string();
    assert!(
        err.contains("my_relu_panic") && err.contains("panicked") && err.contains("asked to panic"),
        "{err}"
    );
    let y = invoke1("my_relu", &[&x], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0]);
}

#[test]
fn loading_twice_returns_the_same_library() {
    let a = load("my_relu");
    let b = load("my_relu");
    assert_eq!(a.op_names(), b.op_names());
    assert_eq!(a.op_names(), ["my_relu", "my_relu_panic", "_my_relu_subgraph"]);
    assert_eq!(a.path(), b.path());
    let x = NDArray::from_vec(vec![-3.0f32, 3.0], &[2]).unwrap();
    assert_eq!(invoke1("my_relu", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 3.0]);
}
