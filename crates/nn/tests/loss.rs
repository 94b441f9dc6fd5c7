//! Losses against hand-computed values (MXNet 1.x Gluon's formulas).

use oxnet_core::{autograd, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::hybrid::Hybridized;
use oxnet_nn::loss::{
    CosineEmbeddingLoss, HingeLoss, HuberLoss, KLDivLoss, L1Loss, L2Loss, LabelFormat, LogisticLoss, Loss,
    PoissonNLLLoss, SigmoidBinaryCrossEntropyLoss, SoftmaxCrossEntropyLoss, SquaredHingeLoss, TripletLoss,
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

/// Signed labels for `pred()`: products pred·label = [1, -2, 3], [1, 0.5, -4].
fn signs() -> NDArray {
    arr(&[1.0, -1.0, 1.0, -1.0, 1.0, -1.0], &[2, 3])
}

#[test]
fn hinge_and_squared_hinge() {
    // 1 - pred·label = [0, 3, -2], [0, 0.5, 5] -> relu [0, 3, 0], [0, 0.5, 5]
    close(&HingeLoss::new(1.0).loss(&pred(), &signs()).unwrap(), &[1.0, 5.5 / 3.0], 1e-6);
    close(&SquaredHingeLoss::default().loss(&pred(), &signs()).unwrap(), &[3.0, 25.25 / 3.0], 1e-5);
    // margin 2: relu [1, 4, 0], [1, 1.5, 6]
    close(&HingeLoss::new(2.0).loss(&pred(), &signs()).unwrap(), &[5.0 / 3.0, 8.5 / 3.0], 1e-6);
    close(&SquaredHingeLoss::new(2.0).loss(&pred(), &signs()).unwrap(), &[17.0 / 3.0, 39.25 / 3.0], 1e-5);
    // weight and labels of another shape
    close(
        &HingeLoss::new(1.0).weight(3.0).loss(&pred(), &signs().reshape(&[6]).unwrap()).unwrap(),
        &[3.0, 5.5],
        1e-5,
    );
}

#[test]
fn logistic_signed_and_binary() {
    let prods = [1.0f64, -2.0, 3.0, 1.0, 0.5, -4.0];
    let per: Vec<f64> = prods.iter().map(|m| (1.0 + (-m).exp()).ln()).collect();
    let want = [(per[0] + per[1] + per[2]) / 3.0, (per[3] + per[4] + per[5]) / 3.0];
    close(&LogisticLoss::new("signed").unwrap().loss(&pred(), &signs()).unwrap(), &want, 1e-6);
    close(&LogisticLoss::default().loss(&pred(), &signs()).unwrap(), &want, 1e-6);
    let binary = arr(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], &[2, 3]);
    close(&LogisticLoss::new("binary").unwrap().loss(&pred(), &binary).unwrap(), &want, 1e-6);
    close(&LogisticLoss::with_format(LabelFormat::Binary).loss(&pred(), &binary).unwrap(), &want, 1e-6);
    let err = LogisticLoss::new("ternary").unwrap_err().to_string();
    assert!(err.contains("label_format") && err.contains("ternary"), "{err}");
}

#[test]
fn kl_divergence() {
    let label = [0.2f64, 0.3, 0.5, 0.0, 0.4, 0.6];
    let labels = arr(&label.map(|v| v as f32), &[2, 3]);
    let x = [1.0f64, 2.0, 3.0, -1.0, 0.5, 4.0];
    let per_sample = |logp: &[f64]| -> Vec<f64> {
        let t: Vec<f64> =
            label.iter().zip(logp).map(|(l, p)| if *l == 0.0 { 0.0 } else { l * (l.ln() - p) }).collect();
        vec![(t[0] + t[1] + t[2]) / 3.0, (t[3] + t[4] + t[5]) / 3.0]
    };
    // from_logits (default): pred is taken as log-probabilities as it is
    let logp = [-1.0f64, -2.0, -0.5, -3.0, -1.5, -0.25];
    let l = KLDivLoss::new().loss(&arr(&logp.map(|v| v as f32), &[2, 3]), &labels).unwrap();
    close(&l, &per_sample(&logp), 1e-6);
    // raw scores: log-softmaxed along the last axis first
    let mut lsm = log_softmax(&x[..3]);
    lsm.extend(log_softmax(&x[3..]));
    close(&KLDivLoss::new().from_logits(false).loss(&pred(), &labels).unwrap(), &per_sample(&lsm), 1e-6);
    // weight and sample weight
    let sw = arr(&[1.0, 3.0], &[2, 1]);
    let want = per_sample(&lsm);
    close(
        &KLDivLoss::new().from_logits(false).weight(2.0).loss_weighted(&pred(), &labels, Some(&sw)).unwrap(),
        &[2.0 * want[0], 6.0 * want[1]],
        1e-5,
    );
}

#[test]
fn poisson_nll() {
    let p = [0.5f64, 1.0, 2.0, 0.1];
    let t = [0.0f64, 1.0, 3.0, 2.0];
    let (pa, ta) = (arr(&p.map(|v| v as f32), &[2, 2]), arr(&t.map(|v| v as f32), &[2, 2]));
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let logits: Vec<f64> = p.iter().zip(&t).map(|(p, t)| p.exp() - t * p).collect();
    let l = PoissonNLLLoss::new().loss(&pa, &ta).unwrap();
    assert_eq!(l.shape(), &[1], "one value, as MXNet's mean of everything");
    close(&l, &[mean(logits.clone())], 1e-5);
    let stirling =
        |t: f64| if t > 1.0 { t * t.ln() - t + 0.5 * (2.0 * std::f64::consts::PI * t).ln() } else { 0.0 };
    let full: Vec<f64> = logits.iter().zip(&t).map(|(l, t)| l + stirling(*t)).collect();
    // a target of 0 stays finite (MXNet 1.x gives NaN there)
    close(&PoissonNLLLoss::new().compute_full(true).loss(&pa, &ta).unwrap(), &[mean(full)], 1e-5);
    let rates: Vec<f64> = p.iter().zip(&t).map(|(p, t)| p - t * (p + 1e-8).ln()).collect();
    close(&PoissonNLLLoss::new().from_logits(false).loss(&pa, &ta).unwrap(), &[mean(rates.clone())], 1e-5);
    // weights scale before the mean over every element
    let sw = arr(&[2.0, 0.0], &[2, 1]);
    let l = PoissonNLLLoss::new().from_logits(false).weight(0.5).loss_weighted(&pa, &ta, Some(&sw)).unwrap();
    close(&l, &[(rates[0] + rates[1]) / 4.0], 1e-5);
}

#[test]
fn triplet() {
    let pred = arr(&[0.0, 0.0, 1.0, 1.0], &[2, 2]);
    let pos = arr(&[1.0, 0.0, 1.0, 2.0], &[2, 2]);
    let neg = arr(&[0.0, 2.0, 1.0, 1.0], &[2, 2]);
    // Σ(pos - pred)² - Σ(neg - pred)² = [1 - 4, 1 - 0] = [-3, 1]
    close(&TripletLoss::default().loss(&pred, &pos, &neg).unwrap(), &[0.0, 2.0], 1e-6);
    close(&TripletLoss::new(4.0).loss(&pred, &pos, &neg).unwrap(), &[1.0, 5.0], 1e-6);
    let sw = arr(&[0.5, 2.0], &[2]);
    let l = TripletLoss::new(4.0).weight(3.0).loss_weighted(&pred, &pos, &neg, Some(&sw)).unwrap();
    close(&l, &[1.5, 30.0], 1e-5);
    // positive and negative of another shape are reshaped like pred
    let flat = |a: &NDArray| a.reshape(&[4]).unwrap();
    close(&TripletLoss::new(4.0).loss(&pred, &flat(&pos), &flat(&neg)).unwrap(), &[1.0, 5.0], 1e-6);
    // as a block: three inputs, optionally a fourth
    let t = TripletLoss::new(4.0);
    close(&t.forward(&[pred.clone(), pos.clone(), neg.clone()]).unwrap()[0], &[1.0, 5.0], 1e-6);
    close(&t.forward(&[pred.clone(), pos.clone(), neg.clone(), sw]).unwrap()[0], &[0.5, 10.0], 1e-6);
    let err = t.forward(&[pred, pos]).unwrap_err().to_string();
    assert!(err.contains("negative") && err.contains("2 inputs"), "{err}");
}

#[test]
fn cosine_embedding() {
    let a = arr(&[1.0, 2.0, 3.0, 4.0, 1.0, 0.0], &[3, 2]);
    let b = arr(&[2.0, 1.0, 3.0, 4.0, 0.0, 1.0], &[3, 2]);
    let label = arr(&[1.0, -1.0, -1.0], &[3]);
    // cos = [0.8, 1, 0]: [1 - 0.8, max(0, 1 - 0.1), max(0, 0 - 0.1)]
    let l = CosineEmbeddingLoss::new(0.1).loss(&a, &b, &label).unwrap();
    assert_eq!(l.shape(), &[3, 1]);
    close(&l, &[0.2, 0.9, 0.0], 1e-6);
    // label 1 everywhere, margin 0, a weight, input1 of another shape
    let ones = arr(&[1.0, 1.0, 1.0], &[3]);
    close(
        &CosineEmbeddingLoss::default().weight(10.0).loss(&a.reshape(&[6]).unwrap(), &b, &ones).unwrap(),
        &[2.0, 0.0, 10.0],
        1e-5,
    );
    // a zero vector: the norms' product is clipped, the loss stays finite
    let z = arr(&[0.0, 0.0], &[1, 2]);
    close(&CosineEmbeddingLoss::default().loss(&z, &z, &arr(&[1.0], &[1])).unwrap(), &[1.0], 1e-6);
}

#[test]
fn three_input_losses_hybridized() {
    let pred = arr(&[0.0, 0.0, 1.0, 1.0], &[2, 2]);
    let pos = arr(&[1.0, 0.0, 1.0, 2.0], &[2, 2]);
    let neg = arr(&[0.0, 2.0, 1.0, 1.0], &[2, 2]);
    let h = Hybridized::new(TripletLoss::new(4.0));
    close(&h.forward(&[pred.clone(), pos.clone(), neg.clone()]).unwrap()[0], &[1.0, 5.0], 1e-6);
    assert_eq!(h.cached_graphs(), 1);
    let h = Hybridized::new(CosineEmbeddingLoss::new(0.1));
    let label = arr(&[1.0, -1.0], &[2]);
    let want = CosineEmbeddingLoss::new(0.1).loss(&pos, &neg, &label).unwrap().to_vec::<f64>().unwrap();
    close(&h.forward(&[pos, neg, label]).unwrap()[0], &want, 1e-6);
    let h = Hybridized::new(KLDivLoss::new().from_logits(false));
    let (scores, labels) = (self::pred(), arr(&[0.2, 0.3, 0.5, 0.1, 0.4, 0.5], &[2, 3]));
    let want = KLDivLoss::new().from_logits(false).loss(&scores, &labels).unwrap().to_vec::<f64>().unwrap();
    close(&h.forward(&[scores, labels]).unwrap()[0], &want, 1e-6);
}

/// The gradient of Σ f(x) by autograd against central differences in f64.
fn grad_check(f: impl Fn(&NDArray) -> NDArray, x: &[f64], shape: &[usize]) {
    let xa = NDArray::from_vec(x.to_vec(), shape).unwrap();
    xa.attach_grad(oxnet_core::Req::Write).unwrap();
    let out = {
        let _r = autograd::record();
        f(&xa)
    };
    out.backward().unwrap();
    let got = xa.grad().unwrap().to_vec::<f64>().unwrap();
    let total = |v: &[f64]| {
        f(&NDArray::from_vec(v.to_vec(), shape).unwrap()).to_vec::<f64>().unwrap().iter().sum::<f64>()
    };
    let h = 1e-6;
    for i in 0..x.len() {
        let (mut up, mut down) = (x.to_vec(), x.to_vec());
        up[i] += h;
        down[i] -= h;
        let num = (total(&up) - total(&down)) / (2.0 * h);
        assert!((got[i] - num).abs() < 1e-6, "element {i}: autograd {} vs numeric {num}", got[i]);
    }
}

#[test]
fn gradients_against_central_differences() {
    // cosine embedding, both branches active: row 0 label 1, row 1 label -1 with cos > margin
    let x2 = NDArray::from_vec(vec![2.0f64, 1.0, -0.5, 1.0, 3.0, 0.5], &[2, 3]).unwrap();
    let label = NDArray::from_vec(vec![1.0f64, -1.0], &[2]).unwrap();
    let cos = CosineEmbeddingLoss::new(0.1);
    grad_check(|x| cos.loss(x, &x2, &label).unwrap(), &[1.0, 2.0, 0.5, 1.5, 2.0, 1.0], &[2, 3]);
    // triplet loss with the hinge active for both samples
    let (pos, neg) = (
        NDArray::from_vec(vec![1.0f64, 0.5, 1.0, 2.0], &[2, 2]).unwrap(),
        NDArray::from_vec(vec![0.5f64, 1.5, 1.0, 1.5], &[2, 2]).unwrap(),
    );
    let trip = TripletLoss::new(2.0);
    grad_check(|x| trip.loss(x, &pos, &neg).unwrap(), &[0.2, 0.1, 0.9, 1.2], &[2, 2]);
    // logistic loss on binary labels
    let labels = NDArray::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    let logistic = LogisticLoss::new("binary").unwrap();
    grad_check(|x| logistic.loss(x, &labels).unwrap(), &[0.3, -1.2, 2.0, -0.4], &[2, 2]);
}
