//! Trains the character-level LSTM language model of
//! [`oxnet_tour::char_lm`] for a minute (`--seconds N` to change), showing
//! the perplexity as it falls, then prints a sampled sentence.
//!
//! `cargo run --release -p oxnet-tour --bin char_lm`

use anyhow::{Context, Result};
use oxnet_tour::char_lm::{train, CharLmOptions};
use std::time::Duration;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let seconds = match args.iter().position(|a| a == "--seconds") {
        Some(i) => {
            args.get(i + 1).context("--seconds needs a number")?.parse::<f64>().context("--seconds")?
        }
        None => 60.0,
    };
    println!("A 2-layer LSTM learns text from a small grammar, one character at a time ({seconds} s):");
    let report = train(&CharLmOptions { budget: Duration::from_secs_f64(seconds), ..Default::default() })?;
    let (first, last) = (report.perplexities.first(), report.perplexities.last());
    if let (Some(first), Some(last)) = (first, last) {
        println!("{} updates; perplexity {first:.2} -> {last:.2}", report.updates);
    }
    println!("sample: {}", report.sample);
    Ok(())
}
