//! MXNet's loss-output operators: network heads whose backward ignores the
//! gradient flowing into their output and emits a gradient of their own
//! (scaled by `grad_scale` and, where the operator has one, by its
//! `normalization`). Labels take no gradient (zeros).
//!
//! - `make_loss`: `MakeLoss` and `make_loss`, identity with a constant gradient;
//! - `softmax_output`: `SoftmaxOutput` (alias `Softmax`);
//! - `regression`: `LinearRegressionOutput`, `LogisticRegressionOutput`,
//!   `MAERegressionOutput`;
//! - `svm`: `SVMOutput`.

mod make_loss;
mod regression;
mod softmax_output;
mod svm;
#[cfg(test)]
mod tests;

use oxnet_core::shape::{merge_partial, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{DType, Element, Error, NDArray, Req, Result};

/// Registers the loss-output operators.
pub(crate) fn register() {
    make_loss::register();
    softmax_output::register();
    regression::register();
    svm::register();
}

/// Stores `vals` (computed in f64) into the floating-point array `out` under `req`.
fn store_f64(op: &str, req: Req, out: &NDArray, vals: &[f64]) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    if vals.len() != out.size() {
        return Err(Error::Shape(format!(
            "{op}: {} gradient values for an array of {} elements",
            vals.len(),
            out.size()
        )));
    }
    oxnet_core::with_float_dtype!(out.dtype(), T => {
        let v: Vec<T> = vals.iter().map(|&x| T::from_f64(x)).collect();
        store_slice(req, out.as_mut_slice::<T>()?, &v);
    });
    Ok(())
}

/// Gives a label its gradient: zero (`add` leaves the buffer as it is).
fn zero_label_grad(op: &str, req: Req, grad: &NDArray) -> Result<()> {
    match req {
        Req::Write | Req::Inplace => store_f64(op, Req::Write, grad, &vec![0.0; grad.size()]),
        Req::Null | Req::Add => Ok(()),
    }
}

/// A label value as a class position, as MXNet's kernels read it (truncated
/// toward zero; a non-finite value matches no class).
fn class_of(v: f64) -> i64 {
    if v.is_finite() {
        v.trunc() as i64
    } else {
        i64::MIN
    }
}

/// The forward values of input `i` or output `i` handed to a backward kernel.
fn needed<'a>(op: &str, what: &str, a: Option<&'a NDArray>) -> Result<&'a NDArray> {
    a.ok_or_else(|| Error::Invalid(format!("{op}: the backward pass was not given the forward {what}")))
}

/// Dtype inference of the operators with a `data` and a `label` of one
/// floating-point dtype (MXNet's: data's dtype, or the output's when data's
/// is unknown, fills the others; a label of another dtype is an error).
fn uniform_float_dtype(
    op: &'static str,
) -> impl Fn(&oxnet_core::Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> {
    move |_, ins, outs| {
        let Some(dt) = ins[0].or(outs[0]) else { return Ok(()) };
        if !dt.is_float() {
            return Err(Error::DType(format!("{op}: data must be a floating-point array, got {dt}")));
        }
        outs[0] = Some(dt);
        for (i, name) in ins.iter_mut().zip(["data", "label"]) {
            match i {
                Some(have) if *have != dt => {
                    return Err(Error::DType(format!(
                        "{op}: this layer requires one dtype: expected {dt} but `{name}` is {have}"
                    )))
                }
                _ => *i = Some(dt),
            }
        }
        Ok(())
    }
}

/// Shape inference that gives the label `data`'s shape without its last
/// axis (MXNet's rule for `SoftmaxOutput` without `multi_output`, and for
/// `SVMOutput`); `same_ok` also accepts a label of data's own shape. The
/// output has data's shape.
fn label_drops_last_axis(
    op: &str,
    same_ok: bool,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let Some(d) = ins[0].clone() else { return Ok(()) };
    if d.is_empty() {
        return Err(Error::Shape(format!("{op}: data must have at least one axis, got a scalar")));
    }
    let want = Shape::from_slice(&d[..d.len() - 1]);
    match &ins[1] {
        Some(l) if *l != want && !(same_ok && *l == d) => {
            return Err(Error::Shape(format!(
                "{op}: label has shape {:?}, data of shape {:?} needs {:?}",
                l.as_slice(),
                d.as_slice(),
                want.as_slice()
            )))
        }
        Some(_) => {}
        None => ins[1] = Some(want),
    }
    outs[0] = Some(d);
    Ok(())
}

/// [`label_drops_last_axis`] over partially known shapes (a dimension of 0
/// unknown), for graph inference: as MXNet, data of known rank gives the
/// label its shape without the last axis, unknown extents included.
fn label_drops_last_axis_partial(
    op: &str,
    same_ok: bool,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let Some(d) = ins[0].clone() else { return Ok(()) };
    if d.is_empty() {
        return Ok(());
    }
    let want = Shape::from_slice(&d[..d.len() - 1]);
    if let Some(mut l) = ins[1].clone() {
        let target = if l.len() == want.len() {
            &want
        } else if same_ok && l.len() == d.len() {
            &d
        } else {
            &Shape::from_slice(&[])
        };
        merge_partial(&mut l, target).map_err(|_| {
            Error::Shape(format!(
                "{op}: label has shape {:?}, data of shape {:?} needs {:?}",
                l.as_slice(),
                d.as_slice(),
                want.as_slice()
            ))
        })?;
        ins[1] = Some(l);
    } else {
        ins[1] = Some(want);
    }
    outs[0] = Some(d);
    Ok(())
}
