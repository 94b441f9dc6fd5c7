//! The recurrent layer [`Rnn`]: an LSTM against a step-by-step reference,
//! the final states against the outputs, MXNet's parameter names,
//! hybridized against imperative, errors, and a small LSTM that learns.

use oxnet_core::{autograd, DType, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::{Uniform, Xavier};
use oxnet_nn::layers::{Dense, Rnn, Sequential};
use oxnet_nn::loss::{L2Loss, Loss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "[{i}]: {g} vs {w}");
    }
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn lstm_follows_the_gate_equations() {
    let (t, n, i, h) = (3, 2, 4, 5);
    let lstm = Rnn::lstm(h).dtype(DType::F64);
    lstm.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[t, n, i], DType::F64).unwrap();
    let states = lstm.begin_state(n).unwrap();
    let outs = lstm.forward(&[x.clone(), states[0].clone(), states[1].clone()]).unwrap();
    let p =
        |name: &str| values(&lstm.params().into_iter().find(|(k, _)| k == name).unwrap().1.data().unwrap());
    let (wx, wh, bx, bh) = (p("l0_i2h_weight"), p("l0_h2h_weight"), p("l0_i2h_bias"), p("l0_h2h_bias"));
    let xs = values(&x);
    let mut want = vec![0.0; t * n * h];
    for b in 0..n {
        let (mut hs, mut cs) = (vec![0.0; h], vec![0.0; h]);
        for s in 0..t {
            let xt = &xs[(s * n + b) * i..][..i];
            let pre = |r: usize| {
                bx[r]
                    + bh[r]
                    + (0..i).map(|k| wx[r * i + k] * xt[k]).sum::<f64>()
                    + (0..h).map(|k| wh[r * h + k] * hs[k]).sum::<f64>()
            };
            let gates: Vec<f64> = (0..4 * h).map(pre).collect();
            for j in 0..h {
                let (ig, fg, gg, og) =
                    (sig(gates[j]), sig(gates[h + j]), gates[2 * h + j].tanh(), sig(gates[3 * h + j]));
                cs[j] = fg * cs[j] + ig * gg;
                hs[j] = og * cs[j].tanh();
            }
            want[(s * n + b) * h..][..h].copy_from_slice(&hs);
        }
    }
    close(&values(&outs[0]), &want, 1e-12);
    // h after the last step is the last output row
    close(&values(&outs[1]), &want[(t - 1) * n * h..], 1e-12);
}

#[test]
fn bidirectional_gru_states_are_the_ends_of_its_output() {
    let (t, n, h) = (4, 3, 6);
    let gru = Rnn::gru(h).num_layers(2).bidirectional(true).layout_ntc(true);
    gru.initialize(&shared_init(Xavier::default())).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[n, t, 5], DType::F32).unwrap();
    assert_eq!(gru.forward(&[x.clone()]).unwrap().len(), 1);
    let outs = gru.forward(&[x, gru.begin_state(n).unwrap()[0].clone()]).unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(outs[0].shape(), &[n, t, 2 * h]);
    assert_eq!(outs[1].shape(), &[4, n, h]);
    let (y, hy) = (values(&outs[0]), values(&outs[1]));
    for b in 0..n {
        // the top layer: forward direction ends at the last step, reverse at the first
        let fwd = &y[(b * t + t - 1) * 2 * h..][..h];
        let rev = &y[(b * t) * 2 * h + h..][..h];
        close(&hy[(2 * n + b) * h..][..h], fwd, 1e-6);
        close(&hy[(3 * n + b) * h..][..h], rev, 1e-6);
    }
    let mut names: Vec<String> = gru.params().into_iter().map(|(k, _)| k).collect();
    names.sort();
    assert_eq!(names.len(), 16);
    assert!(names.contains(&"r1_i2h_weight".to_string()) && names.contains(&"l0_h2h_bias".to_string()));
    // the second layer reads both directions of the first
    let w = gru.params().into_iter().find(|(k, _)| k == "l1_i2h_weight").unwrap().1;
    assert_eq!(w.shape(), vec![3 * h, 2 * h]);
}

#[test]
fn given_states_are_used_and_a_wrong_count_is_an_error() {
    let lstm = Rnn::lstm(3).input_size(2);
    lstm.initialize(&shared_init(Xavier::default())).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 1, 2], DType::F32).unwrap();
    let zeros = lstm.forward(&[x.clone()]).unwrap();
    let mut states = lstm.begin_state(1).unwrap();
    assert_eq!(
        values(&lstm.forward(&[x.clone(), states[0].clone(), states[1].clone()]).unwrap()[0]),
        values(&zeros[0])
    );
    states[1] = NDArray::ones(&[1, 1, 3], DType::F32, Default::default()).unwrap();
    let other = lstm.forward(&[x.clone(), states[0].clone(), states[1].clone()]).unwrap();
    assert_ne!(values(&other[0]), values(&zeros[0]));
    let e = lstm.forward(&[x, states[0].clone()]).unwrap_err().to_string();
    assert!(e.contains("2 state(s)") && e.contains(lstm.name()), "{e}");
}

#[test]
fn hybridized_equals_imperative() {
    let lstm = Rnn::lstm(4).num_layers(2);
    lstm.initialize(&shared_init(Xavier::default())).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[5, 2, 3], DType::F32).unwrap();
    let plain = values(&lstm.call(&x).unwrap());
    let hybrid = lstm.hybridize();
    close(&values(&hybrid.call(&x).unwrap()), &plain, 1e-6);
    close(&values(&hybrid.call(&x).unwrap()), &plain, 1e-6);
}

#[test]
fn an_lstm_learns_the_running_mean() {
    let (t, n) = (6, 16);
    let mut net = Sequential::new();
    net.add(Rnn::lstm(12).layout_ntc(true));
    net.add(Dense::new(1).flatten(false));
    net.initialize(&shared_init(Xavier::default())).unwrap();
    let mut trainer =
        Trainer::from_name(&net.collect_params().unwrap(), "adam", &[("learning_rate", "0.02")]).unwrap();
    let xs: Vec<f32> = (0..n * t).map(|k| ((k * 37 % 23) as f32 / 11.0) - 1.0).collect();
    let mut ys = vec![0f32; n * t];
    for b in 0..n {
        let mut sum = 0.0;
        for s in 0..t {
            sum += xs[b * t + s];
            ys[b * t + s] = sum / (s + 1) as f32;
        }
    }
    let x = NDArray::from_vec(xs, &[n, t, 1]).unwrap();
    let y = NDArray::from_vec(ys, &[n, t, 1]).unwrap();
    let loss_fn = L2Loss::new();
    let mut losses = vec![];
    for _ in 0..60 {
        let loss = {
            let _r = autograd::record();
            loss_fn.loss(&net.call(&x).unwrap(), &y).unwrap()
        };
        loss.backward().unwrap();
        trainer.step(n).unwrap();
        losses.push(values(&loss).iter().sum::<f64>() / n as f64);
    }
    assert!(losses[59] < losses[0] / 10.0, "{} -> {}", losses[0], losses[59]);
}
