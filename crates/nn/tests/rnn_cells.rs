//! Recurrent cells ([`RnnCell`], [`SequentialRnnCell`]) against the fused
//! layer ([`Rnn`]) holding the same weights: two independent
//! implementations (composed operators, the fused kernel) of every mode,
//! outputs, final states and weight gradients; `valid_length` against
//! unrolling each sequence alone; layouts; errors.

use oxnet_core::{autograd, DType, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Uniform;
use oxnet_nn::layers::{RecurrentCell, Rnn, RnnCell, SequentialRnnCell, Unroll};
use oxnet_nn::parameter::shared_init;

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(what: &str, got: &NDArray, want: &NDArray, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    for (i, (g, w)) in values(got).iter().zip(values(want)).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what} [{i}]: {g} vs {w}");
    }
}

fn param(block: &dyn Block, local: &str) -> oxnet_nn::parameter::Parameter {
    block.params().into_iter().find(|(k, _)| k == local).unwrap_or_else(|| panic!("no {local}")).1
}

/// A stack of two cells of `make`, holding the weights of a 2-layer fused
/// layer made by `fused` (both float64, input size 3, hidden 4).
fn pair(make: fn() -> RnnCell, fused: Rnn) -> (SequentialRnnCell, Rnn) {
    let (input, hidden) = (3, 4);
    let layer = fused.num_layers(2).input_size(input).dtype(DType::F64);
    layer.initialize(&shared_init(Uniform::new(0.6))).unwrap();
    let mut stack = SequentialRnnCell::new();
    for l in 0..2 {
        let cell = make().input_size(if l == 0 { input } else { hidden }).dtype(DType::F64);
        cell.initialize(&shared_init(Uniform::new(0.1))).unwrap();
        for name in ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"] {
            param(&cell, name).set_data(&param(&layer, &format!("l{l}_{name}")).data().unwrap()).unwrap();
        }
        stack.add(cell);
    }
    (stack, layer)
}

fn check_mode(make: fn() -> RnnCell, fused: Rnn) {
    let (stack, layer) = pair(make, fused);
    let (t, n) = (5, 2);
    let x = NDArray::random_uniform(-1.0, 1.0, &[t, n, 3], DType::F64).unwrap();
    let begin = stack.begin_state(n, DType::F64).unwrap();
    // the cells' states are per cell ([h0, c0, h1, c1] for LSTMs); the fused
    // layer's per kind ([h of both layers, c of both layers])
    let per_cell = begin.len() / 2;
    let fused_states: Vec<NDArray> = (0..per_cell)
        .map(|k| {
            let parts: Vec<&NDArray> = (0..2).map(|l| &begin[l * per_cell + k]).collect();
            oxnet_core::invoke1("stack", &parts, &[("num_args", 2i64.into()), ("axis", 0i64.into())]).unwrap()
        })
        .collect();
    let mut inputs = vec![x.clone()];
    inputs.extend(fused_states);

    let head = NDArray::random_uniform(0.5, 1.5, &[t, n, 4], DType::F64).unwrap();
    let (out, states) = {
        let _r = autograd::record();
        stack.unroll(&x, Unroll::default().begin_state(begin)).unwrap()
    };
    autograd::backward(&[&out], &[Some(&head)], Default::default()).unwrap();
    let fused_outs = {
        let _r = autograd::record();
        layer.forward(&inputs).unwrap()
    };
    autograd::backward(&[&fused_outs[0]], &[Some(&head)], Default::default()).unwrap();

    close("output", &out, &fused_outs[0], 1e-10);
    for k in 0..per_cell {
        for l in 0..2 {
            let want = oxnet_core::invoke1(
                "slice_axis",
                &[&fused_outs[1 + k]],
                &[("axis", 0i64.into()), ("begin", (l as i64).into()), ("end", (l as i64 + 1).into())],
            )
            .unwrap()
            .reshape(&[n as i64, 4])
            .unwrap();
            close(&format!("state {k} of layer {l}"), &states[l * per_cell + k], &want, 1e-10);
        }
    }
    for l in 0..2 {
        let cell = stack.children()[l].1;
        for name in ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"] {
            let got = param(cell, name).grad().unwrap();
            let want = param(&layer, &format!("l{l}_{name}")).grad().unwrap();
            close(&format!("gradient of layer {l}'s {name}"), &got, &want, 1e-9);
        }
    }
}

#[test]
fn lstm_cells_equal_the_fused_lstm() {
    check_mode(|| RnnCell::lstm(4), Rnn::lstm(4));
}

#[test]
fn gru_cells_equal_the_fused_gru() {
    check_mode(|| RnnCell::gru(4), Rnn::gru(4));
}

#[test]
fn rnn_cells_equal_the_fused_rnn() {
    check_mode(|| RnnCell::rnn(4, "tanh").unwrap(), Rnn::rnn(4, "tanh").unwrap());
    check_mode(|| RnnCell::rnn(4, "relu").unwrap(), Rnn::rnn(4, "relu").unwrap());
}

#[test]
fn valid_length_masks_outputs_and_keeps_each_sequences_last_states() {
    let cell = RnnCell::lstm(3).input_size(2).dtype(DType::F64);
    cell.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    let (t, n) = (4, 3);
    let x = NDArray::random_uniform(-1.0, 1.0, &[n, t, 2], DType::F64).unwrap(); // NTC
    let lengths = [4usize, 1, 2];
    let lens = NDArray::from_vec(lengths.iter().map(|&l| l as f64).collect(), &[n]).unwrap();
    let (out, states) =
        cell.unroll(&x, Unroll::default().layout_ntc(true).valid_length(lens.clone())).unwrap();
    assert_eq!(out.shape(), &[n, t, 3]);
    let outs = values(&out);
    for (b, &len) in lengths.iter().enumerate() {
        // the sequence alone, cut at its length
        let xb = oxnet_core::invoke1(
            "slice_axis",
            &[&x],
            &[("axis", 0i64.into()), ("begin", (b as i64).into()), ("end", (b as i64 + 1).into())],
        )
        .unwrap();
        let xb = oxnet_core::invoke1(
            "slice_axis",
            &[&xb],
            &[("axis", 1i64.into()), ("begin", 0i64.into()), ("end", (len as i64).into())],
        )
        .unwrap();
        let (alone, alone_states) = cell.unroll(&xb, Unroll::default().layout_ntc(true)).unwrap();
        let alone = values(&alone);
        for s in 0..t {
            for j in 0..3 {
                let got = outs[(b * t + s) * 3 + j];
                let want = if s < len { alone[s * 3 + j] } else { 0.0 };
                assert!((got - want).abs() < 1e-12, "sequence {b}, step {s}: {got} vs {want}");
            }
        }
        for (k, st) in states.iter().enumerate() {
            let got = &values(st)[b * 3..(b + 1) * 3];
            let want = values(&alone_states[k]);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "sequence {b}, state {k}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn the_input_size_is_inferred_and_forward_takes_the_states() {
    let cell = RnnCell::gru(6);
    cell.initialize(&shared_init(Uniform::new(0.1))).unwrap();
    let x = NDArray::ones(&[2, 5], DType::F32, Default::default()).unwrap();
    let h = cell.begin_state(2, DType::F32).unwrap();
    let outs = cell.forward(&[x, h[0].clone()]).unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(outs[0].shape(), &[2, 6]);
    assert_eq!(param(&cell, "i2h_weight").shape(), vec![18, 5]);
    assert!(cell.prefix().starts_with("gru"), "{}", cell.prefix());
}

#[test]
fn wrong_states_and_data_are_errors_naming_the_cell() {
    let cell = RnnCell::lstm(4).input_size(3);
    cell.initialize(&shared_init(Uniform::new(0.1))).unwrap();
    let x = NDArray::ones(&[2, 3], DType::F32, Default::default()).unwrap();
    let h = NDArray::zeros(&[2, 4], DType::F32, Default::default()).unwrap();
    let e = cell.step(&x, &[h.clone()]).unwrap_err().to_string();
    assert!(e.contains(cell.name()) && e.contains("expected"), "{e}");
    let bad = NDArray::zeros(&[2, 5], DType::F32, Default::default()).unwrap();
    let e = cell.step(&x, &[h.clone(), bad]).unwrap_err().to_string();
    assert!(e.contains("[2, 5]"), "{e}");
    let e = cell.unroll(&x, Unroll::default()).unwrap_err().to_string();
    assert!(e.contains("3 axes"), "{e}");
    let e = RnnCell::rnn(4, "sigmoid").err().unwrap().to_string();
    assert!(e.contains("relu or tanh"), "{e}");
}
