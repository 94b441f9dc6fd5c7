//! Tests of the unary operators: forward values against plain `f64` math
//! written here, gradient checks, dtypes, requests and higher order.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::half::{bf16, f16};
use oxnet_core::{invoke, invoke1, registry, AttrValue, DType, Device, Error, NDArray, Req};

fn arr(v: &[f64]) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn run(name: &str, x: &NDArray, attrs: &[(&str, AttrValue)]) -> Vec<f64> {
    invoke1(name, &[x], attrs).unwrap().to_vec::<f64>().unwrap()
}

fn assert_all_close(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= atol + rtol * w.abs();
        assert!(ok, "{what}: element {i} is {g}, expected {w}");
    }
}

/// erf by its Maclaurin series (independent of the kernels' erf).
fn erf_series(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = x; // (-1)^n x^(2n+1) / n!
    for n in 0..120 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// Checks `name` in float64 and float32 against `f` on `xs`.
fn check_forward(name: &str, xs: &[f64], attrs: &[(&str, AttrValue)], f: impl Fn(f64) -> f64) {
    let want: Vec<f64> = xs.iter().map(|&v| f(v)).collect();
    assert_all_close(&format!("{name} float64"), &run(name, &arr(xs), attrs), &want, 1e-12, 1e-14);
    let x32 = arr(xs).astype(DType::F32).unwrap();
    let want32: Vec<f64> = xs.iter().map(|&v| f(v as f32 as f64)).collect();
    assert_all_close(&format!("{name} float32"), &run(name, &x32, attrs), &want32, 2e-6, 1e-6);
}

/// Forward check plus the full op check on float64 `xs`.
fn check_op(name: &str, xs: &[f64], f: impl Fn(f64) -> f64) {
    check_forward(name, xs, &[], f);
    OpChecker::new(name, &[arr(xs)]).run().unwrap();
}

const MIXED: [f64; 6] = [-2.5, -1.2, -0.3, 0.4, 1.1, 2.7];
const POSITIVE: [f64; 5] = [0.2, 0.7, 1.3, 2.9, 5.5];

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn negative() {
    check_op("negative", &MIXED, |x| -x);
}

#[test]
fn abs() {
    check_op("abs", &MIXED, f64::abs);
}

#[test]
fn sign() {
    check_op("sign", &MIXED, |x| if x > 0.0 { 1.0 } else { -1.0 });
    assert_eq!(run("sign", &arr(&[0.0, -3.0, 2.0]), &[]), vec![0.0, -1.0, 1.0]);
}

#[test]
fn exp() {
    check_op("exp", &MIXED, f64::exp);
}

#[test]
fn log() {
    check_op("log", &POSITIVE, f64::ln);
}

#[test]
fn log1p() {
    check_op("log1p", &[-0.5, -1e-9, 1e-7, 0.3, 4.0], |x| {
        // series for tiny |x|, else ln(1 + x)
        if x.abs() < 1e-6 {
            x - x * x / 2.0 + x * x * x / 3.0
        } else {
            (1.0 + x).ln()
        }
    });
}

#[test]
fn expm1() {
    check_op("expm1", &[-2.0, -1e-8, 1e-7, 0.5, 3.0], |x| {
        if x.abs() < 1e-6 {
            x + x * x / 2.0 + x * x * x / 6.0
        } else {
            x.exp() - 1.0
        }
    });
}

#[test]
fn sqrt() {
    check_op("sqrt", &POSITIVE, f64::sqrt);
}

#[test]
fn rsqrt() {
    check_op("rsqrt", &POSITIVE, |x| 1.0 / x.sqrt());
}

#[test]
fn square() {
    check_op("square", &MIXED, |x| x * x);
}

#[test]
fn reciprocal() {
    check_op("reciprocal", &[-2.0, -0.7, 0.5, 1.5, 4.0], |x| 1.0 / x);
}

#[test]
fn sin() {
    check_op("sin", &MIXED, f64::sin);
}

#[test]
fn cos() {
    check_op("cos", &MIXED, f64::cos);
}

#[test]
fn tanh() {
    check_op("tanh", &MIXED, |x| {
        let (a, b) = (x.exp(), (-x).exp());
        (a - b) / (a + b)
    });
}

#[test]
fn sigmoid_op() {
    check_op("sigmoid", &MIXED, sigmoid);
}

#[test]
fn relu() {
    check_op("relu", &MIXED, |x| if x > 0.0 { x } else { 0.0 });
}

#[test]
fn softrelu() {
    check_op("softrelu", &MIXED, |x| (1.0 + x.exp()).ln());
    check_op("softsign", &MIXED, |x| x / (1.0 + x.abs()));
    assert_eq!(run("logical_not", &arr(&[-2.0, 0.0, 0.5, 0.0]), &[]), vec![0.0, 1.0, 0.0, 1.0]);
    let ints = arr(&[0.0, 3.0]).astype(DType::I32).unwrap();
    let not = invoke1("logical_not", &[&ints], &[]).unwrap();
    assert_eq!((not.dtype(), not.to_vec::<i32>().unwrap()), (DType::I32, vec![1, 0]));
    // hard_sigmoid: 0.2 x + 0.5 clipped to [0, 1] (points away from the kinks at ±2.5)
    check_op("hard_sigmoid", &[-3.4, -2.2, -0.3, 0.4, 2.1, 3.6], |x| (0.2 * x + 0.5).clamp(0.0, 1.0));
    let got = run("hard_sigmoid", &arr(&[-1.0, 0.0, 1.0]), &[("alpha", 0.5.into()), ("beta", 0.25.into())]);
    assert_eq!(got, vec![0.0, 0.25, 0.75]);
    // no overflow for large inputs, no underflow to 0 for very negative ones
    let got = run("softrelu", &arr(&[100.0, -30.0]), &[]);
    assert_all_close("softrelu extremes", &got, &[100.0, (-30.0f64).exp()], 1e-10, 0.0);
    let got32 = run("softrelu", &arr(&[100.0, -30.0]).astype(DType::F32).unwrap(), &[]);
    assert_all_close("softrelu extremes f32", &got32, &[100.0, (-30.0f64).exp()], 1e-6, 0.0);
}

#[test]
fn erf() {
    check_op("erf", &MIXED, erf_series);
}

#[test]
fn gelu() {
    check_op("gelu", &MIXED, |x| 0.5 * x * (1.0 + erf_series(x / 2f64.sqrt())));
}

#[test]
fn clip() {
    let attrs = [("a_min", AttrValue::Float(-1.0)), ("a_max", AttrValue::Float(2.0))];
    check_forward("clip", &MIXED, &attrs, |x| x.clamp(-1.0, 2.0));
    OpChecker::new("clip", &[arr(&MIXED)]).attr("a_min", -1.0).attr("a_max", 2.0).run().unwrap();
    // the bounds are required
    let e = invoke("clip", &[&arr(&MIXED)], &[("a_min", AttrValue::Float(0.0))]).unwrap_err();
    assert!(e.to_string().contains("a_max"), "{e}");
    // int32 with the bounds cast to the dtype
    let xi = NDArray::from_vec(vec![-5i32, 0, 3, 9], &[4]).unwrap();
    let y = invoke1("clip", &[&xi], &[("a_min", AttrValue::Float(-1.0)), ("a_max", AttrValue::Float(4.0))])
        .unwrap();
    assert_eq!(y.dtype(), DType::I32);
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![-1, 0, 3, 4]);
}

#[test]
fn copies_and_constants() {
    let x = arr(&MIXED);
    for name in ["identity", "_copy", "BlockGrad", "stop_gradient"] {
        assert_eq!(run(name, &x, &[]), MIXED.to_vec(), "{name}");
    }
    assert_eq!(run("zeros_like", &x, &[]), vec![0.0; 6]);
    assert_eq!(run("ones_like", &x, &[]), vec![1.0; 6]);
    for name in ["identity", "zeros_like", "ones_like"] {
        OpChecker::new(name, std::slice::from_ref(&x)).run().unwrap();
    }
    // BlockGrad's gradient is zero by definition, not the numeric one
    OpChecker::new("BlockGrad", std::slice::from_ref(&x)).skip_grad().run().unwrap();
    // every dtype
    let xi = NDArray::from_vec(vec![3i64, -4], &[2]).unwrap();
    let z = invoke1("zeros_like", &[&xi], &[]).unwrap();
    assert_eq!((z.dtype(), z.to_vec::<i64>().unwrap()), (DType::I64, vec![0, 0]));
    let b = NDArray::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(invoke1("ones_like", &[&b], &[]).unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
    assert_eq!(invoke1("_copy", &[&b], &[]).unwrap().to_vec::<bool>().unwrap(), vec![true, false]);
}

#[test]
fn identity_and_block_grad_gradients() {
    let x = arr(&[1.0, 2.0]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        let a = invoke1("identity", &[&x], &[]).unwrap();
        let b = invoke1("BlockGrad", &[&x], &[]).unwrap();
        let s = invoke1("elemwise_mul", &[&a, &b], &[]).unwrap();
        invoke1("elemwise_add", &[&s, &a], &[]).unwrap()
    };
    y.backward().unwrap();
    // d/dx (x * stop(x) + x) = stop(x) + 1
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![2.0, 3.0]);
}

#[test]
fn second_derivative_of_sin() {
    let xs = [-1.0, 0.3, 2.0];
    let x = arr(&xs);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("sin", &[&x], &[]).unwrap()
    };
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let dx = autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0);
    let want1: Vec<f64> = xs.iter().map(|v| v.cos()).collect();
    assert_all_close("d sin", &dx.to_vec::<f64>().unwrap(), &want1, 1e-12, 1e-14);
    let d2 = autograd::grad(&[&dx], &[&x], &[], opts).unwrap().remove(0);
    let want2: Vec<f64> = xs.iter().map(|v| -v.sin()).collect();
    assert_all_close("d2 sin", &d2.to_vec::<f64>().unwrap(), &want2, 1e-12, 1e-14);
}

/// Second derivative of `name` at `xs` through autograd, against `f2`.
fn check_second_order(name: &str, xs: &[f64], f2: impl Fn(f64) -> f64) {
    let x = arr(xs);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1(name, &[&x], &[]).unwrap()
    };
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let dx = autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0);
    let d2 = autograd::grad(&[&dx], &[&x], &[], opts).unwrap().remove(0);
    let want: Vec<f64> = xs.iter().map(|&v| f2(v)).collect();
    assert_all_close(
        &format!("second derivative of {name}"),
        &d2.to_vec::<f64>().unwrap(),
        &want,
        1e-9,
        1e-12,
    );
}

#[test]
fn second_derivatives_through_fused_helpers() {
    check_second_order("sigmoid", &MIXED, |x| {
        let s = sigmoid(x);
        s * (1.0 - s) * (1.0 - 2.0 * s)
    });
    check_second_order("tanh", &MIXED, |x| {
        let t = x.tanh();
        -2.0 * t * (1.0 - t * t)
    });
    check_second_order("gelu", &MIXED, |x| {
        let phi = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        phi * (2.0 - x * x)
    });
    check_second_order("relu", &MIXED, |_| 0.0);
    check_second_order("exp", &MIXED, f64::exp);
    check_second_order("log", &POSITIVE, |x| -1.0 / (x * x));
}

#[test]
fn fused_helpers_check() {
    let g = arr(&[0.5, -1.5, 2.0, 0.7]);
    let y = arr(&[0.2, 0.6, 0.9, 0.35]);
    OpChecker::new("_backward_sigmoid", &[g.clone(), y.clone()]).run().unwrap();
    OpChecker::new("_backward_tanh", &[g.clone(), y.clone()]).run().unwrap();
    OpChecker::new("_backward_gelu", &[g.clone(), arr(&[-1.3, -0.2, 0.4, 2.1])]).run().unwrap();
    OpChecker::new("_backward_relu", &[g.clone(), arr(&[-1.0, 0.5, 2.0, -0.1])]).run().unwrap();
    OpChecker::new("_backward_clip", &[g, arr(&[-1.0, 0.5, 2.0, -0.1])])
        .attr("a_min", -0.5)
        .attr("a_max", 1.5)
        .run()
        .unwrap();
}

#[test]
fn sigmoid_float32_and_bfloat16() {
    let xs = [-20.0, -3.0, -0.5, 0.0, 0.25, 4.0, 30.0];
    let x32 = arr(&xs).astype(DType::F32).unwrap();
    x32.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("sigmoid", &[&x32], &[]).unwrap()
    };
    assert_eq!(y.dtype(), DType::F32);
    let want: Vec<f64> = xs.iter().map(|&v| sigmoid(v)).collect();
    assert_all_close("sigmoid f32", &y.to_vec::<f64>().unwrap(), &want, 1e-6, 1e-7);
    y.backward().unwrap();
    let g = x32.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    let dwant: Vec<f64> = want.iter().map(|s| s * (1.0 - s)).collect();
    assert_all_close("sigmoid grad f32", &g.to_vec::<f64>().unwrap(), &dwant, 1e-5, 1e-7);

    let xb = arr(&xs).astype(DType::BF16).unwrap();
    let yb = invoke1("sigmoid", &[&xb], &[]).unwrap();
    assert_eq!(yb.dtype(), DType::BF16);
    let wantb: Vec<f64> = xb.to_vec::<f64>().unwrap().iter().map(|&v| sigmoid(v)).collect();
    assert_all_close("sigmoid bf16", &yb.to_vec::<f64>().unwrap(), &wantb, 8e-3, 1e-6);
    let gb = NDArray::ones(&[xs.len()], DType::BF16, Device::Cpu).unwrap();
    let db = invoke1("_backward_sigmoid", &[&gb, &yb], &[]).unwrap();
    let dwantb: Vec<f64> = yb.to_vec::<f64>().unwrap().iter().map(|s| s * (1.0 - s)).collect();
    assert_all_close("sigmoid grad bf16", &db.to_vec::<f64>().unwrap(), &dwantb, 8e-3, 1e-6);
}

#[test]
fn float16_values() {
    let xs = [-1.5, -0.25, 0.5, 2.0];
    let x = arr(&xs).astype(DType::F16).unwrap();
    for (name, f) in
        [("exp", f64::exp as fn(f64) -> f64), ("tanh", f64::tanh), ("sqrt", |v: f64| v.abs().sqrt())]
    {
        let input = if name == "sqrt" { invoke1("abs", &[&x], &[]).unwrap() } else { x.clone() };
        let y = invoke1(name, &[&input], &[]).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        let want: Vec<f64> = x.to_vec::<f64>().unwrap().iter().map(|&v| f(v)).collect();
        assert_all_close(&format!("{name} f16"), &y.to_vec::<f64>().unwrap(), &want, 1e-3, 1e-4);
    }
}

#[test]
fn integer_dtypes() {
    let x = NDArray::from_vec(vec![-3i32, 0, 5, -7], &[4]).unwrap();
    let get = |name: &str| {
        let y = invoke1(name, &[&x], &[]).unwrap();
        assert_eq!(y.dtype(), DType::I32, "{name}");
        y.to_vec::<i32>().unwrap()
    };
    assert_eq!(get("relu"), vec![0, 0, 5, 0]);
    assert_eq!(get("abs"), vec![3, 0, 5, 7]);
    assert_eq!(get("negative"), vec![3, 0, -5, 7]);
    assert_eq!(get("sign"), vec![-1, 0, 1, -1]);
    assert_eq!(get("square"), vec![9, 0, 25, 49]);
    assert_eq!(get("identity"), vec![-3, 0, 5, -7]);
    let u = NDArray::from_vec(vec![0u8, 7], &[2]).unwrap();
    assert_eq!(invoke1("sign", &[&u], &[]).unwrap().to_vec::<u8>().unwrap(), vec![0, 1]);
    let big = NDArray::from_vec(vec![i64::MAX - 1, i64::MIN + 1], &[2]).unwrap();
    let nb = invoke1("negative", &[&big], &[]).unwrap();
    assert_eq!(nb.as_slice::<i64>().unwrap(), &[i64::MIN + 2, i64::MAX]);
}

#[test]
fn unsupported_dtypes_are_errors() {
    let x = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
    for name in ["exp", "log", "sigmoid", "tanh", "gelu", "sqrt", "erf", "reciprocal"] {
        let e = invoke(name, &[&x], &[]).unwrap_err();
        assert!(matches!(e.root(), Error::DType(_)), "{name}: {e}");
        assert!(e.to_string().contains("int32"), "{name}: {e}");
    }
    let b = NDArray::from_vec(vec![true, false], &[2]).unwrap();
    let e = invoke("relu", &[&b], &[]).unwrap_err();
    assert!(e.to_string().contains("bool"), "{e}");
    // wrong number of inputs
    assert!(invoke("exp", &[&x, &x], &[]).is_err());
}

#[test]
fn requests_inplace_add_null() {
    let xs = [0.5f32, -1.0, 2.0];
    // in place: the output is the input
    let x = NDArray::from_vec(xs.to_vec(), &[3]).unwrap();
    let op = registry::get("exp").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&x), &[Req::Inplace]).unwrap();
    let want: Vec<f64> = xs.iter().map(|&v| (v as f64).exp()).collect();
    assert_all_close("exp inplace", &x.to_vec::<f64>().unwrap(), &want, 1e-6, 0.0);
    // the same for f16 and int
    let h = NDArray::from_vec(vec![f16::from_f32(0.5), f16::from_f32(-1.0)], &[2]).unwrap();
    oxnet_core::invoke_into(&op, &[&h], &attrs, std::slice::from_ref(&h), &[Req::Inplace]).unwrap();
    assert_all_close(
        "exp f16 inplace",
        &h.to_vec::<f64>().unwrap(),
        &[0.5f64.exp(), (-1.0f64).exp()],
        1e-3,
        0.0,
    );
    let relu = registry::get("relu").unwrap();
    let i = NDArray::from_vec(vec![-2i64, 3], &[2]).unwrap();
    oxnet_core::invoke_into(&relu, &[&i], &attrs, std::slice::from_ref(&i), &[Req::Inplace]).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 3]);
    // add accumulates, null leaves the buffer alone
    let x = NDArray::from_vec(xs.to_vec(), &[3]).unwrap();
    let out = NDArray::full(&[3], 1.0, DType::F32, Device::Cpu).unwrap();
    oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    let want: Vec<f64> = xs.iter().map(|&v| (v as f64).exp() + 1.0).collect();
    assert_all_close("exp add", &out.to_vec::<f64>().unwrap(), &want, 1e-6, 0.0);
    oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Null]).unwrap();
    assert_all_close("exp null", &out.to_vec::<f64>().unwrap(), &want, 1e-6, 0.0);
    // a strided input is read correctly
    let m = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let t = m.transpose(None).unwrap();
    assert_eq!(run("square", &t, &[]), vec![1.0, 16.0, 4.0, 25.0, 9.0, 36.0]);
}

#[test]
fn long_arrays_take_the_parallel_paths() {
    let n = 100_003;
    let xs: Vec<f64> = (0..n).map(|i| ((i % 2000) as f64 - 1000.0) / 250.0).collect();
    let x64 = NDArray::from_vec(xs.clone(), &[n]).unwrap();
    let op = registry::get("sigmoid").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    for dt in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let x = x64.astype(dt).unwrap();
        let xv = x.to_vec::<f64>().unwrap();
        let out = NDArray::full(&[n], 0.5, dt, Device::Cpu).unwrap();
        oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
        let got = out.to_vec::<f64>().unwrap();
        let tol = if dt == DType::F16 || dt == DType::BF16 { 1e-2 } else { 1e-6 };
        for j in (0..n).step_by(997).chain([n - 1]) {
            let w = sigmoid(xv[j]) + 0.5;
            assert!((got[j] - w).abs() <= tol * w, "{dt} element {j}: {} vs {w}", got[j]);
        }
        let g = invoke1("_backward_sigmoid", &[&x, &invoke1("sigmoid", &[&x], &[]).unwrap()], &[]).unwrap();
        let gv = g.to_vec::<f64>().unwrap();
        let j = n - 1;
        let s = sigmoid(xv[j]);
        assert!((gv[j] - xv[j] * s * (1.0 - s)).abs() <= 2.0 * tol, "{dt} backward");
    }
    let xi = x64.astype(DType::I32).unwrap();
    let r = invoke1("relu", &[&xi], &[]).unwrap().to_vec::<i32>().unwrap();
    let ri: Vec<i32> = xi.to_vec::<i32>().unwrap().iter().map(|&v| v.max(0)).collect();
    assert_eq!(r, ri);
}

#[test]
fn bf16_inputs_keep_dtype_through_helpers() {
    let x = NDArray::from_vec(vec![bf16::from_f32(-1.0), bf16::from_f32(2.0)], &[2]).unwrap();
    let y = invoke1("clip", &[&x], &[("a_min", AttrValue::Float(0.0)), ("a_max", AttrValue::Float(1.5))])
        .unwrap();
    assert_eq!(y.dtype(), DType::BF16);
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![0.0, 1.5]);
}
