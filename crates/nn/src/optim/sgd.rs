//! SGD with momentum ([`Sgd`], `sgd`) and Nesterov momentum ([`Nag`], `nag`).
//!
//! Both run fused core operators: `sgd_update` / `sgd_mom_update` /
//! `nag_mom_update` and their `mp_` forms; several SGD weights at once go
//! through `multi_sgd_update` / `multi_sgd_mom_update` (and `multi_mp_`), as
//! MXNet's aggregated SGD does.
//!
//! State: `[mom]` when `momentum != 0`, else `[]`; under multi-precision
//! with a float16/bfloat16 weight, the float32 master copy is appended
//! (`[mom, weight32]` or `[weight32]`, `mom` then float32 too).

use super::ops::{self, expect_state, fused, is_low_precision, tuple};
use super::{text, Optimizer, OptimizerBase, ParamValue, State};
use oxnet_core::{AttrValue, DType, NDArray, Result};

/// Stochastic gradient descent with momentum and weight decay (MXNet's `SGD`):
/// `mom = momentum*mom - lr*(clip(rescale_grad*grad) + wd*w)`, `w += mom`.
pub struct Sgd {
    base: OptimizerBase,
    /// The momentum (0: plain SGD, no state).
    pub momentum: f64,
    /// Accepted for compatibility (gradients are dense).
    pub lazy_update: bool,
}

impl Default for Sgd {
    fn default() -> Self {
        Sgd::new()
    }
}

impl Sgd {
    /// SGD with MXNet's defaults (`momentum=0`, learning rate 0.01).
    pub fn new() -> Sgd {
        Sgd { base: OptimizerBase::new("sgd", None), momentum: 0.0, lazy_update: true }
    }
}

/// The state of a momentum optimizer (SGD, NAG, LARS): `[mom]` and, under
/// multi-precision, the master copy.
pub(super) fn momentum_state(
    base: &OptimizerBase,
    momentum: f64,
    weight: &NDArray,
    mp: bool,
) -> Result<State> {
    let low = mp && base.multi_precision && is_low_precision(weight.dtype());
    let dtype = if low { DType::F32 } else { weight.dtype() };
    let mut state = Vec::new();
    if momentum != 0.0 {
        state.push(ops::zeros(weight, dtype)?);
    }
    if low {
        state.push(weight.astype(DType::F32)?);
    }
    Ok(state)
}

/// One SGD-family step over `indices` with learning rates `lrs`: the
/// single-weight operators for one weight, the multi-tensor ones for more.
/// `momentum` says whether states hold a momentum; the operators get
/// `momentum_value` (MXNet passes only positive momenta).
#[allow(clippy::too_many_arguments)]
pub(super) fn sgd_step(
    base: &OptimizerBase,
    momentum: bool,
    momentum_value: f64,
    lrs: &[f64],
    indices: &[usize],
    weights: &[NDArray],
    grads: &[NDArray],
    states: &[&[NDArray]],
    mp: bool,
) -> Result<()> {
    let has_mom = momentum;
    for (k, &i) in indices.iter().enumerate() {
        expect_state(base.name(), i, states[k], has_mom as usize + mp as usize)?;
    }
    let wds = base.wds(indices);
    let mut attrs: Vec<(&str, AttrValue)> = vec![
        ("rescale_grad", AttrValue::Float(base.rescale_grad)),
        ("clip_gradient", AttrValue::Float(base.clip_attr())),
    ];
    if has_mom {
        attrs.push(("momentum", AttrValue::Float(momentum_value.max(0.0))));
    }
    let op = match (indices.len() == 1, has_mom, mp) {
        (true, false, false) => "sgd_update",
        (true, true, false) => "sgd_mom_update",
        (true, false, true) => "mp_sgd_update",
        (true, true, true) => "mp_sgd_mom_update",
        (false, false, false) => "multi_sgd_update",
        (false, true, false) => "multi_sgd_mom_update",
        (false, false, true) => "multi_mp_sgd_update",
        (false, true, true) => "multi_mp_sgd_mom_update",
    };
    if indices.len() == 1 {
        attrs.push(("lr", AttrValue::Float(lrs[0])));
        attrs.push(("wd", AttrValue::Float(wds[0])));
    } else {
        attrs.push(("lrs", tuple(lrs)));
        attrs.push(("wds", tuple(&wds)));
        attrs.push(("num_weights", AttrValue::Int(indices.len() as i64)));
    }
    let mut inputs: Vec<&NDArray> = Vec::with_capacity(indices.len() * 4);
    for k in 0..indices.len() {
        inputs.push(&weights[k]);
        inputs.push(&grads[k]);
        inputs.extend(states[k].iter());
    }
    fused(op, &inputs, &attrs, weights)
}

impl Optimizer for Sgd {
    fn name(&self) -> &'static str {
        "sgd"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("momentum", ParamValue::Float(self.momentum)),
            ("lazy_update", ParamValue::Bool(self.lazy_update)),
        ]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        match key {
            "momentum" => self.momentum = text("sgd", key, value).f64()?,
            "lazy_update" => self.lazy_update = text("sgd", key, value).bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(&self.base, self.momentum, weight, false)
    }

    fn create_state_multi_precision(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(&self.base, self.momentum, weight, true)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        self.base.update_count(&[index]);
        let lrs = self.base.lrs(&[index])?;
        sgd_step(
            &self.base,
            self.momentum != 0.0,
            self.momentum,
            &lrs,
            &[index],
            std::slice::from_ref(weight),
            std::slice::from_ref(grad),
            &[state],
            false,
        )
    }

    fn update_multi_precision(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
    ) -> Result<()> {
        self.update_multi(&[index], std::slice::from_ref(weight), std::slice::from_ref(grad), &[state])
    }

    fn update_multi(
        &mut self,
        indices: &[usize],
        weights: &[NDArray],
        grads: &[NDArray],
        states: &[&[NDArray]],
    ) -> Result<()> {
        if indices.is_empty() {
            return Ok(());
        }
        let mp = self.base.multi_precision && is_low_precision(weights[0].dtype());
        self.base.update_count(indices);
        let lrs = self.base.lrs(indices)?;
        sgd_step(&self.base, self.momentum != 0.0, self.momentum, &lrs, indices, weights, grads, states, mp)
    }
}

/// Nesterov accelerated gradient (MXNet's `NAG`): with
/// `d = clip(rescale_grad*grad) + wd*w`, `mom = momentum*mom - lr*d` and
/// `w += momentum*mom - lr*d`.
pub struct Nag {
    base: OptimizerBase,
    /// The momentum (0: plain SGD, no state).
    pub momentum: f64,
}

impl Default for Nag {
    fn default() -> Self {
        Nag::new()
    }
}

impl Nag {
    /// NAG with MXNet's defaults (`momentum=0`).
    pub fn new() -> Nag {
        Nag { base: OptimizerBase::new("nag", None), momentum: 0.0 }
    }

    fn step(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
        mp: bool,
    ) -> Result<()> {
        let has_mom = self.momentum != 0.0;
        expect_state("nag", index, state, has_mom as usize + mp as usize)?;
        self.base.update_count(&[index]);
        let lr = self.base.lr_of(index)?;
        let wd = self.base.wd_of(index);
        let mut attrs: Vec<(&str, AttrValue)> = vec![
            ("lr", AttrValue::Float(lr)),
            ("wd", AttrValue::Float(wd)),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_gradient", AttrValue::Float(self.base.clip_attr())),
        ];
        if has_mom {
            attrs.push(("momentum", AttrValue::Float(self.momentum.max(0.0))));
        }
        let op = match (has_mom, mp) {
            (true, false) => "nag_mom_update",
            (false, false) => "sgd_update",
            (true, true) => "mp_nag_mom_update",
            (false, true) => "mp_sgd_update",
        };
        let mut inputs = vec![weight, grad];
        inputs.extend(state.iter());
        fused(op, &inputs, &attrs, std::slice::from_ref(weight))
    }
}

impl Optimizer for Nag {
    fn name(&self) -> &'static str {
        "nag"
    }

    fn base(&self) -> &OptimizerBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut OptimizerBase {
        &mut self.base
    }

    fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![("momentum", ParamValue::Float(self.momentum))]
    }

    fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        match key {
            "momentum" => self.momentum = text("nag", key, value).f64()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(&self.base, self.momentum, weight, false)
    }

    fn create_state_multi_precision(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(&self.base, self.momentum, weight, true)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        self.step(index, weight, grad, state, false)
    }

    fn update_multi_precision(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
    ) -> Result<()> {
        let mp = self.base.multi_precision && is_low_precision(weight.dtype());
        self.step(index, weight, grad, state, mp)
    }
}
