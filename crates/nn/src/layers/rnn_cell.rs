//! Recurrent cells: one step of a recurrence (Gluon's `rnn.RNNCell`,
//! `rnn.LSTMCell`, `rnn.GRUCell`) as [`RnnCell`], stacks of cells
//! ([`SequentialRnnCell`]), and [`RecurrentCell::unroll`] over a sequence.
//!
//! A cell is written with operator calls, so autograd differentiates it and
//! a hybridized block traces it, and a cell of your own (any type that
//! implements [`RecurrentCell`], a custom operator inside) unrolls the same
//! way. For whole sequences the fused layer ([`Rnn`](super::Rnn)) is faster;
//! cells are for recurrences it does not offer. An `RnnCell` has the
//! parameters of one layer and direction of the fused layer, under MXNet's
//! names (`i2h_weight`, `h2h_weight`, `i2h_bias`, `h2h_bias`), and computes
//! the same step.
//!
//! ```
//! use oxnet_core::{DType, NDArray};
//! use oxnet_nn::block::Block;
//! use oxnet_nn::init::Xavier;
//! use oxnet_nn::layers::{RecurrentCell, RnnCell, SequentialRnnCell, Unroll};
//! use oxnet_nn::parameter::shared_init;
//!
//! let mut stack = SequentialRnnCell::new();
//! stack.add(RnnCell::lstm(16));
//! stack.add(RnnCell::gru(8));
//! stack.initialize(&shared_init(Xavier::default())).unwrap();
//! let x = NDArray::random_uniform(-1.0, 1.0, &[5, 3, 4], DType::F32).unwrap(); // 5 steps, batch 3
//! let (out, states) = stack.unroll(&x, Unroll::default()).unwrap();
//! assert_eq!(out.shape(), &[5, 3, 8]);
//! assert_eq!(states.len(), 3); // the LSTM's h and c, the GRU's h
//! ```

use super::{OpCall, RnnMode};
use crate::block::{in_block, Block};
use crate::init::Zero;
use crate::naming::unique_prefix;
use crate::parameter::Parameter;
use oxnet_core::{invoke, invoke1, AttrValue, DType, Error, NDArray, Result};
use std::sync::Arc;

/// How [`RecurrentCell::unroll`] runs over a sequence.
#[derive(Clone, Default)]
pub struct Unroll {
    pub(super) begin_state: Option<Vec<NDArray>>,
    pub(super) ntc: bool,
    pub(super) valid_length: Option<NDArray>,
}

impl Unroll {
    /// Starts from `states` instead of [`RecurrentCell::begin_state`]'s zeros.
    pub fn begin_state(mut self, states: Vec<NDArray>) -> Unroll {
        self.begin_state = Some(states);
        self
    }

    /// Data and outputs as (batch, steps, features) rather than (steps,
    /// batch, features).
    pub fn layout_ntc(mut self, ntc: bool) -> Unroll {
        self.ntc = ntc;
        self
    }

    /// Each sequence's length, `(batch,)`: outputs past it are zero and the
    /// final states are those after its last valid step (Gluon's `valid_length`).
    pub fn valid_length(mut self, lengths: NDArray) -> Unroll {
        self.valid_length = Some(lengths);
        self
    }
}

/// Why `states` do not have the shapes `want`, if they do not.
pub(super) fn states_mismatch(states: &[NDArray], want: &[Vec<usize>]) -> Option<String> {
    let fits = states.len() == want.len() && states.iter().zip(want).all(|(s, w)| s.shape() == w.as_slice());
    let got: Vec<&[usize]> = states.iter().map(NDArray::shape).collect();
    (!fits).then(|| format!("the states have shapes {got:?}, expected {want:?}"))
}

/// One LSTM update from the two halves of the gate pre-activations (gates
/// i, f, g, o in MXNet's order) and the cell state: the new `(h, c)`.
pub(super) fn lstm_update(i2h: &NDArray, h2h: &NDArray, c_prev: &NDArray) -> Result<(NDArray, NDArray)> {
    let f = |op: &str, xs: &[&NDArray]| invoke1(op, xs, &[]);
    let sum = f("elemwise_add", &[i2h, h2h])?;
    let gates = invoke("split", &[&sum], &[("num_outputs", 4i64.into()), ("axis", 1i64.into())])?;
    let (i, fg) = (f("sigmoid", &[&gates[0]])?, f("sigmoid", &[&gates[1]])?);
    let (g, o) = (f("tanh", &[&gates[2]])?, f("sigmoid", &[&gates[3]])?);
    let c = f("elemwise_add", &[&f("elemwise_mul", &[&fg, c_prev])?, &f("elemwise_mul", &[&i, &g])?])?;
    let h = f("elemwise_mul", &[&o, &f("tanh", &[&c])?])?;
    Ok((h, c))
}

/// A dropout mask shaped like `like`: 0 with probability `p`, else
/// `1 / (1 - p)` in train mode; ones outside it.
pub(super) fn dropout_mask(like: &NDArray, p: f64) -> Result<NDArray> {
    let ones = invoke1("ones_like", &[like], &[])?;
    invoke1("Dropout", &[&ones], &[("p", p.into())])
}

/// A cell's `Block::forward`: `[x, states...]` to `[output, next states...]`.
pub(super) fn forward_step(cell: &dyn RecurrentCell, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let Some((x, states)) = inputs.split_first() else {
        return Err(Error::Invalid(format!("cell `{}` needs the data and its states", cell.name())));
    };
    let (out, next) = cell.step(x, states)?;
    Ok(std::iter::once(out).chain(next).collect())
}

/// One step of a recurrence, and its unrolling over a sequence.
pub trait RecurrentCell: Block {
    /// The shape of each state for a batch of `batch`.
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>>;

    /// One step on `x` (batch, features) from `states`: the output and the
    /// next states.
    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)>;

    /// Forgets what earlier steps left in the cell (a zoneout cell's
    /// previous output); [`unroll`](Self::unroll) calls it first.
    fn reset(&self) {}

    /// Zeros for every state, of `dtype`.
    fn begin_state(&self, batch: usize, dtype: DType) -> Result<Vec<NDArray>> {
        self.state_shapes(batch).iter().map(|s| NDArray::zeros(s, dtype, Default::default())).collect()
    }

    /// Runs [`step`](Self::step) over every step of `inputs`: the outputs
    /// stacked along the time axis, and the final states.
    fn unroll(&self, inputs: &NDArray, how: Unroll) -> Result<(NDArray, Vec<NDArray>)> {
        let fail = |msg: String| Error::Shape(format!("unrolling `{}`: {msg}", self.name()));
        if inputs.ndim() != 3 {
            return Err(fail(format!("the data must have 3 axes, got shape {:?}", inputs.shape())));
        }
        self.reset();
        let axis = usize::from(how.ntc);
        let (steps, batch) = (inputs.shape()[axis], inputs.shape()[1 - axis]);
        if steps == 0 {
            return Err(fail("the sequence has no steps".into()));
        }
        let mut states = match how.begin_state {
            Some(s) => s,
            None => self.begin_state(batch, inputs.dtype())?,
        };
        if let Some(msg) = states_mismatch(&states, &self.state_shapes(batch)) {
            return Err(fail(format!("begin_state: {msg}")));
        }
        let xs = invoke(
            "split",
            &[inputs],
            &[
                ("num_outputs", (steps as i64).into()),
                ("axis", (axis as i64).into()),
                ("squeeze_axis", true.into()),
            ],
        )?;
        let mut outputs = Vec::with_capacity(steps);
        let mut history: Vec<Vec<NDArray>> = Vec::new();
        for x in &xs {
            let (out, next) = self.step(x, &states)?;
            outputs.push(out);
            states = next;
            if how.valid_length.is_some() {
                history.push(states.clone());
            }
        }
        let stack = |xs: &[NDArray], axis: usize| -> Result<NDArray> {
            let refs: Vec<&NDArray> = xs.iter().collect();
            invoke1(
                "stack",
                &refs,
                &[("num_args", (refs.len() as i64).into()), ("axis", (axis as i64).into())],
            )
        };
        let mut merged = stack(&outputs, axis)?;
        if let Some(lengths) = &how.valid_length {
            let by_length = |axis: usize| -> [(&str, AttrValue); 2] {
                [("use_sequence_length", true.into()), ("axis", (axis as i64).into())]
            };
            merged = invoke1("SequenceMask", &[&merged, lengths], &by_length(axis))?;
            states = (0..states.len())
                .map(|k| {
                    let per_step: Vec<NDArray> = history.iter().map(|s| s[k].clone()).collect();
                    invoke1("SequenceLast", &[&stack(&per_step, 0)?, lengths], &by_length(0))
                })
                .collect::<Result<_>>()?;
        }
        Ok((merged, states))
    }
}

/// One step of a plain RNN, an LSTM or a GRU (Gluon's `RNNCell`,
/// `LSTMCell`, `GRUCell`): `i2h = W_i·x + b_i` and `h2h = W_h·h + b_h` with
/// the gates in MXNet's order (i, f, g, o for the LSTM; r, z, n for the
/// GRU, its hidden bias inside the reset product). The input size is
/// inferred from the first step unless given.
pub struct RnnCell {
    prefix: String,
    mode: RnnMode,
    hidden: usize,
    input_size: usize,
    params: Vec<(String, Parameter)>,
    fc: OpCall,
}

impl RnnCell {
    fn new(mode: RnnMode, hidden: usize, hint: &str) -> RnnCell {
        let fc = OpCall::new("FullyConnected", &[("num_hidden", ((mode.gates() * hidden) as i64).into())])
            .expect("FullyConnected is a built-in operator");
        let mut cell =
            RnnCell { prefix: unique_prefix(hint), mode, hidden, input_size: 0, params: Vec::new(), fc };
        cell.make_params(DType::F32);
        cell
    }

    /// An LSTM cell of `hidden` units (named `lstm<k>_`); states `h`, `c`.
    pub fn lstm(hidden: usize) -> RnnCell {
        RnnCell::new(RnnMode::Lstm, hidden, "lstm")
    }

    /// A GRU cell of `hidden` units (named `gru<k>_`); state `h`.
    pub fn gru(hidden: usize) -> RnnCell {
        RnnCell::new(RnnMode::Gru, hidden, "gru")
    }

    /// A plain RNN cell of `hidden` units with `relu` or `tanh` (named `rnn<k>_`).
    pub fn rnn(hidden: usize, activation: &str) -> Result<RnnCell> {
        Ok(RnnCell::new(RnnMode::plain(activation, "RNNCell")?, hidden, "rnn"))
    }

    /// Declares the input size (no inference needed).
    pub fn input_size(mut self, n: usize) -> RnnCell {
        self.input_size = n;
        let dtype = self.params[0].1.dtype();
        self.make_params(dtype);
        self
    }

    /// The parameters' element type (float32 by default).
    pub fn dtype(mut self, dtype: DType) -> RnnCell {
        self.make_params(dtype);
        self
    }

    fn make_params(&mut self, dtype: DType) {
        let g = self.mode.gates() * self.hidden;
        let new = |name: &str, shape: &[usize]| {
            let p = Parameter::new(format!("{}{name}", self.prefix), shape)
                .allow_deferred_init(true)
                .with_dtype(dtype);
            (name.to_string(), p)
        };
        let (i2h_b, h2h_b) = (new("i2h_bias", &[g]), new("h2h_bias", &[g]));
        self.params = vec![
            new("i2h_weight", &[g, self.input_size]),
            new("h2h_weight", &[g, self.hidden]),
            (i2h_b.0, i2h_b.1.with_init(Arc::new(Zero))),
            (h2h_b.0, h2h_b.1.with_init(Arc::new(Zero))),
        ];
    }

    fn param(&self, i: usize) -> &Parameter {
        &self.params[i].1
    }

    fn kind(&self) -> &'static str {
        match self.mode {
            RnnMode::Lstm => "LSTMCell",
            RnnMode::Gru => "GRUCell",
            _ => "RNNCell",
        }
    }

    fn step_impl(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        if let Some(msg) =
            states_mismatch(states, &self.state_shapes(x.shape().first().copied().unwrap_or(0)))
        {
            return Err(Error::Shape(format!("{msg} for data {:?}", x.shape())));
        }
        let name = self.name().to_string();
        let i2h = self.fc.call_weighted(x, self.param(0), Some(self.param(2)), &name)?;
        let h2h = self.fc.call_weighted(&states[0], self.param(1), Some(self.param(3)), &name)?;
        let f = |op: &str, xs: &[&NDArray]| invoke1(op, xs, &[]);
        let split = |a: &NDArray, n: usize| {
            invoke("split", &[a], &[("num_outputs", (n as i64).into()), ("axis", 1i64.into())])
        };
        match self.mode {
            RnnMode::Relu | RnnMode::Tanh => {
                let act = if self.mode == RnnMode::Relu { "relu" } else { "tanh" };
                let h = f(act, &[&f("elemwise_add", &[&i2h, &h2h])?])?;
                Ok((h.clone(), vec![h]))
            }
            RnnMode::Lstm => {
                let (h, c) = lstm_update(&i2h, &h2h, &states[1])?;
                Ok((h.clone(), vec![h, c]))
            }
            RnnMode::Gru => {
                let (xi, hh) = (split(&i2h, 3)?, split(&h2h, 3)?);
                let r = f("sigmoid", &[&f("elemwise_add", &[&xi[0], &hh[0]])?])?;
                let z = f("sigmoid", &[&f("elemwise_add", &[&xi[1], &hh[1]])?])?;
                let n = f("tanh", &[&f("elemwise_add", &[&xi[2], &f("elemwise_mul", &[&r, &hh[2]])?])?])?;
                // (1 - z) * n + z * h = n + z * (h - n)
                let h = f(
                    "elemwise_add",
                    &[&n, &f("elemwise_mul", &[&z, &f("elemwise_sub", &[&states[0], &n])?])?],
                )?;
                Ok((h.clone(), vec![h]))
            }
        }
    }
}

impl RecurrentCell for RnnCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        let n = if self.mode == RnnMode::Lstm { 2 } else { 1 };
        vec![vec![batch, self.hidden]; n]
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        self.step_impl(x, states).map_err(|e| in_block(e, self.name(), self.kind()))
    }
}

impl Block for RnnCell {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        self.params.clone()
    }

    /// `[x, states...]` to `[output, next states...]`.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        forward_step(self, inputs)
    }
}

/// Cells run one after another at each step (Gluon's
/// `SequentialRNNCell`): each cell's output is the next one's input; the
/// states are every cell's states in order.
#[derive(Default)]
pub struct SequentialRnnCell {
    prefix: String,
    cells: Vec<Box<dyn RecurrentCell>>,
}

impl SequentialRnnCell {
    /// An empty stack (named `sequentialrnncell<k>_`).
    pub fn new() -> SequentialRnnCell {
        SequentialRnnCell { prefix: unique_prefix("sequentialrnncell"), cells: Vec::new() }
    }

    /// Appends `cell`.
    pub fn add(&mut self, cell: impl RecurrentCell + 'static) {
        self.cells.push(Box::new(cell));
    }
}

impl RecurrentCell for SequentialRnnCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        self.cells.iter().flat_map(|c| c.state_shapes(batch)).collect()
    }

    fn reset(&self) {
        self.cells.iter().for_each(|c| c.reset());
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let batch = x.shape().first().copied().unwrap_or(0);
        let n_states = self.state_shapes(batch).len();
        if states.len() != n_states {
            return Err(Error::Invalid(format!(
                "cell `{}` takes {n_states} states, got {}",
                self.name(),
                states.len()
            )));
        }
        let (mut x, mut at, mut next) = (x.clone(), 0, Vec::with_capacity(states.len()));
        for cell in &self.cells {
            let n = cell.state_shapes(batch).len();
            let (out, s) = cell.step(&x, &states[at..at + n])?;
            x = out;
            next.extend(s);
            at += n;
        }
        Ok((x, next))
    }
}

impl Block for SequentialRnnCell {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn children(&self) -> Vec<(String, &dyn Block)> {
        self.cells.iter().enumerate().map(|(i, c)| (i.to_string(), c.as_ref() as &dyn Block)).collect()
    }

    /// `[x, states...]` to `[output, next states...]`.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        forward_step(self, inputs)
    }
}
