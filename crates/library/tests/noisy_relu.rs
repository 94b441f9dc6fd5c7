//! `my_noisy_relu` draws from the call's generator, seeded from oxnet's
//! global seed: reseeding repeats its output. (Alone in this file because it
//! reseeds the process-wide generator.)

mod common;

use oxnet_core::{invoke1, DType, NDArray};

#[test]
fn my_noisy_relu_repeats_after_reseeding() {
    oxnet_library::load(common::build_rust_example("my_noisy_relu"), false).unwrap();
    let x = NDArray::full(&[64], 10.0, DType::F32, Default::default()).unwrap();
    oxnet_core::random::seed(42);
    let a = invoke1("my_noisy_relu", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    let b = invoke1("my_noisy_relu", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    oxnet_core::random::seed(42);
    let c = invoke1("my_noisy_relu", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, c, "reseeding must repeat the output");
    assert_ne!(a, b, "two calls draw different noise");
    // noise is uniform in [-0.5, 0.5) around x = 10, and not constant
    assert!(a.iter().all(|v| (9.5..10.5).contains(v)), "{a:?}");
    let mean = a.iter().sum::<f32>() / a.len() as f32;
    assert!((mean - 10.0).abs() < 0.15, "mean {mean}");
    assert!(a.iter().any(|v| (v - 10.0).abs() > 0.1));
    // the `scale` attribute reaches the plugin
    let s = invoke1("my_noisy_relu", &[&x], &[("scale", "0".into())]).unwrap().to_vec::<f32>().unwrap();
    assert!(s.iter().all(|&v| v == 10.0));
    let err = invoke1("my_noisy_relu", &[&x], &[("scale", "big".into())]).unwrap_err().to_string();
    assert!(err.contains("my_noisy_relu") && err.contains("scale"), "{err}");
}
