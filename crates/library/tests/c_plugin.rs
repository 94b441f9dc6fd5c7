//! The C example (`examples/extensions/c/my_scale.c`) built with `cc` and loaded.

mod common;

use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, DType, NDArray};

fn load() {
    oxnet_library::load(common::build_c_example("my_scale"), false).expect("load my_scale");
}

#[test]
fn my_scale_matches_the_builtin_mul_scalar() {
    load();
    let x = NDArray::from_vec(vec![1.0f32, -2.0, 0.25, 8.0, 3.0, -1.5], &[2, 3]).unwrap();
    let got = invoke1("my_scale", &[&x], &[("scale", "2.5".into())]).unwrap();
    let want = invoke1("_mul_scalar", &[&x], &[("scalar", 2.5.into())]).unwrap();
    assert_eq!(got.shape(), &[2, 3]);
    assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    let default = invoke1("my_scale", &[&x], &[]).unwrap();
    assert_eq!(default.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
}

#[test]
fn my_scale_passes_the_op_checker() {
    load();
    let x = NDArray::from_vec(vec![0.5f32, -1.0, 2.0, 4.0], &[4]).unwrap();
    let report =
        OpChecker::new("my_scale", &[x]).attr("scale", "-3").eps(1e-2).tol(1e-2, 1e-3).run().unwrap();
    assert_eq!(report.grad_entries, 4);
    assert_eq!(report.outputs[0].to_vec::<f32>().unwrap(), vec![-1.5, 3.0, -6.0, -12.0]);
}

#[test]
fn c_errors_name_the_operator_and_the_problem() {
    load();
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    let err = invoke1("my_scale", &[&x], &[("scale", "two".into())]).unwrap_err().to_string();
    assert!(err.contains("my_scale") && err.contains("scale=`two` is not a number"), "{err}");
    let xd = x.astype(DType::F64).unwrap();
    let err = invoke1("my_scale", &[&xd], &[]).unwrap_err().to_string();
    assert!(err.contains("my_scale") && err.contains("must be float32"), "{err}");
    // the engine stays usable
    assert_eq!(
        invoke1("my_scale", &[&x], &[("scale", "4".into())]).unwrap().to_vec::<f32>().unwrap(),
        vec![4.0]
    );
}
