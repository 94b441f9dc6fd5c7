//! Special functions, element-wise, as MXNet 1.9.1 names them: `gamma`
//! (the gamma function) and `gammaln` (the log of its absolute value),
//! `erfinv` (the inverse error function) and `smooth_l1` (the smooth L1
//! loss with `scalar` = sigma).
//!
//! Gradients are rules of operators: `gamma' = gamma * digamma` and
//! `gammaln' = digamma`, where `g * digamma(x)` is the hidden helper
//! `_backward_gammaln` (MXNet's name). The helper takes an `order` (default
//! 0): it computes `out_grad * psi^(order)(data)` with `psi^(n)` the
//! polygamma function, and its own gradient towards `data` is the helper at
//! `order + 1`, so these differentiate to any order. Floats only. `float64`
//! computes accurately (`libm`, and a Newton-refined `erfinv`); `float32`
//! and the half types run the vectorised kernels of
//! [`simd_math::special`] for `gamma` (relative error below 6e-8) and
//! `erfinv` (below 2.6e-7), and compute the others in `f64`, rounding once.

use super::kernel::{binary_forward, unary_forward, BinaryFn, UnaryFn};
use super::{mul, op1, rule, unary_args, unary_op, with_scalar};
use crate::kernels::simd_math::{self, special as simd_special};
use crate::util::call;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, GradCtx, NDArray, OpDef, Result};

/// A float function computed in `f64`.
macro_rules! f64_fn {
    ($name:ident, |$x:ident| $f:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            #[inline]
            fn f32(&self, x: f32) -> f32 {
                self.f64(x as f64) as f32
            }
            #[inline]
            fn f64(&self, $x: f64) -> f64 {
                $f
            }
        }
    };
}

/// A float function with a vectorised `f32` kernel from
/// [`simd_math::special`] (its slice functions in [`simd_math`]; also used
/// for the half types) and an accurate `f64` one.
macro_rules! simd_special_fn {
    ($name:ident, $f32:ident, $inplace:ident, $f64:path) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            #[inline(always)]
            fn f32(&self, x: f32) -> f32 {
                simd_special::$f32(x)
            }
            #[inline]
            fn f64(&self, x: f64) -> f64 {
                $f64(x)
            }
            fn f32_slice(&self, x: &[f32], out: &mut [f32]) {
                simd_math::$f32(x, out)
            }
            fn f32_inplace(&self, x: &mut [f32]) {
                simd_math::$inplace(x)
            }
        }
    };
}

simd_special_fn!(Gamma, gamma_f32, gamma_f32_inplace, simd_special::gamma_f64);
f64_fn!(Gammaln, |x| libm::lgamma(x));
simd_special_fn!(Erfinv, erfinv_f32, erfinv_f32_inplace, erfinv);

/// The inverse error function in `f64` (accurate; see
/// [`simd_special::erfinv_f64`]).
pub(crate) use simd_special::erfinv_f64 as erfinv;

/// Bernoulli numbers `B_2, B_4, ..., B_20`.
const BERNOULLI: [f64; 10] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174611.0 / 330.0,
];

/// Arguments from which the asymptotic series are used.
const ASYMPTOTIC_FROM: f64 = 12.0;
/// Below this the upward recurrence would take too many steps.
const RECURRENCE_LIMIT: f64 = -1.0e6;

/// The digamma function `psi(x) = d/dx ln gamma(x)`: NaN at the poles
/// (0, -1, -2, ...).
pub(crate) fn digamma(mut x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    if x < 0.0 {
        // reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        let pi = std::f64::consts::PI;
        return digamma(1.0 - x) - pi / (pi * x).tan();
    }
    let mut acc = 0.0;
    while x < ASYMPTOTIC_FROM {
        acc -= 1.0 / x;
        x += 1.0;
    }
    // ln x - 1/(2x) - sum B_2k / (2k x^2k)
    let inv2 = 1.0 / (x * x);
    let mut series = 0.0;
    let mut p = inv2;
    for (k, b) in BERNOULLI.iter().enumerate().take(7) {
        series += b / (2.0 * (k + 1) as f64) * p;
        p *= inv2;
    }
    acc + x.ln() - 0.5 / x - series
}

/// The polygamma function `psi^(n)(x)`, the n-th derivative of digamma
/// (`n = 0` is digamma itself): `(-1)^(n+1) n! sum_k 1 / (x + k)^(n+1)`
/// for `n >= 1`. Infinite or NaN at the poles.
pub(crate) fn polygamma(n: u32, mut x: f64) -> f64 {
    if n == 0 {
        return digamma(x);
    }
    if x.is_nan() || x < RECURRENCE_LIMIT {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    let nf = n as f64;
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    let n_fact = (1..=n).fold(1.0f64, |a, k| a * k as f64);
    // upward recurrence: psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1)
    let mut acc = 0.0;
    let threshold = ASYMPTOTIC_FROM + nf;
    while x < threshold {
        acc += 1.0 / x.powi(n as i32 + 1);
        x += 1.0;
    }
    // (n-1)!/x^n + n!/(2 x^(n+1)) + sum_k B_2k (2k+n-1)! / ((2k)! x^(2k+n))
    let mut series = n_fact / nf / x.powf(nf) + n_fact / (2.0 * x.powf(nf + 1.0));
    // (2k+n-1)! / (2k)!, updated from k to k+1
    let mut ratio = (1..=n).fold(1.0f64, |a, k| a * (k as f64 + 1.0)) / 2.0; // (n+1)!/2!
    let inv2 = 1.0 / (x * x);
    let mut p = inv2 / x.powf(nf);
    for (k, b) in BERNOULLI.iter().enumerate() {
        let k = (k + 1) as f64;
        series += b * ratio * p;
        // (2k+n+1)! / (2k+2)! = (2k+n-1)!/(2k)! * (2k+n)(2k+n+1) / ((2k+1)(2k+2))
        ratio *= (2.0 * k + nf) * (2.0 * k + nf + 1.0) / ((2.0 * k + 1.0) * (2.0 * k + 2.0));
        p *= inv2;
    }
    sign * (n_fact * acc + series)
}

/// `out_grad * psi^(order)(data)`.
#[derive(Clone, Copy)]
struct PolygammaBackward(u32);

impl BinaryFn for PolygammaBackward {
    #[inline]
    fn f32(&self, g: f32, x: f32) -> f32 {
        (g as f64 * polygamma(self.0, x as f64)) as f32
    }
    #[inline]
    fn f64(&self, g: f64, x: f64) -> f64 {
        g * polygamma(self.0, x)
    }
}

fn order(attrs: &Attrs) -> Result<u32> {
    let n = attrs.int("order")?;
    u32::try_from(n).map_err(|_| Error::attr("order", format!("must be 0 or more, got {n}")))
}

/// `g * psi^(n)(x)` through the hidden helper.
fn polygamma_grad(g: &NDArray, x: &NDArray, n: u32) -> Result<NDArray> {
    call("_backward_gammaln", &[g, x], &[("order", AttrValue::Int(n as i64))])
}

/// Gradient of `_backward_gammaln(g, x; n) = g * psi^(n)(x)`: towards `g`
/// the helper itself, towards `x` the helper at `n + 1`.
fn polygamma_backward_grad(c: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let ([h], [g, x]) = (c.out_grads, c.inputs) else {
        return Err(Error::Autograd("`_backward_gammaln` expects two inputs and one output".into()));
    };
    let n = order(c.attrs)?;
    let needs = |i: usize| c.needs_grad.get(i).copied().unwrap_or(false);
    let dg = if needs(0) { Some(polygamma_grad(h, x, n)?) } else { None };
    let dx = if needs(1) { Some(polygamma_grad(&mul(h, g)?, x, n + 1)?) } else { None };
    Ok(vec![dg, dx])
}

/// MXNet's smooth L1 with `sigma`: `(sigma x)^2 / 2` where
/// `|x| < 1 / sigma^2`, else `|x| - 0.5 / sigma^2`.
#[derive(Clone, Copy)]
struct SmoothL1 {
    sigma2: f64,
}

impl UnaryFn for SmoothL1 {
    #[inline]
    fn f32(&self, x: f32) -> f32 {
        let s2 = self.sigma2 as f32;
        if x.abs() < 1.0 / s2 {
            0.5 * s2 * x * x
        } else {
            x.abs() - 0.5 / s2
        }
    }
    #[inline]
    fn f64(&self, x: f64) -> f64 {
        let s2 = self.sigma2;
        if x.abs() < 1.0 / s2 {
            0.5 * s2 * x * x
        } else {
            x.abs() - 0.5 / s2
        }
    }
}

fn sigma2(attrs: &Attrs) -> Result<f64> {
    let s = attrs.float("scalar")?;
    if s == 0.0 || !s.is_finite() {
        return Err(Error::attr("scalar", format!("smooth_l1 needs a finite, non-zero sigma, got {s}")));
    }
    Ok(s * s)
}

pub(super) fn register() {
    let reg = |def| {
        registry::register(def);
    };
    reg(unary_op("gamma", "The gamma function, element-wise.", Gamma)
        .grad_rule(rule(|g, x, y, _| mul(y, &polygamma_grad(g, x, 0)?))));
    reg(unary_op("gammaln", "The log of the absolute value of the gamma function, element-wise.", Gammaln)
        .grad_rule(rule(|g, x, _, _| polygamma_grad(g, x, 0))));
    reg(unary_op("erfinv", "The inverse error function, element-wise: ±inf at ±1, NaN beyond.", Erfinv)
        .grad_rule(rule(|g, _, y, _| {
            // d/dy erfinv(y) = sqrt(pi)/2 · exp(erfinv(y)^2)
            let slope = with_scalar(
                "_mul_scalar",
                &op1("exp", &op1("square", y)?)?,
                std::f64::consts::PI.sqrt() / 2.0,
            )?;
            mul(g, &slope)
        })));
    reg(OpDef::new("_backward_gammaln")
        .doc("out_grad * psi^(order)(data), psi^(n) the polygamma function (order 0: digamma, the derivative of gammaln).")
        .arguments(&["out_grad", "data"])
        .attr(AttrSpec::optional("order", AttrKind::Int, 0i64, "Derivative order n of psi^(n)."))
        .forward(|ctx, ins, outs| match (ins, outs, ctx.req) {
            ([g, x], [o], [r]) => binary_forward(&PolygammaBackward(order(ctx.attrs)?), ctx.op_name, *r, g, x, o),
            _ => Err(Error::Invalid("`_backward_gammaln` takes two inputs and one output".into())),
        })
        .grad_rule(polygamma_backward_grad));
    reg(OpDef::new("smooth_l1")
        .doc("Smooth L1: (sigma x)^2 / 2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2, element-wise (`scalar` is sigma).")
        .arguments(&["data"])
        .attr(AttrSpec::optional("scalar", AttrKind::Float, 1.0f64, "sigma"))
        .inplace(&[(0, 0)])
        .forward(|ctx, ins, outs| {
            let (x, y, req) = unary_args(ctx, ins, outs)?;
            unary_forward(&SmoothL1 { sigma2: sigma2(ctx.attrs)? }, ctx.op_name, req, x, y)
        })
        .grad_rule(rule(|g, x, _, attrs| {
            // sigma^2 x inside (-1/sigma^2, 1/sigma^2), sign(x) outside
            let s2 = sigma2(attrs)?;
            let inside = with_scalar("_lesser_scalar", &op1("abs", x)?, 1.0 / s2)?;
            let outside = with_scalar("_rminus_scalar", &inside, 1.0)?;
            let d = call(
                "elemwise_add",
                &[&mul(&inside, &with_scalar("_mul_scalar", x, s2)?)?, &mul(&outside, &op1("sign", x)?)?],
                &[],
            )?;
            mul(g, &d)
        })));
}
