//! Learning-rate schedulers, as MXNet 1.9.1's `mx.lr_scheduler` defines
//! them: [`FactorScheduler`], [`MultiFactorScheduler`], [`PolyScheduler`],
//! [`CosineScheduler`], each with an optional warm-up.
//!
//! A scheduler maps the optimizer's update count (`num_update`, the largest
//! number of updates any weight has received) to a learning rate. Like
//! MXNet's, the Factor and MultiFactor schedulers are stateful: they lower
//! their `base_lr` as the count passes each step, so they expect counts that
//! do not go backwards.
//!
//! During warm-up (`num_update < warmup_steps`) the rate is
//! `warmup_begin_lr` (mode `constant`) or rises linearly from it towards the
//! `base_lr` the scheduler was built with (mode `linear`).
//!
//! ```
//! use oxnet_nn::optim::lr_scheduler::{FactorScheduler, LrScheduler, Warmup};
//! let mut s = FactorScheduler::new(2, 0.5, 1e-8, 1.0, Warmup::none()).unwrap();
//! let lrs: Vec<f64> = (1..=6).map(|n| s.lr(n).unwrap()).collect();
//! assert_eq!(lrs, vec![1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
//! ```

use oxnet_core::{Error, Result};
use std::f64::consts::PI;
use std::sync::{Arc, Mutex};

/// A learning-rate schedule.
pub trait LrScheduler: Send {
    /// The learning rate after `num_update` updates (may advance internal state).
    fn lr(&mut self, num_update: u64) -> Result<f64>;
    /// The current base learning rate.
    fn base_lr(&self) -> f64;
    /// Replaces the base learning rate (an optimizer built with an explicit
    /// `learning_rate` does this, as MXNet's does).
    fn set_base_lr(&mut self, lr: f64);
    /// The scheduler's current values by name (`base_lr`, `count`, ...), for
    /// inspection from other faces.
    fn describe(&self) -> Vec<(&'static str, f64)> {
        vec![("base_lr", self.base_lr())]
    }
}

/// A scheduler shared between an optimizer and its owner (the Python object
/// that users call, for instance).
pub type SharedScheduler = Arc<Mutex<dyn LrScheduler>>;

/// Wraps a scheduler for sharing.
pub fn shared(s: impl LrScheduler + 'static) -> SharedScheduler {
    Arc::new(Mutex::new(s))
}

/// How the learning rate moves during warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmupMode {
    /// Rises in equal increments from `warmup_begin_lr` to the base rate.
    Linear,
    /// Stays at `warmup_begin_lr`.
    Constant,
}

impl WarmupMode {
    /// Parses `linear` or `constant`.
    pub fn parse(s: &str) -> Result<WarmupMode> {
        match s {
            "linear" => Ok(WarmupMode::Linear),
            "constant" => Ok(WarmupMode::Constant),
            other => Err(Error::Invalid(format!(
                "lr_scheduler: warmup_mode must be 'linear' or 'constant', got '{other}'"
            ))),
        }
    }

    /// MXNet's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            WarmupMode::Linear => "linear",
            WarmupMode::Constant => "constant",
        }
    }
}

/// The warm-up settings of a scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warmup {
    /// Number of warm-up updates (0: none).
    pub steps: i64,
    /// The rate warm-up starts from.
    pub begin_lr: f64,
    /// How the rate moves during warm-up.
    pub mode: WarmupMode,
}

impl Warmup {
    /// No warm-up.
    pub fn none() -> Warmup {
        Warmup { steps: 0, begin_lr: 0.0, mode: WarmupMode::Linear }
    }

    /// `steps` updates of warm-up from `begin_lr` in `mode`.
    pub fn new(steps: i64, begin_lr: f64, mode: WarmupMode) -> Warmup {
        Warmup { steps, begin_lr, mode }
    }
}

/// The warm-up part every scheduler shares (MXNet's `LRScheduler` base).
#[derive(Debug, Clone)]
struct Base {
    base_lr: f64,
    warmup_steps: u64,
    warmup_begin_lr: f64,
    /// The base rate at construction: where linear warm-up ends.
    warmup_final_lr: f64,
    warmup_mode: WarmupMode,
}

impl Base {
    fn new(kind: &str, base_lr: f64, w: Warmup) -> Result<Base> {
        if w.begin_lr > base_lr {
            return Err(Error::Invalid(format!(
                "{kind}: base_lr ({base_lr}) has to be at least warmup_begin_lr ({})",
                w.begin_lr
            )));
        }
        if w.steps < 0 {
            return Err(Error::Invalid(format!("{kind}: warmup_steps must be 0 or more, got {}", w.steps)));
        }
        Ok(Base {
            base_lr,
            warmup_steps: w.steps as u64,
            warmup_begin_lr: w.begin_lr,
            warmup_final_lr: base_lr,
            warmup_mode: w.mode,
        })
    }

    /// The warm-up rate, while `num_update < warmup_steps`.
    fn warmup(&self, num_update: u64) -> Option<f64> {
        if num_update >= self.warmup_steps {
            return None;
        }
        Some(match self.warmup_mode {
            WarmupMode::Linear => {
                self.warmup_begin_lr
                    + (self.warmup_final_lr - self.warmup_begin_lr) * num_update as f64
                        / self.warmup_steps as f64
            }
            WarmupMode::Constant => self.warmup_begin_lr,
        })
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("base_lr", self.base_lr),
            ("warmup_steps", self.warmup_steps as f64),
            ("warmup_begin_lr", self.warmup_begin_lr),
            ("warmup_final_lr", self.warmup_final_lr),
        ]
    }
}

/// Multiplies the rate by `factor` every `step` updates:
/// `base_lr * factor^floor((num_update - 1) / step)`, never below
/// `stop_factor_lr`.
#[derive(Debug, Clone)]
pub struct FactorScheduler {
    base: Base,
    step: u64,
    factor: f64,
    stop_factor_lr: f64,
    count: u64,
}

impl FactorScheduler {
    /// MXNet's `FactorScheduler(step, factor, stop_factor_lr, base_lr, warmup...)`.
    pub fn new(step: i64, factor: f64, stop_factor_lr: f64, base_lr: f64, warmup: Warmup) -> Result<Self> {
        let base = Base::new("FactorScheduler", base_lr, warmup)?;
        if step < 1 {
            return Err(Error::Invalid(format!("FactorScheduler: step must be at least 1, got {step}")));
        }
        if factor > 1.0 {
            return Err(Error::Invalid(format!(
                "FactorScheduler: factor must be at most 1 so that the rate decreases, got {factor}"
            )));
        }
        Ok(FactorScheduler { base, step: step as u64, factor, stop_factor_lr, count: 0 })
    }
}

impl LrScheduler for FactorScheduler {
    fn lr(&mut self, num_update: u64) -> Result<f64> {
        if let Some(lr) = self.base.warmup(num_update) {
            return Ok(lr);
        }
        // `while`, not `if`: a resumed run may jump several steps at once
        while num_update > self.count + self.step {
            self.count += self.step;
            self.base.base_lr *= self.factor;
            if self.base.base_lr < self.stop_factor_lr {
                self.base.base_lr = self.stop_factor_lr;
            }
        }
        Ok(self.base.base_lr)
    }

    fn base_lr(&self) -> f64 {
        self.base.base_lr
    }

    fn set_base_lr(&mut self, lr: f64) {
        self.base.base_lr = lr;
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.base.describe();
        v.extend([
            ("step", self.step as f64),
            ("factor", self.factor),
            ("stop_factor_lr", self.stop_factor_lr),
            ("count", self.count as f64),
        ]);
        v
    }
}

/// Multiplies the rate by `factor` each time `num_update` passes one of
/// the increasing `steps`.
#[derive(Debug, Clone)]
pub struct MultiFactorScheduler {
    base: Base,
    steps: Vec<u64>,
    factor: f64,
    cur_step_ind: usize,
    count: u64,
}

impl MultiFactorScheduler {
    /// MXNet's `MultiFactorScheduler(step, factor, base_lr, warmup...)`.
    pub fn new(steps: &[i64], factor: f64, base_lr: f64, warmup: Warmup) -> Result<Self> {
        let base = Base::new("MultiFactorScheduler", base_lr, warmup)?;
        if steps.is_empty() {
            return Err(Error::Invalid("MultiFactorScheduler: step must list at least one update".into()));
        }
        for (i, &s) in steps.iter().enumerate() {
            if s < 1 {
                return Err(Error::Invalid(format!(
                    "MultiFactorScheduler: steps must be at least 1, got {s}"
                )));
            }
            if i > 0 && s <= steps[i - 1] {
                return Err(Error::Invalid(format!(
                    "MultiFactorScheduler: steps must increase, got {:?}",
                    steps
                )));
            }
        }
        if factor > 1.0 {
            return Err(Error::Invalid(format!(
                "MultiFactorScheduler: factor must be at most 1 so that the rate decreases, got {factor}"
            )));
        }
        Ok(MultiFactorScheduler {
            base,
            steps: steps.iter().map(|&s| s as u64).collect(),
            factor,
            cur_step_ind: 0,
            count: 0,
        })
    }
}

impl LrScheduler for MultiFactorScheduler {
    fn lr(&mut self, num_update: u64) -> Result<f64> {
        if let Some(lr) = self.base.warmup(num_update) {
            return Ok(lr);
        }
        while self.cur_step_ind < self.steps.len() && num_update > self.steps[self.cur_step_ind] {
            self.count = self.steps[self.cur_step_ind];
            self.cur_step_ind += 1;
            self.base.base_lr *= self.factor;
        }
        Ok(self.base.base_lr)
    }

    fn base_lr(&self) -> f64 {
        self.base.base_lr
    }

    fn set_base_lr(&mut self, lr: f64) {
        self.base.base_lr = lr;
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.base.describe();
        v.extend([
            ("factor", self.factor),
            ("cur_step_ind", self.cur_step_ind as f64),
            ("count", self.count as f64),
        ]);
        v
    }
}

/// The decay part shared by [`PolyScheduler`] and [`CosineScheduler`].
#[derive(Debug, Clone)]
struct Decay {
    base: Base,
    base_lr_orig: f64,
    max_update: u64,
    final_lr: f64,
    max_steps: u64,
}

impl Decay {
    fn new(kind: &str, max_update: i64, base_lr: f64, final_lr: f64, warmup: Warmup) -> Result<Decay> {
        let base = Base::new(kind, base_lr, warmup)?;
        if max_update < 1 {
            return Err(Error::Invalid(format!("{kind}: max_update must be at least 1, got {max_update}")));
        }
        if max_update as u64 <= base.warmup_steps {
            return Err(Error::Invalid(format!(
                "{kind}: max_update ({max_update}) must exceed warmup_steps ({})",
                base.warmup_steps
            )));
        }
        let max_steps = max_update as u64 - base.warmup_steps;
        Ok(Decay { base, base_lr_orig: base_lr, max_update: max_update as u64, final_lr, max_steps })
    }

    /// Runs `curve(progress in [0, 1])` after warm-up until `max_update`;
    /// the rate then stays where it ended.
    fn lr(&mut self, num_update: u64, curve: impl Fn(f64) -> f64) -> f64 {
        if let Some(lr) = self.base.warmup(num_update) {
            return lr;
        }
        if num_update <= self.max_update {
            let progress = (num_update - self.base.warmup_steps) as f64 / self.max_steps as f64;
            self.base.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * curve(progress);
        }
        self.base.base_lr
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.base.describe();
        v.extend([
            ("base_lr_orig", self.base_lr_orig),
            ("max_update", self.max_update as f64),
            ("final_lr", self.final_lr),
            ("max_steps", self.max_steps as f64),
        ]);
        v
    }
}

/// Polynomial decay: `final_lr + (base_lr - final_lr) * (1 - p)^pwr` where
/// `p` is the progress from the end of warm-up to `max_update`.
#[derive(Debug, Clone)]
pub struct PolyScheduler {
    decay: Decay,
    power: f64,
}

impl PolyScheduler {
    /// MXNet's `PolyScheduler(max_update, base_lr, pwr, final_lr, warmup...)`.
    pub fn new(max_update: i64, base_lr: f64, pwr: f64, final_lr: f64, warmup: Warmup) -> Result<Self> {
        Ok(PolyScheduler {
            decay: Decay::new("PolyScheduler", max_update, base_lr, final_lr, warmup)?,
            power: pwr,
        })
    }
}

impl LrScheduler for PolyScheduler {
    fn lr(&mut self, num_update: u64) -> Result<f64> {
        let power = self.power;
        Ok(self.decay.lr(num_update, |p| (1.0 - p).powf(power)))
    }

    fn base_lr(&self) -> f64 {
        self.decay.base.base_lr
    }

    fn set_base_lr(&mut self, lr: f64) {
        self.decay.base.base_lr = lr;
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        let mut v = self.decay.describe();
        v.push(("power", self.power));
        v
    }
}

/// Cosine decay: `final_lr + (base_lr - final_lr) * (1 + cos(pi * p)) / 2`
/// where `p` is the progress from the end of warm-up to `max_update`.
#[derive(Debug, Clone)]
pub struct CosineScheduler {
    decay: Decay,
}

impl CosineScheduler {
    /// MXNet's `CosineScheduler(max_update, base_lr, final_lr, warmup...)`.
    pub fn new(max_update: i64, base_lr: f64, final_lr: f64, warmup: Warmup) -> Result<Self> {
        Ok(CosineScheduler { decay: Decay::new("CosineScheduler", max_update, base_lr, final_lr, warmup)? })
    }
}

impl LrScheduler for CosineScheduler {
    fn lr(&mut self, num_update: u64) -> Result<f64> {
        Ok(self.decay.lr(num_update, |p| (1.0 + (PI * p).cos()) / 2.0))
    }

    fn base_lr(&self) -> f64 {
        self.decay.base.base_lr
    }

    fn set_base_lr(&mut self, lr: f64) {
        self.decay.base.base_lr = lr;
    }

    fn describe(&self) -> Vec<(&'static str, f64)> {
        self.decay.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &mut dyn LrScheduler, n: u64) -> Vec<f64> {
        (0..n).map(|i| s.lr(i).unwrap()).collect()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn factor_with_linear_warmup_and_floor() {
        let mut s =
            FactorScheduler::new(2, 0.1, 0.0015, 1.0, Warmup::new(2, 0.5, WarmupMode::Linear)).unwrap();
        // warm-up 0.5, 0.75; then 1.0 up to update 2, x0.1 after 2 and after 4, then the floor
        close(&run(&mut s, 9), &[0.5, 0.75, 1.0, 0.1, 0.1, 0.01, 0.01, 0.0015, 0.0015]);
    }

    #[test]
    fn multi_factor_steps() {
        let mut s =
            MultiFactorScheduler::new(&[2, 4], 0.5, 1.0, Warmup::new(1, 0.2, WarmupMode::Constant)).unwrap();
        close(&run(&mut s, 7), &[0.2, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
    }

    #[test]
    fn poly_and_cosine() {
        let mut p = PolyScheduler::new(4, 1.0, 2.0, 0.0, Warmup::none()).unwrap();
        close(&run(&mut p, 6), &[1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]);
        let mut c = CosineScheduler::new(4, 2.0, 0.0, Warmup::new(2, 0.0, WarmupMode::Linear)).unwrap();
        // warm-up 0, 1; then 2*(1+cos(pi*(n-2)/2))/2
        close(&run(&mut c, 6), &[0.0, 1.0, 2.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(FactorScheduler::new(0, 0.5, 0.0, 0.1, Warmup::none())
            .unwrap_err()
            .to_string()
            .contains("step"));
        assert!(FactorScheduler::new(1, 2.0, 0.0, 0.1, Warmup::none())
            .unwrap_err()
            .to_string()
            .contains("factor"));
        assert!(MultiFactorScheduler::new(&[3, 2], 0.5, 0.1, Warmup::none()).is_err());
        let e = PolyScheduler::new(10, 0.1, 2.0, 0.0, Warmup::new(1, 0.5, WarmupMode::Linear)).unwrap_err();
        assert!(e.to_string().contains("warmup_begin_lr"), "{e}");
        assert!(CosineScheduler::new(0, 0.1, 0.0, Warmup::none()).is_err());
        assert!(WarmupMode::parse("cubic").unwrap_err().to_string().contains("warmup_mode"));
    }
}
