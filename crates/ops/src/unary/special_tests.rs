//! Tests of `gamma`, `gammaln`, their polygamma helper and `smooth_l1`:
//! values against known closed forms, gradients against central
//! differences, and second derivatives through autograd.

use super::special::{digamma, polygamma};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke, invoke1, DType, NDArray, Req};
use std::f64::consts::PI;

fn arr(v: &[f64]) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

/// Euler's constant.
const EULER: f64 = 0.577_215_664_901_532_9;
/// Apery's constant zeta(3).
const ZETA3: f64 = 1.202_056_903_159_594_3;

fn rel_close(got: f64, want: f64, tol: f64, what: &str) {
    assert!((got - want).abs() <= tol * want.abs().max(1e-300), "{what}: got {got}, expected {want}");
}

#[test]
fn polygamma_closed_forms() {
    rel_close(digamma(1.0), -EULER, 1e-14, "psi(1)");
    rel_close(digamma(0.5), -EULER - 2.0 * 2f64.ln(), 1e-14, "psi(1/2)");
    // psi(n) = H_(n-1) - gamma
    let h: f64 = (1..30).map(|k| 1.0 / k as f64).sum();
    rel_close(digamma(30.0), h - EULER, 1e-14, "psi(30)");
    // reflection: psi(-0.5) = psi(1.5) + pi tan(0)... = psi(0.5) + 2
    rel_close(digamma(-0.5), digamma(0.5) + 2.0, 1e-13, "psi(-1/2)");
    rel_close(digamma(0.01), -100.56088545786867, 1e-12, "psi(0.01)");
    assert!(digamma(0.0).is_nan() && digamma(-3.0).is_nan());
    rel_close(polygamma(1, 1.0), PI * PI / 6.0, 1e-14, "psi1(1)");
    rel_close(polygamma(1, 0.5), PI * PI / 2.0, 1e-14, "psi1(1/2)");
    rel_close(polygamma(2, 1.0), -2.0 * ZETA3, 1e-14, "psi2(1)");
    rel_close(polygamma(3, 1.0), PI.powi(4) / 15.0, 1e-13, "psi3(1)");
    // recurrence across the asymptotic threshold and for negative x
    for n in 1..5u32 {
        for x in [-2.5f64, 0.3, 7.7, 13.2, 40.0] {
            let nf = (1..=n).fold(1.0f64, |a, k| a * k as f64);
            let step = if n % 2 == 0 { -nf } else { nf } / x.powi(n as i32 + 1);
            rel_close(
                polygamma(n, x),
                polygamma(n, x + 1.0) + step,
                // negative arguments lose digits to cancellation
                if x < 0.0 { 1e-9 } else { 1e-12 },
                &format!("psi{n}({x}) recurrence"),
            );
        }
    }
}

#[test]
fn gamma_and_gammaln_values() {
    let xs = [0.5, 1.0, 2.5, 5.0, 0.01, -0.5];
    let want_gamma = [PI.sqrt(), 1.0, 0.75 * PI.sqrt(), 24.0, 99.43258511915060, -2.0 * PI.sqrt()];
    let got = invoke1("gamma", &[&arr(&xs)], &[]).unwrap().to_vec::<f64>().unwrap();
    for ((g, w), x) in got.iter().zip(want_gamma).zip(xs) {
        rel_close(*g, w, 1e-13, &format!("gamma({x})"));
    }
    let got = invoke1("gammaln", &[&arr(&xs)], &[]).unwrap().to_vec::<f64>().unwrap();
    for ((g, w), x) in got.iter().zip(want_gamma).zip(xs) {
        assert!((g - w.abs().ln()).abs() <= 1e-13 * (1.0 + w.abs().ln().abs()), "gammaln({x}) = {g}");
    }
    for dt in [DType::F32, DType::F16] {
        let y = invoke1("gamma", &[&arr(&[0.5, 5.0]).astype(dt).unwrap()], &[]).unwrap();
        assert_eq!(y.dtype(), dt);
        let v = y.to_vec::<f64>().unwrap();
        rel_close(v[0], PI.sqrt(), 2e-3, "gamma f16/f32");
        rel_close(v[1], 24.0, 2e-3, "gamma f16/f32");
    }
    let e = invoke("gamma", &[&NDArray::from_vec(vec![1i32], &[1]).unwrap()], &[]).unwrap_err().to_string();
    assert!(e.contains("gamma") && e.contains("int32"), "{e}");
}

#[test]
fn gradients_against_central_differences() {
    let xs = [0.3, 0.9, 2.2, 4.5, -0.4];
    OpChecker::new("gamma", &[arr(&xs)]).run().unwrap();
    OpChecker::new("gammaln", &[arr(&xs)]).run().unwrap();
    for n in 0..3i64 {
        OpChecker::new("_backward_gammaln", &[arr(&[0.5, -1.5, 2.0, 1.0, 0.7]), arr(&xs)])
            .attr("order", n)
            .run()
            .unwrap_or_else(|e| panic!("order {n}: {e}"));
    }
    let e = invoke("_backward_gammaln", &[&arr(&[1.0]), &arr(&[1.0])], &[("order", (-1i64).into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("order"), "{e}");
}

/// d²/dx² of `name` at `xs` through autograd (`create_graph`).
fn second_derivative(name: &str, xs: &[f64]) -> Vec<f64> {
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
    x.grad().unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn second_order() {
    let xs = [0.7, 1.0, 3.5];
    for (g, &x) in second_derivative("gammaln", &xs).iter().zip(&xs) {
        rel_close(*g, polygamma(1, x), 1e-12, "gammaln''");
    }
    for (g, &x) in second_derivative("gamma", &xs).iter().zip(&xs) {
        let want = libm::tgamma(x) * (digamma(x).powi(2) + polygamma(1, x));
        rel_close(*g, want, 1e-12, "gamma''");
    }
}

#[test]
fn smooth_l1() {
    let xs = [-2.0, -0.3, 0.1, 0.2, 0.9, 1.7];
    let reference = |x: f64, s: f64| {
        if x.abs() < 1.0 / (s * s) {
            0.5 * (s * x).powi(2)
        } else {
            x.abs() - 0.5 / (s * s)
        }
    };
    for s in [1.0, 2.0, 0.5] {
        let got =
            invoke1("smooth_l1", &[&arr(&xs)], &[("scalar", s.into())]).unwrap().to_vec::<f64>().unwrap();
        for (g, &x) in got.iter().zip(&xs) {
            assert!((g - reference(x, s)).abs() < 1e-15, "smooth_l1({x}, {s}) = {g}");
        }
        OpChecker::new("smooth_l1", &[arr(&xs)]).attr("scalar", s).run().unwrap();
    }
    // the default sigma is 1; MXNet's example
    let y = invoke1("smooth_l1", &[&arr(&[1.0, 2.0, 3.0, 4.0])], &[]).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![0.5, 1.5, 2.5, 3.5]);
    let e = invoke("smooth_l1", &[&arr(&[1.0])], &[("scalar", 0.0.into())]).unwrap_err().to_string();
    assert!(e.contains("scalar") && e.contains("smooth_l1"), "{e}");
}

#[test]
fn erfinv_inverts_erf_with_its_gradient() {
    // known values: erfinv(0.5) = 0.4769362762044699 (Abramowitz-Stegun),
    // and erf(erfinv(y)) = y across the range, the tails included
    rel_close(super::special::erfinv(0.5), 0.476_936_276_204_469_9, 1e-14, "erfinv(0.5)");
    for y in [-0.999_999_999, -0.9, -0.3, 1e-12, 0.25, 0.7, 0.99, 0.999_999] {
        let x = super::special::erfinv(y);
        rel_close(libm::erf(x), y, 1e-14, &format!("erf(erfinv({y}))"));
    }
    let y = invoke1("erfinv", &[&arr(&[-1.0, 1.0, 1.5, 0.0])], &[]).unwrap().to_vec::<f64>().unwrap();
    assert!(y[0] == f64::NEG_INFINITY && y[1] == f64::INFINITY && y[2].is_nan() && y[3] == 0.0, "{y:?}");
    let f = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    assert_eq!(invoke1("erfinv", &[&f], &[]).unwrap().to_vec::<f32>().unwrap(), vec![0.476_936_28f32]);
    OpChecker::new("erfinv", &[arr(&[-0.8, -0.2, 0.1, 0.6])]).run().unwrap();
}
