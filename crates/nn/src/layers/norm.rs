//! [`LayerNorm`], [`GroupNorm`] and [`InstanceNorm`]: normalizations over
//! each sample's own values, with a learnt scale `gamma` and shift `beta`
//! (Gluon's layers of the same names).

use super::custom::infer_param_shapes;
use super::OpCall;
use crate::block::{in_block, single_input, Block};
use crate::init::{One, Zero};
use crate::naming::unique_prefix;
use crate::parameter::{GradReq, Parameter};
use oxnet_core::{AttrValue, DType, NDArray, Result};
use std::sync::Arc;

/// What the three layers share: the operator call and `gamma`/`beta`,
/// whose shape the operator infers from the first input.
struct Affine {
    prefix: String,
    kind: &'static str,
    call: OpCall,
    gamma: Parameter,
    beta: Parameter,
}

impl Affine {
    fn new(hint: &str, kind: &'static str, op: &str, attrs: &[(&str, AttrValue)]) -> Result<Affine> {
        let prefix = unique_prefix(hint);
        let call = OpCall::new(op, attrs).map_err(|e| in_block(e, &prefix, kind))?;
        let param = |name: &str, init: crate::parameter::SharedInit| {
            Parameter::new(format!("{prefix}{name}"), &[0]).allow_deferred_init(true).with_init(init)
        };
        Ok(Affine {
            gamma: param("gamma", Arc::new(One)),
            beta: param("beta", Arc::new(Zero)),
            prefix,
            kind,
            call,
        })
    }

    /// Keeps gamma at 1 (`scale == false`) or beta at 0 (`center == false`).
    fn learn(self, scale: bool, center: bool) -> Result<Affine> {
        self.gamma.set_grad_req(if scale { GradReq::Write } else { GradReq::Null })?;
        self.beta.set_grad_req(if center { GradReq::Write } else { GradReq::Null })?;
        Ok(self)
    }

    fn dtype(mut self, dtype: DType) -> Affine {
        self.gamma = self.gamma.with_dtype(dtype);
        self.beta = self.beta.with_dtype(dtype);
        self
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        vec![("gamma".to_string(), self.gamma.clone()), ("beta".to_string(), self.beta.clone())]
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let run = || -> Result<NDArray> {
            let x = single_input(inputs, &self.prefix)?;
            infer_param_shapes(
                &self.call.op,
                &self.call.attrs,
                &[x],
                &[&self.gamma, &self.beta],
                &self.prefix,
            )?;
            let (g, b) = (self.gamma.data()?, self.beta.data()?);
            self.call.call1(&[x, &g, &b])
        };
        run().map(|y| vec![y]).map_err(|e| in_block(e, self.prefix.trim_end_matches('_'), self.kind))
    }
}

macro_rules! affine_block {
    ($name:ident) => {
        impl $name {
            /// Keeps gamma at 1 when `false` (learnt by default).
            pub fn scale(mut self, scale: bool) -> Result<$name> {
                let center = self.0.beta.grad_req() != GradReq::Null;
                self.0 = self.0.learn(scale, center)?;
                Ok(self)
            }

            /// Keeps beta at 0 when `false` (learnt by default).
            pub fn center(mut self, center: bool) -> Result<$name> {
                let scale = self.0.gamma.grad_req() != GradReq::Null;
                self.0 = self.0.learn(scale, center)?;
                Ok(self)
            }

            /// The parameters' element type (float32 by default).
            pub fn dtype(self, dtype: DType) -> $name {
                $name(self.0.dtype(dtype))
            }

            /// The scale, `gamma`.
            pub fn gamma(&self) -> &Parameter {
                &self.0.gamma
            }

            /// The shift, `beta`.
            pub fn beta(&self) -> &Parameter {
                &self.0.beta
            }
        }

        impl Block for $name {
            fn prefix(&self) -> &str {
                &self.0.prefix
            }

            fn params(&self) -> Vec<(String, Parameter)> {
                self.0.params()
            }

            fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
                self.0.forward(inputs)
            }
        }
    };
}

/// Layer normalization (`LayerNorm`): each position normalized over `axis`
/// (the last by default), then `gamma` and `beta` of that axis's extent;
/// prefix `layernorm<k>_`.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::Zero;
/// use oxnet_nn::layers::LayerNorm;
/// use oxnet_nn::parameter::shared_init;
///
/// let ln = LayerNorm::new(-1, 1e-5).unwrap();
/// ln.initialize(&shared_init(Zero)).unwrap();
/// let x = NDArray::from_vec(vec![1.0f32, 3.0, 10.0, 10.0], &[2, 2]).unwrap();
/// let y = ln.call(&x).unwrap().to_vec::<f32>().unwrap();
/// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4 && y[2].abs() < 1e-6);
/// assert_eq!(ln.gamma().shape(), vec![2]);
/// ```
pub struct LayerNorm(Affine);

impl LayerNorm {
    /// Normalizes over `axis`, adding `epsilon` to the variance (Gluon's
    /// defaults: -1 and 1e-5).
    pub fn new(axis: i64, epsilon: f64) -> Result<LayerNorm> {
        let attrs = [("axis", axis.into()), ("eps", epsilon.into())];
        Affine::new("layernorm", "LayerNorm", "LayerNorm", &attrs).map(LayerNorm)
    }
}
affine_block!(LayerNorm);

/// Group normalization (`GroupNorm`): the channels (axis 1) of each sample
/// split into `num_groups` groups, each normalized over its channels and
/// positions; then `gamma` and `beta`, one per group as in MXNet 1.x;
/// prefix `groupnorm<k>_`.
pub struct GroupNorm(Affine);

impl GroupNorm {
    /// `num_groups` groups (Gluon's default 1), `epsilon` added to the
    /// variance (1e-5).
    pub fn new(num_groups: usize, epsilon: f64) -> Result<GroupNorm> {
        let attrs = [("num_groups", num_groups.into()), ("eps", epsilon.into())];
        Affine::new("groupnorm", "GroupNorm", "GroupNorm", &attrs).map(GroupNorm)
    }
}
affine_block!(GroupNorm);

/// Instance normalization (`InstanceNorm`): each channel (axis 1) of each
/// sample normalized over its positions, then `gamma` and `beta` per
/// channel; prefix `instancenorm<k>_`.
pub struct InstanceNorm(Affine);

impl InstanceNorm {
    /// `epsilon` added to the variance (Gluon's default 1e-5).
    pub fn new(epsilon: f64) -> Result<InstanceNorm> {
        Affine::new("instancenorm", "InstanceNorm", "InstanceNorm", &[("eps", epsilon.into())])
            .map(InstanceNorm)
    }
}
affine_block!(InstanceNorm);
