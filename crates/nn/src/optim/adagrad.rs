//! Adaptive per-coordinate rates without a fused operator in MXNet, composed
//! of element-wise core operators: [`AdaGrad`] (`adagrad`) and
//! [`AdaDelta`] (`adadelta`).

use super::ops::{self, add, add_s, blend, div, expect_state, mul, mul_s, rescaled_grad, sub, unary};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{NDArray, Result};

declare_optimizer! {
    /// AdaGrad (Duchi et al.): with `g = clip(rescale_grad*grad)`,
    /// `history += g²`, `w -= lr * (g / sqrt(history + eps) + wd*w)`.
    /// State `[history]`; default learning rate 0.01.
    pub struct AdaGrad {
        base: OptimizerBase::new("adagrad", None),
        /// Added to the history under the square root (MXNet's `eps`).
        pub eps: f64 = 1e-7,
    }
}

impl Optimizer for AdaGrad {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 1)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 1)?;
        let g = rescaled_grad(&self.base, grad)?;
        let history = &state[0];
        ops::assign(history, &add(history, &unary("square", &g)?)?)?;
        let d = div(&g, &unary("sqrt", &add_s(history, self.eps)?)?)?;
        let d = add(&d, &mul_s(weight, step.wd)?)?;
        ops::assign(weight, &add(weight, &mul_s(&d, -step.lr)?)?)
    }
}

declare_optimizer! {
    /// AdaDelta (Zeiler): with `g = clip(rescale_grad*grad)`,
    /// `acc_g = rho*acc_g + (1-rho)*g²`,
    /// `delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g`,
    /// `acc_delta = rho*acc_delta + (1-rho)*delta²`, `w -= delta + wd*w`
    /// (no learning rate, as in MXNet). State `[acc_g, acc_delta]`.
    pub struct AdaDelta {
        base: OptimizerBase::new("adadelta", None),
        /// Decay of both running averages.
        pub rho: f64 = 0.9,
        /// Added under both square roots.
        pub epsilon: f64 = 1e-5,
    }
}

impl Optimizer for AdaDelta {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 2)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        // no learning rate: a scheduler is not consulted
        expect_state("adadelta", index, state, 2)?;
        let wd = self.base.wd_of(index);
        self.base.update_count(&[index]);
        let g = rescaled_grad(&self.base, grad)?;
        let (acc_g, acc_delta) = (&state[0], &state[1]);
        ops::assign(acc_g, &blend(acc_g, &unary("square", &g)?, self.rho)?)?;
        let ratio = div(
            &unary("sqrt", &add_s(acc_delta, self.epsilon)?)?,
            &unary("sqrt", &add_s(acc_g, self.epsilon)?)?,
        )?;
        let delta = mul(&ratio, &g)?;
        ops::assign(acc_delta, &blend(acc_delta, &unary("square", &delta)?, self.rho)?)?;
        ops::assign(weight, &sub(weight, &add(&delta, &mul_s(weight, wd)?)?)?)
    }
}
