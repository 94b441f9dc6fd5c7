//! Tests of the rounding operators: values (halves, negatives, NaN and
//! infinities) as MXNet 1.9.1 gives them, integer pass-through, zero
//! gradients and the op checker.

use oxnet_core::autograd;
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke1, DType, NDArray, Req};

const XS: [f64; 11] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1.2, 3.5, 4.5, -3.5];

fn values(name: &str, dtype: DType) -> Vec<f64> {
    let x = NDArray::from_vec(XS.to_vec(), &[XS.len()]).unwrap().astype(dtype).unwrap();
    let y = invoke1(name, &[&x], &[]).unwrap();
    assert_eq!(y.dtype(), dtype);
    y.to_vec::<f64>().unwrap()
}

/// Expected values, computed with MXNet 1.9.1 on `XS`.
fn expected(name: &str) -> [f64; 11] {
    match name {
        "floor" => [-3., -2., -1., 0., 1., 2., -2., 1., 3., 4., -4.],
        "ceil" => [-2., -1., -0., 1., 2., 3., -1., 2., 4., 5., -3.],
        "round" => [-3., -2., -1., 1., 2., 3., -2., 1., 4., 5., -4.],
        "rint" => [-3., -2., -1., 0., 1., 2., -2., 1., 3., 4., -4.],
        "fix" | "trunc" => [-2., -1., -0., 0., 1., 2., -1., 1., 3., 4., -3.],
        _ => unreachable!(),
    }
}

const NAMES: [&str; 6] = ["floor", "ceil", "round", "rint", "fix", "trunc"];

#[test]
fn values_match_mxnet_in_every_float_dtype() {
    for name in NAMES {
        for dt in [DType::F32, DType::F64, DType::F16] {
            assert_eq!(values(name, dt), expected(name), "{name} in {dt}");
        }
    }
}

#[test]
fn nan_and_infinities_stay() {
    let x = NDArray::from_vec(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY], &[3]).unwrap();
    for name in NAMES {
        let y = invoke1(name, &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
        assert!(y[0].is_nan(), "{name}");
        assert_eq!(&y[1..], &[f32::INFINITY, f32::NEG_INFINITY], "{name}");
    }
}

#[test]
fn integers_pass_through_in_their_dtype() {
    let big = NDArray::from_vec(vec![50_000_001i32, -3, 7], &[3]).unwrap();
    let long = NDArray::from_vec(vec![(1i64 << 40) + 1, -5], &[2]).unwrap();
    let bytes = NDArray::from_vec(vec![200u8, 3], &[2]).unwrap();
    for name in NAMES {
        let y = invoke1(name, &[&big], &[]).unwrap();
        assert_eq!(y.dtype(), DType::I32);
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![50_000_001, -3, 7], "{name}");
        assert_eq!(invoke1(name, &[&long], &[]).unwrap().to_vec::<i64>().unwrap(), vec![(1 << 40) + 1, -5]);
        assert_eq!(invoke1(name, &[&bytes], &[]).unwrap().to_vec::<u8>().unwrap(), vec![200, 3]);
    }
}

#[test]
fn gradients_are_zero() {
    for name in NAMES {
        let x = NDArray::from_vec(vec![1.5f32, 2.2, -0.7], &[3]).unwrap();
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke1(name, &[&x], &[]).unwrap()
        };
        y.backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3], "{name}");
        // away from the jumps central differences are zero too
        let xs = NDArray::from_vec(vec![0.3f64, -1.2, 2.7, 5.4], &[4]).unwrap();
        OpChecker::new(name, &[xs]).run().unwrap();
    }
}
