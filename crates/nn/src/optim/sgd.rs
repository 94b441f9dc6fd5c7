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

use super::ops::{self, expect_state, fused, fused_step, grad_attrs, step_attrs, tuple};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// Stochastic gradient descent with momentum and weight decay (MXNet's
    /// `SGD`): `mom = momentum*mom - lr*(clip(rescale_grad*grad) + wd*w)`,
    /// `w += mom`; default learning rate 0.01.
    pub struct Sgd {
        base: OptimizerBase::new("sgd", None),
        /// The momentum (0: plain SGD, no state).
        pub momentum: f64 = 0.0,
        /// Accepted for compatibility (gradients are dense).
        pub lazy_update: bool = true,
    }
}

/// The state of a momentum optimizer (SGD, NAG, LARS): `[mom]`, or `[]`
/// without momentum (the generic multi-precision state appends the
/// master copy, which the `mp_` operators take last).
pub(super) fn momentum_state(momentum: f64, weight: &NDArray) -> Result<State> {
    ops::zeros_state(weight, (momentum != 0.0) as usize)
}

/// Parameters updated in one call: parameter `indices[k]` has
/// `weights[k]`, `grads[k]` and `states[k]`.
#[derive(Clone, Copy)]
pub(super) struct Batch<'a> {
    pub indices: &'a [usize],
    pub weights: &'a [NDArray],
    pub grads: &'a [NDArray],
    pub states: &'a [&'a [NDArray]],
}

/// One SGD-family step of `batch` with learning rates `lrs`: the
/// single-weight operators for one weight, the multi-tensor ones for more.
/// `momentum` says whether states hold a momentum; the operators get
/// `momentum_value` (MXNet passes only positive momenta). `mp`: the states
/// end with float32 master copies (the `mp_` operators).
pub(super) fn sgd_step(
    base: &OptimizerBase,
    momentum: bool,
    momentum_value: f64,
    lrs: &[f64],
    batch: Batch<'_>,
    mp: bool,
) -> Result<()> {
    let Batch { indices, weights, grads, states } = batch;
    for (k, &i) in indices.iter().enumerate() {
        expect_state(base.name(), i, states[k], momentum as usize + mp as usize)?;
    }
    let wds = base.wds(indices);
    let mut attrs = grad_attrs(base);
    if momentum {
        attrs.push(("momentum", AttrValue::Float(momentum_value.max(0.0))));
    }
    let op = match (indices.len() == 1, momentum, mp) {
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

impl Sgd {
    /// One step of a counted `batch` (`mp`: the states end with master copies).
    fn step(&mut self, batch: Batch<'_>, mp: bool) -> Result<()> {
        let lrs = self.base.lrs(batch.indices)?;
        sgd_step(&self.base, self.momentum != 0.0, self.momentum, &lrs, batch, mp)
    }
}

impl Optimizer for Sgd {
    optimizer_accessors!();
    fused_master_copy!(many);

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(self.momentum, weight)
    }
}

declare_optimizer! {
    /// Nesterov accelerated gradient (MXNet's `NAG`): with
    /// `d = clip(rescale_grad*grad) + wd*w`, `mom = momentum*mom - lr*d` and
    /// `w += momentum*mom - lr*d`; default learning rate 0.01.
    pub struct Nag {
        base: OptimizerBase::new("nag", None),
        /// The momentum (0: plain SGD, no state).
        pub momentum: f64 = 0.0,
    }
}

impl Nag {
    /// One step (`mp`: the state ends with the master copy).
    fn step(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
        mp: bool,
    ) -> Result<()> {
        let has_mom = self.momentum != 0.0;
        let step = self.base.begin_update(index, state, has_mom as usize + mp as usize)?;
        let mut attrs = step_attrs(&self.base, step.lr, step.wd);
        if has_mom {
            attrs.push(("momentum", AttrValue::Float(self.momentum.max(0.0))));
        }
        let op = match (has_mom, mp) {
            (true, false) => "nag_mom_update",
            (false, false) => "sgd_update",
            (true, true) => "mp_nag_mom_update",
            (false, true) => "mp_sgd_update",
        };
        fused_step(op, weight, grad, state, &attrs)
    }
}

impl Optimizer for Nag {
    optimizer_accessors!();
    fused_master_copy!(one);

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        momentum_state(self.momentum, weight)
    }
}
