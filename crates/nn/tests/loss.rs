//! Losses against hand-computed values (MXNet 1.x Gluon's formulas).

use oxnet_core::{autograd, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::loss::{
    HuberLoss, L1Loss, L2Loss, Loss, SigmoidBinaryCrossEntropyLoss, SoftmaxCrossEntropyLoss,
};

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn close(got: &NDArray, want: &[f64], tol: f64) {
    let got = got.to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

fn pred() -> NDArray {
    arr(&[1.0, 2.0, 3.0, -1.0, 0.5, 4.0], &[2, 3])
}

fn label() -> NDArray {
    arr(&[1.5, 2.0, 0.0, -1.0, 2.5, 4.0], &[2, 3])
}

#[test]
fn l2_and_l1() {
    // d = label - pred = [0.5, 0, -3], [0, 2, 0]
    close(
        &L2Loss::new().loss(&pred(), &label()).unwrap(),
        &[(0.25 + 9.0) / 2.0 / 3.0, 4.0 / 2.0 / 3.0],
        1e-6,
    );
    close(
        &L2Loss::new().weight(4.0).loss(&pred(), &label()).unwrap(),
        &[(0.25 + 9.0) * 2.0 / 3.0, 8.0 / 3.0],
        1e-5,
    );
    close(&L1Loss::new().loss(&pred(), &label()).unwrap(), &[3.5 / 3.0, 2.0 / 3.0], 1e-6);
    // labels of another shape with as many elements are reshaped like pred
    close(
        &L1Loss::new().loss(&pred(), &label().reshape(&[6]).unwrap()).unwrap(),
        &[3.5 / 3.0, 2.0 / 3.0],
        1e-6,
    );
    // sample weights broadcast against the element-wise loss
    let sw = arr(&[2.0, 0.0], &[2, 1]);
    close(&L1Loss::new().loss_weighted(&pred(), &label(), Some(&sw)).unwrap(), &[7.0 / 3.0, 0.0], 1e-6);
    let out = L1Loss::new().forward(&[pred(), label(), sw]).unwrap();
    close(&out[0], &[7.0 / 3.0, 0.0], 1e-6);
    assert!(L1Loss::new().forward(&[pred()]).is_err());
}

fn log_softmax(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::MIN, f64::max);
    let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    row.iter().map(|v| v - lse).collect()
}

#[test]
fn softmax_cross_entropy_sparse_and_dense() {
    let rows = [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]];
    let (a, b) = (log_softmax(&rows[0]), log_softmax(&rows[1]));
    let labels = arr(&[2.0, 0.0], &[2]);
    let l = SoftmaxCrossEntropyLoss::new().loss(&pred(), &labels).unwrap();
    close(&l, &[-a[2], -b[0]], 1e-6);
    // gradient of the mean loss: softmax - one_hot, per sample
    let p = pred();
    p.attach_grad(oxnet_core::Req::Write).unwrap();
    let l = {
        let _r = autograd::record();
        SoftmaxCrossEntropyLoss::new().loss(&p, &labels).unwrap()
    };
    l.backward().unwrap();
    let mut want = vec![];
    for (lp, lab) in [(&a, 2), (&b, 0)] {
        for (k, v) in lp.iter().enumerate() {
            want.push(v.exp() - if k == lab { 1.0 } else { 0.0 });
        }
    }
    close(&p.grad().unwrap(), &want, 1e-6);
    // dense labels: -Σ label · log p
    let dist = arr(&[0.5, 0.5, 0.0, 0.0, 0.25, 0.75], &[2, 3]);
    let l = SoftmaxCrossEntropyLoss::new().sparse_label(false).loss(&pred(), &dist).unwrap();
    close(&l, &[-(0.5 * a[0] + 0.5 * a[1]), -(0.25 * b[1] + 0.75 * b[2])], 1e-6);
    // from_logits: pred already holds log-probabilities
    let l = SoftmaxCrossEntropyLoss::new().from_logits(true).loss(&pred(), &labels).unwrap();
    close(&l, &[-3.0, 1.0], 1e-6);
    // axis 0 (classes along the first axis)
    let l = SoftmaxCrossEntropyLoss::new()
        .axis(0)
        .batch_axis(1)
        .loss(&pred(), &arr(&[1.0, 0.0, 1.0], &[3]))
        .unwrap();
    let cols: Vec<Vec<f64>> = (0..3).map(|j| log_softmax(&[rows[0][j], rows[1][j]])).collect();
    close(&l, &[-cols[0][1], -cols[1][0], -cols[2][1]], 1e-6);
}

#[test]
fn sigmoid_binary_cross_entropy() {
    let x = [1.0f64, 2.0, 3.0, -1.0, 0.5, 4.0];
    let z = [1.0f64, 0.0, 1.0, 0.0, 1.0, 0.0];
    let labels = arr(&z.map(|v| v as f32), &[2, 3]);
    let per: Vec<f64> = x
        .iter()
        .zip(&z)
        .map(|(x, z)| {
            let p = 1.0 / (1.0 + (-x).exp());
            -(z * p.ln() + (1.0 - z) * (1.0 - p).ln())
        })
        .collect();
    let want = [(per[0] + per[1] + per[2]) / 3.0, (per[3] + per[4] + per[5]) / 3.0];
    close(&SigmoidBinaryCrossEntropyLoss::new().loss(&pred(), &labels).unwrap(), &want, 1e-6);
    let probs = arr(&x.map(|x| (1.0 / (1.0 + (-x).exp())) as f32), &[2, 3]);
    close(
        &SigmoidBinaryCrossEntropyLoss::new().from_sigmoid(true).loss(&probs, &labels).unwrap(),
        &want,
        1e-5,
    );
}

#[test]
fn huber() {
    // |d| = [0.5, 0, 3], [0, 2, 0] with rho 1: [0.125, 0, 2.5], [0, 1.5, 0]
    close(&HuberLoss::new(1.0).unwrap().loss(&pred(), &label()).unwrap(), &[2.625 / 3.0, 1.5 / 3.0], 1e-6);
    // rho 2: [0.0625, 0, 2], [0, 1, 0]
    close(&HuberLoss::new(2.0).unwrap().loss(&pred(), &label()).unwrap(), &[2.0625 / 3.0, 1.0 / 3.0], 1e-6);
    assert!(HuberLoss::new(0.0).is_err());
}
