//! The Rust character model learns the grammar's text.

use oxnet_tour::char_lm::{grammar_words, train, CharLmOptions};

#[test]
fn perplexity_falls_and_the_sample_uses_the_grammars_words() {
    let opts = CharLmOptions { max_updates: 150, progress: false, ..Default::default() };
    let report = train(&opts).unwrap();
    assert_eq!(report.updates, 150);
    let (first, last) = (report.perplexities[0], *report.perplexities.last().unwrap());
    eprintln!("perplexity {first} -> {last}: {}", report.sample);
    assert!(first > 5.0 && last < 2.0, "perplexity {first} -> {last}");
    assert!(report.sample.starts_with("the "));
    let words = grammar_words();
    let sampled: Vec<&str> = report.sample.split_whitespace().map(|w| w.trim_end_matches('.')).collect();
    let known = sampled[..sampled.len() - 1].iter().filter(|w| words.contains(w)).count();
    assert!(known * 3 >= (sampled.len() - 1) * 2, "{}", report.sample);
}
