//! A small framework for element-wise kernels of one input (and the
//! two-input `_backward_*` helpers): dtype dispatch, request handling and
//! parallelism live here, so that each operator only states its
//! per-element function.
//!
//! * `float32` runs the operator's slice function (by default a
//!   [`simd_math::map_f32`] loop, which LLVM vectorises with AVX2+FMA when
//!   the CPU has it; the transcendental operators use `simd_math`'s own
//!   slice functions).
//! * `float64` runs the `f64` function through [`simd_math::map_f64`].
//! * `float16`/`bfloat16` are widened to `f32` in blocks on the stack,
//!   computed with the `f32` slice function and narrowed back.
//! * Integer dtypes run the operator's integer function where it has one;
//!   other operators answer [`Error::DType`] naming the dtype.
//!
//! Requests: `write`/`inplace` store straight into the output (an output
//! that is the input itself is updated in place), `add` computes into a
//! temporary and accumulates, `null` does nothing. Work is spread over the pool ([`oxnet_core::parallel`])
//! only from [`PAR_MIN`] elements on, so one-element calls stay cheap.

use crate::kernels::simd_math;
use half::{bf16, f16};
use oxnet_core::dtype::{DType, Element, FloatElement};
use oxnet_core::parallel;
use oxnet_core::{Error, NDArray, Req, Result};

/// Element count from which the loops here use the pool.
pub(crate) const PAR_MIN: usize = 32 * 1024;
/// Chunk size of parallel loops.
const PAR_CHUNK: usize = 16 * 1024;
/// Block size (elements) of the f16/bf16 widening buffers.
const HALF_BLOCK: usize = 256;

/// Integer element types and the few operations integer kernels need
/// (wrapping where the result does not fit, as MXNet's integer kernels do).
pub(crate) trait IntElem: Element + Ord {
    /// `-x` (wrapping; for unsigned types the two's complement).
    fn ineg(self) -> Self;
    /// `|x|` (wrapping for the most negative value).
    fn iabs(self) -> Self;
    /// -1, 0 or 1.
    fn isign(self) -> Self;
    /// `x * x` (wrapping).
    fn isquare(self) -> Self;
    /// `max(x, 0)`.
    fn irelu(self) -> Self;
}

macro_rules! int_elem_signed {
    ($($t:ty),*) => {$(
        impl IntElem for $t {
            #[inline(always)]
            fn ineg(self) -> Self { self.wrapping_neg() }
            #[inline(always)]
            fn iabs(self) -> Self { self.wrapping_abs() }
            #[inline(always)]
            fn isign(self) -> Self { self.signum() }
            #[inline(always)]
            fn isquare(self) -> Self { self.wrapping_mul(self) }
            #[inline(always)]
            fn irelu(self) -> Self { if self > 0 { self } else { 0 } }
        }
    )*};
}
int_elem_signed!(i8, i32, i64);

impl IntElem for u8 {
    #[inline(always)]
    fn ineg(self) -> Self {
        self.wrapping_neg()
    }
    #[inline(always)]
    fn iabs(self) -> Self {
        self
    }
    #[inline(always)]
    fn isign(self) -> Self {
        (self != 0) as u8
    }
    #[inline(always)]
    fn isquare(self) -> Self {
        self.wrapping_mul(self)
    }
    #[inline(always)]
    fn irelu(self) -> Self {
        self
    }
}

/// The per-element description of a one-input operator.
///
/// Implement `f32` and `f64`; override the slice functions to use a
/// dedicated vectorised kernel, and set `INT` (with `int`) for operators
/// defined on integers.
pub(crate) trait UnaryFn: Send + Sync {
    /// True when the operator is defined on integer dtypes.
    const INT: bool = false;
    /// The `f32` function (also used for f16 and bf16).
    fn f32(&self, x: f32) -> f32;
    /// The `f64` function.
    fn f64(&self, x: f64) -> f64;
    /// The integer function (called only when `INT`).
    #[inline(always)]
    fn int<T: IntElem>(&self, x: T) -> T {
        x
    }
    /// `out[i] = f(x[i])` over `f32` slices of equal length.
    #[inline]
    fn f32_slice(&self, x: &[f32], out: &mut [f32]) {
        simd_math::map_f32(x, out, |v| self.f32(v))
    }
    /// `x[i] = f(x[i])` over an `f32` slice.
    #[inline]
    fn f32_inplace(&self, x: &mut [f32]) {
        simd_math::map_f32_inplace(x, |v| self.f32(v))
    }
    /// `out[i] = f(x[i])` over `f64` slices of equal length.
    #[inline]
    fn f64_slice(&self, x: &[f64], out: &mut [f64]) {
        simd_math::map_f64(x, out, |v| self.f64(v))
    }
    /// `x[i] = f(x[i])` over an `f64` slice.
    #[inline]
    fn f64_inplace(&self, x: &mut [f64]) {
        simd_math::map_f64_inplace(x, |v| self.f64(v))
    }
}

/// The per-element description of a two-input float operator (the fused
/// `_backward_*` helpers): `out[i] = f(a[i], b[i])`.
pub(crate) trait BinaryFn: Send + Sync {
    /// The `f32` function (also used for f16 and bf16).
    fn f32(&self, a: f32, b: f32) -> f32;
    /// The `f64` function.
    fn f64(&self, a: f64, b: f64) -> f64;
    /// `out[i] = f(a[i], b[i])` over `f32` slices of equal length.
    #[inline]
    fn f32_slice(&self, a: &[f32], b: &[f32], out: &mut [f32]) {
        zip_map(a, b, out, |u, v| self.f32(u, v))
    }
    /// `out[i] = f(a[i], b[i])` over `f64` slices of equal length.
    #[inline]
    fn f64_slice(&self, a: &[f64], b: &[f64], out: &mut [f64]) {
        zip_map(a, b, out, |u, v| self.f64(u, v))
    }
}

/// The error for a dtype an operator does not support.
pub(crate) fn dtype_error(op: &str, dtype: DType, int_ok: bool) -> Error {
    let supported = if int_ok {
        "numeric dtypes (floating-point and integer)"
    } else {
        "floating-point dtypes (float32, float64, float16, bfloat16)"
    };
    Error::DType(format!("`{op}` is not defined for {dtype}; it supports {supported}"))
}

fn check_sizes(arrays: &[&NDArray], out: &NDArray) -> Result<()> {
    for a in arrays {
        if a.size() != out.size() || a.dtype() != out.dtype() {
            return Err(Error::Shape(format!(
                "element-wise kernel: input {:?} {} does not match output {:?} {}",
                a.shape(),
                a.dtype(),
                out.shape(),
                out.dtype()
            )));
        }
    }
    Ok(())
}

/// Runs the one-input operator `k` (called `op` in errors) on `x` into `out`
/// under `req`.
pub(crate) fn unary_forward<K: UnaryFn>(k: &K, op: &str, req: Req, x: &NDArray, out: &NDArray) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    check_sizes(&[x], out)?;
    match x.dtype() {
        DType::F32 => native(req, x, out, |a, o| k.f32_slice(a, o), |o| k.f32_inplace(o)),
        DType::F64 => native(req, x, out, |a, o| k.f64_slice(a, o), |o| k.f64_inplace(o)),
        DType::F16 => half_unary::<f16, K>(k, req, x, out),
        DType::BF16 => half_unary::<bf16, K>(k, req, x, out),
        DType::U8 if K::INT => int_unary::<u8, K>(k, req, x, out),
        DType::I8 if K::INT => int_unary::<i8, K>(k, req, x, out),
        DType::I32 if K::INT => int_unary::<i32, K>(k, req, x, out),
        DType::I64 if K::INT => int_unary::<i64, K>(k, req, x, out),
        other => Err(dtype_error(op, other, K::INT)),
    }
}

/// Runs the two-input float operator `k` on `a`, `b` into `out` under `req`.
pub(crate) fn binary_forward<K: BinaryFn>(
    k: &K,
    op: &str,
    req: Req,
    a: &NDArray,
    b: &NDArray,
    out: &NDArray,
) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    check_sizes(&[a, b], out)?;
    match out.dtype() {
        DType::F32 => native2(req, a, b, out, |u, v, o| k.f32_slice(u, v, o)),
        DType::F64 => native2(req, a, b, out, |u, v, o| k.f64_slice(u, v, o)),
        DType::F16 => half_binary::<f16, K>(k, req, a, b, out),
        DType::BF16 => half_binary::<bf16, K>(k, req, a, b, out),
        other => Err(dtype_error(op, other, false)),
    }
}

/// `dst[i] += src[i]` (parallel for long slices).
pub(crate) fn add_into<T: Element>(dst: &mut [T], src: &[T]) {
    let body = |d: &mut [T], s: &[T]| d.iter_mut().zip(s).for_each(|(d, s)| *d = d.add(*s));
    if dst.len() >= PAR_MIN {
        parallel::for_each_chunk_mut(dst, PAR_CHUNK, |c, d| body(d, &src[c * PAR_CHUNK..][..d.len()]));
    } else {
        body(dst, src);
    }
}

/// `out[i] = f(a[i], b[i])` (parallel for long slices).
#[inline]
pub(crate) fn zip_map<T: Copy + Send + Sync, F: Fn(T, T) -> T + Sync>(a: &[T], b: &[T], out: &mut [T], f: F) {
    let body = |a: &[T], b: &[T], o: &mut [T]| {
        for ((o, &u), &v) in o.iter_mut().zip(a).zip(b) {
            *o = f(u, v);
        }
    };
    if out.len() >= PAR_MIN {
        parallel::for_each_chunk_mut(out, PAR_CHUNK, |c, o| {
            let at = c * PAR_CHUNK;
            body(&a[at..][..o.len()], &b[at..][..o.len()], o)
        });
    } else {
        body(a, b, out);
    }
}

/// True when `x` and `out` start at the same element (a true in-place call).
fn same_start<T: Element>(x: &NDArray, out: &NDArray) -> Result<bool> {
    Ok(x.data_ptr::<T>()? == out.data_ptr::<T>()?)
}

/// f32/f64 path: the slice functions write straight into the output.
fn native<T: Element>(
    req: Req,
    x: &NDArray,
    out: &NDArray,
    slice: impl Fn(&[T], &mut [T]),
    inplace: impl Fn(&mut [T]),
) -> Result<()> {
    match req {
        Req::Null => {}
        Req::Write | Req::Inplace => {
            if !x.shares_storage(out) {
                slice(x.as_slice::<T>()?, out.as_mut_slice::<T>()?);
            } else if same_start::<T>(x, out)? {
                inplace(out.as_mut_slice::<T>()?);
            } else {
                let tmp = x.as_slice::<T>()?.to_vec();
                slice(&tmp, out.as_mut_slice::<T>()?);
            }
        }
        Req::Add => {
            let mut tmp = x.as_slice::<T>()?.to_vec();
            inplace(&mut tmp);
            add_into(out.as_mut_slice::<T>()?, &tmp);
        }
    }
    Ok(())
}

/// The input's elements, copied when they share memory with the output.
fn source<'a, T: Element>(x: &'a NDArray, out: &NDArray, owned: &'a mut Vec<T>) -> Result<&'a [T]> {
    if x.shares_storage(out) {
        *owned = x.as_slice::<T>()?.to_vec();
        Ok(owned.as_slice())
    } else {
        x.as_slice::<T>()
    }
}

/// Runs `body` over matching chunks, in parallel for long slices.
fn chunked<T: Send + Sync, U: Send + Sync>(src: &[T], dst: &mut [U], body: impl Fn(&[T], &mut [U]) + Sync) {
    if dst.len() >= PAR_MIN {
        parallel::for_each_chunk_mut(dst, PAR_CHUNK, |c, d| body(&src[c * PAR_CHUNK..][..d.len()], d));
    } else {
        body(src, dst);
    }
}

/// Narrows `vals` into `dst`, overwriting or accumulating.
#[inline(always)]
fn store_half<T: FloatElement<Compute = f32>>(dst: &mut [T], vals: &[f32], add: bool) {
    if add {
        for (o, v) in dst.iter_mut().zip(vals) {
            *o = T::from_compute(o.to_compute() + *v);
        }
    } else {
        for (o, v) in dst.iter_mut().zip(vals) {
            *o = T::from_compute(*v);
        }
    }
}

/// f16/bf16 path: widen a block, compute in f32, narrow back.
fn half_unary<T, K>(k: &K, req: Req, x: &NDArray, out: &NDArray) -> Result<()>
where
    T: FloatElement<Compute = f32>,
    K: UnaryFn,
{
    let mut owned = Vec::new();
    let src = source::<T>(x, out, &mut owned)?;
    let dst = out.as_mut_slice::<T>()?;
    let add = req == Req::Add;
    chunked(src, dst, |s, d| {
        let mut buf = [0f32; HALF_BLOCK];
        for (sc, dc) in s.chunks(HALF_BLOCK).zip(d.chunks_mut(HALF_BLOCK)) {
            let b = &mut buf[..sc.len()];
            for (bv, v) in b.iter_mut().zip(sc) {
                *bv = v.to_compute();
            }
            k.f32_inplace(b);
            store_half(dc, b, add);
        }
    });
    Ok(())
}

/// Integer path.
fn int_unary<T: IntElem, K: UnaryFn>(k: &K, req: Req, x: &NDArray, out: &NDArray) -> Result<()> {
    let mut owned = Vec::new();
    let src = source::<T>(x, out, &mut owned)?;
    let dst = out.as_mut_slice::<T>()?;
    if req == Req::Add {
        chunked(src, dst, |s, d| d.iter_mut().zip(s).for_each(|(o, v)| *o = o.add(k.int(*v))));
    } else {
        chunked(src, dst, |s, d| d.iter_mut().zip(s).for_each(|(o, v)| *o = k.int(*v)));
    }
    Ok(())
}

/// f32/f64 path of two-input kernels.
fn native2<T: Element>(
    req: Req,
    a: &NDArray,
    b: &NDArray,
    out: &NDArray,
    f: impl Fn(&[T], &[T], &mut [T]),
) -> Result<()> {
    let aliased = a.shares_storage(out) || b.shares_storage(out);
    if req == Req::Add || aliased {
        let mut tmp = vec![T::zero(); out.size()];
        f(a.as_slice::<T>()?, b.as_slice::<T>()?, &mut tmp);
        let dst = out.as_mut_slice::<T>()?;
        if req == Req::Add {
            add_into(dst, &tmp);
        } else {
            dst.copy_from_slice(&tmp);
        }
    } else {
        f(a.as_slice::<T>()?, b.as_slice::<T>()?, out.as_mut_slice::<T>()?);
    }
    Ok(())
}

/// f16/bf16 path of two-input kernels.
fn half_binary<T, K>(k: &K, req: Req, a: &NDArray, b: &NDArray, out: &NDArray) -> Result<()>
where
    T: FloatElement<Compute = f32>,
    K: BinaryFn,
{
    let (mut oa, mut ob) = (Vec::new(), Vec::new());
    let sa = source::<T>(a, out, &mut oa)?;
    let sb = source::<T>(b, out, &mut ob)?;
    let dst = out.as_mut_slice::<T>()?;
    let add = req == Req::Add;
    let body = |a: &[T], b: &[T], d: &mut [T]| {
        let mut ba = [0f32; HALF_BLOCK];
        let mut bb = [0f32; HALF_BLOCK];
        let mut bo = [0f32; HALF_BLOCK];
        for ((ac, bc), dc) in a.chunks(HALF_BLOCK).zip(b.chunks(HALF_BLOCK)).zip(d.chunks_mut(HALF_BLOCK)) {
            let n = ac.len();
            for (t, v) in ba[..n].iter_mut().zip(ac) {
                *t = v.to_compute();
            }
            for (t, v) in bb[..n].iter_mut().zip(bc) {
                *t = v.to_compute();
            }
            k.f32_slice(&ba[..n], &bb[..n], &mut bo[..n]);
            store_half(dc, &bo[..n], add);
        }
    };
    if dst.len() >= PAR_MIN {
        parallel::for_each_chunk_mut(dst, PAR_CHUNK, |c, d| {
            let at = c * PAR_CHUNK;
            body(&sa[at..][..d.len()], &sb[at..][..d.len()], d)
        });
    } else {
        body(sa, sb, dst);
    }
    Ok(())
}
