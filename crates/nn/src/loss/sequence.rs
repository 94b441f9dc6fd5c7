//! The connectionist temporal classification loss (Gluon's `CTCLoss`), on
//! the core `CTCLoss` operator with the blank as the last class.
//!
//! It takes up to five arrays (`pred`, `label`, optional per-example
//! `pred_lengths` and `label_lengths`, optional `sample_weight`), so it has
//! its own methods instead of the two-input [`Loss`](super::Loss) trait. As
//! in MXNet, the result is one negative log-likelihood per example, times
//! `sample_weight` and the global weight; it is not averaged.

use super::{op, Base};
use crate::block::{in_block, Block};
use oxnet_core::{Error, NDArray, Result};

/// Where the batch and time axes are: `pred` is `NTC` (batch, time,
/// classes; the default) or `TNC`; `label` is `NT` (the default) or `TN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceLayout {
    /// Batch first.
    BatchMajor,
    /// Time first.
    TimeMajor,
}

/// CTC loss: `pred` holds unnormalized activations whose last class is the
/// blank, `label` class ids padded with -1.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::loss::CTCLoss;
///
/// // one example, two steps, classes {a, blank}: label "a" is emitted by
/// // (a, blank), (blank, a) and (a, a); with equal activations p = 3/4
/// let pred = NDArray::zeros(&[1, 2, 2], oxnet_core::DType::F64, Default::default()).unwrap();
/// let label = NDArray::from_vec(vec![0.0f64], &[1, 1]).unwrap();
/// let loss = CTCLoss::new().loss(&pred, &label).unwrap().to_vec::<f64>().unwrap();
/// assert!((loss[0] + 0.75f64.ln()).abs() < 1e-12);
/// ```
#[derive(Debug, Clone)]
pub struct CTCLoss {
    base: Base,
    layout: SequenceLayout,
    label_layout: SequenceLayout,
}

impl Default for CTCLoss {
    fn default() -> Self {
        Self::new()
    }
}

impl CTCLoss {
    /// Layouts `NTC` and `NT`, no weight.
    pub fn new() -> CTCLoss {
        CTCLoss {
            base: Base::new("ctcloss", None),
            layout: SequenceLayout::BatchMajor,
            label_layout: SequenceLayout::BatchMajor,
        }
    }

    /// Sets `pred`'s layout (`NTC` or `TNC`).
    pub fn layout(mut self, layout: SequenceLayout) -> CTCLoss {
        self.layout = layout;
        self
    }

    /// Sets `label`'s layout (`NT` or `TN`); it also sets the batch axis.
    pub fn label_layout(mut self, layout: SequenceLayout) -> CTCLoss {
        self.label_layout = layout;
        self.base.batch_axis = if layout == SequenceLayout::BatchMajor { 0 } else { 1 };
        self
    }

    /// Sets the global weight the loss is multiplied by.
    pub fn weight(mut self, weight: f64) -> CTCLoss {
        self.base.weight = Some(weight);
        self
    }

    /// The loss per example, every sequence at full length and each label
    /// ending at its first -1.
    pub fn loss(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        self.loss_with(pred, label, None, None, None)
    }

    /// The loss per example with optional per-example lengths and
    /// `sample_weight`.
    pub fn loss_with(
        &self,
        pred: &NDArray,
        label: &NDArray,
        pred_lengths: Option<&NDArray>,
        label_lengths: Option<&NDArray>,
        sample_weight: Option<&NDArray>,
    ) -> Result<NDArray> {
        let run = || -> Result<NDArray> {
            let swap = |x: &NDArray| op("SwapAxis", &[x], &[("dim1", 0.into()), ("dim2", 1.into())]);
            let pred = match self.layout {
                SequenceLayout::BatchMajor => swap(pred)?,
                SequenceLayout::TimeMajor => pred.clone(),
            };
            let label = match self.label_layout {
                SequenceLayout::BatchMajor => label.clone(),
                SequenceLayout::TimeMajor => swap(label)?,
            };
            let mut inputs = vec![&pred, &label];
            inputs.extend(pred_lengths);
            inputs.extend(label_lengths);
            let attrs = [
                ("use_data_lengths", pred_lengths.is_some().into()),
                ("use_label_lengths", label_lengths.is_some().into()),
                ("blank_label", "last".into()),
            ];
            self.base.weigh(op("CTCLoss", &inputs, &attrs)?, sample_weight)
        };
        run().map_err(|e| in_block(e, self.name(), "CTCLoss"))
    }
}

impl Block for CTCLoss {
    fn prefix(&self) -> &str {
        &self.base.prefix
    }

    /// Inputs `pred`, `label`; or those and `pred_lengths`, `label_lengths`;
    /// or those four and `sample_weight`.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        match inputs {
            [pred, label] => Ok(vec![self.loss(pred, label)?]),
            [pred, label, pl, ll] => Ok(vec![self.loss_with(pred, label, Some(pl), Some(ll), None)?]),
            [pred, label, pl, ll, sw] => {
                Ok(vec![self.loss_with(pred, label, Some(pl), Some(ll), Some(sw))?])
            }
            _ => Err(Error::Invalid(format!(
                "loss `{}` takes pred and label, optionally pred_lengths and label_lengths, then optionally \
                 sample_weight; got {} inputs",
                self.name(),
                inputs.len()
            ))),
        }
    }
}
