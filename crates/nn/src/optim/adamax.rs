//! Adam variants MXNet has no fused operator for, composed of element-wise
//! core operators: [`Adamax`] (`adamax`, Adam with the infinity norm) and
//! [`Nadam`] (`nadam`, Adam with Nesterov momentum).
//!
//! Both add `wd * w` to the rescaled gradient before clipping, and keep the
//! state `[m, v]` (`v` is Adamax's `u`).

use super::ops::{self, add, add_s, blend, decayed_grad, div, div_s, maximum, mul_s, sub, unary};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{Error, NDArray, Result};

declare_optimizer! {
    /// AdaMax (Kingma & Ba, section 7): `m = beta1*m + (1-beta1)*g`,
    /// `u = max(beta2*u, |g|)`, `w -= lr / (1 - beta1^t) * m / u`; default
    /// learning rate 0.002.
    pub struct Adamax {
        base: OptimizerBase::new("adamax", Some(0.002)),
        /// Decay of the first moment.
        pub beta1: f64 = 0.9,
        /// Decay of the infinity norm.
        pub beta2: f64 = 0.999,
    }
}

impl Optimizer for Adamax {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 2)?;
        let t = step.t.min(i32::MAX as u64) as i32;
        let lr = step.lr / (1.0 - self.beta1.powi(t));
        let g = decayed_grad(&self.base, grad, weight, step.wd)?;
        let (m, u) = (&state[0], &state[1]);
        ops::assign(m, &blend(m, &g, self.beta1)?)?;
        ops::assign(u, &maximum(&mul_s(u, self.beta2)?, &unary("abs", &g)?)?)?;
        ops::assign(weight, &sub(weight, &mul_s(&div(m, u)?, lr)?)?)
    }
}

declare_optimizer! {
    /// Nadam (Dozat): Adam with Nesterov momentum and a warming momentum
    /// schedule `momentum_t = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay))`;
    /// default learning rate 0.001.
    ///
    /// As in MXNet, the schedule product `m_schedule` is one value for the
    /// whole optimizer, advanced by every update of any parameter; it is saved
    /// with the states.
    pub struct Nadam {
        base: OptimizerBase::new("nadam", Some(0.001)),
        /// Decay of the first moment.
        pub beta1: f64 = 0.9,
        /// Decay of the second moment.
        pub beta2: f64 = 0.999,
        /// Added to the denominator.
        pub epsilon: f64 = 1e-8,
        /// Decay of the momentum schedule.
        pub schedule_decay: f64 = 0.004,
        internal m_schedule: f64 = 1.0,
    }
}

impl Optimizer for Nadam {
    optimizer_accessors!();

    fn internal_state(&self) -> Vec<(&'static str, f64)> {
        vec![("m_schedule", self.m_schedule)]
    }

    fn set_internal_state(&mut self, key: &str, value: f64) -> Result<()> {
        match key {
            "m_schedule" => {
                self.m_schedule = value;
                Ok(())
            }
            _ => Err(Error::Invalid(format!("optimizer `nadam` keeps no internal value `{key}`"))),
        }
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 2)?;
        let t = step.t as f64;
        let g = decayed_grad(&self.base, grad, weight, step.wd)?;
        let momentum_t = self.beta1 * (1.0 - 0.5 * 0.96f64.powf(t * self.schedule_decay));
        let momentum_t_1 = self.beta1 * (1.0 - 0.5 * 0.96f64.powf((t + 1.0) * self.schedule_decay));
        self.m_schedule *= momentum_t;
        let m_schedule_next = self.m_schedule * momentum_t_1;
        let (m, v) = (&state[0], &state[1]);
        ops::assign(m, &blend(m, &g, self.beta1)?)?;
        ops::assign(v, &blend(v, &unary("square", &g)?, self.beta2)?)?;
        let g_prime = div_s(&g, 1.0 - self.m_schedule)?;
        let m_prime = div_s(m, 1.0 - m_schedule_next)?;
        let v_prime = div_s(v, 1.0 - self.beta2.powf(t))?;
        let m_bar = add(&mul_s(&g_prime, 1.0 - momentum_t)?, &mul_s(&m_prime, momentum_t_1)?)?;
        let denom = add_s(&unary("sqrt", &v_prime)?, self.epsilon)?;
        ops::assign(weight, &sub(weight, &mul_s(&div(&m_bar, &denom)?, step.lr)?)?)
    }
}
