//! The oxnet tour: define the seeds' custom operators in Rust, check their
//! gradients numerically, then train a small softmax classifier built from
//! them on generated data.
//!
//! Run with `cargo run --release -p oxnet-tour` (`--quick` for a short run).

use anyhow::{ensure, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, random, AttrValue, DType, NDArray, Req};
use oxnet_tour::{data, seed_ops};

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

fn train(quick: bool) -> Result<()> {
    let (n, dim, classes, hidden) = (600, 4, 3, 16);
    let epochs = if quick { 20 } else { 150 };
    let lr = 0.5;
    println!("\n2. Training sigmoid(dense) -> dense -> softmax on {n} generated samples, {classes} classes");
    let (x, y) = data::blobs(n, dim, classes, 0.7)?;
    let w1 = NDArray::random_normal(0.0, 0.5, &[hidden, dim], DType::F32)?;
    let w2 = NDArray::random_normal(0.0, 0.5, &[classes, hidden], DType::F32)?;
    for w in [&w1, &w2] {
        w.attach_grad(Req::Write)?;
    }
    let bar = ProgressBar::new(epochs as u64);
    bar.set_style(ProgressStyle::with_template("   {bar:30} {pos:>3}/{len} epochs  {msg}")?);
    let mut first_loss = None;
    let mut last = (0.0, 0.0);
    for epoch in 0..epochs {
        let probs = {
            let _r = autograd::record();
            let h = custom(&[&x, &w1], "dense", &[("bias", "0.0".into())])?;
            let a = custom(&[&h], "sigmoid", &[])?;
            let logits = custom(&[&a, &w2], "dense", &[("bias", "0.0".into())])?;
            custom(&[&logits, &y], "softmax_label", &[])?
        };
        probs.backward()?;
        for w in [&w1, &w2] {
            let step =
                invoke1("_mul_scalar", &[&w.grad().context("grad")?], &[("scalar", (lr / n as f64).into())])?;
            w.assign_from(&invoke1("elemwise_sub", &[w, &step], &[])?)?;
        }
        let loss = cross_entropy(&probs, &y)?;
        let predicted = invoke1("argmax", &[&probs], &[("axis", 1i64.into())])?.to_vec::<f64>()?;
        let labels = y.to_vec::<f64>()?;
        let acc = predicted.iter().zip(&labels).filter(|(p, l)| p == l).count() as f64 / n as f64;
        first_loss.get_or_insert(loss);
        last = (loss, acc);
        bar.set_message(format!("loss {loss:.4}  accuracy {:.1}%", 100.0 * acc));
        if epoch % (epochs / 10).max(1) == 0 {
            bar.suspend(|| println!("   epoch {epoch:>3}: loss {loss:.4}  accuracy {:.1}%", 100.0 * acc));
        }
        bar.inc(1);
    }
    bar.finish();
    let first = first_loss.unwrap_or(0.0);
    println!("   final: loss {:.4} (from {first:.4}), accuracy {:.1}%", last.0, 100.0 * last.1);
    ensure!(last.0 < first, "the loss did not fall");
    Ok(())
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    println!("oxnet tour: custom operators in Rust\n");
    random::seed(7);
    seed_ops::register_all();
    check_gradients()?;
    train(quick)?;
    println!("\nDone: three custom operators defined, checked and trained like built-ins.");
    Ok(())
}
