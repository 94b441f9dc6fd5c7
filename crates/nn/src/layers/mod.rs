//! Layers: [`Sequential`], [`Dense`], convolutions ([`Conv`], 1-D to 3-D,
//! and transposed), pooling ([`Pool`]), [`BatchNorm`], activations
//! ([`Activation`], [`LeakyReLU`], [`ELU`], [`SELU`], [`GELU`], [`Swish`]),
//! recurrent layers ([`Rnn`]: LSTM, GRU, plain RNN) and cells ([`RnnCell`],
//! [`SequentialRnnCell`], [`RecurrentCell::unroll`]),
//! [`Dropout`], [`Flatten`], [`Identity`], and [`CustomLayer`], which puts any registered
//! operator (a `Custom` operator included) in a network with its
//! parameters.
//!
//! ```
//! use oxnet_core::NDArray;
//! use oxnet_nn::block::Block;
//! use oxnet_nn::init::Xavier;
//! use oxnet_nn::layers::{Dense, Sequential};
//! use oxnet_nn::parameter::shared_init;
//!
//! let mut net = Sequential::new();
//! net.add(Dense::new(8).activation("relu").unwrap());
//! net.add(Dense::new(3));
//! net.initialize(&shared_init(Xavier::default())).unwrap();
//! let x = NDArray::ones(&[4, 5], oxnet_core::DType::F32, Default::default()).unwrap();
//! assert_eq!(net.call(&x).unwrap().shape(), &[4, 3]);
//! ```

mod activations;
mod basic;
mod batch_norm;
mod conv;
mod custom;
mod dense;
mod norm;
mod pool;
mod rnn;
mod rnn_cell;
mod rnn_cell_contrib;
mod rnn_cell_modifiers;
mod sequential;

pub use activations::{Activation, LeakyReLU, Swish, ELU, GELU, SELU};
pub use basic::{Dropout, Flatten, Identity};
pub use batch_norm::BatchNorm;
pub use conv::Conv;
pub use custom::{infer_param_shapes, CustomLayer};
pub use dense::Dense;
pub use norm::{GroupNorm, InstanceNorm, LayerNorm};
pub use pool::{Pool, PoolType};
pub use rnn::{Rnn, RnnMode};
pub use rnn_cell::{RecurrentCell, RnnCell, SequentialRnnCell, Unroll};
pub use rnn_cell_contrib::{LstmpCell, VariationalDropoutCell};
pub use rnn_cell_modifiers::{BidirectionalCell, DropoutCell, ResidualCell, ZoneoutCell};
pub use sequential::Sequential;

use oxnet_core::registry::{self, Op};
use oxnet_core::{AttrValue, Attrs, Error, NDArray, Result};

/// An operator looked up and its attributes parsed once, called many times.
#[derive(Clone)]
pub(crate) struct OpCall {
    pub(crate) op: Op,
    pub(crate) attrs: Attrs,
}

impl OpCall {
    pub(crate) fn new(name: &str, attrs: &[(&str, AttrValue)]) -> Result<OpCall> {
        let op = registry::get(name)?;
        let attrs = op.parse_attrs(attrs).map_err(|e| e.in_op(name))?;
        Ok(OpCall { op, attrs })
    }

    pub(crate) fn call(&self, inputs: &[&NDArray]) -> Result<Vec<NDArray>> {
        oxnet_core::invoke_op(&self.op, inputs, &self.attrs)
    }

    /// The first output of the call on `x`, `weight` and (if any) `bias`,
    /// the parameters' unknown dimensions first inferred from `x` (block
    /// `block` is named in errors).
    pub(crate) fn call_weighted(
        &self,
        x: &NDArray,
        weight: &crate::parameter::Parameter,
        bias: Option<&crate::parameter::Parameter>,
        block: &str,
    ) -> Result<NDArray> {
        let mut params = vec![weight];
        params.extend(bias);
        infer_param_shapes(&self.op, &self.attrs, &[x], &params, block)?;
        let w = weight.data()?;
        let b = bias.map(crate::parameter::Parameter::data).transpose()?;
        let mut inputs = vec![x, &w];
        inputs.extend(b.as_ref());
        self.call1(&inputs)
    }

    pub(crate) fn call1(&self, inputs: &[&NDArray]) -> Result<NDArray> {
        let mut outs = self.call(inputs)?;
        if outs.is_empty() {
            return Err(Error::Invalid(format!("operator `{}` has no outputs", self.op.name)));
        }
        Ok(outs.swap_remove(0))
    }
}
