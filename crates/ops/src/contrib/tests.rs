//! Tests of the `contrib` operators: values by hand, gradients against
//! central differences, errors.

use oxnet_core::check::OpChecker;
use oxnet_core::{invoke, invoke1, DType, NDArray};

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn all_finite_flags() {
    let ok = arr(&[0.0, 1.5, -2.0, 1e300], &[2, 2]);
    let inf = arr(&[0.0, f64::INFINITY], &[1, 2]);
    let nan = arr(&[f64::NAN, 1.0], &[2]).astype(DType::F16).unwrap();
    let flag = |name: &str, xs: &[&NDArray], attrs: &[(&str, oxnet_core::AttrValue)]| {
        let y = invoke1(name, xs, attrs).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[1usize][..], DType::F32));
        y.to_vec::<f64>().unwrap()[0]
    };
    assert_eq!(flag("all_finite", &[&ok], &[]), 1.0);
    assert_eq!(flag("all_finite", &[&inf.astype(DType::F32).unwrap()], &[]), 0.0);
    assert_eq!(flag("all_finite", &[&nan], &[]), 0.0);
    assert_eq!(flag("multi_all_finite", &[&ok, &ok], &[("num_arrays", 2i64.into())]), 1.0);
    assert_eq!(flag("multi_all_finite", &[&ok, &inf], &[("num_arrays", 2i64.into())]), 0.0);
    let e =
        invoke("all_finite", &[&NDArray::from_vec(vec![1i32], &[1]).unwrap()], &[]).unwrap_err().to_string();
    assert!(e.contains("all_finite") && e.contains("int32"), "{e}");
    let e = invoke("multi_all_finite", &[&ok], &[("num_arrays", 0i64.into())]).unwrap_err().to_string();
    assert!(e.contains("num_arrays"), "{e}");
}

#[test]
fn init_output_false_only_clears() {
    let ok = arr(&[1.0, 2.0], &[2]);
    let out = NDArray::from_vec(vec![5.0f32], &[1]).unwrap();
    let op = oxnet_core::registry::get("all_finite").unwrap();
    let attrs = oxnet_core::Attrs::parse(&op.attrs, false, &[("init_output", false.into())]).unwrap();
    let run = |x: &NDArray| {
        oxnet_core::invoke_into(&op, &[x], &attrs, std::slice::from_ref(&out), &[oxnet_core::Req::Write])
            .unwrap()
    };
    run(&ok);
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![5.0]);
    run(&arr(&[f64::NAN], &[1]));
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0]);
}

#[test]
fn allclose_as_numpy() {
    let a = arr(&[1e10, 1e-7], &[2]);
    let close = |a: &NDArray, b: &NDArray, attrs: &[(&str, oxnet_core::AttrValue)]| {
        let y = invoke1("_contrib_allclose", &[a, b], attrs).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[][..], DType::U8));
        y.to_vec::<u8>().unwrap()[0]
    };
    // MXNet's examples
    assert_eq!(close(&a, &arr(&[1.00001e10, 1e-8], &[2]), &[]), 0);
    assert_eq!(close(&arr(&[1e10, 1e-8], &[2]), &arr(&[1.00001e10, 1e-9], &[2]), &[]), 1);
    let n = arr(&[f64::NAN, 1.0], &[2]);
    assert_eq!(close(&n, &n, &[]), 1);
    assert_eq!(close(&n, &n, &[("equal_nan", false.into())]), 0);
    let b = arr(&[1.0, 2.0], &[2]);
    let c = arr(&[1.0, 2.1], &[2]);
    assert_eq!(close(&b, &c, &[("rtol", 0.01.into())]), 0);
    assert_eq!(close(&b, &c, &[("rtol", 0.06.into())]), 1);
    assert_eq!(close(&b, &c, &[("atol", 0.11.into()), ("rtol", 0.0.into())]), 1);
    let e = invoke("_contrib_allclose", &[&b, &arr(&[1.0], &[1])], &[]).unwrap_err().to_string();
    assert!(e.contains("[2]") && e.contains("[1]"), "{e}");
}

#[test]
fn div_sqrt_dim_and_quadratic() {
    let x = arr(&[1.0, -2.0, 3.0, 4.0, 0.5, -1.5, 2.5, 0.25], &[2, 4]);
    let y = invoke1("_contrib_div_sqrt_dim", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    for (a, b) in y.iter().zip(&xv) {
        assert!((a - b / 2.0).abs() < 1e-15);
    }
    OpChecker::new("_contrib_div_sqrt_dim", std::slice::from_ref(&x)).run().unwrap();
    let h = invoke1("_contrib_div_sqrt_dim", &[&x.astype(DType::F16).unwrap()], &[]).unwrap();
    assert_eq!(h.dtype(), DType::F16);

    let attrs = [("a", 1.0.into()), ("b", 2.0.into()), ("c", 3.0.into())];
    let q = invoke1("_contrib_quadratic", &[&arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2])], &attrs).unwrap();
    assert_eq!(q.to_vec::<f64>().unwrap(), vec![6.0, 11.0, 18.0, 27.0]);
    // defaults are 0
    let z = invoke1("_contrib_quadratic", &[&x], &[]).unwrap();
    assert!(z.to_vec::<f64>().unwrap().iter().all(|v| *v == 0.0));
    OpChecker::new("_contrib_quadratic", &[x]).attr("a", 0.7).attr("b", -1.3).attr("c", 0.4).run().unwrap();
}

#[test]
fn gradientmultiplier_scales_only_the_gradient() {
    let x = arr(&[1.0, -2.0, 3.5], &[3]);
    let y = invoke1("_contrib_gradientmultiplier", &[&x], &[("scalar", (-0.5).into())]).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![1.0, -2.0, 3.5]);
    x.attach_grad(oxnet_core::Req::Write).unwrap();
    let y = {
        let _r = oxnet_core::autograd::record();
        invoke1("_contrib_gradientmultiplier", &[&x], &[("scalar", (-0.5).into())]).unwrap()
    };
    let head = arr(&[2.0, 4.0, -6.0], &[3]);
    oxnet_core::autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![-1.0, -2.0, 3.0]);
}
