//! Built-in operators: neural-network layers and helpers (softmax family,
//! activations, dropout, embedding, softmax cross-entropy,
//! CTC loss, loss-output heads).

mod activation;
mod activation_grad;
mod ctc;
mod dropout;
mod embedding;
mod kl_sparse_reg;
mod loss;
mod loss_output;
mod prelu;
pub(crate) mod softmax;
mod softmax_activation;

use crate::kernels::simd_math;
use crate::util::call;
use oxnet_core::store::store_slice;
use oxnet_core::{AttrValue, DType, Element, Error, FloatElement, NDArray, Req, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    softmax::register();
    softmax_activation::register();
    activation::register();
    activation_grad::register();
    dropout::register();
    embedding::register();
    kl_sparse_reg::register();
    loss::register();
    loss_output::register();
    ctc::register();
}

/// Applies an element-wise float function: `out = f(x)` under `req`, with the
/// `f32` closure for f32/f16/bf16 (f32 slices vectorised through
/// [`simd_math::map_f32`]) and the `f64` closure for f64.
pub(super) fn map_float<F32, F64>(x: &NDArray, out: &NDArray, req: Req, f32f: F32, f64f: F64) -> Result<()>
where
    F32: Fn(f32) -> f32 + Sync + Send + Copy,
    F64: Fn(f64) -> f64 + Sync + Send + Copy,
{
    if req == Req::Null {
        return Ok(());
    }
    // An in-place call may hand the input's buffer as the output.
    let x = if x.shares_storage(out) { x.copy()? } else { x.clone() };
    fn run<T: Element>(x: &NDArray, out: &NDArray, req: Req, f: impl Fn(&[T], &mut [T])) -> Result<()> {
        let xs = x.as_slice::<T>()?;
        if matches!(req, Req::Add) {
            let mut tmp = vec![T::zero(); xs.len()];
            f(xs, &mut tmp);
            store_slice(req, out.as_mut_slice::<T>()?, &tmp);
        } else {
            f(xs, out.as_mut_slice::<T>()?);
        }
        Ok(())
    }
    fn half<T: FloatElement<Compute = f32>>(xs: &[T], out: &mut [T], f: &(impl Fn(f32) -> f32 + Sync)) {
        for (o, v) in out.iter_mut().zip(xs) {
            *o = T::from_compute(f(v.to_compute()));
        }
    }
    match x.dtype() {
        DType::F32 => run::<f32>(&x, out, req, |xs, o| simd_math::map_f32(xs, o, f32f)),
        DType::F64 => run::<f64>(&x, out, req, |xs, o| simd_math::map_f64(xs, o, f64f)),
        DType::F16 => run::<half::f16>(&x, out, req, |xs, o| half(xs, o, &f32f)),
        DType::BF16 => run::<half::bf16>(&x, out, req, |xs, o| half(xs, o, &f32f)),
        other => Err(Error::DType(format!("expected a floating-point dtype, got {other}"))),
    }
}

/// `(outer, n, inner)` of `shape` around `axis`.
pub(crate) fn split_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// Shorthands for gradient rules.
pub(super) fn mul(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    if a.shape() == b.shape() {
        call("elemwise_mul", &[a, b], &[])
    } else {
        call("broadcast_mul", &[a, b], &[])
    }
}

pub(super) fn add(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    if a.shape() == b.shape() {
        call("elemwise_add", &[a, b], &[])
    } else {
        call("broadcast_add", &[a, b], &[])
    }
}

pub(super) fn sub(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    if a.shape() == b.shape() {
        call("elemwise_sub", &[a, b], &[])
    } else {
        call("broadcast_sub", &[a, b], &[])
    }
}

pub(super) fn scalar_op(name: &str, a: &NDArray, s: f64) -> Result<NDArray> {
    call(name, &[a], &[("scalar", AttrValue::Float(s))])
}

pub(super) fn unary(name: &str, a: &NDArray) -> Result<NDArray> {
    call(name, &[a], &[])
}

/// `sum` over one axis, keeping it.
pub(super) fn sum_keep(a: &NDArray, axis: i64) -> Result<NDArray> {
    call("sum", &[a], &[("axis", AttrValue::Int(axis)), ("keepdims", AttrValue::Bool(true))])
}
