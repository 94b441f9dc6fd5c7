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

use super::ops::{self, fused_step, step_attrs};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

/// The bias-correction factor `sqrt(1 - beta2^t) / (1 - beta1^t)`.
fn bias_correction(beta1: f64, beta2: f64, t: u64) -> f64 {
    let t = t.min(i32::MAX as u64) as i32;
    (1.0 - beta2.powi(t)).sqrt() / (1.0 - beta1.powi(t))
}

declare_optimizer! {
    /// The Adam optimizer (Kingma & Ba); default learning rate 0.001.
    pub struct Adam {
        base: OptimizerBase::new("adam", Some(0.001)),
        /// Decay of the first moment.
        pub beta1: f64 = 0.9,
        /// Decay of the second moment.
        pub beta2: f64 = 0.999,
        /// Added to the denominator.
        pub epsilon: f64 = 1e-8,
        /// Accepted for compatibility (gradients are dense).
        pub lazy_update: bool = true,
    }
}

impl Optimizer for Adam {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 2)?;
        let lr = step.lr * bias_correction(self.beta1, self.beta2, step.t);
        let mut attrs = step_attrs(&self.base, lr, step.wd);
        attrs.extend([
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
        ]);
        fused_step("adam_update", weight, grad, state, &attrs)
    }
}

declare_optimizer! {
    /// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization");
    /// default learning rate 0.001.
    pub struct AdamW {
        base: OptimizerBase::new("adamw", Some(0.001)),
        /// Decay of the first moment.
        pub beta1: f64 = 0.9,
        /// Decay of the second moment.
        pub beta2: f64 = 0.999,
        /// Added to the denominator.
        pub epsilon: f64 = 1e-6,
        /// Fold Adam's bias correction into the rate.
        pub correct_bias: bool = true,
        /// Accepted for compatibility (updates always use the fused operator).
        pub use_fused_step: bool = true,
    }
}

impl AdamW {
    /// One step; `mp`: the state ends with the float32 master copy.
    fn step(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
        mp: bool,
    ) -> Result<()> {
        let step = self.base.begin_update(index, state, 2 + mp as usize)?;
        let mut lr = step.lr;
        if self.correct_bias {
            lr *= bias_correction(self.beta1, self.beta2, step.t);
        }
        let attrs = [
            ("lr", AttrValue::Float(1.0)),
            ("eta", AttrValue::Float(lr)),
            ("wd", AttrValue::Float(step.wd)),
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        let mut rest = state.to_vec();
        rest.push(NDArray::from_vec(vec![self.base.rescale_grad as f32], &[1])?);
        let op = if mp { "_mp_adamw_update" } else { "_adamw_update" };
        fused_step(op, weight, grad, &rest, &attrs)
    }
}

impl Optimizer for AdamW {
    optimizer_accessors!();
    fused_master_copy!(one);

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }
}
