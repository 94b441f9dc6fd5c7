//! Tests of the operators in `maths`: values against Rust's `f64` maths,
//! the op checker (central differences, requests, errors) and second
//! derivatives against hand-written ones.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, DType, NDArray, Req};
use std::f64::consts::PI;

fn arr(v: &[f64]) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

const MIXED: [f64; 5] = [-1.9, -0.6, 0.15, 0.8, 2.3];
const UNIT: [f64; 5] = [-0.9, -0.4, 0.1, 0.5, 0.85];
const ABOVE_ONE: [f64; 4] = [1.2, 1.7, 2.5, 4.0];
const POSITIVE: [f64; 4] = [0.3, 0.9, 2.2, 7.5];

/// Values in f64 and f32 against `f`, then the op checker in f64.
fn check(name: &str, xs: &[f64], f: impl Fn(f64) -> f64) {
    let got = invoke1(name, &[&arr(xs)], &[]).unwrap().to_vec::<f64>().unwrap();
    for (g, &x) in got.iter().zip(xs) {
        assert!((g - f(x)).abs() <= 1e-12 * (1.0 + f(x).abs()), "{name}({x}) = {g}, expected {}", f(x));
    }
    let x32 = arr(xs).astype(DType::F32).unwrap();
    let got32 = invoke1(name, &[&x32], &[]).unwrap().to_vec::<f64>().unwrap();
    for (g, &x) in got32.iter().zip(xs) {
        let want = f(x as f32 as f64);
        assert!((g - want).abs() <= 1e-5 * (1.0 + want.abs()), "{name} float32 ({x}) = {g}, expected {want}");
    }
    OpChecker::new(name, &[arr(xs)]).run().unwrap();
}

#[test]
fn trigonometric() {
    check("tan", &MIXED[1..4], f64::tan);
    check("arcsin", &UNIT, f64::asin);
    check("arccos", &UNIT, f64::acos);
    check("arctan", &MIXED, f64::atan);
}

#[test]
fn hyperbolic() {
    check("sinh", &MIXED, f64::sinh);
    check("cosh", &MIXED, f64::cosh);
    check("arcsinh", &MIXED, f64::asinh);
    check("arccosh", &ABOVE_ONE, f64::acosh);
    check("arctanh", &UNIT, f64::atanh);
}

#[test]
fn logarithms_roots_and_angles() {
    check("log2", &POSITIVE, f64::log2);
    check("log10", &POSITIVE, f64::log10);
    check("cbrt", &POSITIVE, f64::cbrt);
    check("rcbrt", &POSITIVE, |x| 1.0 / x.cbrt());
    check("degrees", &MIXED, |x| x * 180.0 / PI);
    check("radians", &MIXED, |x| x * PI / 180.0);
}

/// The second derivative through autograd (`create_graph`) against `f2`.
fn second_order(name: &str, xs: &[f64], f2: impl Fn(f64) -> f64) {
    let x = arr(xs);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1(name, &[&x], &[]).unwrap()
    };
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let dy = {
        let _r = autograd::record();
        autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0)
    };
    dy.backward().unwrap();
    let got = x.grad().unwrap().to_vec::<f64>().unwrap();
    for (g, &v) in got.iter().zip(xs) {
        assert!((g - f2(v)).abs() <= 1e-10 * (1.0 + f2(v).abs()), "{name}''({v}) = {g}, expected {}", f2(v));
    }
}

#[test]
fn second_derivatives() {
    second_order("tan", &MIXED[1..4], |x| 2.0 * x.tan() / x.cos().powi(2));
    second_order("arcsin", &UNIT, |x| x / (1.0 - x * x).powf(1.5));
    second_order("arccos", &UNIT, |x| -x / (1.0 - x * x).powf(1.5));
    second_order("arctan", &MIXED, |x| -2.0 * x / (1.0 + x * x).powi(2));
    second_order("sinh", &MIXED, f64::sinh);
    second_order("cosh", &MIXED, f64::cosh);
    second_order("arcsinh", &MIXED, |x| -x / (x * x + 1.0).powf(1.5));
    second_order("arccosh", &ABOVE_ONE, |x| -x / (x * x - 1.0).powf(1.5));
    second_order("arctanh", &UNIT, |x| 2.0 * x / (1.0 - x * x).powi(2));
    second_order("log2", &POSITIVE, |x| -1.0 / (x * x * std::f64::consts::LN_2));
    second_order("log10", &POSITIVE, |x| -1.0 / (x * x * std::f64::consts::LN_10));
    second_order("cbrt", &POSITIVE, |x| -2.0 / 9.0 * x.powf(-5.0 / 3.0));
    second_order("rcbrt", &POSITIVE, |x| 4.0 / 9.0 * x.powf(-7.0 / 3.0));
}

#[test]
fn integer_inputs_are_errors_naming_the_operator() {
    let ints = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
    let msg = invoke1("arcsinh", &[&ints], &[]).unwrap_err().to_string();
    assert!(msg.contains("arcsinh"), "{msg}");
}
