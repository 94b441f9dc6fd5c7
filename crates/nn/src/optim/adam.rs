//! Adam ([`Adam`], `adam`) and AdamW with decoupled weight decay
//! ([`AdamW`], `adamw`).
//!
//! - Adam (MXNet 1.9.1's `Adam`): at step `t` of a parameter, the fused
//!   `adam_update` with `lr * sqrt(1 - beta2^t) / (1 - beta1^t)` (bias
//!   correction folded into the rate); `wd` is added to the gradient.
//!   State `[mean, var]`; multi-precision through the generic float32
//!   master copy (`[mean, var, weight32]`, all float32).
//! - AdamW (MXNet 1.x has no AdamW optimizer class, only the `_adamw_update`
//!   operators; this follows the one MXNet 2.0 added, fused step): the rate
//!   bias-corrected as above when `correct_bias`, then `_adamw_update` with
//!   `lr = 1`, `eta =` that rate, so `w -= eta * (mean/(sqrt(var)+eps) + wd*w)`.
//!   State `[mean, var]`, or `[mean, var, weight32]` (float32) through
//!   `_mp_adamw_update` under multi-precision.

use super::ops::{self, expect_state, fused, is_low_precision};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, DType, NDArray, Result};

/// The bias-correction factor `sqrt(1 - beta2^t) / (1 - beta1^t)`.
fn bias_correction(beta1: f64, beta2: f64, t: u64) -> f64 {
    let t = t.min(i32::MAX as u64) as i32;
    (1.0 - beta2.powi(t)).sqrt() / (1.0 - beta1.powi(t))
}

/// The Adam optimizer (Kingma & Ba).
pub struct Adam {
    base: OptimizerBase,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub epsilon: f64,
    /// Accepted for compatibility (gradients are dense).
    pub lazy_update: bool,
}

impl Default for Adam {
    fn default() -> Self {
        Adam::new()
    }
}

impl Adam {
    /// Adam with MXNet's defaults (`learning_rate=0.001, beta1=0.9,
    /// beta2=0.999, epsilon=1e-8`).
    pub fn new() -> Adam {
        Adam {
            base: OptimizerBase::new("adam", Some(0.001)),
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            lazy_update: true,
        }
    }
}

impl Optimizer for Adam {
    fn name(&self) -> &'static str {
        "adam"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("beta1", ParamValue::Float(self.beta1)),
            ("beta2", ParamValue::Float(self.beta2)),
            ("epsilon", ParamValue::Float(self.epsilon)),
            ("lazy_update", ParamValue::Bool(self.lazy_update)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("adam", key, value);
        match key {
            "beta1" => self.beta1 = t.f64()?,
            "beta2" => self.beta2 = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            "lazy_update" => self.lazy_update = t.bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("adam", index, state, 2)?;
        self.base.update_count(&[index]);
        let t = self.base.index_update_count(index);
        let lr = self.base.lr_of(index)? * bias_correction(self.beta1, self.beta2, t);
        let attrs = [
            ("lr", AttrValue::Float(lr)),
            ("wd", AttrValue::Float(self.base.wd_of(index))),
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        fused("adam_update", &[weight, grad, &state[0], &state[1]], &attrs, std::slice::from_ref(weight))
    }
}

/// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization").
pub struct AdamW {
    base: OptimizerBase,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub epsilon: f64,
    /// Fold Adam's bias correction into the rate.
    pub correct_bias: bool,
    /// Accepted for compatibility (updates always use the fused operator).
    pub use_fused_step: bool,
}

impl Default for AdamW {
    fn default() -> Self {
        AdamW::new()
    }
}

impl AdamW {
    /// AdamW with MXNet 2.0's defaults (`learning_rate=0.001, beta1=0.9,
    /// beta2=0.999, epsilon=1e-6, correct_bias=True`).
    pub fn new() -> AdamW {
        AdamW {
            base: OptimizerBase::new("adamw", Some(0.001)),
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-6,
            correct_bias: true,
            use_fused_step: true,
        }
    }

    fn step(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
        mp: bool,
    ) -> Result<()> {
        expect_state("adamw", index, state, 2 + mp as usize)?;
        self.base.update_count(&[index]);
        let t = self.base.index_update_count(index);
        let mut lr = self.base.lr_of(index)?;
        if self.correct_bias {
            lr *= bias_correction(self.beta1, self.beta2, t);
        }
        let scale = NDArray::from_vec(vec![self.base.rescale_grad as f32], &[1])?;
        let attrs = [
            ("lr", AttrValue::Float(1.0)),
            ("eta", AttrValue::Float(lr)),
            ("wd", AttrValue::Float(self.base.wd_of(index))),
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        let mut inputs = vec![weight, grad];
        inputs.extend(state.iter());
        inputs.push(&scale);
        let op = if mp { "_mp_adamw_update" } else { "_adamw_update" };
        fused(op, &inputs, &attrs, std::slice::from_ref(weight))
    }
}

impl Optimizer for AdamW {
    fn name(&self) -> &'static str {
        "adamw"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("beta1", ParamValue::Float(self.beta1)),
            ("beta2", ParamValue::Float(self.beta2)),
            ("epsilon", ParamValue::Float(self.epsilon)),
            ("correct_bias", ParamValue::Bool(self.correct_bias)),
            ("use_fused_step", ParamValue::Bool(self.use_fused_step)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("adamw", key, value);
        match key {
            "beta1" => self.beta1 = t.f64()?,
            "beta2" => self.beta2 = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            "correct_bias" => self.correct_bias = t.bool()?,
            "use_fused_step" => self.use_fused_step = t.bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn create_state_multi_precision(&self, index: usize, weight: &NDArray) -> Result<State> {
        if !(self.base.multi_precision && is_low_precision(weight.dtype())) {
            return self.create_state(index, weight);
        }
        Ok(vec![ops::zeros(weight, DType::F32)?, ops::zeros(weight, DType::F32)?, weight.astype(DType::F32)?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        self.step(index, weight, grad, state, false)
    }

    fn update_multi_precision(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
    ) -> Result<()> {
        let mp = self.base.multi_precision && is_low_precision(weight.dtype());
        self.step(index, weight, grad, state, mp)
    }
}
