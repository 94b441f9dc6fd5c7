//! A character-level language model in Rust: a 2-layer LSTM
//! ([`oxnet_nn::layers::Rnn`]) over one-hot characters and a `Dense` read-out,
//! trained with truncated backpropagation through time and Adam on text
//! generated from a small English grammar (the same grammar as
//! `examples/python/char_lm.py`); the perplexity falls from about the
//! alphabet's size towards one, and a sampled sentence follows the grammar.

use crate::digits::Rng;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oxnet_core::{autograd, invoke1, AttrValue, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Xavier;
use oxnet_nn::layers::{Dense, Rnn};
use oxnet_nn::loss::{Loss, SoftmaxCrossEntropyLoss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;
use std::time::{Duration, Instant};

const SUBJECTS: [&str; 7] =
    ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher", "her brother"];
const VERBS: [&str; 7] = ["sees", "likes", "finds", "follows", "paints", "calls", "visits"];
const OBJECTS: [&str; 6] =
    ["the river", "a red house", "the green hill", "an apple", "the market", "a quiet town"];
const ENDINGS: [&str; 5] = ["", " today", " at night", " in the morning", " again"];

/// Every word the grammar uses.
pub fn grammar_words() -> Vec<&'static str> {
    SUBJECTS.iter().chain(&VERBS).chain(&OBJECTS).chain(&ENDINGS).flat_map(|s| s.split_whitespace()).collect()
}

/// Sentences from the grammar until the text has `chars` characters.
pub fn corpus(chars: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
    let mut text = String::new();
    while text.len() < chars {
        let (s, v, o, e) =
            (pick(SUBJECTS.len()), pick(VERBS.len()), pick(OBJECTS.len()), pick(ENDINGS.len()));
        text.push_str(&format!("{} {} {}{}. ", SUBJECTS[s], VERBS[v], OBJECTS[o], ENDINGS[e]));
    }
    text.truncate(chars);
    text
}

/// How long and how to train.
#[derive(Debug, Clone)]
pub struct CharLmOptions {
    /// Stop after this long...
    pub budget: Duration,
    /// ...or after this many updates, whichever comes first.
    pub max_updates: usize,
    /// Parallel streams through the text.
    pub batch: usize,
    /// Steps of backpropagation through time.
    pub steps: usize,
    /// LSTM units per layer.
    pub hidden: usize,
    /// Show a progress bar.
    pub progress: bool,
    /// Seed of the text, the initial weights and the sampling.
    pub seed: u64,
}

impl Default for CharLmOptions {
    fn default() -> Self {
        CharLmOptions {
            budget: Duration::from_secs(60),
            max_updates: usize::MAX,
            batch: 32,
            steps: 35,
            hidden: 128,
            progress: true,
            seed: 0,
        }
    }
}

/// What training gave: the perplexity every 25 updates and a sample.
#[derive(Debug, Clone)]
pub struct CharLmReport {
    /// Perplexity over each window of 25 updates.
    pub perplexities: Vec<f64>,
    /// Updates made.
    pub updates: usize,
    /// Text the model wrote after "the ".
    pub sample: String,
}

/// The model: a 2-layer LSTM over one-hot characters, then `Dense` over the
/// vocabulary at every step.
struct Model {
    lstm: Rnn,
    out: Dense,
    vocab: usize,
}

impl Model {
    /// Logits (steps, batch, vocab) and the final states, from character ids
    /// (steps, batch) and the initial states.
    fn run(&self, ids: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let x = invoke1("one_hot", &[ids], &[("depth", AttrValue::Int(self.vocab as i64))])?;
        let mut inputs = vec![x];
        inputs.extend(states.iter().cloned());
        let mut outs = self.lstm.forward(&inputs)?;
        let states = outs.split_off(1);
        Ok((self.out.call(&outs[0])?, states))
    }
}

/// Trains the model on the grammar's text and samples from it.
pub fn train(opts: &CharLmOptions) -> Result<CharLmReport> {
    oxnet_core::random::seed(opts.seed);
    let text = corpus(60_000, opts.seed);
    let mut vocab: Vec<char> = text.chars().collect();
    vocab.sort_unstable();
    vocab.dedup();
    let ids: Vec<f32> = text.chars().map(|c| vocab.binary_search(&c).unwrap_or(0) as f32).collect();
    let model = Model {
        lstm: Rnn::lstm(opts.hidden).num_layers(2).input_size(vocab.len()),
        out: Dense::new(vocab.len()).flatten(false),
        vocab: vocab.len(),
    };
    let init = shared_init(Xavier::default());
    model.lstm.initialize(&init)?;
    model.out.initialize(&init)?;
    let mut params = model.lstm.collect_params()?;
    params.extend(&model.out.collect_params()?)?;
    let mut trainer = Trainer::from_name(&params, "adam", &[("learning_rate", "0.01")])?;
    let loss_fn = SoftmaxCrossEntropyLoss::new();

    // `batch` streams through the text, each cut into windows of `steps`
    let (b, t) = (opts.batch, opts.steps);
    let per_stream = (ids.len() - 1) / b;
    let column = |offset: usize, len: usize, shift: usize| -> Result<NDArray> {
        let mut v = Vec::with_capacity(len * b);
        for s in 0..len {
            for k in 0..b {
                v.push(ids[k * per_stream + offset + s + shift]);
            }
        }
        Ok(NDArray::from_vec(v, &[len, b])?)
    };
    let bar = if opts.progress {
        ProgressBar::new(opts.budget.as_secs().max(1))
    } else {
        ProgressBar::with_draw_target(Some(opts.budget.as_secs().max(1)), ProgressDrawTarget::hidden())
    };
    bar.set_style(ProgressStyle::with_template("   {bar:30} {elapsed:>4} / {len}s  {msg}")?);
    let start = Instant::now();
    let (mut updates, mut window, mut perplexities) = (0usize, Vec::new(), Vec::new());
    'training: loop {
        let mut states = model.lstm.begin_state(b)?;
        for offset in (0..per_stream - t).step_by(t) {
            let (x, y) = (column(offset, t, 0)?, column(offset, t, 1)?);
            states = states.iter().map(NDArray::detach).collect();
            let loss = {
                let _r = autograd::record();
                let (logits, next) = model.run(&x, &states)?;
                states = next;
                let flat = invoke1(
                    "Reshape",
                    &[&logits],
                    &[("shape", AttrValue::Ints(vec![-1, vocab.len() as i64]))],
                )?;
                let labels = invoke1("Reshape", &[&y], &[("shape", AttrValue::Ints(vec![-1]))])?;
                loss_fn.loss(&flat, &labels)?
            };
            loss.backward()?;
            trainer.step(b * t)?;
            let l = loss.to_vec::<f64>()?;
            window.push(l.iter().sum::<f64>() / l.len() as f64);
            updates += 1;
            if updates % 25 == 0 {
                perplexities.push((window.iter().sum::<f64>() / window.len() as f64).exp());
                window.clear();
                bar.set_position(start.elapsed().as_secs());
                bar.set_message(format!("perplexity {:.3}", perplexities.last().unwrap_or(&f64::NAN)));
            }
            if updates >= opts.max_updates || start.elapsed() >= opts.budget {
                break 'training;
            }
        }
    }
    bar.finish_and_clear();
    let sample = sample(&model, &vocab, "the ", 60, opts.seed)?;
    Ok(CharLmReport { perplexities, updates, sample })
}

/// Continues `start` for `length` characters, each drawn from the model's
/// distribution.
fn sample(model: &Model, vocab: &[char], start: &str, length: usize, seed: u64) -> Result<String> {
    let _predict = autograd::predict_mode();
    let mut rng = Rng::new(seed ^ 0x5a3f1e);
    let mut states = model.lstm.begin_state(1)?;
    let mut text = start.to_string();
    let mut logits = None;
    let feed = |c: char, states: &mut Vec<NDArray>| -> Result<NDArray> {
        let id = vocab.binary_search(&c).unwrap_or(0) as f32;
        let (l, next) = model.run(&NDArray::from_vec(vec![id], &[1, 1])?, states)?;
        *states = next;
        Ok(l)
    };
    for c in start.chars() {
        logits = Some(feed(c, &mut states)?);
    }
    for _ in 0..length {
        let l = logits.take().expect("the start text is not empty").to_vec::<f64>()?;
        let top = l.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = l.iter().map(|v| (v - top).exp()).collect();
        let uniform = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut u = uniform * weights.iter().sum::<f64>();
        let mut pick = weights.len() - 1;
        for (k, w) in weights.iter().enumerate() {
            if u < *w {
                pick = k;
                break;
            }
            u -= w;
        }
        text.push(vocab[pick]);
        logits = Some(feed(vocab[pick], &mut states)?);
    }
    Ok(text)
}
