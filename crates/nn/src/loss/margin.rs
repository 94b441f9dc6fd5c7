//! Margin losses for labels of two classes: hinge, squared hinge and
//! logistic (Gluon's `HingeLoss`, `SquaredHingeLoss`, `LogisticLoss`).

use super::{like, op, scalar, Base, Loss};
use crate::block::{in_block, Block};
use oxnet_core::{Error, NDArray, Result};

/// `max(0, margin - pred·label)`, before weighting and averaging.
fn hinge(pred: &NDArray, label: &NDArray, margin: f64) -> Result<NDArray> {
    let prod = op("elemwise_mul", &[pred, &like(label, pred)?], &[])?;
    op("relu", &[&scalar("_rminus_scalar", &prod, margin)?], &[])
}

/// Hinge loss of SVMs (Gluon's `HingeLoss`): `max(0, margin - pred·label)`
/// with labels in {-1, 1}.
///
/// ```
/// use oxnet_core::NDArray;
/// use oxnet_nn::loss::{HingeLoss, Loss};
///
/// let pred = NDArray::from_vec(vec![0.5f32, -2.0], &[2, 1]).unwrap();
/// let label = NDArray::from_vec(vec![1.0f32, 1.0], &[2, 1]).unwrap();
/// let l = HingeLoss::new(1.0).loss(&pred, &label).unwrap();
/// assert_eq!(l.to_vec::<f32>().unwrap(), vec![0.5, 3.0]);
/// ```
#[derive(Debug, Clone)]
pub struct HingeLoss {
    base: Base,
    margin: f64,
}

impl HingeLoss {
    /// With `margin` (Gluon's default is 1), no weight, batch axis 0.
    pub fn new(margin: f64) -> HingeLoss {
        HingeLoss { base: Base::new("hingeloss", None), margin }
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        hinge(pred, label, self.margin)
    }
}

impl Default for HingeLoss {
    fn default() -> HingeLoss {
        HingeLoss::new(1.0)
    }
}
loss_block!(HingeLoss, "HingeLoss");

/// Squared hinge loss (Gluon's `SquaredHingeLoss`):
/// `max(0, margin - pred·label)²` with labels in {-1, 1}.
#[derive(Debug, Clone)]
pub struct SquaredHingeLoss {
    base: Base,
    margin: f64,
}

impl SquaredHingeLoss {
    /// With `margin` (Gluon's default is 1), no weight, batch axis 0.
    pub fn new(margin: f64) -> SquaredHingeLoss {
        SquaredHingeLoss { base: Base::new("squaredhingeloss", None), margin }
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        op("square", &[&hinge(pred, label, self.margin)?], &[])
    }
}

impl Default for SquaredHingeLoss {
    fn default() -> SquaredHingeLoss {
        SquaredHingeLoss::new(1.0)
    }
}
loss_block!(SquaredHingeLoss, "SquaredHingeLoss");

/// How [`LogisticLoss`] reads its labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelFormat {
    /// Labels -1 and 1 (Gluon's `'signed'`, the default).
    Signed,
    /// Labels 0 and 1 (Gluon's `'binary'`).
    Binary,
}

impl std::str::FromStr for LabelFormat {
    type Err = Error;

    /// `"signed"` or `"binary"`; anything else is an error naming `label_format`.
    fn from_str(s: &str) -> Result<LabelFormat> {
        match s {
            "signed" => Ok(LabelFormat::Signed),
            "binary" => Ok(LabelFormat::Binary),
            other => Err(Error::attr(
                "label_format",
                format!("LogisticLoss's label_format can only be signed or binary, got {other:?}"),
            )),
        }
    }
}

/// Logistic loss (Gluon's `LogisticLoss`): `log(1 + exp(-pred·label))` for
/// signed labels; binary labels `z` are read as `2z - 1`. Computed stably, as
/// MXNet does, as `max(x, 0) - x·z + log(1 + exp(-|x|))` with `z` the label
/// in {0, 1}.
#[derive(Debug, Clone)]
pub struct LogisticLoss {
    base: Base,
    format: LabelFormat,
}

impl LogisticLoss {
    /// With `label_format` `"signed"` (-1/1, Gluon's default) or `"binary"`
    /// (0/1); no weight, batch axis 0. Any other format is an error.
    pub fn new(label_format: &str) -> Result<LogisticLoss> {
        Ok(LogisticLoss::with_format(label_format.parse()?))
    }

    /// With a parsed label format.
    pub fn with_format(format: LabelFormat) -> LogisticLoss {
        LogisticLoss { base: Base::new("logisticloss", None), format }
    }

    fn compute(&self, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
        let mut z = like(label, pred)?;
        if self.format == LabelFormat::Signed {
            z = scalar("_mul_scalar", &scalar("_plus_scalar", &z, 1.0)?, 0.5)?;
        }
        let relu = op("relu", &[pred], &[])?;
        let xz = op("elemwise_mul", &[pred, &z], &[])?;
        let neg_abs = op("negative", &[&op("abs", &[pred], &[])?], &[])?;
        let soft = op("Activation", &[&neg_abs], &[("act_type", "softrelu".into())])?;
        op("elemwise_add", &[&op("elemwise_sub", &[&relu, &xz], &[])?, &soft], &[])
    }
}

impl Default for LogisticLoss {
    fn default() -> LogisticLoss {
        LogisticLoss::with_format(LabelFormat::Signed)
    }
}
loss_block!(LogisticLoss, "LogisticLoss");
