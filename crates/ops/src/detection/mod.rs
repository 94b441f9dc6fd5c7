//! Object detection: MXNet 1.9.1's bounding-box and anchor operators, with
//! the results of its CPU kernels, down to the order of equal scores and
//! the precision of each expression. The dtypes are MXNet's:
//!
//! - `box_iou`, `box_nms` (and its gradient), `box_encode`, `box_decode`
//!   and `bipartite_matching`: float32, float64 and float16 (MXNet's
//!   `MSHADOW_REAL_TYPE_SWITCH`);
//! - `MultiBoxPrior`, `MultiBoxTarget` and `MultiBoxDetection`: float32 in
//!   MXNet, whose type inference refuses the others; here float64 too,
//!   computed as MXNet's templated kernels would;
//! - `Proposal` and `MultiProposal`: float32 only.
//!
//! Other dtypes are refused with an error that names the operator and the
//! dtype. In float16 MXNet computes with `mshadow::half_t`: every
//! operation on two halves is done in float32 and rounded to half, a half
//! compared with a float parameter is compared as a float32, and a double
//! (a `log` or `exp` result) becomes a half through float32; the kernels
//! here do the same (see the `Real` trait).
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

/// Runs `$body` with `$T` bound to the element type of `$dtype`, one of
/// `[$dt, ...]` (`F32`, `F64`, `F16`; all three when no list is given, as
/// MXNet's `MSHADOW_REAL_TYPE_SWITCH`); any other dtype returns an error
/// naming the operator `$op` and the dtype.
macro_rules! with_real {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        with_real!($op, $dtype, [F32, F64, F16], $T => $body)
    };
    ($op:expr, $dtype:expr, [$($dt:ident),+], $T:ident => $body:expr) => {
        match $dtype {
            $(oxnet_core::DType::$dt => {
                type $T = real_type!($dt);
                $body
            })+
            other => {
                let allowed = [$(oxnet_core::DType::$dt),+];
                return Err($crate::detection::unsupported_dtype($op, &allowed, other));
            }
        }
    };
}

/// The Rust element type of a dtype name of [`with_real`].
macro_rules! real_type {
    (F32) => {
        f32
    };
    (F64) => {
        f64
    };
    (F16) => {
        oxnet_core::half::f16
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
mod mx_values_f16;
#[cfg(test)]
mod proposal_tests;
#[cfg(test)]
mod test_util;

use crate::conv::geometry::fmt_tuple;
use num_traits::Float;
use oxnet_core::attrs::Attrs;
use oxnet_core::half::f16;
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

/// The dtypes of MXNet's `MSHADOW_REAL_TYPE_SWITCH`, which the `box_*` and
/// `bipartite_matching` kernels are compiled for.
const REAL_DTYPES: &[DType] = &[DType::F32, DType::F64, DType::F16];

/// The dtypes of the `MultiBox*` operators here: MXNet's float32 and, as an
/// extension, float64 (MXNet's type inference refuses it; its kernels are
/// templates that would compute it as done here). Not float16.
const MULTIBOX_DTYPES: &[DType] = &[DType::F32, DType::F64];

/// The dtype of `Proposal` and `MultiProposal`, as MXNet: float32 only.
const PROPOSAL_DTYPES: &[DType] = &[DType::F32];

/// The error for data of dtype `got` given to `op`, which takes `allowed`.
pub(crate) fn unsupported_dtype(op: &str, allowed: &[DType], got: DType) -> Error {
    let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
    let want = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "no".into(),
    };
    Error::DType(format!("{op}: {got} data is not supported, expected {want}"))
}

/// The element types the detection kernels compute in: MXNet's float32,
/// float64 and float16 (its `DType`). MXNet's C++ mixes `DType` with
/// double constants and double `log`/`exp` results; how such mixed
/// expressions round differs between the types, so they go through the
/// methods here: [`Real::wide`] and [`Real::narrow`] for float32 and
/// float64, where the mixed part is computed in double, and the overrides
/// of float16, where `mshadow::half_t` rounds every operation to half.
pub(crate) trait Real: Float + Element + Send + Sync {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `v` rounded to this type as C++ assigns a double to it (for half,
    /// through float32, as `half_t`'s constructor does).
    fn narrow(v: f64) -> Self;
    /// This value as a float64 (exact).
    fn wide(self) -> f64;
    /// MXNet's `lo + extent * 0.5` (`0.5` a double): evaluated in double
    /// and rounded once for float32 and float64; for half, `extent * 0.5`
    /// is rounded to half first, then the sum.
    #[inline(always)]
    fn plus_half_of(self, extent: Self) -> Self {
        Self::narrow(self.wide() + extent.wide() * 0.5)
    }
    /// MXNet's `(d - sub) / div` with `d` a double: in double, rounded
    /// once, for float32 and float64; for half, `d - sub` is computed in
    /// float32 (`d` rounded to float32 first) and rounded to half, then
    /// divided in half.
    #[inline(always)]
    fn double_sub_div(d: f64, sub: Self, div: Self) -> Self {
        Self::narrow((d - sub.wide()) / div.wide())
    }
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

/// float16 as `mshadow::half_t`: `half` computes each operation in float32
/// and rounds the result to half (to nearest, ties to even), as `half_t`'s
/// operators do; comparisons are exact either way.
impl Real for f16 {
    const ZERO: f16 = f16::ZERO;
    const ONE: f16 = f16::ONE;
    #[inline(always)]
    fn narrow(v: f64) -> f16 {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn plus_half_of(self, extent: f16) -> f16 {
        self + extent * f16::from_f32(0.5)
    }
    #[inline(always)]
    fn double_sub_div(d: f64, sub: f16, div: f16) -> f16 {
        f16::from_f32(d as f32 - sub.to_f32()) / div
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
/// and outputs share one dtype, one of `allowed`; the first known one
/// fills the others.
fn infer_real_type(
    op: &str,
    names: &[&str],
    allowed: &[DType],
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let Some(dt) = ins.iter().chain(outs.iter()).flatten().copied().next() else { return Ok(()) };
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
        return Err(unsupported_dtype(op, allowed, dt));
    }
    Ok(())
}

/// Stores `values` into the kernel output `out` under `req`.
fn store<T: Element>(req: Req, out: &NDArray, values: &[T]) -> Result<()> {
    store_slice(req, out.as_mut_slice::<T>()?, values);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_rounds_each_step_of_mixed_expressions() {
        let h = |v: f64| f16::from_f64(v);
        let tiny = 2f64.powi(-24);
        // lo + extent * 0.5: the half 2^-25 rounds to 0 first (half_t), where
        // double precision rounds 3.5 x 2^-24 once, to 4 x 2^-24 (even)
        assert_eq!(h(3.0 * tiny).plus_half_of(h(tiny)).to_f64(), 3.0 * tiny);
        assert_eq!((3.0 * tiny as f32).plus_half_of(tiny as f32) as f64, 3.5 * tiny);
        // (d - mean) / std with d a double: rounded to half before dividing
        let (d, mean, std) = (1.02f64.ln(), h(0.1), h(0.2));
        assert_eq!(f16::double_sub_div(d, mean, std).to_f64(), -0.401123046875);
        assert_eq!(f16::narrow((d - mean.wide()) / std.wide()).to_f64(), -0.40087890625);
        // a double becomes a half through float32, as half_t's constructor:
        // just above the tie 1 + 2^-11, rounded to float32 it is the tie,
        // which goes to the even 1 (rounded once it would be 1 + 2^-10)
        let just_above_tie = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f16::narrow(just_above_tie).to_f64(), 1.0);
    }

    #[test]
    fn dtype_errors_name_the_operator_and_the_dtype() {
        let e = unsupported_dtype("op", REAL_DTYPES, DType::BF16).to_string();
        assert!(e.contains("op: bfloat16") && e.contains("float32, float64 or float16"), "{e}");
        let e = unsupported_dtype("op", PROPOSAL_DTYPES, DType::F16).to_string();
        assert!(e.contains("float16") && e.contains("expected float32"), "{e}");
    }
}
