//! Likelihood losses: the Kullback-Leibler divergence and the Poisson
//! negative log-likelihood (Gluon's `KLDivLoss`, `PoissonNLLLoss`).

use super::{like, log_probs, op, scalar, Base, Loss};
use crate::block::{in_block, Block};
use oxnet_core::{Error, NDArray, Result};

/// Kullback-Leibler divergence (Gluon's `KLDivLoss`):
/// `label · (log(label + 1e-12) - pred)`, with `pred` log-probabilities
/// (`from_logits`, the default) or raw scores log-softmaxed along `axis`.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::loss::{KLDivLoss, Loss};
///
/// // pred equal to log(label): no divergence
/// let label = NDArray::from_vec(vec![0.25f32, 0.75], &[1, 2]).unwrap();
/// let pred = NDArray::from_vec(vec![0.25f32.ln(), 0.75f32.ln()], &[1, 2]).unwrap();
/// let l = KLDivLoss::new().loss(&pred, &label).unwrap().to_vec::<f32>().unwrap();
/// assert!(l[0].abs() < 1e-6);
/// ```
#[derive(Debug, Clone)]
pub struct KLDivLoss {
    base: Base,
    from_logits: bool,
    axis: i64,
}

impl KLDivLoss {
    /// `pred` as log-probabilities, axis -1, no weight, batch axis 0.
    pub fn new() -> KLDivLoss {
        KLDivLoss { base: Base::new("kldivloss", None), from_logits: true, axis: -1 }
    }

    /// Whether `pred` already holds log-probabilities (else it is
    /// log-softmaxed along [`KLDivLoss::axis`]).
    pub fn from_logits(mut self, from_logits: bool) -> KLDivLoss {
        self.from_logits = from_logits;
        self
    }

    /// The class axis of the log-softmax (used when not `from_logits`).
    pub fn axis(mut self, axis: i64) -> KLDivLoss {
        self.axis = axis;
        self
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let logp = log_probs(pred, self.from_logits, self.axis)?;
        let label = like(label, &logp)?;
        let log_label = op("log", &[&scalar("_plus_scalar", &label, 1e-12)?], &[])?;
        op("elemwise_mul", &[&label, &op("elemwise_sub", &[&log_label, &logp], &[])?], &[])
    }
}

impl Default for KLDivLoss {
    fn default() -> KLDivLoss {
        KLDivLoss::new()
    }
}
loss_block!(KLDivLoss, "KLDivLoss");

/// Poisson negative log-likelihood (Gluon's `PoissonNLLLoss`):
/// `exp(pred) - target·pred` with `pred` the log of the rate
/// (`from_logits`, the default), or `pred - target·log(pred + 1e-8)` with
/// `pred` the rate. `compute_full` adds Stirling's approximation of
/// `log(target!)`, `target·log(target) - target + ½·log(2π·target)`, where
/// `target > 1`. Unlike the other losses the result is the mean over
/// **every** element (one value), not one value per sample.
///
/// Where `target <= 1` the Stirling term is left out with a select, so
/// targets of 0 give finite losses (MXNet 1.x multiplies by a mask and
/// returns NaN there).
#[derive(Debug, Clone)]
pub struct PoissonNLLLoss {
    base: Base,
    from_logits: bool,
    compute_full: bool,
}

impl PoissonNLLLoss {
    /// `pred` as log-rates, no Stirling term, no weight.
    pub fn new() -> PoissonNLLLoss {
        let mut base = Base::new("poissonnllloss", None);
        base.mean_all = true;
        PoissonNLLLoss { base, from_logits: true, compute_full: false }
    }

    /// Whether `pred` is the log of the rate (else the rate itself).
    pub fn from_logits(mut self, from_logits: bool) -> PoissonNLLLoss {
        self.from_logits = from_logits;
        self
    }

    /// Whether to add Stirling's approximation of `log(target!)`.
    pub fn compute_full(mut self, compute_full: bool) -> PoissonNLLLoss {
        self.compute_full = compute_full;
        self
    }

    fn compute(&self, pred: &NDArray, target: &NDArray) -> Result<NDArray> {
        let target = like(target, pred)?;
        let loss = if self.from_logits {
            let tp = op("elemwise_mul", &[&target, pred], &[])?;
            op("elemwise_sub", &[&op("exp", &[pred], &[])?, &tp], &[])?
        } else {
            let log_pred = op("log", &[&scalar("_plus_scalar", pred, 1e-8)?], &[])?;
            op("elemwise_sub", &[pred, &op("elemwise_mul", &[&target, &log_pred], &[])?], &[])?
        };
        if !self.compute_full {
            return Ok(loss);
        }
        let log_t = op("log", &[&target], &[])?;
        let t_log_t = op("elemwise_mul", &[&target, &log_t], &[])?;
        let half_log = scalar(
            "_mul_scalar",
            &op("log", &[&scalar("_mul_scalar", &target, 2.0 * std::f64::consts::PI)?], &[])?,
            0.5,
        )?;
        let stirling =
            op("elemwise_add", &[&op("elemwise_sub", &[&t_log_t, &target], &[])?, &half_log], &[])?;
        let big = scalar("_greater_scalar", &target, 1.0)?;
        let zeros = op("zeros_like", &[&target], &[])?;
        let stirling = op("where", &[&big, &stirling, &zeros], &[])?;
        op("elemwise_add", &[&loss, &stirling], &[])
    }
}

impl Default for PoissonNLLLoss {
    fn default() -> PoissonNLLLoss {
        PoissonNLLLoss::new()
    }
}
loss_block!(PoissonNLLLoss, "PoissonNLLLoss");
