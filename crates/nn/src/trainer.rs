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

use crate::distributed::overlap::{self, GradientOverlap};
use crate::distributed::{collectives, Communicator};
use crate::optim::{self, Optimizer, SharedOptimizer, Updater};
use crate::parameter::{shape_string, GradReq, Parameter};
use oxnet_core::{autograd, Error, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// Applies an optimizer to parameters.
pub struct Trainer {
    params: Vec<Parameter>,
    optimizer: SharedOptimizer,
    updater: Updater,
    /// The optimizer's own `rescale_grad`, which `step` divides by the batch size.
    scale: f64,
    /// The ranks the gradients are summed over (data-parallel training).
    comm: Option<Arc<dyn Communicator>>,
    /// Whether the ranks have agreed on the parameters a step updates.
    step_checked: bool,
    /// Sums the gradients while backward runs (see [`crate::distributed::overlap`]).
    overlap: Option<GradientOverlap>,
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
        let shared: SharedOptimizer = Arc::new(Mutex::new(optimizer));
        Ok(Trainer {
            params: list,
            updater: Updater::from_shared(shared.clone()),
            optimizer: shared,
            scale,
            comm: None,
            step_checked: false,
            overlap: None,
        })
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

    /// Trains data-parallel over `comm`'s ranks, as MXNet's `dist_sync`
    /// store does: every rank runs the same model on its share of each
    /// batch, and [`Trainer::step`] sums the gradients over all ranks before
    /// updating, so that `step(global_batch_size)` gives every rank the
    /// parameters one process reaches on the whole batch.
    ///
    /// The parameters take rank 0's values now (one fused broadcast), and
    /// those not initialized yet when their initialisation runs (deferred
    /// shapes: during the first forward pass), so every rank computes its
    /// first gradients from the same weights. An error on every rank names
    /// the first parameter whose name, shape, dtype or `grad_req` differs
    /// between the ranks.
    pub fn set_communicator(&mut self, comm: Arc<dyn Communicator>) -> Result<()> {
        let description: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                format!("`{}` {} {} {}", p.name(), shape_string(&p.shape()), p.dtype(), p.grad_req().as_str())
            })
            .collect();
        collectives::agree(comm.as_ref(), "Trainer parameters", &description.join("; "))?;
        let mut ready = Vec::new();
        for p in &self.params {
            if p.is_initialized() {
                ready.push(p.data()?);
            } else {
                let comm = comm.clone();
                p.on_initialized(Arc::new(move |values| {
                    collectives::broadcast(comm.as_ref(), &[values.clone()], 0)
                }));
            }
        }
        collectives::broadcast(comm.as_ref(), &ready, 0)?;
        self.comm = Some(comm);
        self.step_checked = false;
        self.overlap = None;
        Ok(())
    }

    /// The overlap summing gradients while backward runs, once a step has
    /// made it (see [`crate::distributed::overlap`]).
    pub fn overlap(&self) -> Option<&GradientOverlap> {
        self.overlap.as_ref()
    }

    /// The communicator given to [`Trainer::set_communicator`].
    pub fn communicator(&self) -> Option<&Arc<dyn Communicator>> {
        self.comm.as_ref()
    }

    /// The parameters, in update order.
    pub fn params(&self) -> &[Parameter] {
        &self.params
    }

    /// The optimizer, locked (to read or change hyper-parameters).
    pub fn optimizer(&self) -> Result<MutexGuard<'_, Box<dyn Optimizer>>> {
        self.optimizer.lock().map_err(|_| {
            Error::Invalid("the optimizer panicked during an earlier update and is unusable".into())
        })
    }

    /// The current learning rate (the scheduler's, when there is one).
    pub fn learning_rate(&self) -> Result<f64> {
        self.optimizer()?.base().learning_rate()
    }

    /// Sets the learning rate (an error when a scheduler owns it).
    pub fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        self.optimizer()?.base_mut().set_learning_rate(lr)
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

    /// Saves the optimizer's states (momenta, update counts) to `path`.
    pub fn save_states(&self, path: &Path) -> Result<()> {
        let bytes = self.updater.get_states(false)?;
        std::fs::write(path, bytes)
            .map_err(|e| Error::Invalid(format!("cannot write trainer states `{}`: {e}", path.display())))
    }

    /// Restores states saved by [`Trainer::save_states`]; an error naming
    /// the file leaves the current states unchanged.
    pub fn load_states(&mut self, path: &Path) -> Result<()> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::Invalid(format!("cannot read trainer states `{}`: {e}", path.display())))?;
        self.updater
            .set_states(&bytes)
            .map_err(|e| Error::Invalid(format!("trainer states `{}`: {e}", path.display())))
    }

    fn update_all(&mut self, batch_size: usize, ignore_stale: bool) -> Result<()> {
        if batch_size == 0 {
            return Err(Error::Invalid("Trainer.step: batch_size must be at least 1".into()));
        }
        // gather and check everything before changing anything
        let (mut indices, mut weights, mut grads) = (Vec::new(), Vec::new(), Vec::new());
        for (i, p) in self.params.iter().enumerate() {
            if p.grad_req() == GradReq::Null {
                continue;
            }
            let data = p.data()?;
            if !autograd::fresh_grad(&data).unwrap_or(false) {
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
            grads.push(p.grad()?);
            weights.push(data);
            indices.push(i);
        }
        if let Some(comm) = self.comm.as_ref().filter(|c| c.size() > 1) {
            if ignore_stale || !self.step_checked {
                let names: Vec<&str> = indices.iter().map(|&i| self.params[i].name()).collect();
                collectives::agree(comm.as_ref(), "Trainer.step: the parameters updated", &names.join("; "))?;
                self.step_checked = true;
            }
            // every parameter with a gradient takes part (none skipped as stale)
            let whole = indices.len() == self.params.iter().filter(|p| p.grad_req() != GradReq::Null).count();
            match self.overlap.as_mut() {
                // most buckets were summed during backward
                Some(o) if o.serves(&grads) => o.finish()?,
                other => {
                    if let Some(o) = other {
                        o.sum()?; // every rank ends the thread's step alike; its sums go unused
                    }
                    collectives::allreduce_sum(comm.as_ref(), &grads)?;
                    if whole {
                        // new gradient buffers, or the first step: overlap from the next step on
                        self.overlap = None;
                        let buckets = overlap::first_buckets(&grads)?.len();
                        if overlap::overlap_enabled(comm.as_ref())? && buckets > 1 {
                            let mode = format!("overlap of {buckets} buckets");
                            collectives::agree(comm.as_ref(), "Trainer.step: the gradient overlap", &mode)?;
                            self.overlap = Some(GradientOverlap::new(comm.as_ref(), &weights, &grads)?);
                        }
                    }
                }
            }
        }
        {
            let mut opt = self.optimizer()?;
            let base = opt.base_mut();
            base.rescale_grad = self.scale / batch_size as f64;
            for (i, p) in self.params.iter().enumerate() {
                base.param_mult.insert(i, (p.lr_mult(), p.wd_mult()));
            }
        }
        self.updater.update_multi(&indices, &grads, &weights)?;
        for w in &weights {
            autograd::set_fresh_grad(w, false);
        }
        Ok(())
    }
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Trainer({} parameters)", self.params.len())
    }
}
