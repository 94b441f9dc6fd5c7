//! The oxnet tour: the seeds' custom operators written in Rust, and a
//! network built with oxnet-nn around them, trained on the UCI digits.
//!
//! - `sigmoid` (seeds 001/003): a parameter-less operator.
//! - `dense` (seeds 001/003): `data · weightᵀ + bias` with a constant `bias`
//!   attribute that arrives as a string, as in the reference.
//! - `softmax_label` (seed 000): softmax forward; its backward is the
//!   gradient of the cross-entropy loss with respect to the logits,
//!   `softmax(x) - one_hot(label)`, so it needs no output gradient.
//!
//! Each works through `Custom(op_type=...)`, differentiates with autograd,
//! and passes the op checker. [`train`] puts `dense` and `sigmoid` in an
//! oxnet-nn network ([`oxnet_nn::layers::CustomLayer`]), hybridizes it and
//! trains it on the 8×8 handwritten digits ([`digits`]). [`char_lm`] trains
//! a 2-layer LSTM character model (`cargo run --release -p oxnet-tour --bin
//! char_lm`).

pub mod char_lm;
pub mod data;
pub mod digits;
pub mod seed_ops;
pub mod train;
