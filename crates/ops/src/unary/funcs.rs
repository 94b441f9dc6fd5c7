//! Per-element functions of the unary operators and of the fused backward
//! helpers, as [`UnaryFn`]/[`BinaryFn`] implementations.

use super::kernel::{BinaryFn, IntElem, UnaryFn};
use crate::kernels::simd_math::{self, scalar};
use std::f32::consts::FRAC_1_SQRT_2 as FRAC_1_SQRT_2_F32;
use std::f64::consts::FRAC_1_SQRT_2;

/// Implements a float-only [`UnaryFn`] from two closures-like expressions,
/// optionally with `simd_math` slice functions for f32 and f64.
macro_rules! float_fn {
    ($name:ident, |$x:ident| $f32:expr, |$y:ident| $f64:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            #[inline(always)]
            fn f32(&self, $x: f32) -> f32 {
                $f32
            }
            #[inline(always)]
            fn f64(&self, $y: f64) -> f64 {
                $f64
            }
        }
    };
    ($name:ident, simd $s32:ident, $i32:ident, $s64:ident, $i64:ident) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            #[inline(always)]
            fn f32(&self, x: f32) -> f32 {
                scalar::$s32(x)
            }
            #[inline(always)]
            fn f64(&self, x: f64) -> f64 {
                scalar::$s64(x)
            }
            fn f32_slice(&self, x: &[f32], out: &mut [f32]) {
                simd_math::$s32(x, out)
            }
            fn f32_inplace(&self, x: &mut [f32]) {
                simd_math::$i32(x)
            }
            fn f64_slice(&self, x: &[f64], out: &mut [f64]) {
                simd_math::$s64(x, out)
            }
            fn f64_inplace(&self, x: &mut [f64]) {
                simd_math::$i64(x)
            }
        }
    };
}

/// Implements a [`UnaryFn`] that is also defined on integers.
macro_rules! numeric_fn {
    ($name:ident, |$x:ident| $f32:expr, |$y:ident| $f64:expr, |$z:ident| $int:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            const INT: bool = true;
            #[inline(always)]
            fn f32(&self, $x: f32) -> f32 {
                $f32
            }
            #[inline(always)]
            fn f64(&self, $y: f64) -> f64 {
                $f64
            }
            #[inline(always)]
            fn int<T: IntElem>(&self, $z: T) -> T {
                $int
            }
        }
    };
}

numeric_fn!(Negative, |x| -x, |x| -x, |x| x.ineg());
numeric_fn!(Abs, |x| x.abs(), |x| x.abs(), |x| x.iabs());
numeric_fn!(Sign, |x| sign(x), |x| sign(x), |x| x.isign());
numeric_fn!(Square, |x| x * x, |x| x * x, |x| x.isquare());
// NaN passes through, as in MXNet (and numpy's maximum)
numeric_fn!(
    Relu,
    |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
    |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
    |x| x.irelu()
);

float_fn!(Exp, simd exp_f32, exp_f32_inplace, exp_f64, exp_f64_inplace);
float_fn!(Log, simd log_f32, log_f32_inplace, log_f64, log_f64_inplace);
float_fn!(Sin, simd sin_f32, sin_f32_inplace, sin_f64, sin_f64_inplace);
float_fn!(Cos, simd cos_f32, cos_f32_inplace, cos_f64, cos_f64_inplace);
float_fn!(Tanh, simd tanh_f32, tanh_f32_inplace, tanh_f64, tanh_f64_inplace);
float_fn!(Sigmoid, simd sigmoid_f32, sigmoid_f32_inplace, sigmoid_f64, sigmoid_f64_inplace);
float_fn!(Erf, simd erf_f32, erf_f32_inplace, erf_f64, erf_f64_inplace);
float_fn!(Log1p, |x| x.ln_1p(), |x| x.ln_1p());
float_fn!(Expm1, |x| x.exp_m1(), |x| x.exp_m1());
float_fn!(Sqrt, |x| x.sqrt(), |x| x.sqrt());
float_fn!(Rsqrt, |x| 1.0 / x.sqrt(), |x| 1.0 / x.sqrt());
float_fn!(Reciprocal, |x| 1.0 / x, |x| 1.0 / x);
float_fn!(Softrelu, |x| softrelu_f32(x), |x| x.max(0.0) + (-x.abs()).exp().ln_1p());
float_fn!(Softsign, |x| x / (1.0 + x.abs()), |x| x / (1.0 + x.abs()));
float_fn!(Gelu, |x| 0.5 * x * (1.0 + scalar::erf_f32(x * FRAC_1_SQRT_2_F32)), |x| 0.5
    * x
    * (1.0 + libm::erf(x * FRAC_1_SQRT_2)));

/// MXNet's sign: 1 for positive, -1 for negative, 0 for zero; NaN stays NaN.
#[inline(always)]
fn sign<F: num_traits::Float>(x: F) -> F {
    if x > F::zero() {
        F::one()
    } else if x < F::zero() {
        -F::one()
    } else {
        x * F::zero()
    }
}

/// `log(1 + e^x)` without overflow: `max(x, 0) + log1p(e^-|x|)`, with
/// `log1p(t)` for `t` in (0, 1] computed as `log(u) * t / (u - 1)`,
/// `u = 1 + t` (exact to a few ulp even where `u` rounds to 1), all
/// branch-free so the loop vectorises.
#[inline(always)]
fn softrelu_f32(x: f32) -> f32 {
    let t = scalar::exp_f32(-x.abs());
    let u = 1.0 + t;
    let d = u - 1.0;
    let l = if d == 0.0 { t } else { scalar::log_f32(u) * (t / d) };
    x.max(0.0) + l
}

/// `clip(x, a_min, a_max)` as MXNet computes it: above `a_max` gives
/// `a_max`, else below `a_min` gives `a_min`; NaN passes through.
#[derive(Clone, Copy)]
pub(crate) struct Clip {
    pub lo: f64,
    pub hi: f64,
    pub lo32: f32,
    pub hi32: f32,
}

impl Clip {
    pub(crate) fn new(lo: f64, hi: f64) -> Clip {
        Clip { lo, hi, lo32: lo as f32, hi32: hi as f32 }
    }
}

impl UnaryFn for Clip {
    const INT: bool = true;
    #[inline(always)]
    fn f32(&self, x: f32) -> f32 {
        if x > self.hi32 {
            self.hi32
        } else if x < self.lo32 {
            self.lo32
        } else {
            x
        }
    }
    #[inline(always)]
    fn f64(&self, x: f64) -> f64 {
        if x > self.hi {
            self.hi
        } else if x < self.lo {
            self.lo
        } else {
            x
        }
    }
    #[inline(always)]
    fn int<T: IntElem>(&self, x: T) -> T {
        let (lo, hi) = (T::from_f64(self.lo), T::from_f64(self.hi));
        if x > hi {
            hi
        } else if x < lo {
            lo
        } else {
            x
        }
    }
}

/// `g * y * (1 - y)`: sigmoid's gradient from its output (inputs `g`, `y`).
#[derive(Clone, Copy)]
pub(crate) struct SigmoidBackward;

impl BinaryFn for SigmoidBackward {
    #[inline(always)]
    fn f32(&self, g: f32, y: f32) -> f32 {
        g * (y * (1.0 - y))
    }
    #[inline(always)]
    fn f64(&self, g: f64, y: f64) -> f64 {
        g * (y * (1.0 - y))
    }
    fn f32_slice(&self, g: &[f32], y: &[f32], out: &mut [f32]) {
        simd_math::sigmoid_backward_f32(y, g, out)
    }
    fn f64_slice(&self, g: &[f64], y: &[f64], out: &mut [f64]) {
        simd_math::sigmoid_backward_f64(y, g, out)
    }
}

/// `g * (1 - y^2)`: tanh's gradient from its output.
#[derive(Clone, Copy)]
pub(crate) struct TanhBackward;

impl BinaryFn for TanhBackward {
    #[inline(always)]
    fn f32(&self, g: f32, y: f32) -> f32 {
        g * (1.0 - y * y)
    }
    #[inline(always)]
    fn f64(&self, g: f64, y: f64) -> f64 {
        g * (1.0 - y * y)
    }
}

/// `g * (y > 0)`: relu's gradient from its output (NaN where y is NaN, as
/// in MXNet).
#[derive(Clone, Copy)]
pub(crate) struct ReluBackward;

impl BinaryFn for ReluBackward {
    #[inline(always)]
    fn f32(&self, g: f32, y: f32) -> f32 {
        if y > 0.0 {
            g
        } else if y.is_nan() {
            y
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn f64(&self, g: f64, y: f64) -> f64 {
        if y > 0.0 {
            g
        } else if y.is_nan() {
            y
        } else {
            0.0
        }
    }
}

/// `g * gelu'(x)` with `gelu'(x) = Phi(x) + x phi(x)` (inputs `g`, `x`).
#[derive(Clone, Copy)]
pub(crate) struct GeluBackward;

/// `1 / sqrt(2 pi)`.
pub(crate) const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

impl BinaryFn for GeluBackward {
    #[inline(always)]
    fn f32(&self, g: f32, x: f32) -> f32 {
        let cdf = 0.5 * (1.0 + scalar::erf_f32(x * FRAC_1_SQRT_2_F32));
        let pdf = FRAC_1_SQRT_2PI as f32 * scalar::exp_f32(-0.5 * x * x);
        g * (cdf + x * pdf)
    }
    #[inline(always)]
    fn f64(&self, g: f64, x: f64) -> f64 {
        let cdf = 0.5 * (1.0 + libm::erf(x * FRAC_1_SQRT_2));
        let pdf = FRAC_1_SQRT_2PI * (-0.5 * x * x).exp();
        g * (cdf + x * pdf)
    }
}

/// `g * (a_min < x < a_max)`: clip's gradient (inputs `g`, `x`).
#[derive(Clone, Copy)]
pub(crate) struct ClipBackward(pub Clip);

impl BinaryFn for ClipBackward {
    #[inline(always)]
    fn f32(&self, g: f32, x: f32) -> f32 {
        if x > self.0.lo32 && x < self.0.hi32 {
            g
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn f64(&self, g: f64, x: f64) -> f64 {
        if x > self.0.lo && x < self.0.hi {
            g
        } else {
            0.0
        }
    }
}
