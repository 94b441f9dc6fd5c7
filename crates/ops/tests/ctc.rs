//! `CTCLoss`: hand-computed values, gradients against central differences,
//! lengths, both blank positions, and errors. (MXNet-computed values are
//! checked in crates/nn/tests/ctc_mxnet.rs.)

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};
use oxnet_ops as _; // the built-in operators these tests call

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn softmax(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

#[test]
fn hand_computed_paths() {
    // T = 2, one example, alphabet {blank, a, b}; label "a": the paths
    // (a, -), (-, a), (a, a) emit it
    let x = [0.3, -0.2, 0.5, 1.0, 0.1, -0.4];
    let data = arr(&x, &[2, 1, 3]);
    let label = arr(&[1.0, 0.0], &[1, 2]); // padded with 0 (blank first)
    let (y0, y1) = (softmax(&x[..3]), softmax(&x[3..]));
    let p = y0[1] * y1[0] + y0[0] * y1[1] + y0[1] * y1[1];
    let loss = invoke1("CTCLoss", &[&data, &label], &[]).unwrap();
    assert_eq!(loss.shape(), &[1]);
    assert!((loss.to_vec::<f64>().unwrap()[0] + p.ln()).abs() < 1e-12);

    // the same with the blank last: classes shift down by one
    let x_last = [-0.2, 0.5, 0.3, 0.1, -0.4, 1.0];
    let data = arr(&x_last, &[2, 1, 3]);
    let label = arr(&[0.0, -1.0], &[1, 2]);
    let loss = invoke1("ctc_loss", &[&data, &label], &[("blank_label", "last".into())]).unwrap();
    assert!((loss.to_vec::<f64>().unwrap()[0] + p.ln()).abs() < 1e-12);

    // label "aa" in T = 3 has one path, (a, -, a)
    let x3 = [0.2, 0.7, -0.1, 0.4, 0.0, 0.3, -0.5, 0.6, 0.1];
    let data = arr(&x3, &[3, 1, 3]);
    let label = arr(&[1.0, 1.0], &[1, 2]);
    let p = softmax(&x3[..3])[1] * softmax(&x3[3..6])[0] * softmax(&x3[6..])[1];
    let loss = invoke1("CTCLoss", &[&data, &label], &[]).unwrap().to_vec::<f64>().unwrap();
    assert!((loss[0] + p.ln()).abs() < 1e-12);
}

#[test]
fn an_empty_label_is_all_blanks() {
    let x = [0.3, -0.2, 1.0, 0.1];
    let data = arr(&x, &[2, 1, 2]);
    let label = arr(&[0.0, 0.0], &[1, 2]);
    let p = softmax(&x[..2])[0] * softmax(&x[2..])[0];
    let loss = invoke1("CTCLoss", &[&data, &label], &[]).unwrap().to_vec::<f64>().unwrap();
    assert!((loss[0] + p.ln()).abs() < 1e-12);
}

fn check_gradients(attrs: &[(&str, AttrValue)], label: NDArray, lengths: Vec<NDArray>, shape: [usize; 3]) {
    let data = NDArray::random_uniform(-1.5, 1.5, &shape, DType::F64).unwrap();
    let mut inputs = vec![data, label];
    inputs.extend(lengths);
    let no_grad: Vec<usize> = (1..inputs.len()).collect();
    let mut checker = OpChecker::new("CTCLoss", &inputs).no_grad(&no_grad);
    for (k, v) in attrs {
        checker = checker.attr(k, v.clone());
    }
    let report = checker.run().unwrap();
    assert!(report.max_grad_error < 1e-6, "{}", report.max_grad_error);
}

#[test]
fn gradients_match_central_differences() {
    // blank first, labels padded with 0; repeats need a blank between them
    check_gradients(&[], arr(&[1., 2., 2., 0., 3., 1., 0., 0.], &[2, 4]), vec![], [7, 2, 4]);
    // blank last, padded with -1
    check_gradients(
        &[("blank_label", "last".into())],
        arr(&[0., 1., -1., 2., 2., 0.], &[2, 3]),
        vec![],
        [6, 2, 4],
    );
    // explicit lengths: the second example is 4 steps long, with 1 label
    check_gradients(
        &[("use_data_lengths", true.into()), ("use_label_lengths", true.into())],
        arr(&[1., 3., 2., 2., 2., 2.], &[2, 3]),
        vec![arr(&[6., 4.], &[2]), arr(&[3., 1.], &[2])],
        [6, 2, 4],
    );
}

#[test]
fn steps_past_an_examples_length_get_no_gradient() {
    let data = NDArray::random_uniform(-1.0, 1.0, &[5, 2, 3], DType::F64).unwrap();
    data.attach_grad(Req::Write).unwrap();
    let label = arr(&[1., 2., 1., 0.], &[2, 2]);
    let lengths = arr(&[5., 3.], &[2]);
    let loss = {
        let _r = autograd::record();
        invoke1("CTCLoss", &[&data, &label, &lengths], &[("use_data_lengths", true.into())]).unwrap()
    };
    loss.backward().unwrap();
    let g = data.grad().unwrap().to_vec::<f64>().unwrap();
    // (t, b, c) order: example 1 at t = 3, 4 is untouched
    for t in 3..5 {
        assert!(g[(t * 2 + 1) * 3..(t * 2 + 2) * 3].iter().all(|v| *v == 0.0), "t = {t}");
        assert!(g[(t * 2) * 3..(t * 2 + 1) * 3].iter().any(|v| *v != 0.0), "t = {t}");
    }
    // each step's gradient sums to zero over the alphabet (softmax minus occupancy)
    for t in 0..5 {
        for b in 0..2 {
            let s: f64 = g[(t * 2 + b) * 3..(t * 2 + b + 1) * 3].iter().sum();
            assert!(s.abs() < 1e-12, "t = {t}, b = {b}: {s}");
        }
    }
}

#[test]
fn a_label_longer_than_its_sequence_costs_infinity_and_no_gradient() {
    let data = NDArray::random_uniform(-1.0, 1.0, &[2, 1, 3], DType::F32).unwrap();
    data.attach_grad(Req::Write).unwrap();
    // "a a" needs three steps (a, -, a)
    let label = arr(&[1., 1.], &[1, 2]).astype(DType::F32).unwrap();
    let loss = {
        let _r = autograd::record();
        invoke1("CTCLoss", &[&data, &label], &[]).unwrap()
    };
    assert_eq!(loss.dtype(), DType::F32);
    assert_eq!(loss.to_vec::<f64>().unwrap(), vec![f64::INFINITY]);
    loss.backward().unwrap();
    assert!(data.grad().unwrap().to_vec::<f64>().unwrap().iter().all(|v| *v == 0.0));
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    let data = NDArray::zeros(&[4, 2, 3], DType::F32, Default::default()).unwrap();
    let err = |inputs: &[&NDArray], attrs: &[(&str, AttrValue)]| {
        invoke1("CTCLoss", inputs, attrs).unwrap_err().to_string()
    };
    // a missing input, a class out of range
    let e = err(&[&data, &arr(&[1., 0., 0., 0.], &[2, 2])], &[("use_label_lengths", true.into())]);
    assert!(e.contains("label_lengths"), "{e}"); // a missing input is named
    let lengths = arr(&[2., 2.], &[2]);
    // a label equal to the blank is accepted, as MXNet 1.9.1 does; its values:
    let l = invoke1(
        "CTCLoss",
        &[&data, &arr(&[1., 0., 2., 1.], &[2, 2]), &lengths],
        &[("use_label_lengths", true.into())],
    )
    .unwrap()
    .to_vec::<f64>()
    .unwrap();
    assert!((l[0] - 2.7850112915039062).abs() < 1e-5 && (l[1] - 1.686398983001709).abs() < 1e-5, "{l:?}");
    let e = err(&[&data, &arr(&[1., 3., 0., 0.], &[2, 2])], &[]);
    assert!(e.contains("label 1 of example 0 is 3"), "{e}");
    let e = err(
        &[&data, &arr(&[1., 2., 0., 0.], &[2, 2]), &arr(&[4., 5.], &[2])],
        &[("use_data_lengths", true.into())],
    );
    assert!(e.contains("data_lengths of example 1 is 5"), "{e}");
    // shapes
    let e =
        err(&[&NDArray::zeros(&[4, 3], DType::F32, Default::default()).unwrap(), &arr(&[1.], &[1, 1])], &[]);
    assert!(e.contains("CTCLoss") && e.contains("(sequence_length, batch, alphabet)"), "{e}");
    let e = err(&[&data, &arr(&[1., 2., 1.], &[3, 1])], &[]);
    assert!(e.contains("label must be (batch, label_length) = (2, ...)"), "{e}");
    // the engine stays usable
    let ok = invoke1("CTCLoss", &[&data, &arr(&[1., 2., 2., 0.], &[2, 2])], &[]).unwrap();
    assert_eq!(ok.shape(), &[2]);
}
