//! The oxnet tour: define the seeds' custom operators in Rust, check their
//! gradients numerically, then train a network built with oxnet-nn around
//! two of them on the UCI handwritten digits and report held-out accuracy.
//!
//! Run with `cargo run --release -p oxnet-tour` (`--quick` for a short run).

use anyhow::{ensure, Context, Result};
use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, random, AttrValue, DType, NDArray, Req};
use oxnet_tour::seed_ops;
use oxnet_tour::train::{self, TrainOptions};

fn custom(inputs: &[&NDArray], op_type: &str, extra: &[(&str, AttrValue)]) -> oxnet_core::Result<NDArray> {
    let mut attrs = vec![("op_type", AttrValue::from(op_type))];
    attrs.extend(extra.iter().cloned());
    invoke1("Custom", inputs, &attrs)
}

/// Cross-entropy of softmax probabilities `p` (N, K) against float labels.
fn cross_entropy(p: &NDArray, labels: &NDArray) -> Result<f64> {
    let p = p.to_vec::<f64>()?;
    let labels = labels.to_vec::<f64>()?;
    let k = p.len() / labels.len();
    Ok(labels.iter().enumerate().map(|(i, l)| -(p[i * k + *l as usize].max(1e-12)).ln()).sum::<f64>()
        / labels.len() as f64)
}

fn check_gradients() -> Result<()> {
    println!("1. Checking the custom operators' gradients against central differences (float64)");
    let x = NDArray::random_uniform(-2.0, 2.0, &[3, 4], DType::F64)?;
    let report = OpChecker::new("Custom", &[x]).attr("op_type", "sigmoid").run().context("sigmoid")?;
    println!(
        "   sigmoid        ok: {} gradient entries, max |error| {:.2e}",
        report.grad_entries, report.max_grad_error
    );

    let data = NDArray::random_uniform(-1.0, 1.0, &[4, 3], DType::F64)?;
    let weight = NDArray::random_uniform(-1.0, 1.0, &[5, 3], DType::F64)?;
    let report = OpChecker::new("Custom", &[data, weight])
        .attr("op_type", "dense")
        .attr("bias", "0.1")
        .run()
        .context("dense")?;
    println!(
        "   dense(bias=0.1) ok: {} gradient entries, max |error| {:.2e}",
        report.grad_entries, report.max_grad_error
    );

    // Softmax's backward is the gradient of the cross-entropy loss, so compare
    // it with central differences of that loss.
    let logits = NDArray::random_uniform(-2.0, 2.0, &[4, 3], DType::F64)?;
    let labels = NDArray::from_vec(vec![0.0f64, 2.0, 1.0, 2.0], &[4])?;
    logits.attach_grad(Req::Write)?;
    let out = {
        let _r = autograd::record();
        custom(&[&logits, &labels], "softmax_label", &[])?
    };
    out.backward()?;
    let analytic = logits.grad().context("gradient")?.to_vec::<f64>()?;
    let base = logits.to_vec::<f64>()?;
    let loss = |v: Vec<f64>| -> Result<f64> {
        let p = custom(&[&NDArray::from_vec(v, &[4, 3])?, &labels], "softmax_label", &[])?;
        Ok(cross_entropy(&p, &labels)? * 4.0)
    };
    let eps = 1e-6;
    let mut max_err = 0.0f64;
    for j in 0..base.len() {
        let (mut plus, mut minus) = (base.clone(), base.clone());
        plus[j] += eps;
        minus[j] -= eps;
        let numeric = (loss(plus)? - loss(minus)?) / (2.0 * eps);
        max_err = max_err.max((numeric - analytic[j]).abs());
    }
    ensure!(max_err < 1e-6, "softmax gradient differs from central differences by {max_err:e}");
    println!("   softmax_label  ok: 12 gradient entries, max |error| {max_err:.2e}");
    Ok(())
}

fn train_digits(quick: bool) -> Result<()> {
    let opts = TrainOptions::tour(quick);
    println!(
        "\n2. Training on the UCI 8x8 handwritten digits (data/digits.csv.gz, 1,797 images, 80/20 split):\n   \
         Conv2D({}, 3x3) -> BatchNorm -> ReLU -> MaxPool2D(2x2) -> Custom(dense, {} units) -> Custom(sigmoid)\n   \
         -> Dense(10), hybridized into one cached graph;\n   \
         softmax cross-entropy, SGD (learning rate {}, momentum {}), batches of {}, {} epochs",
        opts.filters, opts.hidden, opts.learning_rate, opts.momentum, opts.batch_size, opts.epochs
    );
    let start = std::time::Instant::now();
    let report = train::train(&opts)?;
    let (first, last) = (report.epoch_losses[0], report.epoch_losses[report.epoch_losses.len() - 1]);
    println!("   loss fell from {first:.4} to {last:.4} in {:.1} s", start.elapsed().as_secs_f64());
    println!(
        "   accuracy: {:.1}% on the {} training images, {:.1}% on the {} held-out images",
        100.0 * report.train_accuracy,
        report.sizes.0,
        100.0 * report.held_out_accuracy,
        report.sizes.1
    );
    Ok(())
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    println!("oxnet tour: custom operators in Rust\n");
    random::seed(7);
    seed_ops::register_all();
    check_gradients()?;
    train_digits(quick)?;
    println!(
        "\nDone: custom operators defined, checked, and trained like built-ins inside an oxnet-nn network."
    );
    Ok(())
}
