//! Tests of `nansum`, `nanprod` and `argmax_channel` against MXNet 1.9.1's
//! values.

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, AttrValue, NDArray, Req};

const N: f32 = f32::NAN;

fn with_nans() -> NDArray {
    NDArray::from_vec(vec![1.0f32, N, 3., N, N, 2.], &[2, 3]).unwrap()
}

#[test]
fn nan_reductions_skip_nan_and_their_gradients_skip_it_too() {
    let x = with_nans();
    for (op, want, grad) in [
        ("nansum", vec![4.0f32, 2.], vec![2.0f32, 0., 2., 0., 0., 5.]),
        ("nanprod", vec![3.0f32, 2.], vec![6.0f32, 0., 2., 0., 0., 5.]),
    ] {
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke1(op, &[&x], &[("axis", AttrValue::Int(1))]).unwrap()
        };
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "{op}");
        let og = NDArray::from_vec(vec![2.0f32, 5.], &[2]).unwrap();
        autograd::backward(&[&y], &[Some(&og)], Default::default()).unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), grad, "{op} gradient");
    }
    assert_eq!(invoke1("nansum", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(), vec![6.]);
    let p = invoke1("nanprod", &[&x], &[("axis", AttrValue::Int(0)), ("keepdims", true.into())]).unwrap();
    assert_eq!((p.shape(), p.to_vec::<f32>().unwrap()), (&[1usize, 3][..], vec![1., 1., 6.]));
    let r = NDArray::from_vec(vec![0.5f64, -1.2, 2.0, 0.7, 1.5, -0.3], &[2, 3]).unwrap();
    OpChecker::new("nansum", std::slice::from_ref(&r)).attr("axis", 0i64).run().unwrap();
    OpChecker::new("nanprod", &[r]).attr("axis", 1i64).run().unwrap();
}

#[test]
fn argmax_channel_is_argmax_over_the_last_axis() {
    let x = NDArray::from_vec(vec![0.0f32, 1., 2., 5., 4., 3.], &[2, 3]).unwrap();
    let y = invoke1("argmax_channel", &[&x], &[]).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[2usize][..], vec![2., 0.]));
}
