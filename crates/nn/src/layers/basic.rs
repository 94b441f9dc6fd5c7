//! Shape and regularisation layers without parameters: [`Dropout`],
//! [`Flatten`], [`Identity`].

use super::OpCall;
use crate::block::{in_block, single_input, Block};
use crate::naming::unique_prefix;
use oxnet_core::{AttrValue, Error, NDArray, Result};

/// Zeroes each element with probability `rate` in train mode and scales
/// the rest by `1/(1 - rate)`; the identity otherwise (Gluon's
/// `nn.Dropout`). `axes` share one draw along those axes.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::block::Block;
/// use oxnet_nn::layers::Dropout;
///
/// let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
/// // outside train mode, dropout passes its input through
/// assert_eq!(Dropout::new(0.5).unwrap().call(&x).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
/// ```
pub struct Dropout {
    prefix: String,
    rate: f64,
    call: OpCall,
}

impl Dropout {
    /// Drops with probability `rate` (in `[0, 1]`).
    pub fn new(rate: f64) -> Result<Dropout> {
        Dropout::with_axes(rate, &[])
    }

    /// Drops with probability `rate`, one draw shared along `axes`.
    pub fn with_axes(rate: f64, axes: &[i64]) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(Error::attr("rate", format!("Dropout needs a rate in [0, 1], got {rate}")));
        }
        let call = OpCall::new("Dropout", &[("p", rate.into()), ("axes", AttrValue::Ints(axes.to_vec()))])?;
        Ok(Dropout { prefix: unique_prefix("dropout"), rate, call })
    }

    /// The drop probability.
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

impl Block for Dropout {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        if self.rate == 0.0 {
            return Ok(vec![x.clone()]);
        }
        self.call.call1(&[x]).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "Dropout"))
    }
}

/// Flattens every axis but the first: `(N, a, b, ...)` → `(N, a·b·...)`
/// (Gluon's `nn.Flatten`).
pub struct Flatten {
    prefix: String,
    call: OpCall,
}

impl Flatten {
    /// The layer.
    pub fn new() -> Result<Flatten> {
        Ok(Flatten { prefix: unique_prefix("flatten"), call: OpCall::new("flatten", &[])? })
    }
}

impl Block for Flatten {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let x = single_input(inputs, self.name())?;
        self.call.call1(&[x]).map(|y| vec![y]).map_err(|e| in_block(e, self.name(), "Flatten"))
    }
}

/// Returns its inputs unchanged (Gluon's `nn.Identity`).
pub struct Identity {
    prefix: String,
}

impl Identity {
    /// The layer.
    pub fn new() -> Identity {
        Identity { prefix: unique_prefix("identity") }
    }
}

impl Default for Identity {
    fn default() -> Identity {
        Identity::new()
    }
}

impl Block for Identity {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        Ok(inputs.to_vec())
    }
}
