//! Tests of `mod` and `hypot` in their three forms (broadcast, same shape,
//! scalar): values against Python's `%` and `f64::hypot`, integer
//! remainders, and gradients against central differences.

use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, DType, NDArray};

fn arr(v: Vec<f64>, shape: &[usize]) -> NDArray {
    NDArray::from_vec(v, shape).unwrap()
}

/// Python's `%` on floats, written independently: `a - floor(a / b) * b`.
fn py_mod(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a - (a / b).floor() * b
    }
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: element {i} is {g}, expected {w}");
    }
}

#[test]
fn mod_takes_the_divisors_sign() {
    let a = vec![-5.0, 5.0, -5.0, 5.0, 5.5, -5.5, 3.0, 7.25];
    let b = vec![3.0, -3.0, -3.0, 3.0, 2.0, 2.0, 0.0, 0.5];
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| py_mod(*x, *y)).collect();
    assert_eq!(&want[..4], &[1.0, -1.0, -2.0, 2.0]);
    for name in ["broadcast_mod", "_mod", "_Mod"] {
        for dt in [DType::F64, DType::F32, DType::F16] {
            let x = arr(a.clone(), &[8]).astype(dt).unwrap();
            let y = arr(b.clone(), &[8]).astype(dt).unwrap();
            let out = invoke1(name, &[&x, &y], &[]).unwrap();
            assert_eq!(out.dtype(), dt);
            close(&out.to_vec::<f64>().unwrap(), &want, 1e-6, name);
        }
    }
    // broadcasting a row of divisors
    let x = arr(vec![-4.0, -1.0, 2.0, 7.0, 8.5, -9.5], &[2, 3]);
    let y = arr(vec![3.0, -2.0, 2.5], &[3]);
    let out = invoke1("broadcast_mod", &[&x, &y], &[]).unwrap();
    close(&out.to_vec::<f64>().unwrap(), &[2.0, -1.0, 2.0, 1.0, -1.5, 0.5], 1e-12, "broadcast_mod");
    // scalar forms: x % s and s % x
    let x = arr(vec![-5.0, 5.0, 2.5, -0.5], &[4]);
    let fwd = invoke1("_mod_scalar", &[&x], &[("scalar", (-3.0).into())]).unwrap();
    close(&fwd.to_vec::<f64>().unwrap(), &[-2.0, -1.0, -0.5, -0.5], 1e-12, "_mod_scalar");
    let rev = invoke1("_rmod_scalar", &[&x], &[("scalar", 7.0.into())]).unwrap();
    close(&rev.to_vec::<f64>().unwrap(), &[-3.0, 2.0, 2.0, 0.0], 1e-12, "_rmod_scalar");
}

#[test]
fn integer_mod() {
    let a = NDArray::from_vec(vec![-5i32, 5, -5, 5, 7, i32::MIN], &[6]).unwrap();
    let b = NDArray::from_vec(vec![3i32, -3, -3, 3, 0, -1], &[6]).unwrap();
    let out = invoke1("broadcast_mod", &[&a, &b], &[]).unwrap();
    assert_eq!(out.dtype(), DType::I32);
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![1, -1, -2, 2, 0, 0]);
    let u = NDArray::from_vec(vec![7u8, 200], &[2]).unwrap();
    let r = invoke1("_mod_scalar", &[&u], &[("scalar", 3.0.into())]).unwrap();
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![1, 2]);
    let l = NDArray::from_vec(vec![-7i64, 9], &[2]).unwrap();
    let r = invoke1("_rmod_scalar", &[&l], &[("scalar", 10.0.into())]).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![-4, 1]);
}

#[test]
fn mod_gradients() {
    // away from the jumps of floor(a / b)
    let a = arr(vec![2.3, -1.7, 4.6, 0.8, -3.1, 5.2], &[2, 3]);
    let b = arr(vec![0.9, 1.3, -1.1], &[3]);
    OpChecker::new("broadcast_mod", &[a.clone(), b]).run().unwrap();
    let b2 = arr(vec![0.9, 1.3, -1.1, 0.7, -0.65, 1.9], &[2, 3]);
    OpChecker::new("_mod", &[a.clone(), b2]).run().unwrap();
    OpChecker::new("_mod_scalar", std::slice::from_ref(&a)).attr("scalar", 1.4).run().unwrap();
    let x = arr(vec![0.7, 1.9, -1.3, 2.9, -0.45, 3.3], &[2, 3]);
    OpChecker::new("_rmod_scalar", &[x]).attr("scalar", 2.5).run().unwrap();
}

#[test]
fn integer_remainders_have_a_zero_gradient() {
    // MXNet 1.9.1: int32 and int64 remainders pass no gradient to either side
    let a = NDArray::from_vec(vec![7i32, 9], &[2, 1]).unwrap();
    let b = NDArray::from_vec(vec![2i32, 4], &[1, 2]).unwrap();
    for x in [&a, &b] {
        x.attach_grad(oxnet_core::Req::Write).unwrap();
    }
    let y = {
        let _r = oxnet_core::autograd::record();
        invoke1("broadcast_mod", &[&a, &b], &[]).unwrap()
    };
    let head = NDArray::from_vec(vec![3i32, 5, 4, 6], &[2, 2]).unwrap();
    oxnet_core::autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
    assert_eq!(b.grad().unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
    let s = {
        let _r = oxnet_core::autograd::record();
        invoke1("_mod_scalar", &[&b], &[("scalar", 3.0.into())]).unwrap()
    };
    oxnet_core::autograd::backward(&[&s], &[None], Default::default()).unwrap();
    assert_eq!(b.grad().unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
}

#[test]
fn hypot_values_and_gradients() {
    let a: Vec<f64> = vec![3.0, -5.0, 0.0, 1e200, -2.5, 0.3];
    let b: Vec<f64> = vec![4.0, 12.0, -2.0, 1e200, 0.0, -0.4];
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x.hypot(*y)).collect();
    assert_eq!(&want[..3], &[5.0, 13.0, 2.0]);
    assert!(want[3].is_finite());
    for name in ["broadcast_hypot", "_hypot", "_Hypot"] {
        let out = invoke1(name, &[&arr(a.clone(), &[6]), &arr(b.clone(), &[6])], &[]).unwrap();
        close(&out.to_vec::<f64>().unwrap(), &want, 1e-15, name);
    }
    let f32 = invoke1(
        "_hypot",
        &[
            &arr(vec![3.0, 0.5], &[2]).astype(DType::F32).unwrap(),
            &arr(vec![4.0, 1.2], &[2]).astype(DType::F32).unwrap(),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(f32.dtype(), DType::F32);
    close(&f32.to_vec::<f64>().unwrap(), &[5.0, 1.3], 1e-6, "_hypot f32");
    let i = NDArray::from_vec(vec![3i32, 6], &[2]).unwrap();
    let j = NDArray::from_vec(vec![4i32, 8], &[2]).unwrap();
    assert_eq!(invoke1("_hypot", &[&i, &j], &[]).unwrap().to_vec::<i32>().unwrap(), vec![5, 10]);
    let s = invoke1("_hypot_scalar", &[&arr(vec![4.0, -12.0], &[2])], &[("scalar", 3.0.into())]).unwrap();
    close(&s.to_vec::<f64>().unwrap(), &[5.0, 12.369316876852981], 1e-15, "_hypot_scalar");

    let x = arr(vec![0.7, -1.9, 1.3, 2.9, -0.45, 3.3], &[2, 3]);
    let y = arr(vec![-1.1, 0.6, 2.2], &[1, 3]);
    OpChecker::new("broadcast_hypot", &[x.clone(), y]).run().unwrap();
    let y2 = arr(vec![-1.1, 0.6, 2.2, 0.35, -1.6, 0.8], &[2, 3]);
    OpChecker::new("_hypot", &[x.clone(), y2]).run().unwrap();
    OpChecker::new("_hypot_scalar", &[x]).attr("scalar", -1.5).run().unwrap();
}

#[test]
fn logical_and_or_xor() {
    let a = arr(vec![0.0, 1.0, 2.0, -1.0, 0.0, f64::NAN], &[6]);
    let b = arr(vec![0.0, 0.0, 3.0, 1.0, -2.0, 0.0], &[6]);
    for (names, want) in [
        (["broadcast_logical_and", "_logical_and", "_Logical_And"], [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
        (["broadcast_logical_or", "_logical_or", "_Logical_Or"], [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        (["broadcast_logical_xor", "_logical_xor", "_Logical_Xor"], [0.0, 1.0, 0.0, 0.0, 1.0, 1.0]),
    ] {
        for name in names {
            let out = invoke1(name, &[&a, &b], &[]).unwrap();
            assert_eq!(out.to_vec::<f64>().unwrap(), want, "{name}");
        }
    }
    let x = NDArray::from_vec(vec![0i32, 3, -2], &[3]).unwrap();
    for (name, s, want) in [
        ("_logical_and_scalar", 1.0, [0, 1, 1]),
        ("_logical_or_scalar", 0.0, [0, 1, 1]),
        ("_logical_xor_scalar", 1.0, [1, 0, 0]),
    ] {
        let out = invoke1(name, &[&x], &[("scalar", s.into())]).unwrap();
        assert_eq!(out.to_vec::<i32>().unwrap(), want, "{name}");
    }
    // broadcast, with a zero gradient
    let p = arr(vec![0.5, -1.5, 0.0, 2.0, 1.0, 0.0], &[2, 3]);
    let q = arr(vec![1.0, 0.0, 2.0], &[3]);
    let out = invoke1("broadcast_logical_and", &[&p, &q], &[]).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    OpChecker::new("broadcast_logical_xor", &[p, q]).run().unwrap();
}
