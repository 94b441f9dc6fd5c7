//! `CTCLoss` against MXNet 1.9.1: losses and gradients that MXNet computed
//! (tests/fixtures/ctc/expected.json, made by scripts/make_ctc_fixtures.py)
//! for padded labels with the blank first and last, and explicit lengths.
//! MXNet computes in float32; oxnet runs the same float32 inputs in float32
//! and in float64.

use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};
use serde_json::Value;
use std::path::PathBuf;

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: {g} vs MXNet's {w}");
    }
}

#[test]
fn losses_and_gradients_match_mxnet() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ctc/expected.json");
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let shape: Vec<usize> =
            case["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let rows: Vec<Vec<f64>> = case["label"].as_array().unwrap().iter().map(floats).collect();
        let label = NDArray::from_vec(rows.concat(), &[rows.len(), rows[0].len()]).unwrap();
        let mut attrs: Vec<(&str, AttrValue)> =
            vec![("blank_label", case["blank_label"].as_str().unwrap().into())];
        let mut extra = Vec::new();
        for (key, flag) in [("data_lengths", "use_data_lengths"), ("label_lengths", "use_label_lengths")] {
            if !case[key].is_null() {
                let v = floats(&case[key]);
                extra.push(NDArray::from_vec(v.clone(), &[v.len()]).unwrap());
                attrs.push((flag, true.into()));
            }
        }
        for (dtype, tol) in [(DType::F32, 2e-5), (DType::F64, 2e-5)] {
            let data = NDArray::from_vec(floats(&case["data"]), &shape).unwrap().astype(dtype).unwrap();
            data.attach_grad(Req::Write).unwrap();
            let head = NDArray::from_vec(floats(&case["head"]), &[shape[1]]).unwrap().astype(dtype).unwrap();
            let mut inputs = vec![&data, &label];
            inputs.extend(extra.iter());
            let loss = {
                let _r = autograd::record();
                invoke1("CTCLoss", &inputs, &attrs).unwrap()
            };
            autograd::backward(&[&loss], &[Some(&head)], Default::default()).unwrap();
            let what = format!("{name} {dtype}");
            close(&format!("{what} loss"), &loss.to_vec::<f64>().unwrap(), &floats(&case["loss"]), tol);
            close(
                &format!("{what} grad"),
                &data.grad().unwrap().to_vec::<f64>().unwrap(),
                &floats(&case["grad"]),
                tol,
            );
        }
    }
}

/// `oxnet_nn::loss::CTCLoss` (NTC, blank last, lengths, weights) against
/// MXNet's `gluon.loss.CTCLoss`; the TNC / TN layouts give the same; the
/// block names a wrong number of inputs.
#[test]
fn the_gluon_loss_matches_mxnet() {
    use oxnet_nn::block::Block;
    use oxnet_nn::loss::{CTCLoss, SequenceLayout};
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ctc/expected.json");
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let case = &fixture["gluon"];
    let shape: Vec<usize> =
        case["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    let rows: Vec<Vec<f64>> = case["label"].as_array().unwrap().iter().map(floats).collect();
    let vector = |key: &str| {
        let v = floats(&case[key]);
        NDArray::from_vec(v.clone(), &[v.len()]).unwrap().astype(DType::F32).unwrap()
    };
    let label =
        NDArray::from_vec(rows.concat(), &[rows.len(), rows[0].len()]).unwrap().astype(DType::F32).unwrap();
    let pred = NDArray::from_vec(floats(&case["pred"]), &shape).unwrap().astype(DType::F32).unwrap();
    pred.attach_grad(Req::Write).unwrap();
    let loss_fn = CTCLoss::new().weight(case["weight"].as_f64().unwrap());
    let inputs = [
        pred.clone(),
        label.clone(),
        vector("pred_lengths"),
        vector("label_lengths"),
        vector("sample_weight"),
    ];
    let loss = {
        let _r = autograd::record();
        loss_fn.forward(&inputs).unwrap().remove(0)
    };
    loss.backward().unwrap();
    close("gluon loss", &loss.to_vec::<f64>().unwrap(), &floats(&case["loss"]), 2e-5);
    close("gluon grad", &pred.grad().unwrap().to_vec::<f64>().unwrap(), &floats(&case["grad"]), 2e-5);

    // time-major layouts: the same losses
    let tnc = invoke1("transpose", &[&pred], &[("axes", AttrValue::Ints(vec![1, 0, 2]))]).unwrap();
    let tn = invoke1("transpose", &[&label], &[]).unwrap();
    let time_major = CTCLoss::new()
        .weight(case["weight"].as_f64().unwrap())
        .layout(SequenceLayout::TimeMajor)
        .label_layout(SequenceLayout::TimeMajor);
    let again =
        time_major.loss_with(&tnc, &tn, Some(&inputs[2]), Some(&inputs[3]), Some(&inputs[4])).unwrap();
    close("time-major loss", &again.to_vec::<f64>().unwrap(), &floats(&case["loss"]), 2e-5);

    let err = loss_fn.forward(&inputs[..3]).unwrap_err().to_string();
    assert!(err.contains("ctcloss") && err.contains("got 3 inputs"), "{err}");
}
