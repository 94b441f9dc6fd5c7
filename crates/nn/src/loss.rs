//! Losses with MXNet 1.x Gluon's formulas: each returns one value per
//! sample, the element-wise loss times the optional `weight` (and
//! `sample_weight`, a third input broadcast against it), averaged over every
//! axis but the batch axis.
//!
//! - [`L2Loss`]: `weight/2 · (label - pred)²` (weight 1 by default);
//! - [`L1Loss`]: `weight · |label - pred|`;
//! - [`SoftmaxCrossEntropyLoss`]: `-log softmax(pred)[label]` for sparse
//!   (class index) labels, `-Σ label · log softmax(pred)` for dense ones;
//! - [`SigmoidBinaryCrossEntropyLoss`]: `max(x, 0) - x·z + log(1 + exp(-|x|))`
//!   on logits, or `-(z·log p + (1 - z)·log(1 - p))` on probabilities;
//! - [`HuberLoss`]: `|d| - rho/2` where `|d| > rho`, `d²/(2·rho)` elsewhere;
//! - [`HingeLoss`], [`SquaredHingeLoss`]: `max(0, margin - pred·label)` (squared);
//! - [`LogisticLoss`]: `log(1 + exp(-pred·label))` for signed or binary labels;
//! - [`KLDivLoss`]: `label · (log(label + 1e-12) - pred)`;
//! - [`PoissonNLLLoss`]: `exp(pred) - target·pred` (or on rates), averaged
//!   over every element;
//! - [`TripletLoss`]: `max(0, ‖positive - pred‖² - ‖negative - pred‖² + margin)`;
//! - [`CosineEmbeddingLoss`]: `1 - cos(x1, x2)` for label 1,
//!   `max(0, cos(x1, x2) - margin)` for label -1;
//! - [`CTCLoss`]: connectionist temporal classification, `-log p(label | pred)`
//!   per example (not averaged), with optional per-example lengths.
//!
//! Losses are blocks (inputs `pred`, `label` and optionally `sample_weight`),
//! so they can sit inside a hybridized graph; [`Loss::loss`] is the direct
//! call. [`TripletLoss`] and [`CosineEmbeddingLoss`] take three arrays: they
//! have their own `loss` / `loss_weighted` methods instead of the [`Loss`]
//! trait, and their blocks take three inputs (and optionally `sample_weight`).
//!
//! ```
//! use oxnet_core::NDArray;
//! use oxnet_nn::loss::{L2Loss, Loss};
//!
//! let pred = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let label = NDArray::from_vec(vec![1.0f32, 0.0, 3.0, 2.0], &[2, 2]).unwrap();
//! // per sample: mean(0.5 · [0, 4]) = 1, mean(0.5 · [0, 4]) = 1
//! assert_eq!(L2Loss::new().loss(&pred, &label).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
//! ```

use crate::block::{in_block, Block};
use crate::naming::unique_prefix;
use oxnet_core::{invoke1, AttrValue, Error, NDArray, Result};

pub use divergence::{KLDivLoss, PoissonNLLLoss};
pub use embedding::{CosineEmbeddingLoss, TripletLoss};
pub use margin::{HingeLoss, LabelFormat, LogisticLoss, SquaredHingeLoss};
pub use sequence::{CTCLoss, SequenceLayout};

fn op(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<NDArray> {
    invoke1(name, inputs, attrs)
}

fn scalar(name: &str, x: &NDArray, s: f64) -> Result<NDArray> {
    invoke1(name, &[x], &[("scalar", s.into())])
}

/// What every loss has: a name, a weight and the batch axis.
#[derive(Debug, Clone)]
struct Base {
    prefix: String,
    weight: Option<f64>,
    batch_axis: i64,
    /// Average over every element rather than per sample.
    mean_all: bool,
}

impl Base {
    fn new(hint: &str, weight: Option<f64>) -> Base {
        Base { prefix: unique_prefix(hint), weight, batch_axis: 0, mean_all: false }
    }

    /// Weighting only (sample weight, then the global weight).
    fn weigh(&self, loss: NDArray, sample_weight: Option<&NDArray>) -> Result<NDArray> {
        let mut loss = loss;
        if let Some(sw) = sample_weight {
            loss = op("broadcast_mul", &[&loss, sw], &[])?;
        }
        if let Some(w) = self.weight {
            loss = scalar("_mul_scalar", &loss, w)?;
        }
        Ok(loss)
    }

    /// Weighting and the per-sample mean (or the mean of all elements).
    fn finish(&self, loss: NDArray, sample_weight: Option<&NDArray>) -> Result<NDArray> {
        let loss = self.weigh(loss, sample_weight)?;
        if self.mean_all {
            return op("mean", &[&loss], &[]);
        }
        op("mean", &[&loss], &[("axis", AttrValue::Ints(vec![self.batch_axis])), ("exclude", true.into())])
    }
}

/// A loss: one value per sample from predictions and labels.
pub trait Loss: Block {
    /// The element-wise loss before weighting and averaging.
    fn elementwise(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray>;

    /// The loss per sample (`sample_weight` broadcast against the
    /// element-wise loss).
    fn loss_weighted(
        &self,
        pred: &NDArray,
        label: &NDArray,
        sample_weight: Option<&NDArray>,
    ) -> Result<NDArray>;

    /// The loss per sample.
    fn loss(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        self.loss_weighted(pred, label, None)
    }
}

/// The `weight` and `batch_axis` builders every loss has.
macro_rules! loss_builders {
    ($ty:ident) => {
        impl $ty {
            /// Sets the global weight the loss is multiplied by.
            pub fn weight(mut self, weight: f64) -> $ty {
                self.base.weight = Some(weight);
                self
            }

            /// Sets the axis that indexes samples (0 by default).
            pub fn batch_axis(mut self, axis: i64) -> $ty {
                self.base.batch_axis = axis;
                self
            }
        }
    };
}

macro_rules! loss_block {
    ($ty:ident, $kind:literal) => {
        loss_builders!($ty);

        impl Loss for $ty {
            fn elementwise(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
                self.compute(pred, label)
            }

            fn loss_weighted(
                &self,
                pred: &NDArray,
                label: &NDArray,
                sample_weight: Option<&NDArray>,
            ) -> Result<NDArray> {
                let l = self.compute(pred, label).map_err(|e| in_block(e, self.name(), $kind))?;
                self.base.finish(l, sample_weight).map_err(|e| in_block(e, self.name(), $kind))
            }
        }

        impl Block for $ty {
            fn prefix(&self) -> &str {
                &self.base.prefix
            }

            /// Inputs `pred`, `label` and optionally `sample_weight`.
            fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
                match inputs {
                    [pred, label] => Ok(vec![self.loss_weighted(pred, label, None)?]),
                    [pred, label, sw] => Ok(vec![self.loss_weighted(pred, label, Some(sw))?]),
                    _ => Err(Error::Invalid(format!(
                        "loss `{}` takes pred, label and optionally sample_weight; got {} inputs",
                        self.name(),
                        inputs.len()
                    ))),
                }
            }
        }
    };
}

/// `pred` as log-probabilities: itself when `from_logits`, else its
/// log-softmax along `axis`.
fn log_probs(pred: &NDArray, from_logits: bool, axis: i64) -> Result<NDArray> {
    if from_logits {
        Ok(pred.clone())
    } else {
        op("log_softmax", &[pred], &[("axis", axis.into())])
    }
}

/// `label` reshaped to `pred`'s shape (MXNet's `_reshape_like`).
fn like(label: &NDArray, pred: &NDArray) -> Result<NDArray> {
    if label.shape() == pred.shape() {
        return Ok(label.clone());
    }
    op("reshape_like", &[label, pred], &[])
}

/// Squared error: `weight/2 · (label - pred)²` (Gluon's `L2Loss`).
#[derive(Debug, Clone)]
pub struct L2Loss {
    base: Base,
}

impl L2Loss {
    /// With weight 1 and batch axis 0.
    pub fn new() -> L2Loss {
        L2Loss { base: Base::new("l2loss", Some(1.0)) }
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let d = op("elemwise_sub", &[&like(label, pred)?, pred], &[])?;
        let sq = op("square", &[&d], &[])?;
        // the weight's half; `finish` applies the weight itself
        scalar("_mul_scalar", &sq, 0.5)
    }
}

impl Default for L2Loss {
    fn default() -> L2Loss {
        L2Loss::new()
    }
}
loss_block!(L2Loss, "L2Loss");

/// Absolute error: `weight · |label - pred|` (Gluon's `L1Loss`).
#[derive(Debug, Clone)]
pub struct L1Loss {
    base: Base,
}

impl L1Loss {
    /// With weight 1 and batch axis 0.
    pub fn new() -> L1Loss {
        L1Loss { base: Base::new("l1loss", Some(1.0)) }
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        op("abs", &[&op("elemwise_sub", &[&like(label, pred)?, pred], &[])?], &[])
    }
}

impl Default for L1Loss {
    fn default() -> L1Loss {
        L1Loss::new()
    }
}
loss_block!(L1Loss, "L1Loss");

/// Softmax cross-entropy (Gluon's `SoftmaxCrossEntropyLoss`): along `axis`
/// (-1 by default), with class-index labels (`sparse_label`, the default)
/// or a distribution per sample; `from_logits` when `pred` already holds
/// log-probabilities.
#[derive(Debug, Clone)]
pub struct SoftmaxCrossEntropyLoss {
    base: Base,
    axis: i64,
    sparse_label: bool,
    from_logits: bool,
}

impl SoftmaxCrossEntropyLoss {
    /// Axis -1, sparse labels, `pred` as raw scores, no weight.
    pub fn new() -> SoftmaxCrossEntropyLoss {
        SoftmaxCrossEntropyLoss {
            base: Base::new("softmaxcrossentropyloss", None),
            axis: -1,
            sparse_label: true,
            from_logits: false,
        }
    }

    /// The class axis.
    pub fn axis(mut self, axis: i64) -> SoftmaxCrossEntropyLoss {
        self.axis = axis;
        self
    }

    /// Whether labels are class indices (else distributions like `pred`).
    pub fn sparse_label(mut self, sparse: bool) -> SoftmaxCrossEntropyLoss {
        self.sparse_label = sparse;
        self
    }

    /// Whether `pred` already holds log-probabilities.
    pub fn from_logits(mut self, from_logits: bool) -> SoftmaxCrossEntropyLoss {
        self.from_logits = from_logits;
        self
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let logp = log_probs(pred, self.from_logits, self.axis)?;
        let picked = if self.sparse_label {
            op("pick", &[&logp, label], &[("axis", self.axis.into()), ("keepdims", true.into())])?
        } else {
            let prod = op("elemwise_mul", &[&logp, &like(label, &logp)?], &[])?;
            op("sum", &[&prod], &[("axis", AttrValue::Ints(vec![self.axis])), ("keepdims", true.into())])?
        };
        op("negative", &[&picked], &[])
    }
}

impl Default for SoftmaxCrossEntropyLoss {
    fn default() -> SoftmaxCrossEntropyLoss {
        SoftmaxCrossEntropyLoss::new()
    }
}
loss_block!(SoftmaxCrossEntropyLoss, "SoftmaxCrossEntropyLoss");

/// Binary cross-entropy with a sigmoid (Gluon's
/// `SigmoidBinaryCrossEntropyLoss`): on logits by default, computed
/// stably as `max(x, 0) - x·z + log(1 + exp(-|x|))`; with `from_sigmoid`,
/// on probabilities as `-(z·log(p + 1e-12) + (1 - z)·log(1 - p + 1e-12))`.
#[derive(Debug, Clone)]
pub struct SigmoidBinaryCrossEntropyLoss {
    base: Base,
    from_sigmoid: bool,
}

impl SigmoidBinaryCrossEntropyLoss {
    /// On logits, no weight.
    pub fn new() -> SigmoidBinaryCrossEntropyLoss {
        SigmoidBinaryCrossEntropyLoss {
            base: Base::new("sigmoidbinarycrossentropyloss", None),
            from_sigmoid: false,
        }
    }

    /// Whether `pred` holds probabilities (sigmoid already applied).
    pub fn from_sigmoid(mut self, from_sigmoid: bool) -> SigmoidBinaryCrossEntropyLoss {
        self.from_sigmoid = from_sigmoid;
        self
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let label = like(label, pred)?;
        if !self.from_sigmoid {
            let relu = op("relu", &[pred], &[])?;
            let xz = op("elemwise_mul", &[pred, &label], &[])?;
            let neg_abs = op("negative", &[&op("abs", &[pred], &[])?], &[])?;
            let soft = op("Activation", &[&neg_abs], &[("act_type", "softrelu".into())])?;
            return op("elemwise_add", &[&op("elemwise_sub", &[&relu, &xz], &[])?, &soft], &[]);
        }
        let eps = 1e-12;
        let log_p = op("log", &[&scalar("_plus_scalar", pred, eps)?], &[])?;
        let log_q = op("log", &[&scalar("_plus_scalar", &scalar("_rminus_scalar", pred, 1.0)?, eps)?], &[])?;
        let a = op("elemwise_mul", &[&log_p, &label], &[])?;
        let b = op("elemwise_mul", &[&log_q, &scalar("_rminus_scalar", &label, 1.0)?], &[])?;
        op("negative", &[&op("elemwise_add", &[&a, &b], &[])?], &[])
    }
}

impl Default for SigmoidBinaryCrossEntropyLoss {
    fn default() -> SigmoidBinaryCrossEntropyLoss {
        SigmoidBinaryCrossEntropyLoss::new()
    }
}
loss_block!(SigmoidBinaryCrossEntropyLoss, "SigmoidBinaryCrossEntropyLoss");

/// Smoothed L1 (Gluon's `HuberLoss`): `|d| - rho/2` where `|d| > rho`,
/// `d²/(2·rho)` elsewhere, `d = label - pred`.
#[derive(Debug, Clone)]
pub struct HuberLoss {
    base: Base,
    rho: f64,
}

impl HuberLoss {
    /// With `rho` (Gluon's default is 1), no weight. An error unless `rho > 0`.
    pub fn new(rho: f64) -> Result<HuberLoss> {
        if rho.is_nan() || rho <= 0.0 {
            return Err(Error::attr("rho", format!("HuberLoss needs rho > 0, got {rho}")));
        }
        Ok(HuberLoss { base: Base::new("huberloss", None), rho })
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let d = op("abs", &[&op("elemwise_sub", &[&like(label, pred)?, pred], &[])?], &[])?;
        let big = scalar("_greater_scalar", &d, self.rho)?;
        let linear = scalar("_minus_scalar", &d, 0.5 * self.rho)?;
        let quadratic = scalar("_mul_scalar", &op("square", &[&d], &[])?, 0.5 / self.rho)?;
        op("where", &[&big, &linear, &quadratic], &[])
    }
}
loss_block!(HuberLoss, "HuberLoss");

// After `loss_block!`, whose textual scope the submodules need.
mod divergence;
mod embedding;
mod margin;
mod sequence;
