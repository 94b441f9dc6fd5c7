//! Adam variants MXNet has no fused operator for, composed of element-wise
//! core operators: [`Adamax`] (`adamax`, Adam with the infinity norm) and
//! [`Nadam`] (`nadam`, Adam with Nesterov momentum).
//!
//! Both add `wd * w` to the rescaled gradient before clipping, and keep the
//! state `[m, v]` (`v` is Adamax's `u`).

use super::ops::{self, add, add_s, div, div_s, expect_state, maximum, mul_s, rescaled_grad, sub, unary};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{Error, NDArray, Result};

/// `clip(grad*rescale + wd*weight)`, the gradient both optimizers use.
fn decayed_grad(base: &OptimizerBase, index: usize, weight: &NDArray, grad: &NDArray) -> Result<NDArray> {
    let g = add(&mul_s(grad, base.rescale_grad)?, &mul_s(weight, base.wd_of(index))?)?;
    rescaled_grad(&g, 1.0, base.clip_attr())
}

/// `beta * a + (1 - beta) * b`.
fn blend(a: &NDArray, b: &NDArray, beta: f64) -> Result<NDArray> {
    add(&mul_s(a, beta)?, &mul_s(b, 1.0 - beta)?)
}

/// AdaMax (Kingma & Ba, section 7): `m = beta1*m + (1-beta1)*g`,
/// `u = max(beta2*u, |g|)`, `w -= lr / (1 - beta1^t) * m / u`.
pub struct Adamax {
    base: OptimizerBase,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the infinity norm.
    pub beta2: f64,
}

impl Default for Adamax {
    fn default() -> Self {
        Adamax::new()
    }
}

impl Adamax {
    /// AdaMax with MXNet's defaults (`learning_rate=0.002, beta1=0.9, beta2=0.999`).
    pub fn new() -> Adamax {
        Adamax { base: OptimizerBase::new("adamax", Some(0.002)), beta1: 0.9, beta2: 0.999 }
    }
}

impl Optimizer for Adamax {
    fn name(&self) -> &'static str {
        "adamax"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("beta1", ParamValue::Float(self.beta1)), ("beta2", ParamValue::Float(self.beta2))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("adamax", key, value);
        match key {
            "beta1" => self.beta1 = t.f64()?,
            "beta2" => self.beta2 = t.f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("adamax", index, state, 2)?;
        self.base.update_count(&[index]);
        let t = self.base.index_update_count(index).min(i32::MAX as u64) as i32;
        let lr = self.base.lr_of(index)? / (1.0 - self.beta1.powi(t));
        let g = decayed_grad(&self.base, index, weight, grad)?;
        let (m, u) = (&state[0], &state[1]);
        ops::assign(m, &blend(m, &g, self.beta1)?)?;
        ops::assign(u, &maximum(&mul_s(u, self.beta2)?, &unary("abs", &g)?)?)?;
        ops::assign(weight, &sub(weight, &mul_s(&div(m, u)?, lr)?)?)
    }
}

/// Nadam (Dozat): Adam with Nesterov momentum and a warming momentum
/// schedule `momentum_t = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay))`.
///
/// As in MXNet, the schedule product `m_schedule` is one value for the
/// whole optimizer, advanced by every update of any parameter; it is saved
/// with the states.
pub struct Nadam {
    base: OptimizerBase,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub epsilon: f64,
    /// Decay of the momentum schedule.
    pub schedule_decay: f64,
    m_schedule: f64,
}

impl Default for Nadam {
    fn default() -> Self {
        Nadam::new()
    }
}

impl Nadam {
    /// Nadam with MXNet's defaults (`learning_rate=0.001, beta1=0.9,
    /// beta2=0.999, epsilon=1e-8, schedule_decay=0.004`).
    pub fn new() -> Nadam {
        Nadam {
            base: OptimizerBase::new("nadam", Some(0.001)),
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            schedule_decay: 0.004,
            m_schedule: 1.0,
        }
    }
}

impl Optimizer for Nadam {
    fn name(&self) -> &'static str {
        "nadam"
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
            ("schedule_decay", ParamValue::Float(self.schedule_decay)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("nadam", key, value);
        match key {
            "beta1" => self.beta1 = t.f64()?,
            "beta2" => self.beta2 = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            "schedule_decay" => self.schedule_decay = t.f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

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
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("nadam", index, state, 2)?;
        self.base.update_count(&[index]);
        let lr = self.base.lr_of(index)?;
        let t = self.base.index_update_count(index) as f64;
        let g = decayed_grad(&self.base, index, weight, grad)?;
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
        ops::assign(weight, &sub(weight, &mul_s(&div(&m_bar, &denom)?, lr)?)?)
    }
}
