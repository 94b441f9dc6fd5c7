//! The contrib cells: [`LstmpCell`] against the fused `RNN` operator's LSTM
//! with `projection_size` given the same weights (outputs and final
//! states), and [`VariationalDropoutCell`]'s masks shared by every step of
//! a sequence, redrawn for the next, absent outside train mode.

use oxnet_core::{autograd, invoke, DType, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Uniform;
use oxnet_nn::layers::{LstmpCell, RecurrentCell, RnnCell, Unroll, VariationalDropoutCell};
use oxnet_nn::parameter::shared_init;

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn param(block: &dyn Block, local: &str) -> NDArray {
    block.params().into_iter().find(|(k, _)| k == local).unwrap().1.data().unwrap()
}

#[test]
fn an_lstmp_cell_equals_the_fused_lstm_with_projection() {
    let (t, n, input, hidden, proj) = (4, 2, 3, 5, 2);
    let cell = LstmpCell::new(hidden, proj).input_size(input).dtype(DType::F64);
    cell.initialize(&shared_init(Uniform::new(0.5))).unwrap();
    for name in ["i2h_bias", "h2h_bias"] {
        let p = cell.params().into_iter().find(|(k, _)| k == name).unwrap().1;
        p.set_data(&NDArray::random_uniform(-0.5, 0.5, &[4 * hidden], DType::F64).unwrap()).unwrap();
    }
    let x = NDArray::random_uniform(-1.0, 1.0, &[t, n, input], DType::F64).unwrap();
    let begin = vec![
        NDArray::random_uniform(-1.0, 1.0, &[n, proj], DType::F64).unwrap(),
        NDArray::random_uniform(-1.0, 1.0, &[n, hidden], DType::F64).unwrap(),
    ];
    let (out, states) = cell.unroll(&x, Unroll::default().begin_state(begin.clone())).unwrap();
    assert_eq!(out.shape(), &[t, n, proj]);
    // the fused operator's layout: weights i2h, h2h, h2r, then biases i2h, h2h
    let mut flat = Vec::new();
    for name in ["i2h_weight", "h2h_weight", "h2r_weight", "i2h_bias", "h2h_bias"] {
        flat.extend(values(&param(&cell, name)));
    }
    let n_params = flat.len();
    let params = NDArray::from_vec(flat, &[n_params]).unwrap();
    let h0 = begin[0].reshape(&[1, n as i64, proj as i64]).unwrap();
    let c0 = begin[1].reshape(&[1, n as i64, hidden as i64]).unwrap();
    let fused = invoke(
        "RNN",
        &[&x, &params, &h0, &c0],
        &[
            ("state_size", (hidden as i64).into()),
            ("num_layers", 1i64.into()),
            ("mode", "lstm".into()),
            ("projection_size", (proj as i64).into()),
            ("state_outputs", true.into()),
        ],
    )
    .unwrap();
    for (what, got, want) in
        [("output", &out, &fused[0]), ("r", &states[0], &fused[1]), ("c", &states[1], &fused[2])]
    {
        for (g, w) in values(got).iter().zip(values(want)) {
            assert!((g - w).abs() < 1e-12, "{what}: {g} vs {w}");
        }
    }
}

#[test]
fn variational_dropout_keeps_one_mask_per_sequence() {
    let make = || {
        let c = RnnCell::gru(40).input_size(3).dtype(DType::F64);
        c.initialize(&shared_init(Uniform::new(0.5))).unwrap();
        c
    };
    let base = make();
    let twin = make();
    for name in ["i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"] {
        let p = twin.params().into_iter().find(|(k, _)| k == name).unwrap().1;
        p.set_data(&param(&base, name)).unwrap();
    }
    let cell = VariationalDropoutCell::new(base, 0.0, 0.0, 0.5).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[3, 2, 3], DType::F64).unwrap();
    let (plain, _) = twin.unroll(&x, Unroll::default()).unwrap();
    let (out, _) = cell.unroll(&x, Unroll::default()).unwrap();
    assert_eq!(values(&out), values(&plain), "outside train mode the masks are ones");
    let masks = |out: &NDArray| -> Vec<Vec<bool>> {
        let (o, p) = (values(out), values(&plain));
        (0..3)
            .map(|s| {
                (0..80)
                    .map(|j| {
                        let (g, w) = (o[s * 80 + j], p[s * 80 + j]);
                        assert!(g == 0.0 || (g - 2.0 * w).abs() < 1e-12, "step {s}, unit {j}: {g} vs {w}");
                        g != 0.0
                    })
                    .collect()
            })
            .collect()
    };
    let (first, second) = {
        let _t = autograd::train_mode();
        (cell.unroll(&x, Unroll::default()).unwrap().0, cell.unroll(&x, Unroll::default()).unwrap().0)
    };
    let (a, b) = (masks(&first), masks(&second));
    assert!(a[0] == a[1] && a[1] == a[2], "one mask for every step");
    assert!(a[0] != b[0], "a new mask for the next sequence");
    let kept = a[0].iter().filter(|&&k| k).count();
    assert!(kept > 20 && kept < 60, "{kept} of 80 kept");
    assert!(VariationalDropoutCell::new(make(), 1.0, 0.0, 0.0).is_err());
}
