//! FTRL-Proximal ([`Ftrl`], `ftrl`) through the fused `ftrl_update`.
//! State `[z, n]`.

use super::ops::{self, fused_step, step_attrs};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// MXNet's `Ftrl` optimizer (McMahan et al., "Ad Click Prediction");
    /// default learning rate 0.1, which, as in MXNet, does not replace a
    /// scheduler's base rate.
    pub struct Ftrl {
        base: OptimizerBase::new("ftrl", Some(0.1)).rate_apart_from_scheduler(),
        /// The L1 regularisation coefficient.
        pub lamda1: f64 = 0.01,
        /// Per-coordinate learning-rate correlation.
        pub beta: f64 = 1.0,
    }
}

impl Optimizer for Ftrl {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 2)?;
        let mut attrs = step_attrs(&self.base, step.lr, step.wd);
        attrs.extend([("lamda1", AttrValue::Float(self.lamda1)), ("beta", AttrValue::Float(self.beta))]);
        fused_step("ftrl_update", weight, grad, state, &attrs)
    }
}
