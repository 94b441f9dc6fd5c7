//! [`Trainer`]: applies an optimizer to a set of parameters (Gluon's
//! `Trainer`).
//!
//! `step(batch_size)` scales the gradients by `1/batch_size` (the
//! optimizer's `rescale_grad`, times any scale it was created with) and
//! updates every parameter whose `grad_req` is not null. A parameter whose
//! gradient no backward pass has written since the last step is an error
//! naming it, raised before anything is updated (MXNet's stale-gradient
//! check), unless [`Trainer::step_ignore_stale`] skips such parameters.
//! Each parameter's `lr_mult` and `wd_mult` scale its learning rate and
//! weight decay.
//!
//! ```
//! use oxnet_core::{autograd, invoke1, NDArray};
//! use oxnet_nn::init::Constant;
//! use oxnet_nn::parameter::{shared_init, Parameter};
//! use oxnet_nn::trainer::Trainer;
//!
//! let w = Parameter::new("w", &[2]);
//! w.initialize(&shared_init(Constant::new(1.0))).unwrap();
//! let mut trainer = Trainer::from_name(&[w.clone()], "sgd", &[("learning_rate", "0.5")]).unwrap();
//! let loss = {
//!     let _r = autograd::record();
//!     invoke1("sum", &[&invoke1("square", &[&w.data().unwrap()], &[]).unwrap()], &[]).unwrap()
//! };
//! loss.backward().unwrap();
//! trainer.step(2).unwrap(); // w -= 0.5 * (2w / 2)
//! assert_eq!(w.data().unwrap().to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
//! assert!(trainer.step(2).unwrap_err().to_string().contains("`w`"), "stale gradient");
//! ```

use crate::optim::{self, Optimizer, State};
use crate::parameter::{GradReq, Parameter};
use oxnet_core::{autograd, DType, Error, NDArray, Result};
use std::collections::{BTreeMap, HashSet};

/// Applies an optimizer to parameters.
pub struct Trainer {
    params: Vec<Parameter>,
    optimizer: Box<dyn Optimizer>,
    states: Vec<Option<State>>,
    /// The optimizer's own `rescale_grad`, which `step` divides by the batch size.
    scale: f64,
}

impl Trainer {
    /// A trainer updating `params` (each once; a name given twice is an
    /// error) with `optimizer`.
    pub fn new<'a>(
        params: impl IntoIterator<Item = &'a Parameter>,
        optimizer: Box<dyn Optimizer>,
    ) -> Result<Trainer> {
        let mut list = Vec::new();
        let mut seen = HashSet::new();
        for p in params {
            if !seen.insert(p.name().to_string()) {
                return Err(Error::Invalid(format!("Trainer: Parameter `{}` is given twice", p.name())));
            }
            list.push(p.clone());
        }
        let mut optimizer = optimizer;
        let names: BTreeMap<usize, String> =
            list.iter().enumerate().map(|(i, p)| (i, p.name().to_string())).collect();
        optimizer.base_mut().set_idx2name(names);
        let scale = optimizer.base().rescale_grad;
        let states = vec![None; list.len()];
        Ok(Trainer { params: list, optimizer, states, scale })
    }

    /// A trainer with the optimizer registered as `name` (`sgd`, `adam`,
    /// ...; see [`crate::optim::create`]) and its hyper-parameters as text,
    /// such as `[("learning_rate", "0.1"), ("momentum", "0.9")]`.
    pub fn from_name<'a, K: AsRef<str>, V: AsRef<str>>(
        params: impl IntoIterator<Item = &'a Parameter>,
        name: &str,
        hyper: &[(K, V)],
    ) -> Result<Trainer> {
        Trainer::new(params, optim::create(name, hyper)?)
    }

    /// The parameters, in update order.
    pub fn params(&self) -> &[Parameter] {
        &self.params
    }

    /// The optimizer.
    pub fn optimizer(&self) -> &dyn Optimizer {
        self.optimizer.as_ref()
    }

    /// The optimizer, mutable (to change hyper-parameters).
    pub fn optimizer_mut(&mut self) -> &mut dyn Optimizer {
        self.optimizer.as_mut()
    }

    /// The current learning rate (the scheduler's, when there is one).
    pub fn learning_rate(&self) -> Result<f64> {
        self.optimizer.base().learning_rate()
    }

    /// Sets the learning rate (an error when a scheduler owns it).
    pub fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        self.optimizer.base_mut().set_learning_rate(lr)
    }

    /// One update of every parameter with gradients scaled by
    /// `1/batch_size`; a stale gradient is an error naming its parameter
    /// (nothing is updated then).
    pub fn step(&mut self, batch_size: usize) -> Result<()> {
        self.update_all(batch_size, false)
    }

    /// [`Trainer::step`], skipping parameters whose gradient is stale.
    pub fn step_ignore_stale(&mut self, batch_size: usize) -> Result<()> {
        self.update_all(batch_size, true)
    }

    fn update_all(&mut self, batch_size: usize, ignore_stale: bool) -> Result<()> {
        if batch_size == 0 {
            return Err(Error::Invalid("Trainer.step: batch_size must be at least 1".into()));
        }
        // gather and check everything before changing anything
        let mut work: Vec<(usize, NDArray, NDArray)> = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            if p.grad_req() == GradReq::Null {
                continue;
            }
            let data = p.data()?;
            let fresh = autograd::fresh_grad(&data).unwrap_or(false);
            if !fresh {
                if ignore_stale {
                    continue;
                }
                return Err(Error::Invalid(format!(
                    "Gradient of Parameter `{}` has not been updated by backward since the last step. This \
                     could mean a bug in your model that made it only use a subset of the Parameters (Blocks) \
                     for this iteration. If you are intentionally only using a subset, call \
                     step_ignore_stale instead to skip updating Parameters with stale gradients",
                    p.name()
                )));
            }
            work.push((i, data, p.grad()?));
        }
        let base = self.optimizer.base_mut();
        base.rescale_grad = self.scale / batch_size as f64;
        for (i, p) in self.params.iter().enumerate() {
            base.param_mult.insert(i, (p.lr_mult(), p.wd_mult()));
        }
        for (i, data, _) in &work {
            if self.states[*i].is_none() {
                self.states[*i] = Some(self.optimizer.create_state_multi_precision(*i, data)?);
            }
        }
        // one multi-tensor update per dtype
        let mut dtypes: Vec<DType> = Vec::new();
        for (_, d, _) in &work {
            if !dtypes.contains(&d.dtype()) {
                dtypes.push(d.dtype());
            }
        }
        let _pause = autograd::pause();
        for dtype in dtypes {
            let group: Vec<&(usize, NDArray, NDArray)> =
                work.iter().filter(|(_, d, _)| d.dtype() == dtype).collect();
            let indices: Vec<usize> = group.iter().map(|(i, _, _)| *i).collect();
            let weights: Vec<NDArray> = group.iter().map(|(_, d, _)| d.clone()).collect();
            let grads: Vec<NDArray> = group.iter().map(|(_, _, g)| g.clone()).collect();
            let states: Vec<&[NDArray]> =
                indices.iter().map(|&i| self.states[i].as_deref().unwrap_or(&[])).collect();
            self.optimizer.update_multi(&indices, &weights, &grads, &states)?;
        }
        for (_, data, _) in &work {
            autograd::set_fresh_grad(data, false);
        }
        Ok(())
    }
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Trainer({}, {} parameters)", self.optimizer.name(), self.params.len())
    }
}
