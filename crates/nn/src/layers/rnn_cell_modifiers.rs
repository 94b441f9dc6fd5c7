//! Cells built on other cells (Gluon's `DropoutCell`, `ResidualCell`,
//! `ZoneoutCell` and `BidirectionalCell`): regularisation, skip connections
//! and both directions of a sequence, for any [`RecurrentCell`] (a cell of
//! your own included). They hold no parameters of their own; the wrapped
//! cells keep theirs, under their own names.
//!
//! ```
//! use oxnet_core::{DType, NDArray};
//! use oxnet_nn::block::Block;
//! use oxnet_nn::init::Xavier;
//! use oxnet_nn::layers::{BidirectionalCell, RecurrentCell, ResidualCell, RnnCell, Unroll};
//! use oxnet_nn::parameter::shared_init;
//!
//! // an LSTM over the sequence in both directions, each with a skip connection
//! let bi = BidirectionalCell::new(ResidualCell::new(RnnCell::lstm(4)), ResidualCell::new(RnnCell::lstm(4)));
//! bi.initialize(&shared_init(Xavier::default())).unwrap();
//! let x = NDArray::random_uniform(-1.0, 1.0, &[6, 2, 4], DType::F32).unwrap(); // 6 steps, batch 2
//! let (out, states) = bi.unroll(&x, Unroll::default()).unwrap();
//! assert_eq!(out.shape(), &[6, 2, 8]); // both directions' outputs side by side
//! assert_eq!(states.len(), 4);
//! ```

use super::rnn_cell::{dropout_mask, forward_step, states_mismatch};
use super::{Dropout, RecurrentCell, Unroll};
use crate::block::{in_block, Block};
use crate::naming::unique_prefix;
use oxnet_core::{invoke1, Error, NDArray, Result};
use std::sync::Mutex;

/// Implements [`Block`] for a cell whose children are `$($child),*`.
macro_rules! modifier_block {
    ($t:ty, $($name:literal => $child:ident),*) => {
        impl Block for $t {
            fn prefix(&self) -> &str {
                &self.prefix
            }

            fn children(&self) -> Vec<(String, &dyn Block)> {
                vec![$(($name.to_string(), self.$child.as_ref() as &dyn Block)),*]
            }

            /// `[x, states...]` to `[output, next states...]`.
            fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
                forward_step(self, inputs)
            }
        }
    };
}

/// Dropout on the input of each step (Gluon's `rnn.DropoutCell`): no
/// states; stack it before or after other cells in a
/// [`SequentialRnnCell`](super::SequentialRnnCell). Active in train mode only.
pub struct DropoutCell {
    prefix: String,
    dropout: Dropout,
}

impl DropoutCell {
    /// Drops with probability `rate` (in `[0, 1]`), one draw shared along
    /// `axes` of each step's data (e.g. `[0]`: the same units for every
    /// sample of the batch).
    pub fn new(rate: f64, axes: &[i64]) -> Result<DropoutCell> {
        Ok(DropoutCell { prefix: unique_prefix("dropoutcell"), dropout: Dropout::with_axes(rate, axes)? })
    }
}

impl RecurrentCell for DropoutCell {
    fn state_shapes(&self, _batch: usize) -> Vec<Vec<usize>> {
        Vec::new()
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        Ok((self.dropout.call(x)?, states.to_vec()))
    }
}

impl Block for DropoutCell {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `[x]` to `[dropped x]`.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        forward_step(self, inputs)
    }
}

/// The wrapped cell's output plus its input (Gluon's `rnn.ResidualCell`):
/// the cell's output must have the input's shape.
pub struct ResidualCell {
    prefix: String,
    base: Box<dyn RecurrentCell>,
}

impl ResidualCell {
    /// Adds a skip connection around `base`.
    pub fn new(base: impl RecurrentCell + 'static) -> ResidualCell {
        ResidualCell { prefix: unique_prefix("residualcell"), base: Box::new(base) }
    }
}

impl RecurrentCell for ResidualCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        self.base.state_shapes(batch)
    }

    fn reset(&self) {
        self.base.reset();
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let (out, next) = self.base.step(x, states)?;
        if out.shape() != x.shape() {
            return Err(in_block(
                Error::Shape(format!(
                    "the wrapped cell's output has shape {:?} and its input {:?}; a residual connection needs them equal",
                    out.shape(),
                    x.shape()
                )),
                self.name(),
                "ResidualCell",
            ));
        }
        Ok((invoke1("elemwise_add", &[&out, x], &[])?, next))
    }
}

modifier_block!(ResidualCell, "base_cell" => base);

/// Zoneout (Krueger et al. 2016; Gluon's `rnn.ZoneoutCell`): in train
/// mode each unit of the output (and of each state) keeps its previous
/// step's value with probability `zoneout_outputs` (`zoneout_states`)
/// instead of taking the new one. Outside train mode it is the wrapped cell.
pub struct ZoneoutCell {
    prefix: String,
    base: Box<dyn RecurrentCell>,
    outputs: f64,
    states: f64,
    /// The previous step's output (zeros before the first).
    previous: Mutex<Option<NDArray>>,
}

impl ZoneoutCell {
    /// Zoneout around `base` with the probabilities of keeping the previous
    /// output and states (each in `[0, 1)`).
    pub fn new(
        base: impl RecurrentCell + 'static,
        zoneout_outputs: f64,
        zoneout_states: f64,
    ) -> Result<ZoneoutCell> {
        for (name, p) in [("zoneout_outputs", zoneout_outputs), ("zoneout_states", zoneout_states)] {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::attr(name, format!("ZoneoutCell needs a probability in [0, 1), got {p}")));
            }
        }
        Ok(ZoneoutCell {
            prefix: unique_prefix("zoneoutcell"),
            base: Box::new(base),
            outputs: zoneout_outputs,
            states: zoneout_states,
            previous: Mutex::new(None),
        })
    }

    /// `new` where the mask (dropout of ones: nonzero keeps it) says so, else `old`.
    fn zone(p: f64, new: &NDArray, old: &NDArray) -> Result<NDArray> {
        if p == 0.0 {
            return Ok(new.clone());
        }
        invoke1("where", &[&dropout_mask(new, p)?, new, old], &[])
    }
}

impl RecurrentCell for ZoneoutCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        self.base.state_shapes(batch)
    }

    fn reset(&self) {
        *self.previous.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.base.reset();
    }

    fn step(&self, x: &NDArray, states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        let (out, next) = self.base.step(x, states)?;
        let mut previous = self.previous.lock().unwrap_or_else(|e| e.into_inner());
        let before = match previous.as_ref() {
            Some(p) if p.shape() == out.shape() => p.clone(),
            _ => invoke1("zeros_like", &[&out], &[])?,
        };
        let out = ZoneoutCell::zone(self.outputs, &out, &before)?;
        let next = next
            .iter()
            .zip(states)
            .map(|(new, old)| ZoneoutCell::zone(self.states, new, old))
            .collect::<Result<Vec<_>>>()?;
        *previous = Some(out.clone());
        Ok((out, next))
    }
}

modifier_block!(ZoneoutCell, "base_cell" => base);

/// Two cells over the sequence, one forward and one backward (Gluon's
/// `rnn.BidirectionalCell`): the outputs side by side on the feature axis
/// (forward first), the states the forward cell's then the backward
/// cell's. It runs whole sequences only ([`RecurrentCell::unroll`]); a
/// single step has no backward direction, so `step` is an error. With
/// `valid_length`, each sequence is reversed within its own length.
pub struct BidirectionalCell {
    prefix: String,
    l_cell: Box<dyn RecurrentCell>,
    r_cell: Box<dyn RecurrentCell>,
}

impl BidirectionalCell {
    /// `l_cell` reads the sequence forward, `r_cell` backward.
    pub fn new(
        l_cell: impl RecurrentCell + 'static,
        r_cell: impl RecurrentCell + 'static,
    ) -> BidirectionalCell {
        BidirectionalCell {
            prefix: unique_prefix("bidirectionalcell"),
            l_cell: Box::new(l_cell),
            r_cell: Box::new(r_cell),
        }
    }

    /// `x` with each sequence reversed in time (within its valid length).
    fn reversed(x: &NDArray, ntc: bool, lengths: Option<&NDArray>) -> Result<NDArray> {
        let swap = |a: &NDArray| invoke1("SwapAxis", &[a], &[("dim1", 0i64.into()), ("dim2", 1i64.into())]);
        let tnc = if ntc { swap(x)? } else { x.clone() };
        let rev = match lengths {
            Some(l) => invoke1("SequenceReverse", &[&tnc, l], &[("use_sequence_length", true.into())])?,
            None => invoke1("SequenceReverse", &[&tnc], &[])?,
        };
        if ntc {
            swap(&rev)
        } else {
            Ok(rev)
        }
    }
}

impl RecurrentCell for BidirectionalCell {
    fn state_shapes(&self, batch: usize) -> Vec<Vec<usize>> {
        let mut shapes = self.l_cell.state_shapes(batch);
        shapes.extend(self.r_cell.state_shapes(batch));
        shapes
    }

    fn reset(&self) {
        self.l_cell.reset();
        self.r_cell.reset();
    }

    fn step(&self, _x: &NDArray, _states: &[NDArray]) -> Result<(NDArray, Vec<NDArray>)> {
        Err(Error::Invalid(format!(
            "cell `{}` (BidirectionalCell) cannot be stepped: its backward direction needs the whole sequence; use unroll",
            self.name()
        )))
    }

    fn unroll(&self, inputs: &NDArray, how: Unroll) -> Result<(NDArray, Vec<NDArray>)> {
        let fail = |msg: String| Error::Shape(format!("unrolling `{}`: {msg}", self.name()));
        if inputs.ndim() != 3 {
            return Err(fail(format!("the data must have 3 axes, got shape {:?}", inputs.shape())));
        }
        let batch = inputs.shape()[usize::from(!how.ntc)];
        let begin = match &how.begin_state {
            Some(s) => s.clone(),
            None => self.begin_state(batch, inputs.dtype())?,
        };
        if let Some(msg) = states_mismatch(&begin, &self.state_shapes(batch)) {
            return Err(fail(format!("begin_state: {msg}")));
        }
        let n_left = self.l_cell.state_shapes(batch).len();
        let lengths = how.valid_length.as_ref();
        let left = Unroll { begin_state: Some(begin[..n_left].to_vec()), ..how.clone() };
        let right = Unroll { begin_state: Some(begin[n_left..].to_vec()), ..how.clone() };
        let (l_out, mut states) = self.l_cell.unroll(inputs, left)?;
        let (r_out, r_states) =
            self.r_cell.unroll(&BidirectionalCell::reversed(inputs, how.ntc, lengths)?, right)?;
        let r_out = BidirectionalCell::reversed(&r_out, how.ntc, lengths)?;
        states.extend(r_states);
        let out = invoke1("Concat", &[&l_out, &r_out], &[("num_args", 2i64.into()), ("dim", 2i64.into())])?;
        Ok((out, states))
    }
}

modifier_block!(BidirectionalCell, "l_cell" => l_cell, "r_cell" => r_cell);

pub(super) use modifier_block;
