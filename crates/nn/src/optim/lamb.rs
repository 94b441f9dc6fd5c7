//! LAMB ([`Lamb`], `lamb`): the fused `lamb_update_phase1` (moments and the
//! normalised step `g`), the norms of the weight and of `g`, then
//! `lamb_update_phase2` (`w -= lr * ‖w‖/‖g‖ * g`, the weight's norm limited
//! to `[lower_bound, upper_bound]`). State `[mean, var]`; multi-precision
//! through the generic float32 master copy.

use super::ops::{self, fused_step, grad_attrs, norm};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// MXNet's `LAMB` optimizer (You et al.); default learning rate 0.001.
    pub struct Lamb {
        base: OptimizerBase::new("lamb", Some(0.001)),
        /// Decay of the first moment.
        pub beta1: f64 = 0.9,
        /// Decay of the second moment.
        pub beta2: f64 = 0.999,
        /// Added to the denominator.
        pub epsilon: f64 = 1e-6,
        /// Lower limit of the weight's norm (`None`: off).
        pub lower_bound: Option<f64> = None,
        /// Upper limit of the weight's norm (`None`: off).
        pub upper_bound: Option<f64> = None,
        /// Correct the moments' bias.
        pub bias_correction: bool = true,
    }
}

/// A norm bound as `lamb_update_phase2` takes it (`None` or 0: `-1`, off).
fn bound(b: Option<f64>) -> f64 {
    match b {
        Some(v) if v != 0.0 => v,
        _ => -1.0,
    }
}

impl Optimizer for Lamb {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 2)?;
        let mut phase1 = grad_attrs(&self.base);
        phase1.extend([
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("t", AttrValue::Int(step.t.min(i64::MAX as u64) as i64)),
            ("bias_correction", AttrValue::Bool(self.bias_correction)),
            ("wd", AttrValue::Float(step.wd)),
        ]);
        let g = ops::call("lamb_update_phase1", &[weight, grad, &state[0], &state[1]], &phase1)?;
        let norm_of = |a: &NDArray| NDArray::from_vec(vec![norm(a)?], &[1])?.astype(weight.dtype());
        let norms = [norm_of(weight)?, norm_of(&g)?];
        let phase2 = [
            ("lr", AttrValue::Float(step.lr)),
            ("lower_bound", AttrValue::Float(bound(self.lower_bound))),
            ("upper_bound", AttrValue::Float(bound(self.upper_bound))),
        ];
        fused_step("lamb_update_phase2", weight, &g, &norms, &phase2)
    }
}
