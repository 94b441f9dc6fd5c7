//! Adaptive per-coordinate rates without a fused operator in MXNet, composed
//! of element-wise core operators: [`AdaGrad`] (`adagrad`) and
//! [`AdaDelta`] (`adadelta`).

use super::ops::{self, add, add_s, div, expect_state, mul, mul_s, rescaled_grad, sub, unary};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{NDArray, Result};

/// AdaGrad (Duchi et al.): with `g = clip(rescale_grad*grad)`,
/// `history += g²`, `w -= lr * (g / sqrt(history + eps) + wd*w)`.
/// State `[history]`.
pub struct AdaGrad {
    base: OptimizerBase,
    /// Added to the history under the square root (MXNet's `eps`).
    pub eps: f64,
}

impl Default for AdaGrad {
    fn default() -> Self {
        AdaGrad::new()
    }
}

impl AdaGrad {
    /// AdaGrad with MXNet's defaults (`eps=1e-7`, learning rate 0.01).
    pub fn new() -> AdaGrad {
        AdaGrad { base: OptimizerBase::new("adagrad", None), eps: 1e-7 }
    }
}

impl Optimizer for AdaGrad {
    fn name(&self) -> &'static str {
        "adagrad"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("eps", ParamValue::Float(self.eps))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        match key {
            "eps" => self.eps = text("adagrad", key, value).f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("adagrad", index, state, 1)?;
        self.base.update_count(&[index]);
        let lr = self.base.lr_of(index)?;
        let wd = self.base.wd_of(index);
        let g = rescaled_grad(grad, self.base.rescale_grad, self.base.clip_attr())?;
        let history = &state[0];
        ops::assign(history, &add(history, &unary("square", &g)?)?)?;
        let step = div(&g, &unary("sqrt", &add_s(history, self.eps)?)?)?;
        let step = add(&step, &mul_s(weight, wd)?)?;
        ops::assign(weight, &add(weight, &mul_s(&step, -lr)?)?)
    }
}

/// AdaDelta (Zeiler): with `g = clip(rescale_grad*grad)`,
/// `acc_g = rho*acc_g + (1-rho)*g²`,
/// `delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g`,
/// `acc_delta = rho*acc_delta + (1-rho)*delta²`, `w -= delta + wd*w`
/// (no learning rate, as in MXNet). State `[acc_g, acc_delta]`.
pub struct AdaDelta {
    base: OptimizerBase,
    /// Decay of both running averages.
    pub rho: f64,
    /// Added under both square roots.
    pub epsilon: f64,
}

impl Default for AdaDelta {
    fn default() -> Self {
        AdaDelta::new()
    }
}

impl AdaDelta {
    /// AdaDelta with MXNet's defaults (`rho=0.9, epsilon=1e-5`).
    pub fn new() -> AdaDelta {
        AdaDelta { base: OptimizerBase::new("adadelta", None), rho: 0.9, epsilon: 1e-5 }
    }
}

impl Optimizer for AdaDelta {
    fn name(&self) -> &'static str {
        "adadelta"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("rho", ParamValue::Float(self.rho)), ("epsilon", ParamValue::Float(self.epsilon))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("adadelta", key, value);
        match key {
            "rho" => self.rho = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("adadelta", index, state, 2)?;
        let wd = self.base.wd_of(index);
        self.base.update_count(&[index]);
        let g = rescaled_grad(grad, self.base.rescale_grad, self.base.clip_attr())?;
        let (acc_g, acc_delta) = (&state[0], &state[1]);
        let rho = self.rho;
        ops::assign(acc_g, &add(&mul_s(acc_g, rho)?, &mul_s(&unary("square", &g)?, 1.0 - rho)?)?)?;
        let ratio = div(
            &unary("sqrt", &add_s(acc_delta, self.epsilon)?)?,
            &unary("sqrt", &add_s(acc_g, self.epsilon)?)?,
        )?;
        let delta = mul(&ratio, &g)?;
        ops::assign(
            acc_delta,
            &add(&mul_s(acc_delta, rho)?, &mul_s(&unary("square", &delta)?, 1.0 - rho)?)?,
        )?;
        ops::assign(weight, &sub(weight, &add(&delta, &mul_s(weight, wd)?)?)?)
    }
}
