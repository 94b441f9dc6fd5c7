//! `_contrib_fft` and `_contrib_ifft`: unnormalized discrete Fourier
//! transforms of every row along the last axis, complex numbers stored as
//! interleaved `(real, imaginary)` pairs.
//!
//! For a real row `x` of length `d`, `fft` gives the `2d` numbers
//! `[Re X_0, Im X_0, Re X_1, Im X_1, ...]` of `X_k = Σ_n x_n e^{-2πi kn/d}`.
//! `ifft` reads such a row of `2d` numbers as `Z_0 .. Z_{d-1}` and gives the
//! real part of `Σ_k Z_k e^{+2πi kn/d}`: like MXNet, it does not divide by
//! `d`, so `ifft(fft(x)) = d · x`.
//!
//! Both are linear and each one's gradient is the other applied to the
//! output gradient `g` (MXNet's backward passes compute the same):
//! `∂ Σ g·fft(x) / ∂x = ifft(g)` and `∂ Σ g·ifft(Z) / ∂Z = fft(g)`. The
//! rules call the operators, so higher orders work.
//!
//! MXNet 1.9.1 had only cuFFT kernels, in single precision whatever the
//! dtype; here the rows run through `rustfft` on the CPU, in float64 for
//! float64 arrays and float32 for float32 and float16 ones.

use crate::util::call;
use oxnet_core::half::f16;
use oxnet_core::shape::Shape;
use oxnet_core::{
    parallel, registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Element, Error, GradCtx, NDArray,
    OpContext, OpDef, Req, Result,
};
use rustfft::num_complex::Complex;
use rustfft::{FftDirection, FftNum, FftPlanner};

/// Which of the two transforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transform {
    /// `_contrib_fft`: real rows in, interleaved complex rows out.
    Forward,
    /// `_contrib_ifft`: interleaved complex rows in, real rows out.
    Inverse,
}

impl Transform {
    fn name(self) -> &'static str {
        match self {
            Transform::Forward => "_contrib_fft",
            Transform::Inverse => "_contrib_ifft",
        }
    }

    /// The transform whose application to the output gradient is this
    /// one's input gradient.
    fn adjoint(self) -> Transform {
        match self {
            Transform::Forward => Transform::Inverse,
            Transform::Inverse => Transform::Forward,
        }
    }

    fn direction(self) -> FftDirection {
        match self {
            Transform::Forward => FftDirection::Forward,
            Transform::Inverse => FftDirection::Inverse,
        }
    }

    /// Numbers per input row and per output row for transforms of length `d`.
    fn row_lengths(self, d: usize) -> (usize, usize) {
        match self {
            Transform::Forward => (d, 2 * d),
            Transform::Inverse => (2 * d, d),
        }
    }

    /// The transform length of an input of shape `shape`.
    fn length(self, shape: &[usize]) -> Result<usize> {
        let Some(&last) = shape.last() else {
            return Err(Error::Shape("`data` must have at least one axis, got a 0-d array".into()));
        };
        match self {
            Transform::Forward => Ok(last),
            Transform::Inverse if last % 2 == 0 => Ok(last / 2),
            Transform::Inverse => Err(Error::Shape(format!(
                "the last axis of `data` holds (real, imaginary) pairs and must have an even length, \
                 got shape {shape:?}"
            ))),
        }
    }

    /// The output shape for an input of shape `shape`.
    fn out_shape(self, shape: &[usize]) -> Result<Shape> {
        let d = self.length(shape)?;
        let (_, out_len) = self.row_lengths(d);
        Ok(shape[..shape.len() - 1].iter().copied().chain([out_len]).collect())
    }

    fn doc(self) -> &'static str {
        match self {
            Transform::Forward => {
                "Unnormalized 1-D FFT of every row along the last axis: real `data` (..., d), of any \
                 rank >= 1 (MXNet took (N, d) and (N1, N2, N3, d)), gives (..., 2d) holding \
                 X_k = sum_n x_n exp(-2 pi i k n / d) as [Re X_0, Im X_0, Re X_1, Im X_1, ...]. \
                 float16, float32 or float64. The gradient is `_contrib_ifft` of the output gradient."
            }
            Transform::Inverse => {
                "Real part of the unnormalized 1-D inverse FFT of every row along the last axis: \
                 `data` (..., 2d), of any rank >= 1 (MXNet took (N, 2d) and (N1, N2, N3, 2d)), holds d \
                 complex numbers Z as [Re Z_0, Im Z_0, Re Z_1, ...]; the output (..., d) is \
                 Re sum_k Z_k exp(2 pi i k n / d), not divided by d (as MXNet), so ifft(fft(x)) = d x. \
                 float16, float32 or float64. The gradient is `_contrib_fft` of the output gradient."
            }
        }
    }
}

/// `compute_size`: MXNet's sub-batch size for cuFFT, checked and otherwise
/// unused.
fn compute_size(attrs: &Attrs) -> Result<i64> {
    let c = attrs.int("compute_size")?;
    if c < 1 {
        return Err(Error::attr("compute_size", format!("must be a positive integer, got {c}")));
    }
    Ok(c)
}

/// The float type a dtype's rows are transformed in, with conversions
/// through `f64`.
trait Precision: FftNum {
    fn of(v: f64) -> Self;
    fn get(self) -> f64;
}

impl Precision for f32 {
    fn of(v: f64) -> f32 {
        v as f32
    }
    fn get(self) -> f64 {
        self as f64
    }
}

impl Precision for f64 {
    fn of(v: f64) -> f64 {
        v
    }
    fn get(self) -> f64 {
        self
    }
}

/// Transforms of at least this many numbers fill one parallel task.
const TASK_WORK: usize = 1 << 14;

/// Rows per parallel task for `rows` transforms of length `d`.
fn rows_per_task(rows: usize, d: usize) -> usize {
    let by_work = TASK_WORK.div_ceil(d.max(1));
    let by_threads = rows.div_ceil(parallel::num_threads() * 4);
    by_work.max(by_threads).max(1)
}

/// Transforms every row of `input` into the matching row of `out` under
/// `req` (`write` or `add`), computing in precision `F`.
fn transform_rows<T: Element, F: Precision>(t: Transform, d: usize, input: &[T], out: &mut [T], req: Req) {
    let (in_len, out_len) = t.row_lengths(d);
    if out.is_empty() {
        return;
    }
    let plan = FftPlanner::<F>::new().plan_fft(d, t.direction());
    let zero = Complex::new(F::zero(), F::zero());
    let per_task = rows_per_task(out.len() / out_len, d);
    parallel::for_each_chunk_mut(out, per_task * out_len, |task, block| {
        let mut buf = vec![zero; d];
        let mut scratch = vec![zero; plan.get_inplace_scratch_len()];
        for (r, dst) in block.chunks_exact_mut(out_len).enumerate() {
            let row = task * per_task + r;
            let src = &input[row * in_len..(row + 1) * in_len];
            match t {
                Transform::Forward => {
                    for (b, &x) in buf.iter_mut().zip(src) {
                        *b = Complex::new(F::of(x.to_f64()), F::zero());
                    }
                }
                Transform::Inverse => {
                    for (b, z) in buf.iter_mut().zip(src.chunks_exact(2)) {
                        *b = Complex::new(F::of(z[0].to_f64()), F::of(z[1].to_f64()));
                    }
                }
            }
            plan.process_with_scratch(&mut buf, &mut scratch);
            let put = |slot: &mut T, v: F| {
                let v = T::from_f64(v.get());
                *slot = if req == Req::Add { slot.add(v) } else { v };
            };
            match t {
                Transform::Forward => {
                    for (pair, b) in dst.chunks_exact_mut(2).zip(&buf) {
                        put(&mut pair[0], b.re);
                        put(&mut pair[1], b.im);
                    }
                }
                Transform::Inverse => {
                    for (slot, b) in dst.iter_mut().zip(&buf) {
                        put(slot, b.re);
                    }
                }
            }
        }
    });
}

fn forward(t: Transform, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    compute_size(ctx.attrs)?;
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let (x, y) = (&ins[0], &outs[0]);
    let d = t.length(x.shape())?;
    match x.dtype() {
        DType::F64 => transform_rows::<f64, f64>(t, d, x.as_slice()?, y.as_mut_slice()?, req),
        DType::F32 => transform_rows::<f32, f32>(t, d, x.as_slice()?, y.as_mut_slice()?, req),
        DType::F16 => transform_rows::<f16, f32>(t, d, x.as_slice()?, y.as_mut_slice()?, req),
        other => return Err(unsupported(other)),
    }
    Ok(())
}

fn unsupported(dt: DType) -> Error {
    Error::DType(format!("`data` has dtype {dt}; the transform takes float16, float32 or float64"))
}

fn infer_shape(
    t: Transform,
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    compute_size(attrs)?;
    let Some(x) = &ins[0] else { return Ok(()) };
    crate::shape_ops::set_shape(&mut outs[0], t.out_shape(x)?, "the output")
}

/// One floating-point dtype (float16, float32 or float64) in and out.
fn infer_type(ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let Some(dt) = ins[0].or(outs[0]) else { return Ok(()) };
    if !matches!(dt, DType::F16 | DType::F32 | DType::F64) {
        return Err(unsupported(dt));
    }
    if let Some(o) = outs[0].filter(|&o| o != dt) {
        return Err(Error::DType(format!("the output has dtype {o}, `data` has {dt}: they must be equal")));
    }
    ins[0] = Some(dt);
    outs[0] = Some(dt);
    Ok(())
}

fn grad(t: Transform, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let size = AttrValue::Int(compute_size(g.attrs)?);
    Ok(vec![Some(call(t.adjoint().name(), &[&g.out_grads[0]], &[("compute_size", size)])?)])
}

fn def(t: Transform) -> OpDef {
    OpDef::new(t.name())
        .doc(t.doc())
        .attr(AttrSpec::optional(
            "compute_size",
            AttrKind::Int,
            128i64,
            "Maximum size of sub-batch to be forwarded at one time (MXNet's cuFFT batching; checked to be \
             positive, no other effect here).",
        ))
        .infer_shape(move |attrs, ins, outs| infer_shape(t, attrs, ins, outs))
        .infer_type(|_, ins, outs| infer_type(ins, outs))
        .forward(move |ctx, ins, outs| forward(t, ctx, ins, outs))
        .grad_rule(move |g| grad(t, g))
}

/// Registers `_contrib_fft` and `_contrib_ifft`.
pub(super) fn register() {
    registry::register(def(Transform::Forward));
    registry::register(def(Transform::Inverse));
}

#[cfg(test)]
#[path = "fft_tests.rs"]
mod tests;
