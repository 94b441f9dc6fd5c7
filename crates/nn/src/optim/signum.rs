//! Sign-based optimizers: [`Signum`] (`signum`, momentum then sign, through
//! `signum_update`; state `[mom]`, or `[]` with `momentum = 0`, which runs
//! `signsgd_update`) and [`SignSgd`] (`signsgd`, the sign of the gradient
//! alone, no state).

use super::ops::{self, expect_state, fused};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, NDArray, Result};

/// MXNet's `Signum` (Bernstein et al.): `mom = momentum*mom -
/// (1-momentum)*(wd*w + clip(rescale_grad*grad))`,
/// `w = (1 - lr*wd_lh)*w + lr*sign(mom)`.
pub struct Signum {
    base: OptimizerBase,
    /// The momentum (0: signSGD).
    pub momentum: f64,
    /// Decoupled weight decay.
    pub wd_lh: f64,
}

impl Default for Signum {
    fn default() -> Self {
        Signum::new()
    }
}

impl Signum {
    /// Signum with MXNet's defaults (`learning_rate=0.01, momentum=0.9, wd_lh=0`).
    pub fn new() -> Signum {
        Signum { base: OptimizerBase::new("signum", Some(0.01)), momentum: 0.9, wd_lh: 0.0 }
    }
}

/// The `lr`, `wd`, `rescale_grad`, `clip_gradient` attributes of parameter `index`.
fn sign_attrs(base: &OptimizerBase, index: usize) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("lr", AttrValue::Float(base.lr_of(index)?)),
        ("wd", AttrValue::Float(base.wd_of(index))),
        ("rescale_grad", AttrValue::Float(base.rescale_grad)),
        ("clip_gradient", AttrValue::Float(base.clip_attr())),
    ])
}

impl Optimizer for Signum {
    fn name(&self) -> &'static str {
        "signum"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("momentum", ParamValue::Float(self.momentum)), ("wd_lh", ParamValue::Float(self.wd_lh))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let t = text("signum", key, value);
        match key {
            "momentum" => self.momentum = t.f64()?,
            "wd_lh" => self.wd_lh = t.f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        if self.momentum != 0.0 {
            Ok(vec![ops::zeros(weight, weight.dtype())?])
        } else {
            Ok(vec![])
        }
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let has_mom = self.momentum != 0.0;
        expect_state("signum", index, state, has_mom as usize)?;
        self.base.update_count(&[index]);
        let mut attrs = sign_attrs(&self.base, index)?;
        if has_mom {
            attrs.push(("momentum", AttrValue::Float(self.momentum.max(0.0))));
            attrs.push(("wd_lh", AttrValue::Float(self.wd_lh)));
            fused("signum_update", &[weight, grad, &state[0]], &attrs, std::slice::from_ref(weight))
        } else {
            fused("signsgd_update", &[weight, grad], &attrs, std::slice::from_ref(weight))
        }
    }
}

/// signSGD: `w = (1 - lr*wd)*w - lr*sign(grad)`.
pub struct SignSgd {
    base: OptimizerBase,
}

impl Default for SignSgd {
    fn default() -> Self {
        SignSgd::new()
    }
}

impl SignSgd {
    /// signSGD with Signum's default learning rate (0.01).
    pub fn new() -> SignSgd {
        SignSgd { base: OptimizerBase::new("signsgd", Some(0.01)) }
    }
}

impl Optimizer for SignSgd {
    fn name(&self) -> &'static str {
        "signsgd"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        Vec::new()
    }

    fn set_param(&mut self, _key: &str, _value: &str) -> Result<bool> {
        Ok(false)
    }

    fn create_state(&self, _index: usize, _weight: &NDArray) -> Result<State> {
        Ok(vec![])
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        expect_state("signsgd", index, state, 0)?;
        self.base.update_count(&[index]);
        let attrs = sign_attrs(&self.base, index)?;
        fused("signsgd_update", &[weight, grad], &attrs, std::slice::from_ref(weight))
    }
}
