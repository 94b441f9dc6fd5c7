//! [`Rnn`]: stacked recurrent layers (Gluon's `rnn.RNN`, `rnn.LSTM`,
//! `rnn.GRU`) on the fused `RNN` operator.

use super::OpCall;
use crate::block::{in_block, Block};
use crate::init::Zero;
use crate::naming::unique_prefix;
use crate::parameter::Parameter;
use oxnet_core::{AttrValue, DType, Error, NDArray, Result};
use std::sync::Arc;

/// The recurrence of an [`Rnn`] layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RnnMode {
    /// `h' = relu(Wx·x + bx + Wh·h + bh)`.
    Relu,
    /// `h' = tanh(Wx·x + bx + Wh·h + bh)`.
    Tanh,
    /// Long short-term memory: gates i, f, g, o and a cell state.
    Lstm,
    /// Gated recurrent unit: gates r, z, n.
    Gru,
}

impl RnnMode {
    fn op_mode(self) -> &'static str {
        match self {
            RnnMode::Relu => "rnn_relu",
            RnnMode::Tanh => "rnn_tanh",
            RnnMode::Lstm => "lstm",
            RnnMode::Gru => "gru",
        }
    }

    /// The plain RNN of `activation` (`relu` or `tanh`); `what` names the
    /// layer or cell in the error.
    pub(super) fn plain(activation: &str, what: &str) -> Result<RnnMode> {
        match activation {
            "relu" => Ok(RnnMode::Relu),
            "tanh" => Ok(RnnMode::Tanh),
            other => Err(Error::attr(
                "activation",
                format!("{what}: activation must be relu or tanh, got `{other}`"),
            )),
        }
    }

    pub(super) fn gates(self) -> usize {
        match self {
            RnnMode::Relu | RnnMode::Tanh => 1,
            RnnMode::Lstm => 4,
            RnnMode::Gru => 3,
        }
    }
}

/// Stacked, optionally bidirectional recurrent layers over a whole
/// sequence in one call of the fused operator (Gluon's `rnn.LSTM` and
/// friends). Parameters carry MXNet's names (`l0_i2h_weight`,
/// `r1_h2h_bias`, ...) under the layer's prefix, so `.params` files move
/// between oxnet, MXNet and Python Gluon. The input size is inferred from
/// the first input unless given.
///
/// `forward` takes the data (layout `TNC` by default, or `NTC`) and
/// optionally the initial states (one, or two for an LSTM: `h` and `c`, each
/// `(num_layers · directions, batch, hidden)`). Given states, it returns the
/// output followed by the final states; without, zeros start the sequence
/// and only the output comes back (so the layer chains in a `Sequential`).
///
/// ```
/// use oxnet_core::{DType, NDArray};
/// use oxnet_nn::block::Block;
/// use oxnet_nn::init::Xavier;
/// use oxnet_nn::layers::Rnn;
/// use oxnet_nn::parameter::shared_init;
///
/// let lstm = Rnn::lstm(16).num_layers(2).layout_ntc(true);
/// lstm.initialize(&shared_init(Xavier::default())).unwrap();
/// let x = NDArray::random_uniform(-1.0, 1.0, &[4, 10, 8], DType::F32).unwrap(); // batch 4, 10 steps
/// assert_eq!(lstm.call(&x).unwrap().shape(), &[4, 10, 16]);
/// let states = lstm.begin_state(4).unwrap();
/// let outs = lstm.forward(&[x, states[0].clone(), states[1].clone()]).unwrap();
/// assert_eq!(outs[0].shape(), &[4, 10, 16]);
/// assert_eq!(outs[1].shape(), &[2, 4, 16]); // h
/// assert_eq!(outs[2].shape(), &[2, 4, 16]); // c
/// assert!(lstm.params().iter().any(|(n, _)| n == "l1_h2h_weight"));
/// ```
pub struct Rnn {
    prefix: String,
    mode: RnnMode,
    hidden: usize,
    layers: usize,
    bidirectional: bool,
    dropout: f64,
    ntc: bool,
    input_size: usize,
    dtype: DType,
    /// (local name, parameter) in MXNet's registration order.
    params: Vec<(String, Parameter)>,
}

impl Rnn {
    fn new(mode: RnnMode, hidden: usize, hint: &str) -> Rnn {
        let mut r = Rnn {
            prefix: unique_prefix(hint),
            mode,
            hidden,
            layers: 1,
            bidirectional: false,
            dropout: 0.0,
            ntc: false,
            input_size: 0,
            dtype: DType::F32,
            params: Vec::new(),
        };
        r.make_params();
        r
    }

    /// An LSTM of `hidden` units (named `lstm<k>_`).
    pub fn lstm(hidden: usize) -> Rnn {
        Rnn::new(RnnMode::Lstm, hidden, "lstm")
    }

    /// A GRU of `hidden` units (named `gru<k>_`).
    pub fn gru(hidden: usize) -> Rnn {
        Rnn::new(RnnMode::Gru, hidden, "gru")
    }

    /// A plain RNN of `hidden` units with `relu` or `tanh` (named `rnn<k>_`).
    pub fn rnn(hidden: usize, activation: &str) -> Result<Rnn> {
        Ok(Rnn::new(RnnMode::plain(activation, "RNN")?, hidden, "rnn"))
    }

    /// Stacks `n` layers (1 by default).
    pub fn num_layers(mut self, n: usize) -> Rnn {
        self.layers = n;
        self.make_params();
        self
    }

    /// Runs each layer in both directions, concatenating their outputs.
    pub fn bidirectional(mut self, on: bool) -> Rnn {
        self.bidirectional = on;
        self.make_params();
        self
    }

    /// Dropout on each layer's output but the last, in train mode.
    pub fn dropout(mut self, p: f64) -> Rnn {
        self.dropout = p;
        self
    }

    /// Data (and output) as (batch, steps, features) instead of (steps,
    /// batch, features).
    pub fn layout_ntc(mut self, ntc: bool) -> Rnn {
        self.ntc = ntc;
        self
    }

    /// Declares the input size (no inference needed).
    pub fn input_size(mut self, n: usize) -> Rnn {
        self.input_size = n;
        self.make_params();
        self
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> Rnn {
        self.dtype = dtype;
        self.make_params();
        self
    }

    fn dirs(&self) -> usize {
        if self.bidirectional {
            2
        } else {
            1
        }
    }

    /// (Re)creates the parameters for the current configuration.
    fn make_params(&mut self) {
        let (g, h) = (self.mode.gates() * self.hidden, self.hidden);
        let mut params = Vec::new();
        let mut ni = self.input_size;
        for l in 0..self.layers {
            for d in ["l", "r"].iter().take(self.dirs()) {
                let new = |name: String, shape: &[usize]| {
                    let p = Parameter::new(format!("{}{name}", self.prefix), shape)
                        .allow_deferred_init(true)
                        .with_dtype(self.dtype);
                    (name, p)
                };
                params.push(new(format!("{d}{l}_i2h_weight"), &[g, ni]));
                params.push(new(format!("{d}{l}_h2h_weight"), &[g, h]));
                let (n, b) = new(format!("{d}{l}_i2h_bias"), &[g]);
                params.push((n, b.with_init(Arc::new(Zero))));
                let (n, b) = new(format!("{d}{l}_h2h_bias"), &[g]);
                params.push((n, b.with_init(Arc::new(Zero))));
            }
            ni = h * self.dirs();
        }
        self.params = params;
    }

    fn param(&self, name: &str) -> Result<&Parameter> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p)
            .ok_or_else(|| Error::Invalid(format!("block `{}` has no parameter `{name}`", self.prefix)))
    }

    /// The initial states for a batch of `batch`: zeros of shape
    /// `(num_layers · directions, batch, hidden)`, one per state.
    pub fn begin_state(&self, batch: usize) -> Result<Vec<NDArray>> {
        let shape = [self.layers * self.dirs(), batch, self.hidden];
        let n = if self.mode == RnnMode::Lstm { 2 } else { 1 };
        (0..n).map(|_| NDArray::zeros(&shape, self.dtype, Default::default())).collect()
    }

    fn run(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let Some(x) = inputs.first() else {
            return Err(Error::Invalid(format!("block `{}` needs the data as its first input", self.name())));
        };
        if x.ndim() != 3 {
            return Err(Error::Shape(format!(
                "block `{}`: the data must have 3 axes ({}), got shape {:?}",
                self.name(),
                if self.ntc { "batch, steps, features" } else { "steps, batch, features" },
                x.shape()
            )));
        }
        let swap = |a: &NDArray| {
            oxnet_core::invoke1("SwapAxis", &[a], &[("dim1", 0i64.into()), ("dim2", 1i64.into())])
        };
        let x = if self.ntc { swap(x)? } else { x.clone() };
        let (batch, features) = (x.shape()[1], x.shape()[2]);
        for d in ["l", "r"].iter().take(self.dirs()) {
            let p = self.param(&format!("{d}0_i2h_weight"))?;
            p.set_shape(&[self.mode.gates() * self.hidden, features])?;
        }
        let expected = if self.mode == RnnMode::Lstm { 2 } else { 1 };
        let states = match &inputs[1..] {
            [] => self.begin_state(batch)?,
            given if given.len() == expected => given.to_vec(),
            given => {
                return Err(Error::Invalid(format!(
                    "block `{}` takes {expected} state(s) after the data, got {}",
                    self.name(),
                    given.len()
                )))
            }
        };
        // the flat parameter vector in MXNet's order: weights, then biases
        let mut flat = Vec::with_capacity(self.params.len());
        for kind in ["weight", "bias"] {
            for (name, p) in &self.params {
                if name.ends_with(kind) {
                    let v = p.data()?;
                    flat.push(oxnet_core::invoke1(
                        "Reshape",
                        &[&v],
                        &[("shape", AttrValue::Ints(vec![-1]))],
                    )?);
                }
            }
        }
        let refs: Vec<&NDArray> = flat.iter().collect();
        let params = oxnet_core::invoke1(
            "concat",
            &refs,
            &[("num_args", (refs.len() as i64).into()), ("dim", 0i64.into())],
        )?;
        let rnn = OpCall::new(
            "RNN",
            &[
                ("state_size", (self.hidden as i64).into()),
                ("num_layers", (self.layers as i64).into()),
                ("mode", AttrValue::Str(self.mode.op_mode().into())),
                ("bidirectional", self.bidirectional.into()),
                ("p", self.dropout.into()),
                ("state_outputs", true.into()),
            ],
        )?;
        let mut args: Vec<&NDArray> = vec![&x, &params];
        args.extend(states.iter());
        let mut outs = rnn.call(&args)?;
        // as Gluon: the final states only when states were given
        outs.truncate(if inputs.len() > 1 { 1 + expected } else { 1 });
        if self.ntc {
            outs[0] = swap(&outs[0])?;
        }
        Ok(outs)
    }
}

impl Block for Rnn {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let kind = match self.mode {
            RnnMode::Lstm => "LSTM",
            RnnMode::Gru => "GRU",
            _ => "RNN",
        };
        self.run(inputs).map_err(|e| in_block(e, self.name(), kind))
    }
}
