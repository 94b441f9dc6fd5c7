//! Optimizers and learning-rate schedulers, with MXNet 1.9.1's names,
//! hyper-parameters, defaults and formulas.
//!
//! An [`Optimizer`] creates a state (a list of arrays: momentum, moving
//! averages, a float32 master copy) for each parameter and updates a weight
//! from its gradient and state. Updates are core operators called through
//! the dispatcher: the fused `sgd_mom_update`, `adam_update`, ... where
//! MXNet has one (and `multi_sgd_mom_update` for many weights at once),
//! element-wise operators otherwise. The shared hyper-parameters
//! (`learning_rate` or a scheduler, `wd`, `rescale_grad`, `clip_gradient`,
//! `multi_precision`, `lr_mult`/`wd_mult`, update counts) live in
//! [`OptimizerBase`].
//!
//! [`create`] builds an optimizer from its registry name and text
//! hyper-parameters (what Python keywords become); an [`Updater`] keeps the
//! states of many parameters, updates them in one call, and saves and
//! restores states with update counts.
//!
//! ```
//! use oxnet_core::NDArray;
//! use oxnet_nn::optim::{create, Updater};
//! let sgd = create("sgd", &[("learning_rate", "0.5"), ("momentum", "0.9")]).unwrap();
//! let mut updater = Updater::new(sgd);
//! let w = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
//! let g = NDArray::from_vec(vec![0.5f32, -0.5], &[2]).unwrap();
//! updater.update(0, &g, &w).unwrap();
//! assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.75, 2.25]);
//! ```

#[macro_use]
mod declare;

mod adagrad;
mod adam;
mod adamax;
pub mod base;
mod ftml;
mod ftrl;
mod lamb;
mod lars;
pub mod lr_scheduler;
mod ops;
mod rmsprop;
mod sgd;
mod signum;
pub mod states;
mod updater;

pub use adagrad::{AdaDelta, AdaGrad};
pub use adam::{Adam, AdamW};
pub use adamax::{Adamax, Nadam};
pub use base::{MultKey, OptimizerBase, UpdateCounts};
pub use ftml::Ftml;
pub use ftrl::Ftrl;
pub use lamb::Lamb;
pub use lars::Lars;
pub use lr_scheduler::{LrScheduler, SharedScheduler};
pub use rmsprop::RmsProp;
pub use sgd::{Nag, Sgd};
pub use signum::{SignSgd, Signum};
pub use updater::Updater;

use oxnet_core::{DType, Error, NDArray, Result};
use std::fmt;
use std::sync::{Arc, Mutex};

/// The state of one parameter: the arrays its optimizer keeps (possibly
/// none), in an order each optimizer documents.
pub type State = Vec<NDArray>;

/// An optimizer shared between an [`Updater`] and its owner.
pub type SharedOptimizer = Arc<Mutex<Box<dyn Optimizer>>>;

/// A hyper-parameter's value, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// A number.
    Float(f64),
    /// A number or `None`.
    OptFloat(Option<f64>),
    /// A flag.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// Text.
    Str(String),
}

impl fmt::Display for ParamValue {
    /// The text form [`Optimizer::set_param`] parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Float(x) | ParamValue::OptFloat(Some(x)) => write!(f, "{x:?}"),
            ParamValue::OptFloat(None) => f.write_str("None"),
            ParamValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

impl From<f64> for ParamValue {
    fn from(x: f64) -> ParamValue {
        ParamValue::Float(x)
    }
}

impl From<Option<f64>> for ParamValue {
    fn from(x: Option<f64>) -> ParamValue {
        ParamValue::OptFloat(x)
    }
}

impl From<bool> for ParamValue {
    fn from(b: bool) -> ParamValue {
        ParamValue::Bool(b)
    }
}

/// An optimizer: creates per-parameter states and applies updates.
///
/// Implementors hold an [`OptimizerBase`] and implement [`create_state`],
/// [`update`] and their own hyper-parameters (the built-in ones declare
/// those with the macros of `declare.rs`); multi-precision (a float32
/// master copy for float16/bfloat16 weights) and multi-tensor updates have
/// default implementations that optimizers with fused operators replace.
///
/// [`create_state`]: Optimizer::create_state
/// [`update`]: Optimizer::update
pub trait Optimizer: Send {
    /// The registry name (`sgd`, `adam`, ...).
    fn name(&self) -> &'static str;

    /// The shared hyper-parameters and counts.
    fn base(&self) -> &OptimizerBase;

    /// The shared hyper-parameters and counts, mutable.
    fn base_mut(&mut self) -> &mut OptimizerBase;

    /// This optimizer's own hyper-parameters (beyond the base's), by name.
    fn params(&self) -> Vec<(&'static str, ParamValue)>;

    /// Sets one of its own hyper-parameters from text; `Ok(false)` when the
    /// key is not one of them.
    fn set_param(&mut self, key: &str, value: &str) -> Result<bool>;

    /// Values the optimizer keeps between updates beyond the per-parameter
    /// states (Nadam's momentum schedule, LARS's last learning rates); saved
    /// with the states.
    fn internal_state(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Restores a value listed by [`internal_state`](Optimizer::internal_state).
    fn set_internal_state(&mut self, key: &str, _value: f64) -> Result<()> {
        Err(Error::Invalid(format!("optimizer `{}` keeps no internal value `{key}`", self.name())))
    }

    /// The state of a new parameter `index` with `weight`.
    fn create_state(&self, index: usize, weight: &NDArray) -> Result<State>;

    /// Updates `weight` in place from `grad` and its `state`; counts the update.
    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()>;

    /// [`create_state`](Optimizer::create_state), with a float32 master copy
    /// appended for float16/bfloat16 weights under `multi_precision`.
    fn create_state_multi_precision(&self, index: usize, weight: &NDArray) -> Result<State> {
        if self.base().keeps_master_copy(weight.dtype()) {
            let master = weight.astype(DType::F32)?;
            let mut state = self.create_state(index, &master)?;
            state.push(master);
            Ok(state)
        } else {
            self.create_state(index, weight)
        }
    }

    /// [`update`](Optimizer::update), or under multi-precision the update of
    /// the float32 master copy (the state's last array) with a float32
    /// gradient, rounded into the weight.
    fn update_multi_precision(
        &mut self,
        index: usize,
        weight: &NDArray,
        grad: &NDArray,
        state: &[NDArray],
    ) -> Result<()> {
        if !self.base().keeps_master_copy(weight.dtype()) {
            return self.update(index, weight, grad, state);
        }
        let Some((master, inner)) = state.split_last() else {
            return Err(Error::Invalid(format!(
                "optimizer `{}`: parameter {index} has no float32 master copy in its state",
                self.name()
            )));
        };
        if master.dtype() != DType::F32 || master.shape() != weight.shape() {
            return Err(Error::Invalid(format!(
                "optimizer `{}`: the master copy of parameter {index} must be float32 of shape {:?}",
                self.name(),
                weight.shape()
            )));
        }
        let grad32 = grad.astype(DType::F32)?;
        self.update(index, master, &grad32, inner)?;
        weight.assign_from(master)
    }

    /// Updates several parameters (all of one dtype); by default one
    /// [`update_multi_precision`](Optimizer::update_multi_precision) each.
    fn update_multi(
        &mut self,
        indices: &[usize],
        weights: &[NDArray],
        grads: &[NDArray],
        states: &[&[NDArray]],
    ) -> Result<()> {
        for (k, &i) in indices.iter().enumerate() {
            self.update_multi_precision(i, &weights[k], &grads[k], states[k])?;
        }
        Ok(())
    }
}

/// The registry names [`create`] knows.
pub const NAMES: &[&str] = &[
    "sgd", "nag", "adam", "adamw", "adagrad", "adadelta", "rmsprop", "adamax", "nadam", "ftrl", "signum",
    "lamb", "lars", "signsgd", "ftml",
];

/// A new optimizer by registry name (case-insensitive) with its defaults.
pub fn create_default(name: &str) -> Result<Box<dyn Optimizer>> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "sgd" => Box::new(Sgd::new()),
        "nag" => Box::new(Nag::new()),
        "adam" => Box::new(Adam::new()),
        "adamw" => Box::new(AdamW::new()),
        "adagrad" => Box::new(AdaGrad::new()),
        "adadelta" => Box::new(AdaDelta::new()),
        "rmsprop" => Box::new(RmsProp::new()),
        "adamax" => Box::new(Adamax::new()),
        "nadam" => Box::new(Nadam::new()),
        "ftrl" => Box::new(Ftrl::new()),
        "signum" => Box::new(Signum::new()),
        "lamb" => Box::new(Lamb::new()),
        "lars" => Box::new(Lars::new()),
        "signsgd" => Box::new(SignSgd::new()),
        "ftml" => Box::new(Ftml::new()),
        _ => return Err(Error::Invalid(format!("unknown optimizer `{name}` (known: {})", NAMES.join(", ")))),
    })
}

/// Builds optimizer `name` (case-insensitive: `sgd`, `nag`, `adam`, `adamw`,
/// `adagrad`, `adadelta`, `rmsprop`, `adamax`, `nadam`, `ftrl`, `signum`,
/// `lamb`, `lars`, `signsgd`, `ftml`) with hyper-parameters given as text, as
/// Python keywords arrive. Unknown names and unknown or malformed
/// hyper-parameters are errors naming the optimizer and the key.
pub fn create<K: AsRef<str>, V: AsRef<str>>(name: &str, params: &[(K, V)]) -> Result<Box<dyn Optimizer>> {
    let mut opt = create_default(name)?;
    for (k, v) in params {
        set_param(opt.as_mut(), k.as_ref(), v.as_ref())?;
    }
    Ok(opt)
}

/// Sets any hyper-parameter (the optimizer's own or a shared one) from text.
pub fn set_param(opt: &mut dyn Optimizer, key: &str, value: &str) -> Result<()> {
    if opt.set_param(key, value)? || opt.base_mut().set_param(key, value)? {
        return Ok(());
    }
    let mut known: Vec<&str> = opt.params().into_iter().map(|(k, _)| k).collect();
    known.extend(opt.base().params().into_iter().map(|(k, _)| k));
    Err(Error::Invalid(format!(
        "optimizer `{}` has no hyper-parameter `{key}` (its hyper-parameters: {})",
        opt.name(),
        known.join(", ")
    )))
}

/// Every hyper-parameter of `opt` (its own, then the shared ones).
pub fn all_params(opt: &dyn Optimizer) -> Vec<(&'static str, ParamValue)> {
    let mut v = opt.params();
    v.extend(opt.base().params());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_and_errors() {
        for name in NAMES {
            let opt = create_default(&name.to_uppercase()).unwrap();
            assert_eq!(opt.name(), *name);
        }
        let e = create("sgdx", &[("wd", "0")]).err().unwrap().to_string();
        assert!(e.contains("sgdx") && e.contains("adam"), "{e}");
        let e = create("adam", &[("momentum", "0.9")]).err().unwrap().to_string();
        assert!(e.contains("adam") && e.contains("momentum") && e.contains("beta1"), "{e}");
        let e = create("sgd", &[("momentum", "lots")]).err().unwrap().to_string();
        assert!(e.contains("sgd") && e.contains("momentum") && e.contains("lots"), "{e}");
        let adam = create("Adam", &[("beta1", "0.8"), ("wd", "0.01")]).unwrap();
        assert!(all_params(adam.as_ref()).contains(&("beta1", ParamValue::Float(0.8))));
        assert_eq!(adam.base().lr(), 0.001);
    }
}
