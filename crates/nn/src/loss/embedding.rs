//! Losses on embeddings that compare three arrays: the triplet loss and the
//! cosine embedding loss (Gluon's `TripletLoss`, `CosineEmbeddingLoss`).
//!
//! They do not fit the two-input [`Loss`](super::Loss) trait: each has
//! `loss(a, b, c)` and `loss_weighted(a, b, c, sample_weight)` methods, and
//! as blocks they take three inputs and optionally a fourth,
//! `sample_weight`. As in MXNet, neither averages: the result holds one value
//! per sample (before `sample_weight` broadcasts it) and the global weight.

use super::{like, op, scalar, Base};
use crate::block::{in_block, Block};
use oxnet_core::{AttrValue, Error, NDArray, Result};

/// Builders for `weight` / `batch_axis` ([`loss_builders`]), the weighted three-input call and
/// the [`Block`] impl of a three-input loss with a `compute(a, b, c)`.
macro_rules! triple_loss_block {
    ($ty:ident, $kind:literal, $a:literal, $b:literal, $c:literal) => {
        loss_builders!($ty);

        impl $ty {
            #[doc = concat!("The loss per sample of `", $a, "`, `", $b, "`, `", $c, "`.")]
            pub fn loss(&self, a: &NDArray, b: &NDArray, c: &NDArray) -> Result<NDArray> {
                self.loss_weighted(a, b, c, None)
            }

            /// The loss per sample, times `sample_weight` (broadcast against it)
            /// when given.
            pub fn loss_weighted(
                &self,
                a: &NDArray,
                b: &NDArray,
                c: &NDArray,
                sample_weight: Option<&NDArray>,
            ) -> Result<NDArray> {
                let l = self.compute(a, b, c).map_err(|e| in_block(e, self.name(), $kind))?;
                self.base.weigh(l, sample_weight).map_err(|e| in_block(e, self.name(), $kind))
            }
        }

        impl Block for $ty {
            fn prefix(&self) -> &str {
                &self.base.prefix
            }

            #[doc = concat!("Inputs `", $a, "`, `", $b, "`, `", $c, "` and optionally `sample_weight`.")]
            fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
                match inputs {
                    [a, b, c] => Ok(vec![self.loss_weighted(a, b, c, None)?]),
                    [a, b, c, sw] => Ok(vec![self.loss_weighted(a, b, c, Some(sw))?]),
                    _ => Err(Error::Invalid(format!(
                        "loss `{}` takes {}, {}, {} and optionally sample_weight; got {} inputs",
                        self.name(),
                        $a,
                        $b,
                        $c,
                        inputs.len()
                    ))),
                }
            }
        }
    };
}

/// Triplet loss (Gluon's `TripletLoss`): per sample,
/// `max(0, Σ (positive - pred)² - Σ (negative - pred)² + margin)`, the sums
/// over every axis but the batch axis. `positive` and `negative` are
/// reshaped like `pred`.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::loss::TripletLoss;
///
/// let pred = NDArray::from_vec(vec![0.0f32, 0.0], &[1, 2]).unwrap();
/// let pos = NDArray::from_vec(vec![1.0f32, 0.0], &[1, 2]).unwrap();
/// let neg = NDArray::from_vec(vec![0.0f32, 1.0], &[1, 2]).unwrap();
/// // 1 - 1 + margin 1
/// let l = TripletLoss::new(1.0).loss(&pred, &pos, &neg).unwrap();
/// assert_eq!(l.to_vec::<f32>().unwrap(), vec![1.0]);
/// ```
#[derive(Debug, Clone)]
pub struct TripletLoss {
    base: Base,
    margin: f64,
}

impl TripletLoss {
    /// With `margin` (Gluon's default is 1), no weight, batch axis 0.
    pub fn new(margin: f64) -> TripletLoss {
        TripletLoss { base: Base::new("tripletloss", None), margin }
    }

    fn compute(&self, pred: &NDArray, positive: &NDArray, negative: &NDArray) -> Result<NDArray> {
        let dp = op("square", &[&op("elemwise_sub", &[&like(positive, pred)?, pred], &[])?], &[])?;
        let dn = op("square", &[&op("elemwise_sub", &[&like(negative, pred)?, pred], &[])?], &[])?;
        let diff = op("elemwise_sub", &[&dp, &dn], &[])?;
        let per_sample = op(
            "sum",
            &[&diff],
            &[("axis", AttrValue::Ints(vec![self.base.batch_axis])), ("exclude", true.into())],
        )?;
        op("relu", &[&scalar("_plus_scalar", &per_sample, self.margin)?], &[])
    }
}

impl Default for TripletLoss {
    fn default() -> TripletLoss {
        TripletLoss::new(1.0)
    }
}
triple_loss_block!(TripletLoss, "TripletLoss", "pred", "positive", "negative");

/// Cosine embedding loss (Gluon's `CosineEmbeddingLoss`): with
/// `c = cos(input1, input2)` along the last axis, `1 - c` where the label is
/// 1 and `max(0, c - margin)` where it is -1 (0 for other labels). `input1`
/// is reshaped like `input2`; the label holds one value per row; the result
/// has shape `(rows, 1)`, as MXNet's does. The product of the norms is
/// clipped below at 1e-12.
#[derive(Debug, Clone)]
pub struct CosineEmbeddingLoss {
    base: Base,
    margin: f64,
}

impl CosineEmbeddingLoss {
    /// With `margin` (Gluon's default is 0), no weight.
    pub fn new(margin: f64) -> CosineEmbeddingLoss {
        CosineEmbeddingLoss { base: Base::new("cosineembeddingloss", None), margin }
    }

    fn compute(&self, input1: &NDArray, input2: &NDArray, label: &NDArray) -> Result<NDArray> {
        let column = |x: &NDArray| op("reshape", &[x], &[("shape", AttrValue::Ints(vec![-1, 1]))]);
        let last = [("axis", AttrValue::Ints(vec![-1]))];
        let x = like(input1, input2)?;
        let label = column(label)?;
        let dot = column(&op("sum", &[&op("elemwise_mul", &[&x, input2], &[])?], &last)?)?;
        let nx = column(&op("norm", &[&x], &last)?)?;
        let ny = column(&op("norm", &[input2], &last)?)?;
        let denom = scalar("_maximum_scalar", &op("elemwise_mul", &[&nx, &ny], &[])?, 1e-12)?;
        let cos = op("elemwise_div", &[&dot, &denom], &[])?;
        let is_pos = scalar("_equal_scalar", &label, 1.0)?;
        let is_neg = scalar("_equal_scalar", &label, -1.0)?;
        let similar = op("broadcast_mul", &[&scalar("_rminus_scalar", &cos, 1.0)?, &is_pos], &[])?;
        let apart = op("broadcast_mul", &[&scalar("_minus_scalar", &cos, self.margin)?, &is_neg], &[])?;
        op("broadcast_add", &[&similar, &op("relu", &[&apart], &[])?], &[])
    }
}

impl Default for CosineEmbeddingLoss {
    fn default() -> CosineEmbeddingLoss {
        CosineEmbeddingLoss::new(0.0)
    }
}
triple_loss_block!(CosineEmbeddingLoss, "CosineEmbeddingLoss", "input1", "input2", "label");
