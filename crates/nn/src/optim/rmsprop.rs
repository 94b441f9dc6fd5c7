//! RMSProp ([`RmsProp`], `rmsprop`): Tieleman & Hinton's form through the
//! fused `rmsprop_update` (state `[n]`), or with `centered` Graves' form
//! through `rmspropalex_update` (state `[n, g, delta]`).

use super::ops::{self, expect_state, fused};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, NDArray, Result};

/// MXNet's `RMSProp` optimizer.
pub struct RmsProp {
    base: OptimizerBase,
    /// Decay of the moving averages.
    pub gamma1: f64,
    /// Momentum of the centered form.
    pub gamma2: f64,
    /// Added under the square root.
    pub epsilon: f64,
    /// Use Graves' centered form.
    pub centered: bool,
    /// Clip updated weights to `[-c, c]` (`None` or 0: off).
    pub clip_weights: Option<f64>,
}

impl Default for RmsProp {
    fn default() -> Self {
        RmsProp::new()
    }
}

impl RmsProp {
    /// RMSProp with MXNet's defaults (`learning_rate=0.001, gamma1=0.9,
    /// gamma2=0.9, epsilon=1e-8, centered=False`).
    pub fn new() -> RmsProp {
        RmsProp {
            base: OptimizerBase::new("rmsprop", Some(0.001)),
            gamma1: 0.9,
            gamma2: 0.9,
            epsilon: 1e-8,
            centered: false,
            clip_weights: None,
        }
    }
}

impl Optimizer for RmsProp {
    fn name(&self) -> &'static str {
        "rmsprop"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("gamma1", ParamValue::Float(self.gamma1)),
            ("gamma2", ParamValue::Float(self.gamma2)),
            ("epsilon", ParamValue::Float(self.epsilon)),
            ("centered", ParamValue::Bool(self.centered)),
            ("clip_weights", ParamValue::OptFloat(self.clip_weights)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("rmsprop", key, value);
        match key {
            "gamma1" => self.gamma1 = t.f64()?,
            "gamma2" => self.gamma2 = t.f64()?,
            "epsilon" => self.epsilon = t.f64()?,
            "centered" => self.centered = t.bool()?,
            "clip_weights" => self.clip_weights = t.opt_f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        let n = if self.centered { 3 } else { 1 };
        (0..n).map(|_| ops::zeros(weight, weight.dtype())).collect()
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("rmsprop", index, state, if self.centered { 3 } else { 1 })?;
        self.base.update_count(&[index]);
        let clip_weights = match self.clip_weights {
            Some(c) if c > 0.0 => c,
            _ => -1.0,
        };
        let mut attrs = vec![
            ("lr", AttrValue::Float(self.base.lr_of(index)?)),
            ("wd", AttrValue::Float(self.base.wd_of(index))),
            ("gamma1", AttrValue::Float(self.gamma1)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
            ("clip_weights", AttrValue::Float(clip_weights)),
        ];
        let mut inputs = vec![weight, grad];
        inputs.extend(state.iter());
        let op = if self.centered {
            attrs.push(("gamma2", AttrValue::Float(self.gamma2)));
            "rmspropalex_update"
        } else {
            "rmsprop_update"
        };
        fused(op, &inputs, &attrs, std::slice::from_ref(weight))
    }
}
