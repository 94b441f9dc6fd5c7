//! RMSProp ([`RmsProp`], `rmsprop`): Tieleman & Hinton's form through the
//! fused `rmsprop_update` (state `[n]`), or with `centered` Graves' form
//! through `rmspropalex_update` (state `[n, g, delta]`).

use super::base::positive_or_off;
use super::ops::{self, fused_step, step_attrs};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// MXNet's `RMSProp` optimizer; default learning rate 0.001.
    pub struct RmsProp {
        base: OptimizerBase::new("rmsprop", Some(0.001)),
        /// Decay of the moving averages.
        pub gamma1: f64 = 0.9,
        /// Momentum of the centered form.
        pub gamma2: f64 = 0.9,
        /// Added under the square root.
        pub epsilon: f64 = 1e-8,
        /// Use Graves' centered form.
        pub centered: bool = false,
        /// Clip updated weights to `[-c, c]` (`None` or 0: off).
        pub clip_weights: Option<f64> = None,
    }
}

impl Optimizer for RmsProp {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, if self.centered { 3 } else { 1 })
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, if self.centered { 3 } else { 1 })?;
        let mut attrs = step_attrs(&self.base, step.lr, step.wd);
        attrs.extend([
            ("gamma1", AttrValue::Float(self.gamma1)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("clip_weights", AttrValue::Float(positive_or_off(self.clip_weights))),
        ]);
        let op = if self.centered {
            attrs.push(("gamma2", AttrValue::Float(self.gamma2)));
            "rmspropalex_update"
        } else {
            "rmsprop_update"
        };
        fused_step(op, weight, grad, state, &attrs)
    }
}
