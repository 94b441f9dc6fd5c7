//! Built-in operators: optimizer updates, with MXNet 1.9.1's names, inputs,
//! attributes and formulas (`sgd_update`, `sgd_mom_update`, `adam_update`,
//! `rmsprop_update`, `ftrl_update`, `ftml_update`, the `mp_`
//! multi-precision forms, ...) and the LARS helpers `multi_sum_sq`,
//! `multi_lars` and `reset_arrays`. The multi-tensor forms update several
//! weights in one call (their input layout: `multi_tensor.rs`):
//! - `multi_sgd_update`, `multi_sgd_mom_update`, `multi_mp_sgd_update`,
//!   `multi_mp_sgd_mom_update` (rates as attributes) and their
//!   `preloaded_multi_*` twins (rates as float32 input arrays);
//! - `_multi_adamw_update`, `_multi_mp_adamw_update` (beside the
//!   single-tensor `_adamw_update`, `_mp_adamw_update`);
//! - `_multi_lamb_update`, `_multi_mp_lamb_update` (beside the two LAMB
//!   phases `lamb_update_phase1/2` and `mp_lamb_update_phase1/2`).
//!
//! Also `_contrib_group_adagrad_update` (AdaGrad with one history value per
//! row).
//!
//! Every update operator returns the new weight as its (first) output and
//! rewrites its state inputs (momentum, moving averages, float32 master
//! copies), which it declares with [`OpDef::mutate_inputs`]. Callers usually
//! pass the weight itself as the output (`out=weight` in Python, request
//! `inplace` from Rust): the kernels are written for that aliasing. None of
//! them is differentiable.
//!
//! Conventions shared by all of them, as in MXNet:
//! - `rescale_grad` multiplies the gradient first;
//! - `clip_gradient < 0` turns clipping off, otherwise the (rescaled)
//!   gradient is clipped to `[-clip_gradient, clip_gradient]`;
//! - `wd` is applied where each operator's formula says (added to the
//!   gradient for Adam and RMSProp, as a decay of the weight for SGD).
//!
//! Arithmetic runs in the weight's precision (`float32` for `float16` and
//! `bfloat16` weights); the `mp_` operators keep the weight in a float32
//! master copy and round it into the low-precision weight after each step.

mod adam;
mod ftml;
mod ftrl;
mod group_adagrad;
mod kernel;
mod lamb;
mod lars;
pub(crate) mod multi;
mod multi_adamw;
mod multi_lamb;
mod multi_tensor;
mod preloaded;
mod rmsprop;
mod sgd;
mod sign;
#[cfg(test)]
mod tests;

use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{AttrKind, AttrSpec, DType, Error, OpDef, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    sgd::register();
    multi::register();
    adam::register();
    rmsprop::register();
    ftrl::register();
    ftml::register();
    sign::register();
    lamb::register();
    lars::register();
    preloaded::register();
    multi_adamw::register();
    multi_lamb::register();
    group_adagrad::register();
}

/// The required learning rate `lr`.
fn lr_attr() -> AttrSpec {
    AttrSpec::required("lr", AttrKind::Float, "Learning rate.")
}

/// Weight decay `wd` (default 0).
fn wd_attr() -> AttrSpec {
    AttrSpec::optional(
        "wd",
        AttrKind::Float,
        0.0,
        "Weight decay: penalises large weights with a term that scales with their square.",
    )
}

/// `rescale_grad` (default 1).
fn rescale_attr() -> AttrSpec {
    AttrSpec::optional("rescale_grad", AttrKind::Float, 1.0, "Rescale the gradient to rescale_grad * grad.")
}

/// `clip_gradient` (default -1: off).
fn clip_attr() -> AttrSpec {
    AttrSpec::optional(
        "clip_gradient",
        AttrKind::Float,
        -1.0,
        "Clip the rescaled gradient to [-clip_gradient, clip_gradient]; a negative value turns clipping off.",
    )
}

/// `momentum` (default 0).
fn momentum_attr() -> AttrSpec {
    AttrSpec::optional("momentum", AttrKind::Float, 0.0, "The decay rate of the momentum.")
}

/// `lazy_update`, accepted for compatibility (oxnet's gradients are dense,
/// so every update is a standard one).
fn lazy_attr() -> AttrSpec {
    AttrSpec::optional(
        "lazy_update",
        AttrKind::Bool,
        true,
        "Accepted for compatibility: gradients are dense, so updates are never lazy.",
    )
}

/// `wd`, `rescale_grad` and `clip_gradient`, the attributes most update
/// operators end with.
fn decay_attrs() -> [AttrSpec; 3] {
    [wd_attr(), rescale_attr(), clip_attr()]
}

/// An update operator with fixed argument names, one output (the new
/// weight, which may be written over the weight input), the given mutated
/// inputs and attributes; element-wise shape and dtype inference.
fn update_op(
    name: &str,
    doc: &str,
    args: &[&str],
    mutated: &'static [usize],
    attrs: impl IntoIterator<Item = AttrSpec>,
) -> OpDef {
    let def = OpDef::new(name)
        .doc(doc)
        .arguments(args)
        .outputs(&["output"])
        .mutate_inputs(move |_| mutated.to_vec())
        .inplace(&[(0, 0)]);
    attrs.into_iter().fold(def, OpDef::attr)
}

/// Dtype inference for the multi-precision operators: the inputs listed in
/// `float32` are float32 master copies or states; every other input and the
/// outputs share one (usually float16) dtype.
fn mp_dtype(
    float32: &'static [usize],
) -> impl Fn(&Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> {
    move |_, ins, outs| {
        for &i in float32 {
            match ins[i] {
                Some(d) if d != DType::F32 => {
                    return Err(Error::DType(format!("input {i} is a float32 state or master copy, got {d}")))
                }
                _ => ins[i] = Some(DType::F32),
            }
        }
        let mut rest: Vec<Option<DType>> =
            ins.iter().enumerate().filter(|(i, _)| !float32.contains(i)).map(|(_, d)| *d).collect();
        oxnet_core::op::same_dtype(&Attrs::empty(), &mut rest, outs)?;
        let mut it = rest.into_iter();
        for (i, d) in ins.iter_mut().enumerate() {
            if !float32.contains(&i) {
                *d = it.next().flatten();
            }
        }
        Ok(())
    }
}

/// Shape inference where every input but those in `scalars` and every
/// output share one shape; the `scalars` inputs must hold one element.
fn shape_with_scalars(
    scalars: &'static [usize],
) -> impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> {
    move |_, ins, outs| {
        for &i in scalars {
            match &ins[i] {
                Some(s) if s.iter().product::<usize>() != 1 => {
                    return Err(Error::Shape(format!(
                        "input {i} must hold exactly one element, got shape {:?}",
                        s.as_slice()
                    )))
                }
                Some(_) => {}
                None => ins[i] = Some(oxnet_core::shape::shape(&[1])),
            }
        }
        let mut rest: Vec<Option<Shape>> =
            ins.iter().enumerate().filter(|(i, _)| !scalars.contains(i)).map(|(_, s)| s.clone()).collect();
        if rest.iter().chain(outs.iter()).all(|s| s.is_none()) {
            return Ok(());
        }
        oxnet_core::op::same_shape(&Attrs::empty(), &mut rest, outs)?;
        let mut it = rest.into_iter();
        for (i, s) in ins.iter_mut().enumerate() {
            if !scalars.contains(&i) {
                *s = it.next().flatten();
            }
        }
        Ok(())
    }
}

/// Dispatches `$body` over the weight dtypes of the multi-precision
/// operators (`float16`, `bfloat16`, `float32`), binding `$T`.
macro_rules! with_mp_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            oxnet_core::DType::F16 => {
                type $T = oxnet_core::half::f16;
                $body
            }
            oxnet_core::DType::BF16 => {
                type $T = oxnet_core::half::bf16;
                $body
            }
            oxnet_core::DType::F32 => {
                type $T = f32;
                $body
            }
            other => {
                return Err(oxnet_core::Error::DType(format!(
                    "multi-precision updates take float16, bfloat16 or float32 weights, got {other}"
                )))
            }
        }
    }};
}
pub(crate) use with_mp_dtype;
