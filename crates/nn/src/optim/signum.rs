//! Sign-based optimizers: [`Signum`] (`signum`, momentum then sign, through
//! `signum_update`; state `[mom]`, or `[]` with `momentum = 0`, which runs
//! `signsgd_update`) and [`SignSgd`] (`signsgd`, the sign of the gradient
//! alone, no state).

use super::ops::{self, fused_step, step_attrs};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// MXNet's `Signum` (Bernstein et al.): `mom = momentum*mom -
    /// (1-momentum)*(wd*w + clip(rescale_grad*grad))`,
    /// `w = (1 - lr*wd_lh)*w + lr*sign(mom)`; default learning rate 0.01.
    pub struct Signum {
        base: OptimizerBase::new("signum", Some(0.01)),
        /// The momentum (0: signSGD).
        pub momentum: f64 = 0.9,
        /// Decoupled weight decay.
        pub wd_lh: f64 = 0.0,
    }
}

impl Optimizer for Signum {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, (self.momentum != 0.0) as usize)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let has_mom = self.momentum != 0.0;
        let step = self.base.begin_update(index, state, has_mom as usize)?;
        let mut attrs = step_attrs(&self.base, step.lr, step.wd);
        if !has_mom {
            return fused_step("signsgd_update", weight, grad, state, &attrs);
        }
        attrs.extend([
            ("momentum", AttrValue::Float(self.momentum.max(0.0))),
            ("wd_lh", AttrValue::Float(self.wd_lh)),
        ]);
        fused_step("signum_update", weight, grad, state, &attrs)
    }
}

declare_optimizer! {
    /// signSGD: `w = (1 - lr*wd)*w - lr*sign(grad)`; Signum's default
    /// learning rate (0.01).
    pub struct SignSgd {
        base: OptimizerBase::new("signsgd", Some(0.01)),
    }
}

impl Optimizer for SignSgd {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, _weight: &NDArray) -> Result<State> {
        Ok(vec![])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 0)?;
        fused_step("signsgd_update", weight, grad, state, &step_attrs(&self.base, step.lr, step.wd))
    }
}
