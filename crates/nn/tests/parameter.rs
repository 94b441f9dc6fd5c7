//! Parameters: deferred initialisation, shapes, gradients, errors.

use oxnet_core::{autograd, invoke1, DType, NDArray};
use oxnet_nn::init::{Constant, One, Zero};
use oxnet_nn::parameter::{merge_shapes, shared_init, GradReq, Parameter};
use std::sync::Arc;

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

#[test]
fn deferred_initialization_waits_for_the_shape() {
    let p = Parameter::new("dense0_weight", &[2, 0]).allow_deferred_init(true);
    let err = p.data().unwrap_err().to_string();
    assert!(err.contains("dense0_weight") && err.contains("not been initialized"), "{err}");
    p.initialize(&shared_init(Constant::new(2.0))).unwrap();
    assert!(p.is_deferred() && !p.is_initialized());
    let err = p.data().unwrap_err().to_string();
    assert!(err.contains("dense0_weight") && err.contains("deferred") && err.contains("(2, ?)"), "{err}");
    assert!(p.grad().unwrap_err().to_string().contains("deferred"));
    p.set_shape(&[2, 3]).unwrap();
    assert_eq!(values(&p.data().unwrap()), vec![2.0; 6]);
    assert!(p.is_initialized() && !p.is_deferred());
    assert_eq!(values(&p.grad().unwrap()), vec![0.0; 6]);
}

#[test]
fn an_unknown_shape_without_deferral_is_an_error_naming_the_parameter() {
    let p = Parameter::new("w", &[0, 3]);
    let err = p.initialize(&shared_init(One)).unwrap_err().to_string();
    assert!(err.contains("`w`") && err.contains("(?, 3)"), "{err}");
    assert!(!p.is_deferred());
}

#[test]
fn shapes_merge_and_conflicts_name_the_parameter() {
    assert_eq!(merge_shapes(&[0, 3], &[5, 3], "x").unwrap(), vec![5, 3]);
    assert_eq!(merge_shapes(&[], &[4], "x").unwrap(), vec![4]);
    let p = Parameter::new("fc_weight", &[4, 0]).allow_deferred_init(true);
    let err = p.set_shape(&[5, 2]).unwrap_err().to_string();
    assert!(err.contains("fc_weight") && err.contains("(4, ?)") && err.contains("(5, 2)"), "{err}");
    assert!(p.set_shape(&[4, 2, 1]).is_err());
    p.set_shape(&[4, 2]).unwrap();
    assert_eq!(p.shape(), vec![4, 2]);
    p.initialize(&shared_init(Zero)).unwrap();
    // initialised data cannot change shape
    assert!(p.set_shape(&[4, 2]).is_ok());
    assert!(p.set_data(&NDArray::zeros(&[4, 3], DType::F32, Default::default()).unwrap()).is_err());
}

#[test]
fn own_initializer_wins_over_the_default_and_initialize_twice_keeps_the_data() {
    let p = Parameter::new("b", &[3]).with_init(shared_init(Constant::new(7.0)));
    p.initialize(&shared_init(One)).unwrap();
    assert_eq!(values(&p.data().unwrap()), vec![7.0; 3]);
    p.set_data(&NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap()).unwrap();
    p.initialize(&shared_init(One)).unwrap();
    assert_eq!(values(&p.data().unwrap()), vec![1.0, 2.0, 3.0]);
    p.reinitialize(&shared_init(One)).unwrap();
    assert_eq!(values(&p.data().unwrap()), vec![7.0; 3]);
}

#[test]
fn set_data_before_deferred_initialization_gives_the_values() {
    let p = Parameter::new("w", &[0]).allow_deferred_init(true);
    assert!(p.set_data(&NDArray::from_vec(vec![1.0f32], &[1]).unwrap()).is_err(), "not initialised yet");
    p.initialize(&shared_init(One)).unwrap();
    p.set_data(&NDArray::from_vec(vec![4.0f32, 5.0], &[2]).unwrap()).unwrap();
    assert_eq!(values(&p.data().unwrap()), vec![4.0, 5.0]);
}

#[test]
fn gradients_reach_the_parameter_with_write_and_add() {
    let p = Parameter::new("w", &[3]);
    p.initialize(&shared_init(Constant::new(2.0))).unwrap();
    let run = || {
        let y = {
            let _r = autograd::record();
            invoke1("square", &[&p.data().unwrap()], &[]).unwrap()
        };
        y.backward().unwrap();
    };
    run();
    assert_eq!(values(&p.grad().unwrap()), vec![4.0; 3]);
    run();
    assert_eq!(values(&p.grad().unwrap()), vec![4.0; 3], "write overwrites");
    p.set_grad_req(GradReq::Add).unwrap();
    run();
    run();
    assert_eq!(values(&p.grad().unwrap()), vec![8.0; 3], "add accumulates");
    p.zero_grad().unwrap();
    assert_eq!(values(&p.grad().unwrap()), vec![0.0; 3]);
    p.set_grad_req(GradReq::Null).unwrap();
    let err = p.grad().unwrap_err().to_string();
    assert!(err.contains("`w`") && err.contains("null"), "{err}");
}

#[test]
fn constants_have_no_gradient_and_keep_their_value() {
    let c = Parameter::constant("const0", &NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()).unwrap();
    c.initialize(&shared_init(Zero)).unwrap();
    assert_eq!(values(&c.data().unwrap()), vec![1.0, 2.0]);
    assert_eq!(c.grad_req(), GradReq::Null);
    c.set_grad_req(GradReq::Write).unwrap();
    assert_eq!(c.grad_req(), GradReq::Null);
    assert!(!c.differentiable());
}

#[test]
fn grad_req_parses_mxnet_names() {
    assert_eq!("add".parse::<GradReq>().unwrap(), GradReq::Add);
    assert!("sometimes".parse::<GradReq>().unwrap_err().to_string().contains("write, add, null"));
}

#[test]
fn cast_changes_data_and_gradient_dtype() {
    let p = Parameter::new("w", &[2]).with_lr_mult(0.5).with_wd_mult(0.0);
    p.initialize(&shared_init(One)).unwrap();
    p.cast(DType::F64).unwrap();
    assert_eq!(p.data().unwrap().dtype(), DType::F64);
    assert_eq!(p.grad().unwrap().dtype(), DType::F64);
    assert_eq!((p.lr_mult(), p.wd_mult()), (0.5, 0.0));
}

#[test]
fn on_initialized_runs_once_with_the_values_of_a_deferred_initialisation() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let p = Parameter::new("late_weight", &[2, 0]).allow_deferred_init(true);
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    p.on_initialized(Arc::new(move |values: &NDArray| {
        assert_eq!(values.shape(), &[2, 3]);
        values.fill(7.0)?; // the hook may change the values (a broadcast does)
        count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }));
    p.initialize(&shared_init(Constant::new(1.0))).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 0, "the shape is not known yet");
    p.set_shape(&[2, 3]).unwrap();
    assert_eq!(p.data().unwrap().to_vec::<f32>().unwrap(), vec![7.0; 6]);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    p.reinitialize(&shared_init(Constant::new(1.0))).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1, "run once");
    assert_eq!(p.data().unwrap().to_vec::<f32>().unwrap(), vec![1.0; 6]);
}
