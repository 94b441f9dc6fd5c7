//! LARS (You et al., "Large Batch Training of Convolutional Networks"):
//! SGD with momentum whose learning rate is scaled per layer by
//! `eta * ‖w‖ / (‖g‖ + wd*‖w‖ + eps)` (`‖g‖` of the rescaled gradient; the
//! factor is 1 when either norm is 0). Parameters named `*gamma`, `*beta`
//! or `*bias` keep the plain rate, and by default only `*_weight`
//! parameters decay. With `momentum_correction`, the momentum is scaled by
//! the ratio of this step's rate to the previous one (Goyal et al.).
//!
//! State and operators as [`Sgd`](super::Sgd)'s.

use super::ops::{is_low_precision, norm};
use super::sgd::{momentum_state, sgd_step};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{Error, NDArray, Result};

/// MXNet's `LARS` optimizer.
pub struct Lars {
    base: OptimizerBase,
    /// The momentum.
    pub momentum: f64,
    /// Accepted for compatibility (gradients are dense).
    pub lazy_update: bool,
    /// The LARS coefficient.
    pub eta: f64,
    /// Added to the denominator of the layer-wise factor.
    pub eps: f64,
    /// Scale the momentum by the change of the learning rate.
    pub momentum_correction: bool,
    last_lr: Option<f64>,
    cur_lr: Option<f64>,
}

impl Default for Lars {
    fn default() -> Self {
        Lars::new()
    }
}

impl Lars {
    /// LARS with MXNet's defaults (`momentum=0, eta=0.001, eps=0,
    /// momentum_correction=True`).
    pub fn new() -> Lars {
        Lars {
            base: OptimizerBase::new("lars", None).decay_only_weights(),
            momentum: 0.0,
            lazy_update: true,
            eta: 0.001,
            eps: 0.0,
            momentum_correction: true,
            last_lr: None,
            cur_lr: None,
        }
    }

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
}

impl Optimizer for Lars {
    fn name(&self) -> &'static str {
        "lars"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("momentum", ParamValue::Float(self.momentum)),
            ("lazy_update", ParamValue::Bool(self.lazy_update)),
            ("eta", ParamValue::Float(self.eta)),
            ("eps", ParamValue::Float(self.eps)),
            ("momentum_correction", ParamValue::Bool(self.momentum_correction)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("lars", key, value);
        match key {
            "momentum" => self.momentum = t.f64()?,
            "lazy_update" => self.lazy_update = t.bool()?,
            "eta" => self.eta = t.f64()?,
            "eps" => self.eps = t.f64()?,
            "momentum_correction" => self.momentum_correction = t.bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

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
        momentum_state(&self.base, self.momentum, weight, false)
    }

    fn create_state_multi_precision(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(&self.base, self.momentum, weight, true)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let mp = std::mem::replace(&mut self.base.multi_precision, false);
        let r =
            self.update_multi(&[index], std::slice::from_ref(weight), std::slice::from_ref(grad), &[state]);
        self.base.multi_precision = mp;
        r
    }

    fn update_multi_precision(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
    ) -> Result<()> {
        self.update_multi(&[index], std::slice::from_ref(weight), std::slice::from_ref(grad), &[state])
    }

    fn update_multi(
        &mut self,
        indices: &[usize],
        weights: &[NDArray],
        grads: &[NDArray],
        states: &[&[NDArray]],
    ) -> Result<()> {
        if indices.is_empty() {
            return Ok(());
        }
        let mp = self.base.multi_precision && is_low_precision(weights[0].dtype());
        self.base.update_count(indices);
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
        sgd_step(&self.base, self.momentum != 0.0, momentum, &lrs, indices, weights, grads, states, mp)
    }
}
