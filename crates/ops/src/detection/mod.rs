//! Object detection: MXNet 1.9.1's bounding-box and anchor operators, with
//! the results of its CPU kernels, down to the order of equal scores and
//! the float32 or double precision of each expression. The `box_*` and
//! `bipartite_matching` operators take float32 and float64 as in MXNet;
//! `Proposal` and `MultiProposal` float32 only, as in MXNet; the
//! `MultiBox*` operators float32 and also float64, computed as MXNet's
//! templated kernels would (its type inference admits float32 only).
//!
//! | operator | what it does |
//! |---|---|
//! | `_contrib_box_iou` | pairwise intersection-over-union of two sets of boxes |
//! | `_contrib_box_nms` (`_contrib_box_non_maximum_suppression`) | sorts boxes by score and suppresses overlapping ones; gradient routed back to the kept rows' positions |
//! | `_contrib_box_encode`, `_contrib_box_decode` | box regression targets relative to anchors, and back |
//! | `_contrib_bipartite_matching` | greedy one-to-one matching of rows and columns of a score matrix |
//! | `_contrib_MultiBoxPrior`, `_contrib_MultiBoxTarget`, `_contrib_MultiBoxDetection` | SSD anchors, training targets and detections |
//! | `_contrib_Proposal`, `_contrib_MultiProposal` | Faster R-CNN region proposals from RPN scores and box deltas |
//!
//! Every operator but `box_nms` has a zero gradient, as in MXNet. The
//! geometry they share (overlaps, box formats, the stable descending sort
//! and greedy non-maximum suppression) lives in one module, `geometry`.

/// Runs `$body` with `$T` bound to `f32` or `f64` after `$dtype`; any other
/// dtype returns an error naming the operator `$op`.
macro_rules! with_real {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            oxnet_core::DType::F32 => {
                type $T = f32;
                $body
            }
            oxnet_core::DType::F64 => {
                type $T = f64;
                $body
            }
            other => {
                return Err(oxnet_core::Error::DType(format!(
                    "{}: expected float32 or float64 data, got {other}",
                    $op
                )))
            }
        }
    };
}

mod bipartite;
mod box_codec;
mod box_iou;
mod box_nms;
mod geometry;
mod multibox_detection;
mod multibox_prior;
mod multibox_target;
mod proposal;

#[cfg(test)]
mod box_tests;
#[cfg(test)]
mod multibox_tests;
#[cfg(test)]
mod mx_values;
#[cfg(test)]
mod proposal_tests;
#[cfg(test)]
mod test_util;

use crate::conv::geometry::fmt_tuple;
use num_traits::Float;
use oxnet_core::attrs::Attrs;
use oxnet_core::store::store_slice;
use oxnet_core::{DType, Element, Error, NDArray, OpDef, Req, Result, Shape};
use std::sync::Arc;

/// Registers this module's operators.
pub(crate) fn register() {
    box_iou::register();
    bipartite::register();
    box_nms::register();
    box_codec::register();
    multibox_prior::register();
    multibox_target::register();
    multibox_detection::register();
    proposal::register();
}

/// The element types the detection kernels compute in: MXNet's float32
/// and float64 (its `DType`; expressions it evaluates in double precision
/// go through [`Real::wide`] and [`Real::narrow`]).
pub(crate) trait Real: Float + Element + Send + Sync {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `v` rounded to this type.
    fn narrow(v: f64) -> Self;
    /// This value as a float64 (exact).
    fn wide(self) -> f64;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    #[inline(always)]
    fn narrow(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    #[inline(always)]
    fn narrow(v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
}

/// The parsed parameters of a call: those `prepare` stored, else parsed now.
fn prepared<P: Clone + Send + Sync + 'static>(attrs: &Attrs, parse: fn(&Attrs) -> Result<P>) -> Result<P> {
    match attrs.prepared::<P>() {
        Some(p) => Ok(p.clone()),
        None => parse(attrs),
    }
}

/// Declares `parse` as the operator's `prepare` hook: the attributes are
/// checked once per call and kernels read the result with [`prepared`].
fn with_params<P: Send + Sync + 'static>(def: OpDef, parse: fn(&Attrs) -> Result<P>) -> OpDef {
    def.prepare(move |attrs| Ok(Arc::new(parse(attrs)?)))
}

/// An attribute of MXNet type `float`: the float64 given, rounded to float32.
fn float32(attrs: &Attrs, name: &str) -> Result<f32> {
    Ok(attrs.float(name)? as f32)
}

/// A tuple-of-floats attribute (MXNet's `Tuple<float>`), as float32 values;
/// `len`, when given, is the number of entries it must have.
fn float_tuple(op: &str, attrs: &Attrs, name: &str, len: Option<usize>) -> Result<Vec<f32>> {
    let v: Vec<f32> =
        crate::util::parse_floats(name, attrs.str(name)?)?.into_iter().map(|x| x as f32).collect();
    match len {
        Some(n) if v.len() != n => {
            Err(Error::attr(name, format!("{op}: {name} must have {n} entries, got {}", v.len())))
        }
        _ => Ok(v),
    }
}

/// A shape error: `what` of `op` must be `expect`, with the shape it has.
fn shape_error(op: &str, what: &str, expect: &str, got: &[usize]) -> Error {
    Error::Shape(format!("{op}: {what} must be {expect}, got shape {}", fmt_tuple(got)))
}

/// Sets `slot` (input or output `what`) to `shape`, or checks that it has it.
fn assign(op: &str, slot: &mut Option<Shape>, shape: &[usize], what: &str) -> Result<()> {
    match slot {
        Some(have) if have.as_slice() != shape => Err(Error::Shape(format!(
            "{op}: {what} must have shape {}, got {}",
            fmt_tuple(shape),
            fmt_tuple(have)
        ))),
        _ => {
            *slot = Some(Shape::from_slice(shape));
            Ok(())
        }
    }
}

/// Sets the output slots to `shapes`, in order.
fn assign_outputs(op: &str, outs: &mut [Option<Shape>], shapes: &[&[usize]]) -> Result<()> {
    for (i, (slot, s)) in outs.iter_mut().zip(shapes).enumerate() {
        assign(op, slot, s, &format!("output {i}"))?;
    }
    Ok(())
}

/// Dtype inference of the detection operators: the inputs (named `names`)
/// and outputs share one dtype, float32 or float64 (float32 alone when
/// `f32_only`); the first known one fills the others.
fn infer_real_type(
    op: &str,
    names: &[&str],
    f32_only: bool,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let Some(dt) = ins.iter().chain(outs.iter()).flatten().copied().next() else { return Ok(()) };
    let allowed: &[DType] = if f32_only { &[DType::F32] } else { &[DType::F32, DType::F64] };
    let inputs = ins.iter().enumerate().map(|(i, s)| (*s, names.get(i).copied().unwrap_or("input")));
    let outputs = outs.iter().map(|s| (*s, "the output"));
    if let Some((Some(have), what)) = inputs.chain(outputs).find(|(s, _)| s.is_some_and(|d| d != dt)) {
        let all = names.join(", ");
        return Err(Error::DType(format!(
            "{op}: {all} must share one dtype, got {what} of dtype {have} with {dt}"
        )));
    }
    ins.iter_mut().chain(outs.iter_mut()).for_each(|s| *s = Some(dt));
    if !allowed.contains(&dt) {
        let want = if f32_only { "float32" } else { "float32 or float64" };
        return Err(Error::DType(format!("{op}: expected {want} data, got {dt}")));
    }
    Ok(())
}

/// Stores `values` into the kernel output `out` under `req`.
fn store<T: Element>(req: Req, out: &NDArray, values: &[T]) -> Result<()> {
    store_slice(req, out.as_mut_slice::<T>()?, values);
    Ok(())
}
