//! LARS (You et al., "Large Batch Training of Convolutional Networks"):
//! SGD with momentum whose learning rate is scaled per layer by
//! `eta * ‖w‖ / (‖g‖ + wd*‖w‖ + eps)` (`‖g‖` of the rescaled gradient; the
//! factor is 1 when either norm is 0). Parameters named `*gamma`, `*beta`
//! or `*bias` keep the plain rate, and by default only `*_weight`
//! parameters decay. With `momentum_correction`, the momentum is scaled by
//! the ratio of this step's rate to the previous one (Goyal et al.).
//!
//! State and operators as [`Sgd`](super::Sgd)'s.

use super::ops::norm;
use super::sgd::{momentum_state, sgd_step, Batch};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{Error, NDArray, Result};

declare_optimizer! {
    /// MXNet's `LARS` optimizer; default learning rate 0.01.
    pub struct Lars {
        base: OptimizerBase::new("lars", None).decay_only_weights(),
        /// The momentum.
        pub momentum: f64 = 0.0,
        /// Accepted for compatibility (gradients are dense).
        pub lazy_update: bool = true,
        /// The LARS coefficient.
        pub eta: f64 = 0.001,
        /// Added to the denominator of the layer-wise factor.
        pub eps: f64 = 0.0,
        /// Scale the momentum by the change of the learning rate.
        pub momentum_correction: bool = true,
        internal last_lr: Option<f64> = None,
        internal cur_lr: Option<f64> = None,
    }
}

impl Lars {
    /// The layer-wise learning rate of parameter `index`.
    fn lars_lr(&self, index: usize, weight: &NDArray, grad: &NDArray, lr: f64, wd: f64) -> Result<f64> {
        let name = self.base.idx2name().get(&index).cloned().unwrap_or_else(|| index.to_string());
        if name.ends_with("gamma") || name.ends_with("beta") || name.ends_with("bias") {
            return Ok(lr);
        }
        let w_norm = norm(weight)?;
        let g_norm = norm(grad)? * self.base.rescale_grad.abs();
        let factor = if w_norm > 0.0 && g_norm > 0.0 {
            self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        } else {
            1.0
        };
        Ok(factor * lr)
    }

    /// One step of a counted `batch` (`mp`: the states end with master copies).
    fn step(&mut self, batch: Batch<'_>, mp: bool) -> Result<()> {
        let Batch { indices, weights, grads, .. } = batch;
        let lr = self.base.learning_rate()?;
        self.last_lr = Some(self.cur_lr.unwrap_or(lr));
        self.cur_lr = Some(lr);
        let base_lrs = self.base.lrs(indices)?;
        let wds = self.base.wds(indices);
        let mut lrs = Vec::with_capacity(indices.len());
        for (k, &i) in indices.iter().enumerate() {
            lrs.push(self.lars_lr(i, &weights[k], &grads[k], base_lrs[k], wds[k])?);
        }
        let momentum = match self.last_lr {
            Some(last) if self.momentum_correction && last != 0.0 => self.momentum * lr / last,
            _ => self.momentum,
        };
        sgd_step(&self.base, self.momentum != 0.0, momentum, &lrs, batch, mp)
    }
}

impl Optimizer for Lars {
    optimizer_accessors!();
    fused_master_copy!(many);

    fn internal_state(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        if let Some(x) = self.last_lr {
            v.push(("last_lr", x));
        }
        if let Some(x) = self.cur_lr {
            v.push(("cur_lr", x));
        }
        v
    }

    fn set_internal_state(&mut self, key: &str, value: f64) -> Result<()> {
        match key {
            "last_lr" => self.last_lr = Some(value),
            "cur_lr" => self.cur_lr = Some(value),
            _ => return Err(Error::Invalid(format!("optimizer `lars` keeps no internal value `{key}`"))),
        }
        Ok(())
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(self.momentum, weight)
    }
}
