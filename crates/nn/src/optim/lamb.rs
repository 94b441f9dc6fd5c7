//! LAMB ([`Lamb`], `lamb`): the fused `lamb_update_phase1` (moments and the
//! normalised step `g`), the norms of the weight and of `g`, then
//! `lamb_update_phase2` (`w -= lr * ‖w‖/‖g‖ * g`, the weight's norm limited
//! to `[lower_bound, upper_bound]`). State `[mean, var]`; multi-precision
//! through the generic float32 master copy.

use super::ops::{self, expect_state, fused, norm};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, NDArray, Result};

/// MXNet's `LAMB` optimizer (You et al.).
pub struct Lamb {
    base: OptimizerBase,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub epsilon: f64,
    /// Lower limit of the weight's norm (`None`: off).
    pub lower_bound: Option<f64>,
    /// Upper limit of the weight's norm (`None`: off).
    pub upper_bound: Option<f64>,
    /// Correct the moments' bias.
    pub bias_correction: bool,
}

impl Default for Lamb {
    fn default() -> Self {
        Lamb::new()
    }
}

impl Lamb {
    /// LAMB with MXNet's defaults (`learning_rate=0.001, beta1=0.9,
    /// beta2=0.999, epsilon=1e-6, bias_correction=True`, no bounds).
    pub fn new() -> Lamb {
        Lamb {
            base: OptimizerBase::new("lamb", Some(0.001)),
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-6,
            lower_bound: None,
            upper_bound: None,
            bias_correction: true,
        }
    }
}

impl Optimizer for Lamb {
    fn name(&self) -> &'static str {
        "lamb"
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
            ("lower_bound", ParamValue::OptFloat(self.lower_bound)),
            ("upper_bound", ParamValue::OptFloat(self.upper_bound)),
            ("bias_correction", ParamValue::Bool(self.bias_correction)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("lamb", key, value);
        match key {
            "beta1" => self.beta1 = t.f64()?,
            "beta2" => self.beta2 = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            "lower_bound" => self.lower_bound = t.opt_f64()?,
            "upper_bound" => self.upper_bound = t.opt_f64()?,
            "bias_correction" => self.bias_correction = t.bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        Ok(vec![ops::zeros(weight, weight.dtype())?, ops::zeros(weight, weight.dtype())?])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("lamb", index, state, 2)?;
        self.base.update_count(&[index]);
        let lr = self.base.lr_of(index)?;
        let t = self.base.index_update_count(index).min(i64::MAX as u64) as i64;
        let phase1 = [
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("t", AttrValue::Int(t)),
            ("bias_correction", AttrValue::Bool(self.bias_correction)),
            ("wd", AttrValue::Float(self.base.wd_of(index))),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        let g = ops::call("lamb_update_phase1", &[weight, grad, &state[0], &state[1]], &phase1)?;
        let bound = |b: Option<f64>| match b {
            Some(v) if v != 0.0 => v,
            _ => -1.0,
        };
        let r1 = NDArray::from_vec(vec![norm(weight)?], &[1])?.astype(weight.dtype())?;
        let r2 = NDArray::from_vec(vec![norm(&g)?], &[1])?.astype(weight.dtype())?;
        let phase2 = [
            ("lr", AttrValue::Float(lr)),
            ("lower_bound", AttrValue::Float(bound(self.lower_bound))),
            ("upper_bound", AttrValue::Float(bound(self.upper_bound))),
        ];
        fused("lamb_update_phase2", &[weight, &g, &r1, &r2], &phase2, std::slice::from_ref(weight))
    }
}
