//! The seeds' custom operators in Rust: values against hand computation,
//! gradients through the op checker, and a short training run.

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};
use oxnet_tour::{data, seed_ops};

/// The op checker and the blob generator draw from the process-wide generator,
/// and one test reseeds it to compare two runs: each test holds this lock so
/// that no other draws in between.
static RNG_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn custom(inputs: &[&NDArray], op_type: &str, extra: &[(&str, AttrValue)]) -> NDArray {
    let mut attrs = vec![("op_type", AttrValue::from(op_type))];
    attrs.extend(extra.iter().cloned());
    invoke1("Custom", inputs, &attrs).unwrap()
}

#[test]
fn sigmoid_matches_the_seed_example() {
    let _rng = rng_lock();
    seed_ops::register_all();
    // seed 001: x = [0, 1, 2, 3]; y = sigmoid(x); x.grad = y * (1 - y)
    let x = NDArray::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], &[4]).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        custom(&[&x], "sigmoid", &[])
    };
    y.backward().unwrap();
    let want: Vec<f64> = [0.0f64, 1.0, 2.0, 3.0].iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
    for ((got, g), w) in
        y.to_vec::<f64>().unwrap().iter().zip(x.grad().unwrap().to_vec::<f64>().unwrap()).zip(&want)
    {
        assert!((got - w).abs() < 1e-6);
        assert!((g - w * (1.0 - w)).abs() < 1e-6);
    }
    let x64 = NDArray::random_uniform(-3.0, 3.0, &[2, 5], DType::F64).unwrap();
    OpChecker::new("Custom", &[x64]).attr("op_type", "sigmoid").run().unwrap();
}

#[test]
fn dense_adds_the_bias_attribute_and_differentiates_both_arguments() {
    let _rng = rng_lock();
    seed_ops::register_all();
    let x = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let w = NDArray::from_vec(vec![1.0f64, 0.0, -1.0, 0.5, 0.5, 0.5], &[2, 3]).unwrap();
    let y = custom(&[&x, &w], "dense", &[("bias", "0.1".into())]);
    // rows of x times rows of w, plus 0.1
    assert_eq!(y.shape(), &[2, 2]);
    let got = y.to_vec::<f64>().unwrap();
    let want = [1.0 - 3.0 + 0.1, 3.0 + 0.1, 4.0 - 6.0 + 0.1, 7.5 + 0.1];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{got:?}");
    }
    OpChecker::new("Custom", &[x.clone(), w.clone()])
        .attr("op_type", "dense")
        .attr("bias", "0.1")
        .run()
        .unwrap();
    let err = invoke1("Custom", &[&x, &w], &[("op_type", "dense".into())]).unwrap_err().to_string();
    assert!(err.contains("bias"), "{err}");
    let bad = NDArray::zeros(&[2, 4], DType::F64, Default::default()).unwrap();
    let err =
        invoke1("Custom", &[&x, &bad], &[("op_type", "dense".into()), ("bias", "0".into())]).unwrap_err();
    assert!(err.to_string().contains("dense needs data"), "{err}");
}

#[test]
fn softmax_backward_is_the_cross_entropy_gradient() {
    let _rng = rng_lock();
    seed_ops::register_all();
    let x = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3]).unwrap();
    let label = NDArray::from_vec(vec![2.0f64, 0.0], &[2]).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let p = {
        let _r = autograd::record();
        custom(&[&x, &label], "softmax_label", &[])
    };
    p.backward().unwrap();
    let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|v| v.exp()).collect();
    let s: f64 = e.iter().sum();
    let want_p = [e[0] / s, e[1] / s, e[2] / s, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
    let want_g = [want_p[0], want_p[1], want_p[2] - 1.0, want_p[3] - 1.0, want_p[4], want_p[5]];
    let got_p = p.to_vec::<f64>().unwrap();
    let got_g = x.grad().unwrap().to_vec::<f64>().unwrap();
    for i in 0..6 {
        assert!((got_p[i] - want_p[i]).abs() < 1e-12);
        assert!((got_g[i] - want_g[i]).abs() < 1e-12);
    }
    let bad = NDArray::from_vec(vec![5.0f64, 0.0], &[2]).unwrap();
    let p = {
        let _r = autograd::record();
        custom(&[&x, &bad], "softmax_label", &[])
    };
    assert!(p.backward().unwrap_err().to_string().contains("out of range"));
}

#[test]
fn generated_blobs_are_reproducible() {
    let _rng = rng_lock();
    oxnet_core::random::seed(3);
    let (x1, y1) = data::blobs(30, 2, 3, 0.5).unwrap();
    oxnet_core::random::seed(3);
    let (x2, y2) = data::blobs(30, 2, 3, 0.5).unwrap();
    assert_eq!(x1.to_vec::<f32>().unwrap(), x2.to_vec::<f32>().unwrap());
    assert_eq!(y1.to_vec::<f32>().unwrap(), y2.to_vec::<f32>().unwrap());
    assert_eq!(y1.to_vec::<f32>().unwrap()[..4], [0.0, 1.0, 2.0, 0.0]);
}
