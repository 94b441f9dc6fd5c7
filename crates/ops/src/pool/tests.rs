//! Tests of `Pooling`: values MXNet 1.9.1 computed, a direct 2-D
//! reference, gradients by central differences, errors.

use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn pool(x: &NDArray, attrs: &[(&str, AttrValue)]) -> Vec<f32> {
    invoke1("Pooling", &[x], attrs).unwrap().to_vec::<f32>().unwrap()
}

fn close(got: &[f32], want: &[f32]) {
    let g: Vec<f64> = got.iter().map(|&v| v as f64).collect();
    let w: Vec<f64> = want.iter().map(|&v| v as f64).collect();
    compare("Pooling", "values", &g, &w, 1e-6, 1e-6).unwrap();
}

#[test]
fn values_computed_by_mxnet() {
    let x = arr(&[1., 2., 3., 4., 5.], &[1, 1, 5]);
    let a = |kernel: &str, stride: &str, pad: &str, extra: &[(&'static str, AttrValue)]| {
        let mut v: Vec<(&str, AttrValue)> =
            vec![("kernel", kernel.into()), ("stride", stride.into()), ("pad", pad.into())];
        v.extend(extra.iter().cloned());
        v
    };
    let avg = ("pool_type", AttrValue::from("avg"));
    let full = ("pooling_convention", AttrValue::from("full"));
    let no_pad = ("count_include_pad", AttrValue::from(false));
    close(&pool(&x, &a("(2,)", "(2,)", "(1,)", std::slice::from_ref(&avg))), &[0.5, 2.5, 4.5]);
    close(&pool(&x, &a("(2,)", "(2,)", "(1,)", &[avg.clone(), no_pad.clone()])), &[1., 2.5, 4.5]);
    close(&pool(&x, &a("(2,)", "(2,)", "(1,)", &[avg.clone(), full.clone()])), &[0.5, 2.5, 4.5, 0.]);
    close(&pool(&x, &a("(2,)", "(2,)", "(1,)", &[avg.clone(), full.clone(), no_pad])), &[1., 2.5, 4.5, 0.]);
    close(&pool(&x, &a("(3,)", "(2,)", "(1,)", std::slice::from_ref(&full))), &[2., 4., 5.]);
    close(&pool(&x, &a("(2,)", "(2,)", "(1,)", std::slice::from_ref(&full))), &[1., 3., 5., f32::MIN]);
    let lp = ("pool_type", AttrValue::from("lp"));
    close(
        &pool(&x, &a("(3,)", "(2,)", "(1,)", &[lp.clone(), ("p_value", 2.into()), full])),
        &[2.236068, 5.3851647, 6.4031243],
    );
    close(&pool(&x, &a("(3,)", "(2,)", "(1,)", &[lp.clone(), ("p_value", 1.into())])), &[3., 9., 9.]);
    close(
        &pool(&x, &a("(3,)", "(2,)", "(1,)", &[lp, ("p_value", 3.into())])),
        &[2.0800838, 4.626065, 5.7387934],
    );
    close(&pool(&x, &[("kernel", "(3,)".into()), ("global_pool", true.into()), avg]), &[3.]);
    close(&pool(&x, &[("global_pool", true.into())]), &[5.]);
    let neg = invoke1("negative", &[&x], &[]).unwrap();
    close(&pool(&neg, &a("(3,)", "(2,)", "(1,)", &[])), &[-1., -2., -4.]);
    // p = 3 takes the real cube root, as MXNet: negative sums stay negative
    let lp3 = [("pool_type", AttrValue::from("lp")), ("p_value", 3.into())];
    close(&pool(&neg, &a("(3,)", "(2,)", "(1,)", &lp3)), &[-2.0800838, -4.626065, -5.7387934]);
    // the gradient of a max goes to the first largest element
    let x = arr(&[1., 3., 3., 2.], &[1, 1, 4]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("Pooling", &[&x], &[("kernel", "(3,)".into())]).unwrap()
    };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3., 3.]);
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0., 2., 0., 0.]);
}

/// Direct 2-D pooling with symmetric padding, `valid` convention.
fn reference_2d(
    x: &[f64],
    shape: &[usize],
    k: [usize; 2],
    s: [usize; 2],
    p: [usize; 2],
    kind: &str,
) -> Vec<f64> {
    let (planes, h, w) = (shape[0] * shape[1], shape[2], shape[3]);
    let oh = (h + 2 * p[0] - k[0]) / s[0] + 1;
    let ow = (w + 2 * p[1] - k[1]) / s[1] + 1;
    let mut out = Vec::new();
    for n in 0..planes {
        for i in 0..oh {
            for j in 0..ow {
                let mut vals = Vec::new();
                for a in 0..k[0] {
                    for b in 0..k[1] {
                        let (r, c) = (
                            (i * s[0] + a) as isize - p[0] as isize,
                            (j * s[1] + b) as isize - p[1] as isize,
                        );
                        if r >= 0 && c >= 0 && (r as usize) < h && (c as usize) < w {
                            vals.push(x[(n * h + r as usize) * w + c as usize]);
                        }
                    }
                }
                out.push(match kind {
                    "max" => vals.iter().cloned().fold(f64::MIN, f64::max),
                    "sum" => vals.iter().sum(),
                    _ => vals.iter().sum::<f64>() / (k[0] * k[1]) as f64,
                });
            }
        }
    }
    out
}

#[test]
fn matches_a_direct_2d_reference() {
    let shape = [2, 3, 7, 6];
    let x = NDArray::random_uniform(-1.0, 1.0, &shape, DType::F64).unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    for kind in ["max", "avg", "sum"] {
        for (k, s, p) in [([2, 2], [2, 2], [0, 0]), ([3, 2], [2, 1], [1, 1]), ([3, 3], [1, 1], [1, 0])] {
            let attrs = [
                ("kernel", AttrValue::Ints(k.iter().map(|&v| v as i64).collect())),
                ("stride", AttrValue::Ints(s.iter().map(|&v| v as i64).collect())),
                ("pad", AttrValue::Ints(p.iter().map(|&v| v as i64).collect())),
                ("pool_type", kind.into()),
            ];
            let y = invoke1("Pooling", &[&x], &attrs).unwrap();
            let want = reference_2d(&xv, &shape, k, s, p, kind);
            compare("Pooling", kind, &y.to_vec::<f64>().unwrap(), &want, 1e-12, 1e-12).unwrap();
        }
    }
}

#[test]
fn three_d_and_same_convention_shapes() {
    let x = NDArray::random_uniform(-1.0, 1.0, &[1, 2, 4, 5, 6], DType::F32).unwrap();
    let y =
        invoke1("Pooling", &[&x], &[("kernel", "(2, 2, 3)".into()), ("stride", "(2, 2, 3)".into())]).unwrap();
    assert_eq!(y.shape(), &[1, 2, 2, 2, 2]);
    let g = invoke1("Pooling", &[&x], &[("global_pool", true.into()), ("pool_type", "avg".into())]).unwrap();
    assert_eq!(g.shape(), &[1, 2, 1, 1, 1]);
    let mean: f32 = x.to_vec::<f32>().unwrap()[..120].iter().sum::<f32>() / 120.0;
    assert!((g.to_vec::<f32>().unwrap()[0] - mean).abs() < 1e-5);
    // same: ceil(x / stride) outputs
    let x = arr(&[1., 5., 2., 4., 3.], &[1, 1, 5]);
    let same = [("kernel", "(2,)".into()), ("stride", "(2,)".into()), ("pooling_convention", "same".into())];
    assert_eq!(pool(&x, &same), vec![5., 4., 3.]);
    // as in MXNet, a longer pad or stride is read for the kernel's axes only
    let long = [("kernel", "(2,)".into()), ("stride", "(2, 1, 1)".into()), ("pad", "(0, 0, 0)".into())];
    assert_eq!(pool(&x, &long), vec![5., 4.]);
    let mut bad_same = same.to_vec();
    bad_same.push(("pad", "(1,)".into()));
    assert!(invoke1("Pooling", &[&x], &bad_same).unwrap_err().to_string().contains("pad"));
}

#[test]
fn gradients_match_central_differences() {
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 2, 5, 4], DType::F64).unwrap();
    for (kind, extra) in [
        ("max", vec![]),
        ("avg", vec![]),
        ("avg", vec![("count_include_pad", AttrValue::from(false)), ("pooling_convention", "full".into())]),
        ("sum", vec![]),
    ] {
        let mut c = OpChecker::new("Pooling", std::slice::from_ref(&x))
            .attr("kernel", "(3, 2)")
            .attr("stride", "(2, 1)")
            .attr("pad", "(1, 1)")
            .attr("pool_type", kind);
        for (k, v) in extra {
            c = c.attr(k, v);
        }
        c.run().unwrap();
    }
    let pos = NDArray::random_uniform(0.5, 1.5, &[1, 2, 4, 4, 3], DType::F64).unwrap();
    for p in [1, 2, 3] {
        OpChecker::new("Pooling", std::slice::from_ref(&pos))
            .attr("kernel", "(2, 2, 2)")
            .attr("pool_type", "lp")
            .attr("p_value", p)
            .run()
            .unwrap();
    }
    OpChecker::new("Pooling", &[pos]).attr("global_pool", true).attr("pool_type", "avg").run().unwrap();
}

#[test]
fn errors_name_the_operator_and_attribute() {
    let x = NDArray::zeros(&[1, 1, 5, 5], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let err = |attrs: &[(&str, AttrValue)]| invoke1("Pooling", &[&x], attrs).unwrap_err().to_string();
    let e = err(&[("kernel", "(7, 7)".into())]);
    assert!(e.contains("Pooling") && e.contains("(7, 7)") && e.contains("(1, 1, 5, 5)"), "{e}");
    let e = err(&[("kernel", "(2, 2)".into()), ("pool_type", "median".into())]);
    assert!(e.contains("pool_type") && e.contains("median"), "{e}");
    let e = err(&[("kernel", "(2, 2)".into()), ("pool_type", "lp".into())]);
    assert!(e.contains("p_value"), "{e}");
    let e = err(&[]);
    assert!(e.contains("kernel"), "{e}");
    let e = err(&[("kernel", "(2, 2)".into()), ("pad", "(-1, 0)".into())]);
    assert!(e.contains("pad") && e.contains("-1"), "{e}");
    let e = err(&[("kernel", "(2,)".into())]);
    assert!(e.contains("kernel") && e.contains("(1, 1, 5, 5)"), "{e}");
    let e = err(&[("kernel", "(2, 2)".into()), ("layout", "NWC".into())]);
    assert!(e.contains("Pooling") && e.contains("layout NWC") && e.contains("NCHW or NHWC"), "{e}");
    let e = err(&[("kernel", "(2, 2)".into()), ("layout", "ABC".into())]);
    assert!(e.contains("layout") && e.contains("ABC"), "{e}");
    let flat = NDArray::zeros(&[5, 5], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let e = invoke1("Pooling", &[&flat], &[("kernel", "(2,)".into())]).unwrap_err().to_string();
    assert!(e.contains("(5, 5)"), "{e}");
}
