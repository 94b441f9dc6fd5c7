//! [`OptimizerBase`]: the hyper-parameters and bookkeeping every optimizer
//! shares, as MXNet's `Optimizer` base class keeps them — learning rate (or
//! scheduler), weight decay, gradient rescaling and clipping,
//! multi-precision, per-parameter multipliers and update counts.

use super::lr_scheduler::SharedScheduler;
use super::ParamValue;
use oxnet_core::{DType, Error, NDArray, Result};
use std::collections::{BTreeMap, HashMap};

/// The learning rate used when neither a rate nor a scheduler is given.
pub const DEFAULT_LR: f64 = 0.01;

/// The key of a per-parameter multiplier: MXNet accepts a parameter's index
/// or its name (resolved through `idx2name`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MultKey {
    /// The parameter's index in the optimizer's updates.
    Index(usize),
    /// The parameter's name.
    Name(String),
}

/// The update counts an optimizer keeps (saved with its states).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    /// The largest number of updates any parameter has received.
    pub num_update: u64,
    /// Updates per parameter index.
    pub per_index: BTreeMap<usize, u64>,
}

/// The shared part of every optimizer.
pub struct OptimizerBase {
    name: &'static str,
    /// The given learning rate (`None`: the scheduler's, or [`DEFAULT_LR`]).
    learning_rate: Option<f64>,
    /// Weight decay.
    pub wd: f64,
    /// Factor applied to every gradient first (the Trainer sets `1/batch_size`).
    pub rescale_grad: f64,
    /// Clip gradients to `[-c, c]` (`None`, 0 or negative: no clipping).
    pub clip_gradient: Option<f64>,
    lr_scheduler: Option<SharedScheduler>,
    /// Keep float32 master copies of float16/bfloat16 weights.
    pub multi_precision: bool,
    begin_num_update: u64,
    counts: UpdateCounts,
    /// The device whose per-index counts `counts.per_index` holds, and the
    /// counts of the others: MXNet counts each device's updates apart, so
    /// one update on each of two devices is one step of a scheduler.
    context: usize,
    other_contexts: BTreeMap<usize, BTreeMap<usize, u64>>,
    lr_mult: HashMap<MultKey, f64>,
    wd_mult: HashMap<MultKey, f64>,
    wd_mult_given: HashMap<MultKey, f64>,
    idx2name: BTreeMap<usize, String>,
    /// Multipliers `(lr_mult, wd_mult)` read from the parameters themselves
    /// (MXNet's `param_dict` of gluon Parameters); they take precedence.
    pub param_mult: HashMap<usize, (f64, f64)>,
    /// Whether parameters named `*_gamma` keep their weight decay by default
    /// (LARS decays only `*_weight`).
    decay_gamma: bool,
    /// Whether an explicit learning rate replaces a scheduler's base rate
    /// (Ftrl keeps its rate apart from the scheduler's).
    rate_overrides_scheduler: bool,
}

impl OptimizerBase {
    /// The base of optimizer `name` whose default learning rate is
    /// `default_lr` (`None`: MXNet's 0.01 unless a scheduler sets it).
    pub fn new(name: &'static str, default_lr: Option<f64>) -> OptimizerBase {
        OptimizerBase {
            name,
            learning_rate: default_lr,
            wd: 0.0,
            rescale_grad: 1.0,
            clip_gradient: None,
            lr_scheduler: None,
            multi_precision: false,
            begin_num_update: 0,
            counts: UpdateCounts::default(),
            context: 0,
            other_contexts: BTreeMap::new(),
            lr_mult: HashMap::new(),
            wd_mult: HashMap::new(),
            wd_mult_given: HashMap::new(),
            idx2name: BTreeMap::new(),
            param_mult: HashMap::new(),
            decay_gamma: true,
            rate_overrides_scheduler: true,
        }
    }

    /// LARS's rule: only `*_weight` parameters decay by default.
    pub(crate) fn decay_only_weights(mut self) -> Self {
        self.decay_gamma = false;
        self
    }

    /// Ftrl's rule: its learning rate does not replace a scheduler's base rate.
    pub(crate) fn rate_apart_from_scheduler(mut self) -> Self {
        self.rate_overrides_scheduler = false;
        self
    }

    /// The optimizer's registry name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The learning rate now: the scheduler's at the current update count,
    /// or the fixed rate.
    pub fn learning_rate(&self) -> Result<f64> {
        match &self.lr_scheduler {
            Some(s) => lock(s)?.lr(self.counts.num_update),
            None => Ok(self.lr()),
        }
    }

    /// The fixed learning rate (MXNet's `lr` attribute).
    pub fn lr(&self) -> f64 {
        self.learning_rate.unwrap_or(DEFAULT_LR)
    }

    /// The learning rate as given (`None` when left to the scheduler).
    pub fn given_learning_rate(&self) -> Option<f64> {
        self.learning_rate
    }

    /// Sets the fixed learning rate; an error while a scheduler owns it.
    pub fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        if self.lr_scheduler.is_some() {
            return Err(Error::Invalid(format!(
                "optimizer `{}`: an LRScheduler owns the learning rate; set_learning_rate only works \
                 without one",
                self.name
            )));
        }
        self.learning_rate = Some(lr);
        Ok(())
    }

    /// The scheduler, if any.
    pub fn lr_scheduler(&self) -> Option<&SharedScheduler> {
        self.lr_scheduler.as_ref()
    }

    /// Installs (or removes) a scheduler. As in MXNet, an explicitly given
    /// learning rate replaces the scheduler's base rate.
    pub fn set_lr_scheduler(&mut self, scheduler: Option<SharedScheduler>) -> Result<()> {
        if let (Some(s), Some(lr), true) = (&scheduler, self.learning_rate, self.rate_overrides_scheduler) {
            let mut s = lock(s)?;
            if s.base_lr() != lr {
                s.set_base_lr(lr);
            }
        }
        self.lr_scheduler = scheduler;
        Ok(())
    }

    /// The largest update count of any parameter.
    pub fn num_update(&self) -> u64 {
        self.counts.num_update
    }

    /// Sets the update count the scheduler sees.
    pub fn set_num_update(&mut self, n: u64) {
        self.counts.num_update = n;
    }

    /// The count every parameter starts from.
    pub fn begin_num_update(&self) -> u64 {
        self.begin_num_update
    }

    /// Sets the starting count (and the current count, as MXNet's constructor does).
    pub fn set_begin_num_update(&mut self, n: u64) {
        self.begin_num_update = n;
        self.counts.num_update = n;
    }

    /// How many updates parameter `index` has received (counting from
    /// `begin_num_update`).
    pub fn index_update_count(&self, index: usize) -> u64 {
        self.counts.per_index.get(&index).copied().unwrap_or(self.begin_num_update)
    }

    /// All update counts.
    pub fn counts(&self) -> &UpdateCounts {
        &self.counts
    }

    /// Replaces the update counts (restoring saved states).
    pub fn set_counts(&mut self, counts: UpdateCounts) {
        self.counts = counts;
    }

    /// Makes the per-index counts those of device `device_id` (MXNet's
    /// `_set_current_context`, called by an updater before it updates that
    /// device's weights); `num_update` stays the largest over all devices.
    pub fn set_current_context(&mut self, device_id: usize) {
        if device_id == self.context {
            return;
        }
        let mine = std::mem::take(&mut self.counts.per_index);
        self.other_contexts.insert(self.context, mine);
        self.counts.per_index = self.other_contexts.remove(&device_id).unwrap_or_default();
        self.context = device_id;
    }

    /// Counts one update of each of `indices` (MXNet's `_update_count`).
    pub fn update_count(&mut self, indices: &[usize]) {
        for &i in indices {
            let c = self.counts.per_index.entry(i).or_insert(self.begin_num_update);
            *c += 1;
            self.counts.num_update = self.counts.num_update.max(*c);
        }
    }

    /// The clipping bound the update operators take (`-1`: none).
    pub fn clip_attr(&self) -> f64 {
        positive_or_off(self.clip_gradient)
    }

    /// Whether a weight of `dtype` is updated through a float32 master copy
    /// (`multi_precision` and a float16/bfloat16 weight).
    pub fn keeps_master_copy(&self, dtype: DType) -> bool {
        self.multi_precision && matches!(dtype, DType::F16 | DType::BF16)
    }

    /// Starts an update of parameter `index`: checks that its `state` holds
    /// `n` arrays, counts the update, and returns the parameter's learning
    /// rate, weight decay and update count.
    pub(crate) fn begin_update(&mut self, index: usize, state: &[NDArray], n: usize) -> Result<Step> {
        super::ops::expect_state(self.name, index, state, n)?;
        self.update_count(&[index]);
        Ok(Step { lr: self.lr_of(index)?, wd: self.wd_of(index), t: self.index_update_count(index) })
    }

    /// The learning rate of each of `indices`: the current rate times each
    /// parameter's `lr_mult`.
    pub fn lrs(&self, indices: &[usize]) -> Result<Vec<f64>> {
        let lr = self.learning_rate()?;
        Ok(indices.iter().map(|&i| lr * self.mult(i, true)).collect())
    }

    /// The learning rate of parameter `index`.
    pub fn lr_of(&self, index: usize) -> Result<f64> {
        Ok(self.lrs(&[index])?[0])
    }

    /// The weight decay of each of `indices`: `wd` times each `wd_mult`.
    pub fn wds(&self, indices: &[usize]) -> Vec<f64> {
        indices.iter().map(|&i| self.wd * self.mult(i, false)).collect()
    }

    /// The weight decay of parameter `index`.
    pub fn wd_of(&self, index: usize) -> f64 {
        self.wds(&[index])[0]
    }

    /// A multiplier: the parameter's own, else by index, else by name, else 1.
    fn mult(&self, index: usize, lr: bool) -> f64 {
        if let Some(&(l, w)) = self.param_mult.get(&index) {
            return if lr { l } else { w };
        }
        let table = if lr { &self.lr_mult } else { &self.wd_mult };
        if let Some(&m) = table.get(&MultKey::Index(index)) {
            return m;
        }
        match self.idx2name.get(&index) {
            Some(name) => table.get(&MultKey::Name(name.clone())).copied().unwrap_or(1.0),
            None => 1.0,
        }
    }

    /// The learning-rate multipliers.
    pub fn lr_mult(&self) -> &HashMap<MultKey, f64> {
        &self.lr_mult
    }

    /// The weight-decay multipliers (including the defaults from names).
    pub fn wd_mult(&self) -> &HashMap<MultKey, f64> {
        &self.wd_mult
    }

    /// Replaces the learning-rate multipliers (MXNet's `set_lr_mult`).
    pub fn set_lr_mult(&mut self, mult: HashMap<MultKey, f64>) {
        self.lr_mult = mult;
    }

    /// Replaces the weight-decay multipliers (MXNet's `set_wd_mult`): named
    /// parameters not ending in `_weight` (or `_gamma`, except for LARS)
    /// get 0 unless `mult` says otherwise.
    pub fn set_wd_mult(&mut self, mult: HashMap<MultKey, f64>) {
        let mut table = HashMap::new();
        for name in self.idx2name.values() {
            let decays = name.ends_with("_weight") || (self.decay_gamma && name.ends_with("_gamma"));
            if !decays {
                table.insert(MultKey::Name(name.clone()), 0.0);
            }
        }
        table.extend(mult.iter().map(|(k, v)| (k.clone(), *v)));
        self.wd_mult = table;
        self.wd_mult_given = mult;
    }

    /// The index → name map.
    pub fn idx2name(&self) -> &BTreeMap<usize, String> {
        &self.idx2name
    }

    /// Sets the index → name map (MXNet's `param_idx2name`) and recomputes
    /// the default weight-decay multipliers.
    pub fn set_idx2name(&mut self, map: BTreeMap<usize, String>) {
        self.idx2name = map;
        let given = std::mem::take(&mut self.wd_mult_given);
        self.set_wd_mult(given);
    }

    /// Sets a shared hyper-parameter from its text: `learning_rate`, `wd`,
    /// `rescale_grad`, `clip_gradient`, `multi_precision`,
    /// `begin_num_update`. `Ok(false)` for other keys.
    pub fn set_param(&mut self, key: &str, value: &str) -> Result<bool> {
        let v = Text { opt: self.name, key, text: value };
        match key {
            "learning_rate" => self.learning_rate = v.opt_f64()?,
            "wd" => self.wd = v.f64()?,
            "rescale_grad" => self.rescale_grad = v.f64()?,
            "clip_gradient" => self.clip_gradient = v.opt_f64()?,
            "multi_precision" => self.multi_precision = v.bool()?,
            "begin_num_update" => self.set_begin_num_update(v.u64()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The shared hyper-parameters by name.
    pub fn params(&self) -> Vec<(&'static str, ParamValue)> {
        vec![
            ("learning_rate", ParamValue::OptFloat(self.learning_rate)),
            ("wd", ParamValue::Float(self.wd)),
            ("rescale_grad", ParamValue::Float(self.rescale_grad)),
            ("clip_gradient", ParamValue::OptFloat(self.clip_gradient)),
            ("multi_precision", ParamValue::Bool(self.multi_precision)),
            ("begin_num_update", ParamValue::Int(self.begin_num_update as i64)),
        ]
    }
}

/// What one update of one parameter uses (from [`OptimizerBase::begin_update`]).
pub(crate) struct Step {
    /// The parameter's learning rate (with its multiplier).
    pub lr: f64,
    /// The parameter's weight decay (with its multiplier).
    pub wd: f64,
    /// How many updates the parameter has received, this one included.
    pub t: u64,
}

/// A bound the update operators take: `c` when positive, else `-1` (off).
pub(crate) fn positive_or_off(c: Option<f64>) -> f64 {
    match c {
        Some(c) if c > 0.0 => c,
        _ => -1.0,
    }
}

/// Locks a shared scheduler, turning a poisoned lock into an error.
pub(crate) fn lock(
    s: &SharedScheduler,
) -> Result<std::sync::MutexGuard<'_, dyn super::lr_scheduler::LrScheduler + 'static>> {
    s.lock()
        .map_err(|_| Error::Invalid("the learning-rate scheduler panicked earlier and is unusable".into()))
}

/// A hyper-parameter's text with what is needed to report it.
pub(crate) struct Text<'a> {
    /// The optimizer's name.
    pub opt: &'a str,
    /// The hyper-parameter's name.
    pub key: &'a str,
    /// Its text.
    pub text: &'a str,
}

/// A hyper-parameter type parsed from its [`Text`]: `f64`, `Option<f64>`, `bool`.
pub(crate) trait FromText: Sized {
    /// Parses `text`, an error naming the optimizer and the key.
    fn from_text(text: &Text<'_>) -> Result<Self>;
}

impl FromText for f64 {
    fn from_text(text: &Text<'_>) -> Result<f64> {
        text.f64()
    }
}

impl FromText for Option<f64> {
    fn from_text(text: &Text<'_>) -> Result<Option<f64>> {
        text.opt_f64()
    }
}

impl FromText for bool {
    fn from_text(text: &Text<'_>) -> Result<bool> {
        text.bool()
    }
}

impl Text<'_> {
    fn err(&self, what: &str) -> Error {
        Error::Invalid(format!(
            "optimizer `{}`: hyper-parameter `{}` must be {what}, got `{}`",
            self.opt, self.key, self.text
        ))
    }

    fn trimmed(&self) -> &str {
        self.text.trim().trim_matches(|c| c == '\'' || c == '"')
    }

    /// A number.
    pub fn f64(&self) -> Result<f64> {
        self.trimmed().parse::<f64>().map_err(|_| self.err("a number"))
    }

    /// A number or `None`.
    pub fn opt_f64(&self) -> Result<Option<f64>> {
        match self.trimmed() {
            "None" | "none" | "null" => Ok(None),
            _ => self.f64().map(Some).map_err(|_| self.err("a number or None")),
        }
    }

    /// `True`/`False` (also `true`/`false`, `1`/`0`).
    pub fn bool(&self) -> Result<bool> {
        match self.trimmed() {
            "True" | "true" | "1" => Ok(true),
            "False" | "false" | "0" => Ok(false),
            _ => Err(self.err("True or False")),
        }
    }

    /// A non-negative integer.
    pub fn u64(&self) -> Result<u64> {
        let t = self.trimmed();
        if let Ok(v) = t.parse::<u64>() {
            return Ok(v);
        }
        match t.parse::<f64>() {
            Ok(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(f as u64),
            _ => Err(self.err("a non-negative integer")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_counts_its_own_updates() {
        let mut b = OptimizerBase::new("sgd", None);
        for _ in 0..3 {
            for device in [0, 1] {
                b.set_current_context(device);
                b.update_count(&[0]);
            }
        }
        assert_eq!((b.index_update_count(0), b.num_update()), (3, 3));
        b.set_current_context(2);
        assert_eq!(b.index_update_count(0), 0);
        b.set_current_context(0);
        b.update_count(&[0]);
        assert_eq!((b.index_update_count(0), b.num_update()), (4, 4));
    }

    #[test]
    fn counts_multipliers_and_names() {
        let mut b = OptimizerBase::new("sgd", None);
        b.wd = 0.1;
        b.set_idx2name(
            [(0, "fc_weight".to_string()), (1, "fc_bias".to_string()), (2, "bn_gamma".to_string())].into(),
        );
        assert_eq!(b.wds(&[0, 1, 2, 3]), vec![0.1, 0.0, 0.1, 0.1]);
        b.set_lr_mult([(MultKey::Name("fc_bias".into()), 2.0), (MultKey::Index(3), 0.5)].into());
        assert_eq!(b.lrs(&[0, 1, 3]).unwrap(), vec![0.01, 0.02, 0.005]);
        b.param_mult.insert(1, (3.0, 1.0));
        assert!((b.lr_of(1).unwrap() - 0.03).abs() < 1e-15);
        assert_eq!(b.wd_of(1), 0.1);
        b.set_begin_num_update(5);
        b.update_count(&[0, 1]);
        b.update_count(&[0]);
        assert_eq!((b.index_update_count(0), b.index_update_count(1), b.num_update()), (7, 6, 7));
        let lars = OptimizerBase::new("lars", None).decay_only_weights();
        let mut lars = lars;
        lars.wd = 1.0;
        lars.set_idx2name([(0, "bn_gamma".to_string())].into());
        assert_eq!(lars.wd_of(0), 0.0);
    }

    #[test]
    fn hyper_parameter_text_errors_name_optimizer_and_key() {
        let mut b = OptimizerBase::new("adam", Some(0.001));
        assert!(b.set_param("wd", "0.5").unwrap());
        assert!(!b.set_param("momentum", "0.5").unwrap());
        let e = b.set_param("rescale_grad", "fast").unwrap_err().to_string();
        assert!(e.contains("adam") && e.contains("rescale_grad") && e.contains("fast"), "{e}");
        assert!(b.set_param("clip_gradient", "None").unwrap());
        assert_eq!(b.clip_attr(), -1.0);
        b.set_param("learning_rate", "None").unwrap();
        assert_eq!(b.learning_rate().unwrap(), DEFAULT_LR);
    }
}
