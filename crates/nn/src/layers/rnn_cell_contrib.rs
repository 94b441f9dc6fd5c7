//! The cells of Gluon's `contrib.rnn`: [`LstmpCell`] (an LSTM whose
//! hidden state is projected to a smaller size, as the fused operator's
//! `projection_size`) and [`VariationalDropoutCell`] (dropout masks drawn
//! once per sequence and kept for every step, Gal and Ghahramani 2016).

use super::rnn_cell::{dropout_mask, forward_step, lstm_update, states_mismatch};
use super::rnn_cell_modifiers::modifier_block;
use super::{OpCall, RecurrentCell};
use crate::block::{in_block, Block};
use crate::init::Zero;
use crate::naming::unique_prefix;
use crate::parameter::Parameter;
use oxnet_core::{invoke1, DType, Error, NDArray, Result};
use std::sync::{Arc, Mutex};

/// An LSTM cell with a projection (Gluon's `contrib.rnn.LSTMPCell`): the
/// gates as an LSTM's from the input and the projected state `r`, the cell
/// state `c`, then `r = W_r · (o ⊙ tanh c)`. States `r` (batch,
/// projection) and `c` (batch, hidden); the output is `r`. Parameters
/// `i2h_weight`, `h2h_weight` (4·hidden × projection), `h2r_weight`
/// (projection × hidden), `i2h_bias`, `h2h_bias`: the layout of the fused
/// operator's LSTM with `projection_size`.
pub struct LstmpCell {
    prefix: String,
    hidden: usize,
    projection: usize,
    params: Vec<(String, Parameter)>,
    gates_fc: OpCall,
    project_fc: OpCall,
}

impl LstmpCell {
    /// An LSTM cell of `hidden` units projected to `projection` (named `lstmp<k>_`).
    pub fn new(hidden: usize, projection: usize) -> LstmpCell {
        let gates_fc = OpCall::new("FullyConnected", &[("num_hidden", ((4 * hidden) as i64).into())])
            .expect("FullyConnected is a built-in operator");
        let project_fc = OpCall::new(
            "FullyConnected",
            &[("num_hidden", (projection as i64).into()), ("no_bias", true.into())],
        )
        .expect("FullyConnected is a built-in operator");
        let mut cell = LstmpCell {
            prefix: unique_prefix("lstmp"),
            hidden,
            projection,
            params: Vec::new(),
            gates_fc,
            project_fc,
        };
        cell.make_params(0, DType::F32);
        cell
    }

    /// Declares the input size (no inference needed).
    pub fn input_size(mut self, n: usize) -> LstmpCell {
        let dtype = self.params[0].1.dtype();
        self.make_params(n, dtype);
        self
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> LstmpCell {
        let input = self.params[0].1.shape()[1];
        self.make_params(input, dtype);
        self
    }

    fn make_params(&mut self, input: usize, dtype: DType) {
        let (g, h, p) = (4 * self.hidden, self.hidden, self.projection);
        let new = |name: &str, shape: &[usize]| {
            let param = Parameter::new(format!("{}{name}", self.prefix), shape)
                .allow_deferred_init(true)
                .with_dtype(dtype);
            (name.to_string(), param)
        };
        let (i2h_b, h2h_b) = (new("i2h_bias", &[g]), new("h2h_bias", &[g]));
        self.params = vec![
            new("i2h_weight", &[g, input]),
            new("h2h_weight", &[g, p]),
            new("h2r_weight", &[p, h]),
            (i2h_b.0, i2h_b.1.with_init(Arc::new(Zero))),
            (h2h_b.0, h2h_b.1.with_init(Arc::new(Zero))),
        ];
    }

    fn param(&self, i: usize) -> &Parameter {
        &self.params[i].1
    }

    fn step_impl(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let batch = x.shape().first().copied().unwrap_or(0);
        if let Some(msg) = states_mismatch(states, &self.state_shapes(batch)) {
            return Err(Error::Shape(format!("{msg} for data {:?}", x.shape())));
        }
        let name = self.name().to_string();
        let i2h = self.gates_fc.call_weighted(x, self.param(0), Some(self.param(3)), &name)?;
        let h2h = self.gates_fc.call_weighted(&states[0], self.param(1), Some(self.param(4)), &name)?;
        let (hidden, c) = lstm_update(&i2h, &h2h, &states[1])?;
        let r = self.project_fc.call_weighted(&hidden, self.param(2), None, &name)?;
        Ok((r.clone(), vec![r, c]))
    }
}

impl RecurrentCell for LstmpCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        vec![vec![batch, self.projection], vec![batch, self.hidden]]
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        self.step_impl(x, states).map_err(|e| in_block(e, self.name(), "LSTMPCell"))
    }
}

impl Block for LstmpCell {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }

    /// `[x, r, c]` to `[output, r, c]`.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        forward_step(self, inputs)
    }
}

/// The masks a [`VariationalDropoutCell`] keeps for a sequence.
#[derive(Default)]
struct Masks {
    inputs: Option<NDArray>,
    states: Option<NDArray>,
    outputs: Option<NDArray>,
}

/// Variational dropout around a cell (Gluon's
/// `contrib.rnn.VariationalDropoutCell`): in train mode, one dropout mask
/// each for the inputs, the first state (`h`) and the outputs, drawn at the
/// first step of a sequence and applied at every step; outside train mode
/// the masks are ones. [`RecurrentCell::unroll`] draws new masks for each
/// sequence.
pub struct VariationalDropoutCell {
    prefix: String,
    base: Box<dyn RecurrentCell>,
    rates: [f64; 3],
    masks: Mutex<Masks>,
}

impl VariationalDropoutCell {
    /// Dropout rates for the inputs, the states and the outputs of `base` (each in `[0, 1)`).
    pub fn new(
        base: impl RecurrentCell + 'static,
        drop_inputs: f64,
        drop_states: f64,
        drop_outputs: f64,
    ) -> Result<Self> {
        for (name, p) in
            [("drop_inputs", drop_inputs), ("drop_states", drop_states), ("drop_outputs", drop_outputs)]
        {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::attr(
                    name,
                    format!("VariationalDropoutCell needs a rate in [0, 1), got {p}"),
                ));
            }
        }
        Ok(VariationalDropoutCell {
            prefix: unique_prefix("vardrop"),
            base: Box::new(base),
            rates: [drop_inputs, drop_states, drop_outputs],
            masks: Mutex::new(Masks::default()),
        })
    }

    /// `x` times its mask (drawn like `x` on first use, with rate `p`).
    fn masked(slot: &mut Option<NDArray>, x: &NDArray, p: f64) -> Result<NDArray> {
        if p == 0.0 {
            return Ok(x.clone());
        }
        let mask = match slot {
            Some(m) if m.shape() == x.shape() => m.clone(),
            _ => {
                let m = dropout_mask(x, p)?;
                *slot = Some(m.clone());
                m
            }
        };
        invoke1("elemwise_mul", &[x, &mask], &[])
    }
}

impl RecurrentCell for VariationalDropoutCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        self.base.state_shapes(batch)
    }

    fn reset(&self) {
        *self.masks.lock().unwrap_or_else(|e| e.into_inner()) = Masks::default();
        self.base.reset();
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let mut masks = self.masks.lock().unwrap_or_else(|e| e.into_inner());
        let [p_in, p_state, p_out] = self.rates;
        let x = VariationalDropoutCell::masked(&mut masks.inputs, x, p_in)?;
        let mut states = states.to_vec();
        if let Some(h) = states.first_mut() {
            *h = VariationalDropoutCell::masked(&mut masks.states, h, p_state)?;
        }
        let (out, next) = self.base.step(&x, &states)?;
        Ok((VariationalDropoutCell::masked(&mut masks.outputs, &out, p_out)?, next))
    }
}

modifier_block!(VariationalDropoutCell, "base_cell" => base);
