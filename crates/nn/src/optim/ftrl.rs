//! FTRL-Proximal ([`Ftrl`], `ftrl`) through the fused `ftrl_update`.
//! State `[z, n]`.

use super::ops::{self, expect_state, fused};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, NDArray, Result};

/// MXNet's `Ftrl` optimizer (McMahan et al., "Ad Click Prediction").
pub struct Ftrl {
    base: OptimizerBase,
    /// The L1 regularisation coefficient.
    pub lamda1: f64,
    /// Per-coordinate learning-rate correlation.
    pub beta: f64,
}

impl Default for Ftrl {
    fn default() -> Self {
        Ftrl::new()
    }
}

impl Ftrl {
    /// Ftrl with MXNet's defaults (`lamda1=0.01, learning_rate=0.1, beta=1`).
    /// As in MXNet, its learning rate does not replace a scheduler's base rate.
    pub fn new() -> Ftrl {
        Ftrl {
            base: OptimizerBase::new("ftrl", Some(0.1)).rate_apart_from_scheduler(),
            lamda1: 0.01,
            beta: 1.0,
        }
    }
}

impl Optimizer for Ftrl {
    fn name(&self) -> &'static str {
        "ftrl"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("lamda1", ParamValue::Float(self.lamda1)), ("beta", ParamValue::Float(self.beta))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("ftrl", key, value);
        match key {
            "lamda1" => self.lamda1 = t.f64()?,
            "beta" => self.beta = t.f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("ftrl", index, state, 2)?;
        self.base.update_count(&[index]);
        let attrs = [
            ("lr", AttrValue::Float(self.base.lr_of(index)?)),
            ("wd", AttrValue::Float(self.base.wd_of(index))),
            ("lamda1", AttrValue::Float(self.lamda1)),
            ("beta", AttrValue::Float(self.beta)),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        fused("ftrl_update", &[weight, grad, &state[0], &state[1]], &attrs, std::slice::from_ref(weight))
    }
}
