//! Training on the digits with oxnet-nn: a small convolutional network
//! (`Conv2D` → `BatchNorm` → ReLU → max-pool) whose head is made of the
//! seeds' custom operators (`dense` with a learnt weight, then `sigmoid`)
//! and a built-in `Dense` layer, hybridized into one cached graph, trained
//! with SGD and momentum on the softmax cross-entropy.

use crate::digits::{self, Digits, Rng, CLASSES};
use anyhow::{ensure, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oxnet_core::{autograd, invoke1, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::hybrid::Hybridized;
use oxnet_nn::init::Xavier;
use oxnet_nn::layers::{
    Activation, BatchNorm, Conv, CustomLayer, Dense, Flatten, Pool, PoolType, Sequential,
};
use oxnet_nn::loss::{Loss, SoftmaxCrossEntropyLoss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;

/// How to train.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Passes over the training images.
    pub epochs: usize,
    /// Images per step.
    pub batch_size: usize,
    /// Filters of the convolution.
    pub filters: usize,
    /// Hidden units (the custom `dense` layer's outputs).
    pub hidden: usize,
    /// SGD's learning rate.
    pub learning_rate: f64,
    /// SGD's momentum.
    pub momentum: f64,
    /// Seed of the split and of the batch order.
    pub seed: u64,
    /// Show a progress bar and per-epoch lines.
    pub verbose: bool,
}

impl TrainOptions {
    /// The tour's settings; `quick` trains for fewer epochs.
    pub fn tour(quick: bool) -> TrainOptions {
        TrainOptions {
            epochs: if quick { 10 } else { 30 },
            batch_size: 32,
            filters: 16,
            hidden: 64,
            learning_rate: 0.1,
            momentum: 0.9,
            seed: 2024,
            verbose: true,
        }
    }
}

/// What a training run gives.
#[derive(Debug, Clone)]
pub struct TrainReport {
    /// Mean loss over each epoch.
    pub epoch_losses: Vec<f64>,
    /// Accuracy on the training images after training.
    pub train_accuracy: f64,
    /// Accuracy on the held-out images.
    pub held_out_accuracy: f64,
    /// Sizes of the two parts.
    pub sizes: (usize, usize),
}

/// The side of the square digit images.
pub const SIDE: usize = 8;

/// The network: `Conv2D(filters, 3x3, padding 1)` → `BatchNorm` → ReLU →
/// `MaxPool2D(2x2)` → flatten → custom `dense` (weight `(hidden,
/// filters * 4 * 4)`, bias 0) → custom `sigmoid` → `Dense(10)` (its input
/// size inferred), hybridized.
pub fn network(filters: usize, hidden: usize) -> Result<Hybridized<Sequential>> {
    let mut net = Sequential::new();
    net.name_scope(|net| -> Result<()> {
        net.add(Conv::conv2d(filters, [3, 3]).padding(&[1, 1])?);
        net.add(BatchNorm::new());
        net.add(Activation::new("relu")?);
        net.add(Pool::new(PoolType::Max, &[2, 2])?);
        net.add(Flatten::new()?);
        let features = filters * (SIDE / 2) * (SIDE / 2);
        net.add(CustomLayer::custom("dense", &[("bias", "0.0")])?.with_param(
            "weight",
            &[hidden, features],
            None,
        ));
        net.add(CustomLayer::custom("sigmoid", &[])?);
        net.add(Dense::new(CLASSES));
        Ok(())
    })?;
    Ok(net.hybridize())
}

fn batch(data: &Digits, indices: &[usize]) -> Result<(NDArray, NDArray)> {
    let part = data.select(indices);
    let labels: Vec<f32> = part.labels.iter().map(|&l| l as f32).collect();
    Ok((
        NDArray::from_vec(part.pixels, &[indices.len(), 1, SIDE, SIDE])?,
        NDArray::from_vec(labels, &[indices.len()])?,
    ))
}

/// The share of `data` the network classifies correctly.
pub fn accuracy(net: &dyn Block, data: &Digits) -> Result<f64> {
    let all: Vec<usize> = (0..data.len()).collect();
    let mut correct = 0usize;
    for chunk in all.chunks(256) {
        let (x, y) = batch(data, chunk)?;
        let scores = net.call(&x)?;
        let predicted = invoke1("argmax", &[&scores], &[("axis", 1i64.into())])?.to_vec::<f32>()?;
        let labels = y.to_vec::<f32>()?;
        correct += predicted.iter().zip(&labels).filter(|(p, l)| p == l).count();
    }
    Ok(correct as f64 / data.len() as f64)
}

/// Trains the network on 80% of the digits and measures it on the other
/// 20%. The seeds' custom operators must be registered.
pub fn train(opts: &TrainOptions) -> Result<TrainReport> {
    let data = digits::load()?;
    let (train, held_out) = digits::split(&data, 0.2, opts.seed);
    let net = network(opts.filters, opts.hidden)?;
    net.initialize(&shared_init(Xavier::default()))?;
    let loss_fn = SoftmaxCrossEntropyLoss::new();
    let params = net.collect_params()?;
    let hyper = [("learning_rate", opts.learning_rate.to_string()), ("momentum", opts.momentum.to_string())];
    let mut trainer = Trainer::from_name(&params, "sgd", &hyper)?;

    let steps_per_epoch = train.len().div_ceil(opts.batch_size);
    let bar = if opts.verbose {
        ProgressBar::new((opts.epochs * steps_per_epoch) as u64)
    } else {
        ProgressBar::with_draw_target(
            Some((opts.epochs * steps_per_epoch) as u64),
            ProgressDrawTarget::hidden(),
        )
    };
    bar.set_style(ProgressStyle::with_template("   {bar:30} {pos:>5}/{len} steps  {msg}")?);
    let mut rng = Rng::new(opts.seed ^ 0x5eed);
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut epoch_losses = Vec::with_capacity(opts.epochs);
    for epoch in 0..opts.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for (k, chunk) in order.chunks(opts.batch_size).enumerate() {
            let (x, y) = batch(&train, chunk)?;
            let loss = {
                let _r = autograd::record();
                loss_fn.loss(&net.call(&x)?, &y)?
            };
            loss.backward()?;
            trainer.step(chunk.len())?;
            let batch_loss = loss.to_vec::<f32>()?.iter().map(|&v| v as f64).sum::<f64>();
            total += batch_loss;
            bar.set_message(format!(
                "epoch {:>2}  loss {:.4}",
                epoch + 1,
                total / ((k * opts.batch_size + chunk.len()) as f64)
            ));
            bar.inc(1);
        }
        let mean = total / train.len() as f64;
        epoch_losses.push(mean);
        if opts.verbose && (epoch % 5 == 0 || epoch + 1 == opts.epochs) {
            bar.suspend(|| println!("   epoch {:>2}: mean loss {mean:.4}", epoch + 1));
        }
    }
    bar.finish_and_clear();
    ensure!(epoch_losses.last() < epoch_losses.first(), "the loss did not fall: {epoch_losses:?}");
    Ok(TrainReport {
        train_accuracy: accuracy(&net, &train)?,
        held_out_accuracy: accuracy(&net, &held_out)?,
        sizes: (train.len(), held_out.len()),
        epoch_losses,
    })
}
