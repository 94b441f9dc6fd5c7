//! FTML, "Follow the Moving Leader" ([`Ftml`], `ftml`), through the fused
//! `ftml_update` with the parameter's step count `t`. State `[d, v, z]`;
//! multi-precision through the generic float32 master copy.

use super::ops::{self, fused_step};
use super::{Optimizer, OptimizerBase, State};
use oxnet_core::{AttrValue, NDArray, Result};

declare_optimizer! {
    /// MXNet's `FTML` optimizer (Zheng & Kwok, "Follow the Moving Leader in
    /// Deep Learning", 2017); default learning rate 0.01.
    pub struct Ftml {
        base: OptimizerBase::new("ftml", None),
        /// Decay of the first moment; generally close to 0.5.
        pub beta1: f64 = 0.6,
        /// Decay of the second moment; generally close to 1.
        pub beta2: f64 = 0.999,
        /// Keeps the denominator away from zero.
        pub epsilon: f64 = 1e-8,
    }
}

impl Optimizer for Ftml {
    optimizer_accessors!();

    fn create_state(&self, _index: usize, weight: &NDArray) -> Result<State> {
        ops::zeros_state(weight, 3)
    }

    fn update(&mut self, index: usize, weight: &NDArray, grad: &NDArray, state: &[NDArray]) -> Result<()> {
        let step = self.base.begin_update(index, state, 3)?;
        let attrs = [
            ("lr", AttrValue::Float(step.lr)),
            ("wd", AttrValue::Float(step.wd)),
            ("beta1", AttrValue::Float(self.beta1)),
            ("beta2", AttrValue::Float(self.beta2)),
            ("epsilon", AttrValue::Float(self.epsilon)),
            ("t", AttrValue::Int(step.t.min(i64::MAX as u64) as i64)),
            ("rescale_grad", AttrValue::Float(self.base.rescale_grad)),
            ("clip_grad", AttrValue::Float(self.base.clip_attr())),
        ];
        fused_step("ftml_update", weight, grad, state, &attrs)
    }
}

#[cfg(test)]
mod tests {
    use crate::optim::{create, Updater};
    use oxnet_core::NDArray;

    /// Two steps against the formula, with weight decay and clipping.
    #[test]
    fn two_steps_follow_the_formula() {
        let opt =
            create("ftml", &[("learning_rate", "0.1"), ("wd", "0.01"), ("clip_gradient", "0.5")]).unwrap();
        let mut updater = Updater::new(opt);
        let w = NDArray::from_vec(vec![0.5f64, -1.5], &[2]).unwrap();
        let g = NDArray::from_vec(vec![0.2f64, -3.0], &[2]).unwrap();
        let (b1, b2, eps, lr, wd) = (0.6f64, 0.999f64, 1e-8, 0.1, 0.01);
        let mut want: Vec<[f64; 4]> = vec![[0.5, 0.0, 0.0, 0.0], [-1.5, 0.0, 0.0, 0.0]];
        for t in 1..=2 {
            updater.update(0, &g, &w).unwrap();
            for (s, gi) in want.iter_mut().zip([0.2, -3.0]) {
                let [w0, d, v, z] = *s;
                let gr = (gi + wd * w0).clamp(-0.5, 0.5);
                let v = b2 * v + (1.0 - b2) * gr * gr;
                let d_t = (1.0 - b1.powi(t)) / lr * ((v / (1.0 - b2.powi(t))).sqrt() + eps);
                let z = b1 * z + (1.0 - b1) * gr - (d_t - b1 * d) * w0;
                *s = [-z / d_t, d_t, v, z];
            }
        }
        let got = w.to_vec::<f64>().unwrap();
        for (g, s) in got.iter().zip(&want) {
            assert!((g - s[0]).abs() < 1e-12, "{g} vs {}", s[0]);
        }
    }
}
