//! Tests of `Deconvolution`: values MXNet 1.9.1 computed, the adjoint
//! relation with `Convolution`, gradients by central differences, errors.

use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

fn pattern(n: usize, modulo: usize, shift: f64, shape: &[usize]) -> NDArray {
    NDArray::from_vec((0..n).map(|i| (i % modulo) as f64 - shift).collect::<Vec<_>>(), shape).unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    compare("Deconvolution", "values", got, want, 1e-6, 1e-6).unwrap();
}

#[test]
fn values_and_gradients_match_mxnet() {
    let x = pattern(18, 5, 2.0, &[1, 2, 3, 3]);
    let w = pattern(36, 4, 1.5, &[2, 2, 3, 3]);
    let b = NDArray::from_vec(vec![0.25f64, -0.5], &[2]).unwrap();
    #[rustfmt::skip]
    let y00 = [
        4.25, 3.75, 0.75, -1.75, -0.25, -1.25, -4.25, 4.75, 0.25, 5.75, 4.75, -4.25,
        -1.25, 2.25, -2.25, -3.25, 4.25, 4.25, -0.75, 0.25, 1.25, -6.25, -4.25, 4.75,
        0.75, -1.75, -0.25, 0.25, -1.25, -0.25, -0.25, 2.25, 0.75, 0.25, 1.75, -1.25,
    ];
    let base = |extra: &[(&'static str, AttrValue)]| {
        let mut a: Vec<(&str, AttrValue)> = vec![
            ("kernel", "(3, 3)".into()),
            ("num_filter", 2.into()),
            ("no_bias", false.into()),
            ("stride", "(2, 2)".into()),
        ];
        a.extend(extra.iter().cloned());
        a
    };
    for attrs in [
        base(&[("pad", "(1, 1)".into()), ("adj", "(1, 1)".into())]),
        base(&[("target_shape", "(6, 6)".into())]),
    ] {
        for a in [&x, &w, &b] {
            a.attach_grad(Req::Write).unwrap();
        }
        let y = {
            let _r = autograd::record();
            invoke1("Deconvolution", &[&x, &w, &b], &attrs).unwrap()
        };
        assert_eq!(y.shape(), &[1, 2, 6, 6]);
        close(&y.to_vec::<f64>().unwrap()[..36], &y00);
        let head = pattern(72, 7, 3.0, &[1, 2, 6, 6]);
        autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
        let dx = x.grad().unwrap().to_vec::<f64>().unwrap();
        close(&dx[..9], &[20.5, -4.0, -8.0, -21.0, 40.5, 1.5, 4.0, -25.5, 40.5]);
        let dw = w.grad().unwrap().to_vec::<f64>().unwrap();
        close(&dw[9..18], &[-6.0, -10.0, -9.0, -6.0, 0.0, -9.0, 15.0, 2.0, 0.0]);
        close(&b.grad().unwrap().to_vec::<f64>().unwrap(), &[-3.0, -2.0]);
    }
    // dilated, asymmetric strides
    let y = invoke1(
        "Deconvolution",
        &[&x, &w, &b],
        &[
            ("kernel", "(3, 3)".into()),
            ("num_filter", 2.into()),
            ("no_bias", false.into()),
            ("stride", "(1, 2)".into()),
            ("dilate", "(2, 1)".into()),
            ("pad", "(0, 1)".into()),
        ],
    )
    .unwrap();
    assert_eq!(y.shape(), &[1, 2, 7, 5]);
    close(
        &y.to_vec::<f64>().unwrap()[..10],
        &[4.25, -3.25, -2.25, 2.25, -1.25, -0.25, -1.75, 0.75, 3.75, 4.25],
    );
    // 1-D, grouped, no bias (the default)
    let x1 = pattern(16, 3, 1.0, &[1, 4, 4]);
    let w1 = NDArray::from_vec((0..8).map(|i| i as f64 - 3.5).collect::<Vec<_>>(), &[4, 1, 2]).unwrap();
    let y1 = invoke1(
        "Deconvolution",
        &[&x1, &w1],
        &[
            ("kernel", "(2,)".into()),
            ("num_filter", 2.into()),
            ("num_group", 2.into()),
            ("stride", "(2,)".into()),
        ],
    )
    .unwrap();
    close(
        &y1.to_vec::<f64>().unwrap(),
        &[3.5, 2.5, -1.5, -0.5, -2.0, -2.0, 3.5, 2.5, -2.0, -2.0, -0.5, -1.5, 2.5, 3.5, -2.0, -2.0],
    );
}

#[test]
fn is_the_data_gradient_of_convolution() {
    let attrs = |k: &str| -> Vec<(&'static str, AttrValue)> {
        vec![
            ("kernel", k.into()),
            ("stride", "(2, 1)".into()),
            ("pad", "(1, 1)".into()),
            ("dilate", "(1, 2)".into()),
            ("num_filter", 3.into()),
            ("no_bias", true.into()),
        ]
    };
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 4, 7, 6], DType::F64).unwrap();
    let w = NDArray::random_uniform(-1.0, 1.0, &[3, 4, 3, 2], DType::F64).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("Convolution", &[&x, &w], &attrs("(3, 2)")).unwrap()
    };
    let head = NDArray::random_uniform(-1.0, 1.0, y.shape(), DType::F64).unwrap();
    autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
    // the transposed convolution of the head with the same weight, sized back to x
    let mut dattrs = attrs("(3, 2)");
    dattrs[4] = ("num_filter", 4.into());
    dattrs.push(("target_shape", "(7, 6)".into()));
    let dx = invoke1("Deconvolution", &[&head, &w], &dattrs).unwrap();
    assert_eq!(dx.shape(), x.shape());
    compare(
        "Deconvolution",
        "adjoint",
        &dx.to_vec().unwrap(),
        &x.grad().unwrap().to_vec().unwrap(),
        1e-12,
        1e-12,
    )
    .unwrap();
}

#[test]
fn gradients_match_central_differences() {
    let r = |s: &[usize]| NDArray::random_uniform(-1.0, 1.0, s, DType::F64).unwrap();
    OpChecker::new("Deconvolution", &[r(&[2, 2, 3, 2]), r(&[2, 3, 2, 3]), r(&[3])])
        .attr("kernel", "(2, 3)")
        .attr("num_filter", 3)
        .attr("no_bias", false)
        .attr("stride", "(2, 1)")
        .attr("pad", "(1, 0)")
        .attr("adj", "(1, 0)")
        .run()
        .unwrap();
    OpChecker::new("Deconvolution", &[r(&[1, 4, 3]), r(&[4, 1, 3])])
        .attr("kernel", "(3,)")
        .attr("num_filter", 2)
        .attr("num_group", 2)
        .attr("dilate", "(2,)")
        .run()
        .unwrap();
}

#[test]
fn errors() {
    let x = NDArray::zeros(&[1, 2, 3, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let w = NDArray::zeros(&[2, 2, 3, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let err = |extra: &[(&str, AttrValue)]| {
        let mut a: Vec<(&str, AttrValue)> = vec![("kernel", "(3, 3)".into()), ("num_filter", 2.into())];
        a.extend(extra.iter().cloned());
        invoke1("Deconvolution", &[&x, &w], &a).unwrap_err().to_string()
    };
    let e = err(&[("adj", "(2, 2)".into()), ("stride", "(2, 2)".into())]);
    assert!(e.contains("adj"), "{e}");
    let e = err(&[("target_shape", "(20, 20)".into())]);
    assert!(e.contains("target_shape"), "{e}");
    let e = err(&[("num_filter", 3.into())]);
    assert!(e.contains("weight") && e.contains("(2, 2, 3, 3)") && e.contains("(2, 3, 3, 3)"), "{e}");
    let e = err(&[("pad", "(-1, 0)".into())]);
    assert!(e.contains("pad"), "{e}");
}
