//! The cells built on other cells: [`BidirectionalCell`] against the fused
//! bidirectional layer holding the same weights (outputs, states, weight
//! gradients; both layouts) and, with `valid_length`, against each
//! sequence run alone; [`ResidualCell`] against its cell plus the input;
//! [`DropoutCell`] and [`ZoneoutCell`] in and out of train mode; errors.

use oxnet_core::{autograd, invoke1, DType, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Uniform;
use oxnet_nn::layers::{
    BidirectionalCell, DropoutCell, RecurrentCell, ResidualCell, Rnn, RnnCell, Unroll, ZoneoutCell,
};
use oxnet_nn::parameter::{shared_init, Parameter};

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(what: &str, got: &NDArray, want: &NDArray, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    for (i, (g, w)) in values(got).iter().zip(values(want)).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what} [{i}]: {g} vs {w}");
    }
}

fn param(block: &dyn Block, local: &str) -> Parameter {
    block.params().into_iter().find(|(k, _)| k == local).unwrap_or_else(|| panic!("no {local}")).1
}

const WEIGHTS: [&str; 4] = ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"];

/// An LSTM cell (input 3, hidden 4, float64) holding the fused layer's
/// weights of direction `dir` (`l` or `r`) of layer 0.
fn cell_from(layer: &Rnn, dir: &str) -> RnnCell {
    let cell = RnnCell::lstm(4).input_size(3).dtype(DType::F64);
    cell.initialize(&shared_init(Uniform::new(0.1))).unwrap();
    for name in WEIGHTS {
        param(&cell, name).set_data(&param(layer, &format!("{dir}0_{name}")).data().unwrap()).unwrap();
    }
    cell
}

fn slice(x: &NDArray, axis: i64, begin: usize, end: usize) -> NDArray {
    invoke1(
        "slice_axis",
        &[x],
        &[("axis", axis.into()), ("begin", (begin as i64).into()), ("end", (end as i64).into())],
    )
    .unwrap()
}

fn check_bidirectional(ntc: bool) {
    let layer = Rnn::lstm(4).bidirectional(true).layout_ntc(ntc).input_size(3).dtype(DType::F64);
    layer.initialize(&shared_init(Uniform::new(0.6))).unwrap();
    let bi = BidirectionalCell::new(cell_from(&layer, "l"), cell_from(&layer, "r"));
    let (t, n) = (5, 2);
    let shape = if ntc { [n, t, 3] } else { [t, n, 3] };
    let x = NDArray::random_uniform(-1.0, 1.0, &shape, DType::F64).unwrap();
    let out_shape = if ntc { [n, t, 8] } else { [t, n, 8] };
    let head = NDArray::random_uniform(0.5, 1.5, &out_shape, DType::F64).unwrap();
    let (out, states) = {
        let _r = autograd::record();
        bi.unroll(&x, Unroll::default().layout_ntc(ntc)).unwrap()
    };
    autograd::backward(&[&out], &[Some(&head)], Default::default()).unwrap();
    let zeros = NDArray::zeros(&[2, n, 4], DType::F64, Default::default()).unwrap();
    let fused = {
        let _r = autograd::record();
        layer.forward(&[x.clone(), zeros.clone(), zeros]).unwrap()
    };
    autograd::backward(&[&fused[0]], &[Some(&head)], Default::default()).unwrap();
    close("output", &out, &fused[0], 1e-10);
    // the cell's states: [h_l, c_l, h_r, c_r]; the layer's: [h (l, r), c (l, r)]
    for (d, dir) in ["forward", "backward"].iter().enumerate() {
        for (k, kind) in ["h", "c"].iter().enumerate() {
            let want = slice(&fused[1 + k], 0, d, d + 1).reshape(&[n as i64, 4]).unwrap();
            close(&format!("{dir} {kind}"), &states[2 * d + k], &want, 1e-10);
        }
    }
    for (dir, child) in [("l", 0), ("r", 1)] {
        let cell = bi.children()[child].1;
        for name in WEIGHTS {
            let got = param(cell, name).grad().unwrap();
            let want = param(&layer, &format!("{dir}0_{name}")).grad().unwrap();
            close(&format!("gradient of {dir}0_{name}"), &got, &want, 1e-9);
        }
    }
}

#[test]
fn a_bidirectional_cell_equals_the_fused_bidirectional_lstm() {
    check_bidirectional(false);
    check_bidirectional(true);
}

#[test]
fn a_bidirectional_cell_reverses_each_sequence_within_its_length() {
    let layer = Rnn::lstm(4).bidirectional(true).input_size(3).dtype(DType::F64);
    layer.initialize(&shared_init(Uniform::new(0.6))).unwrap();
    let bi = BidirectionalCell::new(cell_from(&layer, "l"), cell_from(&layer, "r"));
    let (t, n) = (4, 3);
    let x = NDArray::random_uniform(-1.0, 1.0, &[t, n, 3], DType::F64).unwrap();
    let lengths = [4usize, 2, 1];
    let lens = NDArray::from_vec(lengths.iter().map(|&l| l as f64).collect(), &[n]).unwrap();
    let (out, states) = bi.unroll(&x, Unroll::default().valid_length(lens)).unwrap();
    let outs = values(&out);
    for (b, &len) in lengths.iter().enumerate() {
        let alone = slice(&slice(&x, 1, b, b + 1), 0, 0, len);
        let (want, want_states) = bi.unroll(&alone, Unroll::default()).unwrap();
        let want = values(&want);
        for s in 0..t {
            for j in 0..8 {
                let got = outs[(s * n + b) * 8 + j];
                let w = if s < len { want[s * 8 + j] } else { 0.0 };
                assert!((got - w).abs() < 1e-12, "sequence {b}, step {s}, unit {j}: {got} vs {w}");
            }
        }
        for (k, st) in states.iter().enumerate() {
            let got = &values(st)[b * 4..(b + 1) * 4];
            for (g, w) in got.iter().zip(values(&want_states[k])) {
                assert!((g - w).abs() < 1e-12, "sequence {b}, state {k}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn a_residual_cell_adds_the_input_to_its_cells_output() {
    let base = RnnCell::gru(3).input_size(3).dtype(DType::F64);
    base.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    let twin = RnnCell::gru(3).input_size(3).dtype(DType::F64);
    twin.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    for name in WEIGHTS {
        param(&twin, name).set_data(&param(&base, name).data().unwrap()).unwrap();
    }
    let residual = ResidualCell::new(base);
    let x = NDArray::random_uniform(-1.0, 1.0, &[4, 2, 3], DType::F64).unwrap();
    let (out, states) = residual.unroll(&x, Unroll::default()).unwrap();
    let (plain, plain_states) = twin.unroll(&x, Unroll::default()).unwrap();
    close("output", &out, &invoke1("elemwise_add", &[&plain, &x], &[]).unwrap(), 1e-12);
    close("state", &states[0], &plain_states[0], 1e-12);
    // the parameters stay the wrapped cell's
    let names: Vec<String> = residual.collect_params_with_prefix().into_iter().map(|(k, _)| k).collect();
    assert_eq!(names.len(), 4);
    assert!(names.iter().all(|k| k.starts_with("base_cell.")), "{names:?}");

    let narrow = ResidualCell::new(RnnCell::gru(5).dtype(DType::F64));
    narrow.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    let e = narrow.unroll(&x, Unroll::default()).unwrap_err().to_string();
    assert!(e.contains("ResidualCell") && e.contains("[2, 5]") && e.contains("[2, 3]"), "{e}");
}

#[test]
fn a_dropout_cell_drops_in_train_mode_only() {
    let cell = DropoutCell::new(0.5, &[]).unwrap();
    let x = NDArray::ones(&[3, 4, 50], DType::F32, Default::default()).unwrap();
    let (out, states) = cell.unroll(&x, Unroll::default()).unwrap();
    assert!(states.is_empty());
    close("predict mode", &out, &x, 0.0);
    let out = {
        let _t = autograd::train_mode();
        cell.unroll(&x, Unroll::default()).unwrap().0
    };
    let v = values(&out);
    assert!(v.iter().all(|&e| e == 0.0 || e == 2.0), "dropout keeps x / (1 - p)");
    let kept = v.iter().filter(|&&e| e == 2.0).count();
    assert!(kept > 200 && kept < 400, "{kept} of 600 kept");
    assert!(DropoutCell::new(1.5, &[]).is_err());
}

#[test]
fn a_zoneout_cell_keeps_previous_values_in_train_mode_only() {
    let make = || {
        let cell = RnnCell::lstm(20).input_size(3).dtype(DType::F64);
        cell.initialize(&shared_init(Uniform::new(0.5))).unwrap();
        cell
    };
    let base = make();
    let twin = make();
    for name in WEIGHTS {
        param(&twin, name).set_data(&param(&base, name).data().unwrap()).unwrap();
    }
    let zoneout = ZoneoutCell::new(base, 0.5, 0.0).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[3, 2, 3], DType::F64).unwrap();
    let (plain, plain_states) = twin.unroll(&x, Unroll::default()).unwrap();
    let (out, _) = zoneout.unroll(&x, Unroll::default()).unwrap();
    close("predict mode", &out, &plain, 0.0);

    // outputs zoned out, states not: each output unit is the cell's new one
    // or the previous step's zoned output (zero before the first step)
    let (out, states) = {
        let _t = autograd::train_mode();
        zoneout.unroll(&x, Unroll::default()).unwrap()
    };
    close("states follow the cell", &states[1], &plain_states[1], 1e-12);
    let (got, new) = (values(&out), values(&plain));
    let per_step = 2 * 20;
    let (mut fresh, mut kept) = (0, 0);
    for s in 0..3 {
        for j in 0..per_step {
            let previous = if s == 0 { 0.0 } else { got[(s - 1) * per_step + j] };
            let g = got[s * per_step + j];
            if g == new[s * per_step + j] {
                fresh += 1;
            } else {
                assert_eq!(g, previous, "step {s}, unit {j}: neither the new value nor the previous one");
                kept += 1;
            }
        }
    }
    assert!(fresh > 20 && kept > 20, "{fresh} new, {kept} kept");
    assert!(ZoneoutCell::new(make(), 1.0, 0.0).is_err());
}

#[test]
fn a_bidirectional_cell_cannot_be_stepped() {
    let bi = BidirectionalCell::new(RnnCell::lstm(2), RnnCell::lstm(2));
    bi.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    let x = NDArray::ones(&[1, 3], DType::F32, Default::default()).unwrap();
    let states = bi.begin_state(1, DType::F32).unwrap();
    let e = bi.step(&x, &states).unwrap_err().to_string();
    assert!(e.contains("cannot be stepped") && e.contains("unroll"), "{e}");
    let e = bi.unroll(&x, Unroll::default()).unwrap_err().to_string();
    assert!(e.contains("3 axes"), "{e}");
}
