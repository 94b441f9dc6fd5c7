//! `softmax`, `log_softmax` and `softmin` along an axis, with temperature.
//!
//! `dtype` (None, float16, float32 or float64) sets the output's dtype: the
//! input is converted to it first when it is wider, so that a float16 input
//! with a float32 output computes in float32; the gradient comes back in
//! the input's dtype. `softmax` with `use_length=True` takes a second input
//! `length` (integers, the data's shape without `axis`): each slice along
//! `axis` is normalised over its first `length` entries and is 0 beyond
//! them; `length` gets a zero gradient.

use super::{mul, scalar_op, split_axis, sub, sum_keep, unary};
use crate::kernels::simd_math;
use num_traits::{Float, One, Zero};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::normalize_axis;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, DType, Error, FloatElement, GradCtx, NDArray, OpContext, OpDef, Req,
    Result, Shape,
};
use std::sync::Arc;

/// Elements below which a call runs on the calling thread.
const PAR_MIN: usize = 32 * 1024;
/// Elements per parallel task (whole rows or blocks).
const PAR_CHUNK: usize = 16 * 1024;

/// The compute types: f32 uses the vectorised kernels of `simd_math`
/// (AVX2 where available).
pub(super) trait FastMath: Float + Send + Sync {
    /// `v[i] = exp(v[i])`.
    fn exp_slice(v: &mut [Self]);
}

impl FastMath for f32 {
    fn exp_slice(v: &mut [f32]) {
        simd_math::exp_f32_inplace(v)
    }
}

impl FastMath for f64 {
    fn exp_slice(v: &mut [f64]) {
        v.iter_mut().for_each(|z| *z = z.exp())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Softmax,
    LogSoftmax,
    Softmin,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Softmax => "softmax",
            Kind::LogSoftmax => "log_softmax",
            Kind::Softmin => "softmin",
        }
    }
}

/// The `temperature` attribute: a positive number, or None (meaning 1).
pub(crate) fn temperature(attrs: &Attrs) -> Result<f64> {
    let s = attrs.str("temperature")?.trim();
    if matches!(s, "None" | "none" | "") {
        return Ok(1.0);
    }
    let t: f64 =
        s.parse().map_err(|_| Error::attr("temperature", format!("expected a number or None, got `{s}`")))?;
    if !t.is_finite() || t == 0.0 {
        return Err(Error::attr("temperature", format!("must be finite and non-zero, got {t}")));
    }
    Ok(t)
}

#[inline(always)]
fn lanes_max<C: Float>(v: &[C]) -> C {
    let mut acc = [C::neg_infinity(); 8];
    let chunks = v.chunks_exact(8);
    let mut m = chunks.remainder().iter().fold(C::neg_infinity(), |m, &z| if z > m { z } else { m });
    for c in chunks {
        for i in 0..8 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    for a in acc {
        m = if a > m { a } else { m };
    }
    m
}

#[inline(always)]
fn lanes_sum<C: Float>(v: &[C]) -> C {
    let mut acc = [C::zero(); 8];
    let chunks = v.chunks_exact(8);
    let mut s = chunks.remainder().iter().fold(C::zero(), |s, &z| s + z);
    for c in chunks {
        for i in 0..8 {
            acc[i] = acc[i] + c[i];
        }
    }
    for a in acc {
        s = s + a;
    }
    s
}

/// Rows of length `n` (the reduced axis is the last one).
fn rows<T: FloatElement>(x: &[T], y: &mut [T], n: usize, scale: T::Compute, kind: Kind)
where
    T::Compute: FastMath,
{
    let mut buf = vec![T::Compute::zero(); n];
    let mut ex = if kind == Kind::LogSoftmax { vec![T::Compute::zero(); n] } else { Vec::new() };
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        for (b, &v) in buf.iter_mut().zip(xr) {
            *b = v.to_compute() * scale;
        }
        let m = lanes_max(&buf);
        for b in buf.iter_mut() {
            *b = *b - m;
        }
        if kind == Kind::LogSoftmax {
            ex.copy_from_slice(&buf);
            T::Compute::exp_slice(&mut ex);
            let lse = lanes_sum(&ex).ln();
            for (o, &b) in yr.iter_mut().zip(&buf) {
                *o = T::from_compute(b - lse);
            }
        } else {
            T::Compute::exp_slice(&mut buf);
            let inv = T::Compute::one() / lanes_sum(&buf);
            for (o, &b) in yr.iter_mut().zip(&buf) {
                *o = T::from_compute(b * inv);
            }
        }
    }
}

/// Blocks of `n x inner` (the reduced axis has stride `inner`).
fn blocks<T: FloatElement>(x: &[T], y: &mut [T], n: usize, inner: usize, scale: T::Compute, kind: Kind)
where
    T::Compute: FastMath,
{
    type C<T> = <T as FloatElement>::Compute;
    let mut mx = vec![C::<T>::neg_infinity(); inner];
    let mut acc = vec![C::<T>::zero(); inner];
    let mut buf = vec![C::<T>::zero(); n * inner];
    let mut ex = if kind == Kind::LogSoftmax { vec![C::<T>::zero(); n * inner] } else { Vec::new() };
    for (xb, yb) in x.chunks_exact(n * inner).zip(y.chunks_exact_mut(n * inner)) {
        mx.fill(C::<T>::neg_infinity());
        for (b, &v) in buf.iter_mut().zip(xb) {
            *b = v.to_compute() * scale;
        }
        for row in buf.chunks_exact(inner) {
            for (m, &z) in mx.iter_mut().zip(row) {
                *m = if z > *m { z } else { *m };
            }
        }
        for row in buf.chunks_exact_mut(inner) {
            for (b, &m) in row.iter_mut().zip(&mx) {
                *b = *b - m;
            }
        }
        let e = if kind == Kind::LogSoftmax {
            ex.copy_from_slice(&buf);
            &mut ex
        } else {
            &mut buf
        };
        C::<T>::exp_slice(e);
        acc.fill(C::<T>::zero());
        for row in e.chunks_exact(inner) {
            for (s, &v) in acc.iter_mut().zip(row) {
                *s = *s + v;
            }
        }
        if kind == Kind::LogSoftmax {
            for s in acc.iter_mut() {
                *s = s.ln();
            }
            for (yr, br) in yb.chunks_exact_mut(inner).zip(buf.chunks_exact(inner)) {
                for ((o, &b), &l) in yr.iter_mut().zip(br).zip(&acc) {
                    *o = T::from_compute(b - l);
                }
            }
        } else {
            for s in acc.iter_mut() {
                *s = C::<T>::one() / *s;
            }
            for (yr, br) in yb.chunks_exact_mut(inner).zip(buf.chunks_exact(inner)) {
                for ((o, &b), &inv) in yr.iter_mut().zip(br).zip(&acc) {
                    *o = T::from_compute(b * inv);
                }
            }
        }
    }
}

/// Softmax-family kernel on contiguous data split as `(outer, n, inner)`.
pub(super) fn softmax_kernel<T: FloatElement>(
    x: &[T],
    y: &mut [T],
    dims: (usize, usize, usize),
    scale: f64,
    kind: Kind,
) where
    T::Compute: FastMath,
{
    let (_, n, inner) = dims;
    if x.is_empty() || n == 0 || inner == 0 {
        return;
    }
    let scale = <T::Compute as num_traits::NumCast>::from(scale).unwrap_or_else(T::Compute::one);
    let block = n * inner;
    let per_task = (PAR_CHUNK / block).max(1) * block;
    let parallel = x.len() >= PAR_MIN && x.len() > per_task;
    match (inner == 1, parallel) {
        (true, false) => rows(x, y, n, scale, kind),
        (true, true) => oxnet_core::parallel::for_each_chunk_mut(y, per_task, |c, ys| {
            rows(&x[c * per_task..][..ys.len()], ys, n, scale, kind)
        }),
        (false, false) => blocks(x, y, n, inner, scale, kind),
        (false, true) => oxnet_core::parallel::for_each_chunk_mut(y, per_task, |c, ys| {
            blocks(&x[c * per_task..][..ys.len()], ys, n, inner, scale, kind)
        }),
    }
}

fn scale_of(attrs: &Attrs, kind: Kind) -> Result<f64> {
    let t = temperature(attrs)?;
    Ok(if kind == Kind::Softmin { -1.0 / t } else { 1.0 / t })
}

/// Softmax over the first `len` entries of each `(outer, inner)` slice
/// along the axis, 0 beyond them (a length is clamped to `[0, n]`).
fn masked_softmax<T: FloatElement>(
    x: &[T],
    y: &mut [T],
    lens: &[i64],
    dims: (usize, usize, usize),
    scale: f64,
) where
    T::Compute: FastMath,
{
    type C<T> = <T as FloatElement>::Compute;
    let (outer, n, inner) = dims;
    let scale = <C<T> as num_traits::NumCast>::from(scale).unwrap_or_else(C::<T>::one);
    let mut buf = vec![C::<T>::zero(); n];
    for o in 0..outer {
        for j in 0..inner {
            let at = |i: usize| o * n * inner + i * inner + j;
            let l = lens[o * inner + j].clamp(0, n as i64) as usize;
            for (i, b) in buf.iter_mut().enumerate().take(l) {
                *b = x[at(i)].to_compute() * scale;
            }
            let m = lanes_max(&buf[..l]);
            for b in buf[..l].iter_mut() {
                *b = *b - m;
            }
            C::<T>::exp_slice(&mut buf[..l]);
            let inv = C::<T>::one() / lanes_sum(&buf[..l]);
            for i in 0..n {
                y[at(i)] = T::from_compute(if i < l { buf[i] * inv } else { C::<T>::zero() });
            }
        }
    }
}

/// The `length` input as integers (MXNet takes integer dtypes only).
fn lengths(length: &NDArray, expected: usize) -> Result<Vec<i64>> {
    if !length.dtype().is_int() {
        return Err(Error::DType(format!(
            "softmax: `length` must have an integer dtype, got {}",
            length.dtype()
        )));
    }
    if length.size() != expected {
        return Err(Error::Shape(format!(
            "softmax: `length` has shape {:?}, expected the data's shape without `axis` ({expected} elements)",
            length.shape()
        )));
    }
    length.to_vec::<i64>()
}

fn use_length(attrs: &Attrs) -> Result<bool> {
    match attrs.get("use_length")? {
        oxnet_core::AttrValue::None => Ok(false),
        _ => attrs.bool("use_length"),
    }
}

fn forward(kind: Kind, ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let out = &outputs[0];
    if inputs[0].dtype() != out.dtype() {
        // `dtype`: compute in the wider of the two dtypes, then convert
        let x = &inputs[0];
        let xc = if out.dtype().size() > x.dtype().size() { x.astype(out.dtype())? } else { x.clone() };
        let mut args = vec![&xc];
        args.extend(inputs.get(1));
        let attrs: Vec<(&str, oxnet_core::AttrValue)> = ["axis", "temperature", "use_length"]
            .iter()
            .map(|k| Ok((*k, ctx.attrs.get(k)?.clone())))
            .collect::<Result<_>>()?;
        let y = crate::util::call(kind.name(), &args, &attrs)?;
        return oxnet_core::store::store(req, out, &y.astype(out.dtype())?);
    }
    let x = &inputs[0];
    let axis = normalize_axis(ctx.attrs.int("axis")?, x.ndim())?;
    let dims = split_axis(x.shape(), axis);
    let scale = scale_of(ctx.attrs, kind)?;
    if let Some(length) = inputs.get(1) {
        let lens = lengths(length, dims.0 * dims.2)?;
        oxnet_core::with_float_dtype!(x.dtype(), T => {
            let mut tmp = vec![<T as oxnet_core::Element>::zero(); x.size()];
            masked_softmax::<T>(x.as_slice()?, &mut tmp, &lens, dims, scale);
            store_slice(req, out.as_mut_slice::<T>()?, &tmp);
        });
        return Ok(());
    }
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        if req == Req::Write {
            softmax_kernel::<T>(x.as_slice()?, out.as_mut_slice()?, dims, scale, kind);
        } else {
            // add, or in place: through a temporary
            let mut tmp = vec![<T as oxnet_core::Element>::zero(); x.size()];
            softmax_kernel::<T>(x.as_slice()?, &mut tmp, dims, scale, kind);
            store_slice(req, out.as_mut_slice::<T>()?, &tmp);
        }
    });
    Ok(())
}

fn grad(kind: Kind, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let (y, og) = (&g.outputs[0], &g.out_grads[0]);
    let axis = g.attrs.int("axis")?;
    let scale = scale_of(g.attrs, kind)?;
    let dz = match kind {
        // y (g - sum(g y))
        Kind::Softmax | Kind::Softmin => {
            let s = sum_keep(&mul(og, y)?, axis)?;
            mul(y, &sub(og, &s)?)?
        }
        // g - exp(y) sum(g)
        Kind::LogSoftmax => {
            let s = sum_keep(og, axis)?;
            sub(og, &mul(&unary("exp", y)?, &s)?)?
        }
    };
    let dx = if scale == 1.0 { dz } else { scalar_op("_mul_scalar", &dz, scale)? };
    let x = &g.inputs[0];
    let dx = if dx.dtype() == x.dtype() {
        dx
    } else {
        crate::util::call("cast", &[&dx], &[("dtype", oxnet_core::AttrValue::DType(x.dtype()))])?
    };
    let mut grads = vec![Some(dx)];
    if let Some(length) = g.inputs.get(1) {
        let needs = g.needs_grad.get(1).copied().unwrap_or(false);
        grads.push(if needs { Some(unary("zeros_like", length)?) } else { None });
    }
    Ok(grads)
}

/// Output dtype: `dtype` when given, else the data's; `length` may have
/// any dtype (the kernel asks for integers).
fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let want = match attrs.dtype("dtype")? {
        Some(d) => Some(d),
        None => {
            if ins[0].is_none() {
                ins[0] = outs[0];
            }
            ins[0]
        }
    };
    let Some(want) = want else {
        return Err(Error::DType("softmax: the data's dtype is not known".into()));
    };
    match outs[0] {
        Some(have) if have != want => {
            Err(Error::DType(format!("softmax: the output must have dtype {want}, got {have}")))
        }
        _ => {
            outs[0] = Some(want);
            Ok(())
        }
    }
}

/// Shapes: the output is the data's; `length` is the data's without `axis`.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if let Some(s) = ins[0].as_ref().or(outs[0].as_ref()) {
        let axis = normalize_axis(attrs.int("axis")?, s.len())?;
        if ins.len() > 1 {
            let mut len_shape = s.as_slice().to_vec();
            len_shape.remove(axis);
            let len_shape = Shape::from(len_shape);
            match &ins[1] {
                Some(have) if *have != len_shape => {
                    return Err(Error::Shape(format!(
                    "softmax: `length` has shape {:?}, expected {:?} (the data's shape without axis {axis})",
                    have.as_slice(),
                    len_shape.as_slice()
                )))
                }
                _ => ins[1] = Some(len_shape),
            }
        }
    }
    oxnet_core::op::same_shape(attrs, &mut ins[..1], outs)
}

fn def(kind: Kind, doc: &str) -> OpDef {
    let def = OpDef::new(kind.name())
        .doc(doc)
        .attr(AttrSpec::optional("axis", AttrKind::Int, -1i64, "The axis to normalise over."))
        .attr(AttrSpec::optional(
            "temperature",
            AttrKind::Str,
            "None",
            "Temperature t: the input is divided by t (None means 1).",
        ))
        .attr(AttrSpec::optional(
            "dtype",
            AttrKind::DType,
            oxnet_core::AttrValue::None,
            "The output's dtype (None: the input's); float16, float32 or float64.",
        ))
        .attr(AttrSpec::optional(
            "use_length",
            AttrKind::Bool,
            false,
            "Whether to use the second input `length` (softmax only).",
        ))
        .prepare(move |attrs| {
            temperature(attrs)?;
            if let Some(d) = attrs.dtype("dtype")? {
                if !d.is_float() {
                    return Err(Error::attr(
                        "dtype",
                        format!("must be float16, float32 or float64, got {d}"),
                    ));
                }
            }
            if use_length(attrs)? && kind != Kind::Softmax {
                return Err(Error::attr("use_length", format!("{} takes no `length` input", kind.name())));
            }
            Ok(Arc::new(()))
        })
        .infer_shape(infer_shape)
        .infer_type(infer_type)
        .forward(move |ctx, i, o| forward(kind, ctx, i, o))
        .grad_rule(move |g| grad(kind, g));
    if kind == Kind::Softmax {
        def.arguments_fn(|attrs| {
            Ok(if use_length(attrs)? { vec!["data".into(), "length".into()] } else { vec!["data".into()] })
        })
    } else {
        def
    }
}

pub(super) fn register() {
    registry::register(def(
        Kind::Softmax,
        "Softmax along `axis`: exp(x/t - max) / sum(exp(x/t - max)), numerically stable.",
    ));
    registry::register(def(
        Kind::LogSoftmax,
        "Log-softmax along `axis`: x/t - max - log(sum(exp(x/t - max))), numerically stable.",
    ));
    registry::register(def(Kind::Softmin, "Softmin along `axis`: softmax of -x/t."));
}

#[cfg(test)]
#[path = "softmax_extra_tests.rs"]
mod extra_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::{assert_close, OpChecker};
    use oxnet_core::{invoke1, AttrValue, DType};

    /// Softmax by loops over an explicit (outer, n, inner) split.
    fn reference(x: &[f64], dims: (usize, usize, usize), t: f64, log: bool) -> Vec<f64> {
        let (outer, n, inner) = dims;
        let mut y = vec![0.0; x.len()];
        for o in 0..outer {
            for j in 0..inner {
                let idx = |i: usize| o * n * inner + i * inner + j;
                let m = (0..n).map(|i| x[idx(i)] / t).fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = (0..n).map(|i| (x[idx(i)] / t - m).exp()).sum();
                for i in 0..n {
                    let z = x[idx(i)] / t - m;
                    y[idx(i)] = if log { z - s.ln() } else { z.exp() / s };
                }
            }
        }
        y
    }

    #[test]
    fn hand_values() {
        let x = NDArray::from_vec(vec![1.0f64, 2., 3.], &[3]).unwrap();
        let y = invoke1("softmax", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
        let e = [1f64.exp(), 2f64.exp(), 3f64.exp()];
        let s: f64 = e.iter().sum();
        for i in 0..3 {
            assert!((y[i] - e[i] / s).abs() < 1e-15);
        }
        let l = invoke1("log_softmax", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
        assert!((l[0] - (1.0 - s.ln())).abs() < 1e-14);
        let m = invoke1("softmin", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
        assert!((m[2] - (-3f64).exp() / ((-1f64).exp() + (-2f64).exp() + (-3f64).exp())).abs() < 1e-15);
        // stable for huge inputs
        let big = NDArray::from_vec(vec![1000.0f32, 1000.0], &[2]).unwrap();
        assert_eq!(invoke1("softmax", &[&big], &[]).unwrap().to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
    }

    #[test]
    fn every_axis_and_temperature_match_loops() {
        let x = NDArray::random_uniform(-3.0, 3.0, &[3, 4, 5], DType::F64).unwrap();
        let xv = x.to_vec::<f64>().unwrap();
        for axis in [-1i64, 0, 1, 2] {
            let a = normalize_axis(axis, 3).unwrap();
            let dims = split_axis(&[3, 4, 5], a);
            for (t, tattr) in [(1.0, AttrValue::None), (2.5, AttrValue::Float(2.5)), (0.5, "0.5".into())] {
                for (name, log) in [("softmax", false), ("log_softmax", true)] {
                    let y = invoke1(name, &[&x], &[("axis", axis.into()), ("temperature", tattr.clone())])
                        .unwrap();
                    let want = reference(&xv, dims, t, log);
                    oxnet_core::check::compare(name, "values", &y.to_vec().unwrap(), &want, 1e-12, 1e-14)
                        .unwrap();
                    // f32 fast path
                    let y32 = invoke1(
                        name,
                        &[&x.astype(DType::F32).unwrap()],
                        &[("axis", axis.into()), ("temperature", tattr.clone())],
                    )
                    .unwrap();
                    oxnet_core::check::compare(name, "f32", &y32.to_vec().unwrap(), &want, 2e-6, 2e-6)
                        .unwrap();
                }
            }
        }
    }

    #[test]
    fn large_inputs_take_the_parallel_paths() {
        for shape in [[64usize, 1024], [1024, 64]] {
            let x = NDArray::random_uniform(-5.0, 5.0, &shape, DType::F32).unwrap();
            let xv = x.to_vec::<f64>().unwrap();
            for axis in [0usize, 1] {
                let dims = split_axis(&shape, axis);
                let y = invoke1("softmax", &[&x], &[("axis", (axis as i64).into())]).unwrap();
                oxnet_core::check::compare(
                    "softmax",
                    "big",
                    &y.to_vec().unwrap(),
                    &reference(&xv, dims, 1.0, false),
                    1e-5,
                    1e-8,
                )
                .unwrap();
                let y = invoke1("log_softmax", &[&x], &[("axis", (axis as i64).into())]).unwrap();
                oxnet_core::check::compare(
                    "log_softmax",
                    "big",
                    &y.to_vec().unwrap(),
                    &reference(&xv, dims, 1.0, true),
                    1e-5,
                    1e-5,
                )
                .unwrap();
            }
        }
    }

    #[test]
    fn half_types() {
        let x = NDArray::from_vec(vec![0.5f64, -1.0, 2.0, 0.0, 1.0, 3.0], &[2, 3]).unwrap();
        let want = invoke1("softmax", &[&x], &[]).unwrap();
        for dt in [DType::F16, DType::BF16] {
            let y = invoke1("softmax", &[&x.astype(dt).unwrap()], &[]).unwrap();
            assert_eq!(y.dtype(), dt);
            assert_close(&y, &want, 1e-2, 1e-2).unwrap();
        }
        let i = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
        assert!(invoke1("softmax", &[&i], &[]).unwrap_err().to_string().contains("int32"));
    }

    #[test]
    fn op_checks() {
        let x = NDArray::random_uniform(-2.0, 2.0, &[3, 4], DType::F64).unwrap();
        for name in ["softmax", "log_softmax", "softmin"] {
            OpChecker::new(name, std::slice::from_ref(&x)).run().unwrap();
            OpChecker::new(name, std::slice::from_ref(&x))
                .attr("axis", 0i64)
                .attr("temperature", 2.0)
                .run()
                .unwrap();
        }
        let x3 = NDArray::random_uniform(-2.0, 2.0, &[2, 3, 2], DType::F64).unwrap();
        OpChecker::new("softmax", std::slice::from_ref(&x3)).attr("axis", 1i64).run().unwrap();
        OpChecker::new("log_softmax", &[x3]).attr("axis", 1i64).attr("temperature", 0.7).run().unwrap();
    }

    #[test]
    fn errors() {
        let x = NDArray::random_uniform(-2.0, 2.0, &[3, 4], DType::F32).unwrap();
        let e = invoke1("softmax", &[&x], &[("axis", 2i64.into())]).unwrap_err().to_string();
        assert!(e.contains("axis 2"), "{e}");
        let e = invoke1("softmax", &[&x], &[("temperature", "hot".into())]).unwrap_err().to_string();
        assert!(e.contains("temperature"), "{e}");
        assert!(invoke1("log_softmax", &[&x], &[("temperature", 0.0.into())]).is_err());
    }
}
