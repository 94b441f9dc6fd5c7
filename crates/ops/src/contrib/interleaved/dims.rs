//! The sizes of one call of an interleaved attention product, read and
//! checked from its input shapes.
//!
//! Projections are sequence-major: `(seq_len, batch, parts·heads·head_dim)`,
//! each head's `parts` chunks of `head_dim` features side by side (query,
//! key, value for self-attention; key, value for encoder-decoder; one chunk
//! for plain queries and for the value products' outputs). Attention maps
//! are batch-major: `(batch·heads, q_len, kv_len)`, attention batch
//! `b·heads + h` holding head `h` of sequence `b`.

use crate::partial_shape::show;
use oxnet_core::shape::Shape;
use oxnet_core::{Attrs, Error, Result};

/// Which of the four operators a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `_contrib_interleaved_matmul_selfatt_qk`.
    SelfAttQk,
    /// `_contrib_interleaved_matmul_selfatt_valatt`.
    SelfAttValAtt,
    /// `_contrib_interleaved_matmul_encdec_qk`.
    EncDecQk,
    /// `_contrib_interleaved_matmul_encdec_valatt`.
    EncDecValAtt,
}

/// The sizes every product, shape rule and gradient of a call works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Dims {
    /// Sequences in the batch.
    pub batch: usize,
    /// Attention heads.
    pub heads: usize,
    /// Features of one head's query, key or value.
    pub head_dim: usize,
    /// Length of the query sequences.
    pub q_len: usize,
    /// Length of the key and value sequences.
    pub kv_len: usize,
}

impl Dims {
    /// `batch·heads`: the number of per-head matrix products.
    pub fn attention_batches(&self) -> usize {
        self.batch * self.heads
    }

    /// `heads·head_dim`: the features of one projection chunk set.
    pub fn proj(&self) -> usize {
        self.heads * self.head_dim
    }

    /// The attention scores' shape `(batch·heads, q_len, kv_len)`.
    pub fn scores_shape(&self) -> Shape {
        Shape::from_slice(&[self.attention_batches(), self.q_len, self.kv_len])
    }

    /// The attended values' shape `(q_len, batch, heads·head_dim)`.
    pub fn values_shape(&self) -> Shape {
        Shape::from_slice(&[self.q_len, self.batch, self.proj()])
    }

    /// The factor `1 / sqrt(head_dim)` applied to the queries (1 when
    /// `head_dim` is 0, where every product is empty).
    pub fn scale(&self) -> f64 {
        if self.head_dim == 0 {
            1.0
        } else {
            1.0 / (self.head_dim as f64).sqrt()
        }
    }
}

impl Kind {
    /// The registered operator name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::SelfAttQk => "_contrib_interleaved_matmul_selfatt_qk",
            Kind::SelfAttValAtt => "_contrib_interleaved_matmul_selfatt_valatt",
            Kind::EncDecQk => "_contrib_interleaved_matmul_encdec_qk",
            Kind::EncDecValAtt => "_contrib_interleaved_matmul_encdec_valatt",
        }
    }

    /// MXNet's argument names, in order.
    pub fn arguments(self) -> &'static [&'static str] {
        match self {
            Kind::SelfAttQk => &["queries_keys_values"],
            Kind::SelfAttValAtt => &["queries_keys_values", "attention"],
            Kind::EncDecQk => &["queries", "keys_values"],
            Kind::EncDecValAtt => &["keys_values", "attention"],
        }
    }

    /// Whether the output is the attention scores (the `qk` products) rather
    /// than attended values.
    pub fn gives_scores(self) -> bool {
        matches!(self, Kind::SelfAttQk | Kind::EncDecQk)
    }

    /// Checks the input shapes (in argument order) against `heads` and
    /// returns the call's sizes.
    pub fn dims(self, heads: usize, shapes: &[&[usize]]) -> Result<Dims> {
        let args = self.arguments();
        if shapes.len() != args.len() {
            return Err(Error::Invalid(format!("expected {} inputs, got {}", args.len(), shapes.len())));
        }
        match self {
            Kind::SelfAttQk | Kind::SelfAttValAtt => {
                let (len, batch, head_dim) = projection(args[0], shapes[0], 3, heads)?;
                let d = Dims { batch, heads, head_dim, q_len: len, kv_len: len };
                if self == Kind::SelfAttValAtt {
                    check_attention(shapes[1], &d, args[0])?;
                }
                Ok(d)
            }
            Kind::EncDecQk => {
                let (q_len, batch, head_dim) = projection(args[0], shapes[0], 1, heads)?;
                let (kv_len, kv_batch, kv_head_dim) = projection(args[1], shapes[1], 2, heads)?;
                if kv_batch != batch {
                    return Err(Error::Shape(format!(
                        "`keys_values` {} has batch {kv_batch} (axis 1) but `queries` {} has batch {batch}",
                        show(shapes[1]),
                        show(shapes[0])
                    )));
                }
                if kv_head_dim != head_dim {
                    return Err(Error::Shape(format!(
                        "`keys_values` {} must have twice the features of `queries` {} on axis 2 \
                         ({} expected, got {})",
                        show(shapes[1]),
                        show(shapes[0]),
                        2 * shapes[0][2],
                        shapes[1][2]
                    )));
                }
                Ok(Dims { batch, heads, head_dim, q_len, kv_len })
            }
            Kind::EncDecValAtt => {
                let (kv_len, batch, head_dim) = projection(args[0], shapes[0], 2, heads)?;
                let q_len = match shapes[1] {
                    [_, q_len, _] => *q_len,
                    other => {
                        return Err(Error::Shape(format!(
                            "`attention` must be 3-d (batch·heads, q_len, kv_len), got shape {}",
                            show(other)
                        )))
                    }
                };
                let d = Dims { batch, heads, head_dim, q_len, kv_len };
                check_attention(shapes[1], &d, args[0])?;
                Ok(d)
            }
        }
    }

    /// The output shape for sizes `d`.
    pub fn out_shape(self, d: &Dims) -> Shape {
        if self.gives_scores() {
            d.scores_shape()
        } else {
            d.values_shape()
        }
    }
}

/// The `heads` attribute, which must be at least 1.
pub(super) fn heads(attrs: &Attrs) -> Result<usize> {
    let h = attrs.int("heads")?;
    if h < 1 {
        return Err(Error::attr("heads", format!("must be at least 1, got {h}")));
    }
    usize::try_from(h).map_err(|_| Error::attr("heads", format!("{h} is too large")))
}

/// Reads a projection `(len, batch, parts·heads·head_dim)` named `arg`;
/// returns `(len, batch, head_dim)`.
fn projection(arg: &str, shape: &[usize], parts: usize, heads: usize) -> Result<(usize, usize, usize)> {
    let width = match parts {
        1 => "heads·head_dim".to_string(),
        p => format!("{p}·heads·head_dim"),
    };
    let &[len, batch, features] = shape else {
        return Err(Error::Shape(format!(
            "`{arg}` must be 3-d (seq_len, batch, {width}), got shape {}",
            show(shape)
        )));
    };
    let per_head = parts * heads;
    if features % per_head != 0 {
        let times = if parts == 1 { String::new() } else { format!("{parts} × ") };
        return Err(Error::Shape(format!(
            "`{arg}` {}: its last axis ({features}) must be {width}, a multiple of \
             {times}heads = {per_head} (heads={heads})",
            show(shape)
        )));
    }
    Ok((len, batch, features / per_head))
}

/// Checks that `attention` is `(batch·heads, q_len, kv_len)` for `d`, whose
/// sizes came from the projection named `from`.
fn check_attention(shape: &[usize], d: &Dims, from: &str) -> Result<()> {
    let want = d.scores_shape();
    if shape != want.as_slice() {
        return Err(Error::Shape(format!(
            "`attention` has shape {}, expected (batch·heads, q_len, kv_len) = {} \
             for `{from}` with batch {} and heads={}",
            show(shape),
            show(&want),
            d.batch,
            d.heads
        )));
    }
    Ok(())
}
