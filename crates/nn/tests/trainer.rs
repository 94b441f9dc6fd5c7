//! The Trainer: updates against hand-computed SGD steps, multipliers,
//! stale gradients, learning rate.

use oxnet_core::{autograd, invoke1, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Constant;
use oxnet_nn::layers::Dense;
use oxnet_nn::optim;
use oxnet_nn::parameter::{shared_init, GradReq, Parameter};
use oxnet_nn::trainer::Trainer;

fn close(got: &NDArray, want: &[f64], tol: f64) {
    let got = got.to_vec::<f64>().unwrap();
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

/// loss = Σ (w·x)² over the weights, so ∂loss/∂w = 2·w·x².
fn backward_square(params: &[&Parameter], x: f64) {
    let loss = {
        let _r = autograd::record();
        let mut terms = Vec::new();
        for p in params {
            let wx = invoke1("_mul_scalar", &[&p.data().unwrap()], &[("scalar", x.into())]).unwrap();
            terms.push(invoke1("sum", &[&invoke1("square", &[&wx], &[]).unwrap()], &[]).unwrap());
        }
        let refs: Vec<&NDArray> = terms.iter().collect();
        invoke1("add_n", &refs, &[("num_args", (refs.len() as i64).into())]).unwrap()
    };
    loss.backward().unwrap();
}

#[test]
fn sgd_step_matches_a_hand_computed_update() {
    let w = Parameter::new("w_weight", &[2]);
    w.initialize(&shared_init(Constant::new(1.0))).unwrap();
    w.set_data(&NDArray::from_vec(vec![1.0f32, -2.0], &[2]).unwrap()).unwrap();
    let mut trainer =
        Trainer::from_name([&w], "sgd", &[("learning_rate", "0.1"), ("momentum", "0.5"), ("wd", "0.01")])
            .unwrap();
    assert!((trainer.learning_rate().unwrap() - 0.1).abs() < 1e-12);
    // MXNet's sgd_mom: g = rescale·grad + wd·w; mom = momentum·mom - lr·g; w += mom
    let (lr, momentum, wd, batch) = (0.1, 0.5, 0.01, 4.0);
    let mut want = [1.0f64, -2.0];
    let mut mom = [0.0f64; 2];
    for _ in 0..3 {
        backward_square(&[&w], 2.0);
        trainer.step(4).unwrap();
        for k in 0..2 {
            let g = 2.0 * want[k] * 4.0 / batch + wd * want[k];
            mom[k] = momentum * mom[k] - lr * g;
            want[k] += mom[k];
        }
        close(&w.data().unwrap(), &want, 1e-5);
    }
    trainer.set_learning_rate(0.05).unwrap();
    assert!((trainer.learning_rate().unwrap() - 0.05).abs() < 1e-12);
}

#[test]
fn lr_mult_scales_each_parameters_step_and_null_is_skipped() {
    let a = Parameter::new("a_weight", &[1]).with_lr_mult(0.5);
    let b = Parameter::new("b_weight", &[1]);
    let frozen = Parameter::new("c_weight", &[1]).with_grad_req(GradReq::Null);
    for p in [&a, &b, &frozen] {
        p.initialize(&shared_init(Constant::new(1.0))).unwrap();
    }
    let mut trainer =
        Trainer::new([&a, &b, &frozen], optim::create("sgd", &[("learning_rate", "1.0")]).unwrap()).unwrap();
    backward_square(&[&a, &b], 1.0);
    trainer.step(1).unwrap();
    // grad 2; a: 1 - 0.5·2 = 0; b: 1 - 2 = -1; c untouched
    close(&a.data().unwrap(), &[0.0], 1e-6);
    close(&b.data().unwrap(), &[-1.0], 1e-6);
    close(&frozen.data().unwrap(), &[1.0], 0.0);
}

#[test]
fn a_stale_gradient_is_an_error_naming_the_parameter_and_nothing_changes() {
    let used = Parameter::new("used_weight", &[1]);
    let unused = Parameter::new("unused_weight", &[1]);
    for p in [&used, &unused] {
        p.initialize(&shared_init(Constant::new(1.0))).unwrap();
    }
    let mut trainer = Trainer::from_name([&used, &unused], "sgd", &[("learning_rate", "1.0")]).unwrap();
    backward_square(&[&used], 1.0);
    let err = trainer.step(1).unwrap_err().to_string();
    assert!(err.contains("`unused_weight`") && err.contains("stale"), "{err}");
    close(&used.data().unwrap(), &[1.0], 0.0);
    // skipping stale parameters updates the others
    trainer.step_ignore_stale(1).unwrap();
    close(&used.data().unwrap(), &[-1.0], 1e-6);
    close(&unused.data().unwrap(), &[1.0], 0.0);
    // after a step every gradient is stale again
    let err = trainer.step_ignore_stale(1).and_then(|_| trainer.step(1)).unwrap_err().to_string();
    assert!(err.contains("used_weight"), "{err}");
}

#[test]
fn trainer_errors() {
    let p = Parameter::new("p", &[1]);
    assert!(Trainer::from_name([&p, &p], "sgd", &[("learning_rate", "1")])
        .unwrap_err()
        .to_string()
        .contains("twice"));
    assert!(Trainer::from_name([&p], "sgdx", &[] as &[(&str, &str)])
        .unwrap_err()
        .to_string()
        .contains("sgdx"));
    let dense = Dense::new(2);
    dense.initialize(&shared_init(Constant::new(1.0))).unwrap();
    let params = dense.collect_params().unwrap();
    let mut trainer = Trainer::from_name(&params, "adam", &[("learning_rate", "0.01")]).unwrap();
    // deferred parameters are not initialised yet: the error names them
    let err = trainer.step(1).unwrap_err().to_string();
    assert!(err.contains(&format!("{}weight", dense.prefix())), "{err}");
    assert!(trainer.step(0).is_err());
}

#[test]
fn trainer_states_save_and_load() {
    let w = Parameter::new("m_weight", &[2]);
    w.initialize(&shared_init(Constant::new(1.0))).unwrap();
    let mut trainer =
        Trainer::from_name([&w], "sgd", &[("learning_rate", "0.1"), ("momentum", "0.9")]).unwrap();
    backward_square(&[&w], 1.0);
    trainer.step(1).unwrap();
    let dir = std::env::temp_dir().join(format!("oxnet_nn_trainer_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sgd.states");
    trainer.save_states(&path).unwrap();
    let after_one = w.data().unwrap().copy().unwrap();
    backward_square(&[&w], 1.0);
    trainer.step(1).unwrap();
    let after_two = w.data().unwrap().to_vec::<f32>().unwrap();

    // a new trainer with the saved momentum repeats the second step exactly
    w.set_data(&after_one).unwrap();
    let mut again =
        Trainer::from_name([&w], "sgd", &[("learning_rate", "0.1"), ("momentum", "0.9")]).unwrap();
    again.load_states(&path).unwrap();
    backward_square(&[&w], 1.0);
    again.step(1).unwrap();
    assert_eq!(w.data().unwrap().to_vec::<f32>().unwrap(), after_two);

    let bad = dir.join("bad.states");
    std::fs::write(&bad, b"not states").unwrap();
    let err = again.load_states(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.states"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
