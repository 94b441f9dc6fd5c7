//! [`Dense`]: a fully connected layer, `activation(x · weightᵀ + bias)`.

use super::{Activation, OpCall};
use crate::block::{in_block, single_input, Block};
use crate::init::Zero;
use crate::naming::unique_prefix;
use crate::parameter::{Parameter, SharedInit};
use oxnet_core::{DType, NDArray, Result};
use std::sync::{Arc, OnceLock};

/// A fully connected layer (Gluon's `nn.Dense`): `weight` of shape
/// `(units, in_units)` and `bias` of shape `(units,)`; `in_units` 0 (the
/// default) is inferred from the first input. With `flatten` (the
/// default) every axis but the first is flattened into the features;
/// without it the layer acts on the last axis.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::One;
/// use oxnet_nn::layers::Dense;
/// use oxnet_nn::parameter::shared_init;
///
/// let dense = Dense::new(2).in_units(3);
/// dense.initialize(&shared_init(One)).unwrap();
/// let x = NDArray::from_vec(vec![1.0f32, -2.0, 3.0], &[1, 3]).unwrap();
/// assert_eq!(dense.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
/// assert_eq!(dense.weight().name(), format!("{}weight", dense.prefix()));
/// ```
pub struct Dense {
    prefix: String,
    units: usize,
    flatten: bool,
    weight: Parameter,
    bias: Option<Parameter>,
    activation: Option<Activation>,
    /// The `FullyConnected` call, made on first use (builders reset it).
    fc: OnceLock<OpCall>,
}

impl Dense {
    /// A layer of `units` outputs, named `dense<k>_` in the current scope;
    /// `in_units` inferred, a bias, no activation, flattening input.
    pub fn new(units: usize) -> Dense {
        let prefix = unique_prefix("dense");
        let weight = Parameter::new(format!("{prefix}weight"), &[units, 0]).allow_deferred_init(true);
        let bias = Parameter::new(format!("{prefix}bias"), &[units])
            .allow_deferred_init(true)
            .with_init(Arc::new(Zero));
        Dense {
            prefix,
            units,
            flatten: true,
            weight,
            bias: Some(bias),
            activation: None,
            fc: OnceLock::new(),
        }
    }

    /// Declares the number of input features (no inference needed).
    pub fn in_units(self, in_units: usize) -> Dense {
        // a fresh parameter: its unknown second dimension can be filled
        let _ = self.weight.set_shape(&[self.units, in_units]);
        self
    }

    /// Applies an activation (`relu`, `sigmoid`, `tanh`, `softrelu`,
    /// `softsign`) to the output.
    pub fn activation(mut self, act_type: &str) -> Result<Dense> {
        self.activation = Some(Activation::with_prefix(act_type, format!("{}{act_type}_", self.prefix))?);
        Ok(self)
    }

    /// Whether the layer has a bias (true by default).
    pub fn use_bias(mut self, use_bias: bool) -> Dense {
        if !use_bias {
            self.bias = None;
        }
        self.fc = OnceLock::new();
        self
    }

    /// Whether to flatten the input's trailing axes (true by default).
    pub fn flatten(mut self, flatten: bool) -> Dense {
        self.flatten = flatten;
        self.fc = OnceLock::new();
        self
    }

    /// The weight's own initializer (the block's one otherwise).
    pub fn weight_init(mut self, init: SharedInit) -> Dense {
        self.weight = self.weight.with_init(init);
        self
    }

    /// The bias's initializer (zeros by default).
    pub fn bias_init(mut self, init: SharedInit) -> Dense {
        self.bias = self.bias.map(|b| b.with_init(init));
        self
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> Dense {
        self.weight = self.weight.with_dtype(dtype);
        self.bias = self.bias.map(|b| b.with_dtype(dtype));
        self
    }

    /// The number of outputs.
    pub fn units(&self) -> usize {
        self.units
    }

    /// The weight, `(units, in_units)`.
    pub fn weight(&self) -> &Parameter {
        &self.weight
    }

    /// The bias, `(units,)`, if the layer has one.
    pub fn bias(&self) -> Option<&Parameter> {
        self.bias.as_ref()
    }

    fn op(&self) -> Result<&OpCall> {
        if let Some(fc) = self.fc.get() {
            return Ok(fc);
        }
        let fc = OpCall::new(
            "FullyConnected",
            &[
                ("num_hidden", self.units.into()),
                ("no_bias", self.bias.is_none().into()),
                ("flatten", self.flatten.into()),
            ],
        )?;
        Ok(self.fc.get_or_init(|| fc))
    }

    fn run(&self, x: &NDArray) -> Result<NDArray> {
        let y = self.op()?.call_weighted(x, &self.weight, self.bias.as_ref(), self.name())?;
        match &self.activation {
            Some(act) => act.apply(&y),
            None => Ok(y),
        }
    }
}

impl Block for Dense {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        let mut out = vec![("weight".to_string(), self.weight.clone())];
        out.extend(self.bias.iter().map(|b| ("bias".to_string(), b.clone())));
        out
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.run(x).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "Dense"))
    }
}
