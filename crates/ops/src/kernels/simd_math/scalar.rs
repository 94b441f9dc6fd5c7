use std::f32::consts::{FRAC_2_PI, FRAC_PI_2, LN_2, LOG2_E};

/// `1.5 * 2^23`: adding it to |v| < 2^22 rounds `v` to the nearest integer
/// (ties to even), which then sits in the low mantissa bits of the sum;
/// subtracting it again gives the integer as a float.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// ln 2 rounded to `f32`, and the remainder.
const LN2_HI: f32 = LN_2;
const LN2_LO: f32 = -1.904_654_2e-9;

/// pi/2 split in three `f32` parts (Cody-Waite): the first is pi/2
/// rounded, each next one the rounded remainder.
const PIO2_1: f32 = FRAC_PI_2;
const PIO2_2: f32 = -4.371_139e-8;
const PIO2_3: f32 = -1.715_124_5e-15;

/// `fma(v, k, ROUND_MAGIC)`: `v k` rounded (once) to the nearest integer
/// `n`, returned as a float and as an `i32`. Valid for |v k| < 2^22; NaN
/// stays NaN (the integer is then junk).
#[inline(always)]
fn round_mul(v: f32, k: f32) -> (f32, i32) {
    let t = v.mul_add(k, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let i = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    (n, i)
}

/// Coefficients (constant term first) of `e^r ~ 1 + r + r^2 g(r)` on
/// |r| <= 0.3501, `g` a degree-4 near-minimax fit (relative error of the
/// fit 8e-9).
const EXP_POLY: [f32; 7] = [1.0, 1.0, 0.5, 0.166_665_73, 4.166_655e-2, 8.363_774e-3, 1.392_692_7e-3];

/// `EXP_POLY` times `2^-64` (exact: only the exponents change).
const EXP_POLY_2M64: [f32; 7] = scale_poly(EXP_POLY, 5.421_011e-20); // 2^-64

const fn scale_poly(c: [f32; 7], k: f32) -> [f32; 7] {
    let mut out = c;
    let mut i = 0;
    while i < c.len() {
        out[i] = c[i] * k;
        i += 1;
    }
    out
}

/// `1.5 * 2^23 + 127 + 64`: see [`exp_reduce`].
const EXP_MAGIC: f32 = 12_583_103.0;

/// Shared reduction of the exponentials: `x = n ln2 + r`, |r| <= ln2/2.
///
/// `t = fma(x, log2 e, EXP_MAGIC)` rounds `x log2 e` to the integer `n`
/// and leaves `n + 64 + 127` in the low mantissa bits of `t`, so
/// `bits(t) << 23` is the float `2^(n + 64)` (the high bits shift out)
/// whenever `n <= 63` (for larger `n` the bits wrap; see [`exp_f32`]).
/// Returns `(r, bits(t) << 23)`. Needs `x` clamped to [-104, 89], so that
/// |n| <= 150.
#[inline(always)]
fn exp_reduce(x: f32) -> (f32, u32) {
    let t = x.mul_add(LOG2_E, EXP_MAGIC);
    let n = t - EXP_MAGIC;
    // x - n*LN2_HI is exact (|n| <= 150); the fma keeps it so.
    let r = (-n).mul_add(LN2_HI, x);
    let r = (-n).mul_add(LN2_LO, r);
    (r, t.to_bits() << 23)
}

/// Horner evaluation of a degree-6 polynomial, constant term first.
#[inline(always)]
fn poly6(r: f32, c: &[f32; 7]) -> f32 {
    let mut p = c[6];
    p = p.mul_add(r, c[5]);
    p = p.mul_add(r, c[4]);
    p = p.mul_add(r, c[3]);
    p = p.mul_add(r, c[2]);
    p = p.mul_add(r, c[1]);
    p.mul_add(r, c[0])
}

/// `e^x` in `f32`.
///
/// `x = n ln2 + r` with |r| <= ln2/2, `e^r` by a degree-6 polynomial and
/// `2^n` built from exponent bits, applied as `(e^r 2^(n+c)) 2^-c` with
/// `c = ±64`: the first product is exact, the second rounds once, so
/// results overflow to `+inf` (above ln(f32::MAX) ~ 88.72) and underflow
/// to correctly rounded subnormals and then `0` (below about -103.97)
/// exactly like a correctly rounded exp would. Inputs are clamped to
/// [-104, 89]. `exp(NaN)` is NaN. Error below 1 ulp.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // Written as compare+select (not f32::max/min) so NaN passes through
    // and the clamp is a single max/min instruction per lane.
    let x = if x < -104.0 { -104.0 } else { x };
    let x = if x > 89.0 { 89.0 } else { x };
    let (r, scale) = exp_reduce(x);
    let p = poly6(r, &EXP_POLY);
    // c = +64 for x < 0; for x >= 0 (n up to 128) c = -64: subtract 128
    // from the (possibly wrapped) exponent bits of the scale and multiply
    // by 2^64 (not 2^-64) after.
    let m: u32 = if x >= 0.0 { 0x4000_0000 } else { 0 };
    let scale = f32::from_bits(scale.wrapping_sub(m));
    let post = f32::from_bits(0x1f80_0000 | m); // 2^-64 or 2^64
    p * scale * post
}

/// `e^x` for `x <= 0` (or NaN), as [`exp_f32`] but cheaper: the `2^-64`
/// factor is folded into the polynomial, leaving one rounding multiply.
/// Used where the argument is known to be non-positive (sigmoid, tanh,
/// erf).
#[inline(always)]
fn exp_nonpos(x: f32) -> f32 {
    let x = if x < -104.0 { -104.0 } else { x };
    let (r, scale) = exp_reduce(x);
    poly6(r, &EXP_POLY_2M64) * f32::from_bits(scale)
}

/// Natural logarithm in `f32`.
///
/// `x = 2^e m` with m in [sqrt(1/2), sqrt(2)); `ln(m) = 2 atanh(s)` with
/// `s = (m-1)/(m+1)`, evaluated as `f - f^2/2 + s (f^2/2 + R(s^2))` so the
/// result is accurate near `x = 1`. Subnormal inputs are rescaled first.
/// `log(0) = -inf` (also for `-0`), `log(+inf) = +inf`, negative inputs and
/// NaN give NaN. Relative error about 1 ulp.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    const SQRT_HALF_BITS: u32 = 0x3f35_04f3;
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x }; // 2^23
    let ebias: i32 = if sub { -23 } else { 0 };
    // Shift the mantissa range so that [sqrt(1/2), sqrt(2)) maps to one
    // exponent value.
    let ix = xs.to_bits().wrapping_add(0x3f80_0000 - SQRT_HALF_BITS);
    let e = ((ix >> 23) as i32).wrapping_sub(127).wrapping_add(ebias);
    let m = f32::from_bits((ix & 0x007f_ffff).wrapping_add(SQRT_HALF_BITS));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    // 2 atanh(s) = 2s + s R(z), R(z) = z P(z), fitted on |s| <= 0.1717.
    let mut p = 0.233_327_63_f32;
    p = p.mul_add(z, 0.285_507_35);
    p = p.mul_add(z, 0.400_001_23);
    p = p.mul_add(z, 0.666_666_7);
    let rz = p * z;
    let hfsq = 0.5 * f * f;
    let dk = e as f32;
    let mut y = s.mul_add(hfsq + rz, dk * LN2_LO);
    y = (y - hfsq) + f;
    y = dk.mul_add(LN2_HI, y);
    let y = if x == f32::INFINITY { f32::INFINITY } else { y };
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    if x >= 0.0 {
        y
    } else {
        f32::NAN
    }
}

/// Hyperbolic tangent in `f32`.
///
/// For |x| < 0.625 an odd polynomial `x + x^3 T(x^2)` (keeps the relative
/// error small near 0, `tanh(-0) = -0`); above, `(1 - t)/(1 + t)` with
/// `t = e^(-2|x|)` and the sign copied back. Saturates to ±1, ±inf gives
/// ±1, NaN gives NaN. Error within 1.6 ulp.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let u = x * x;
    let mut p = 2.292_744_8e-3_f32;
    p = p.mul_add(u, -8.343_945e-3);
    p = p.mul_add(u, 2.176_891_8e-2);
    p = p.mul_add(u, -5.395_925_8e-2);
    p = p.mul_add(u, 0.133_333_04);
    p = p.mul_add(u, -0.333_333_34);
    let small = (x * u).mul_add(p, x);
    let t = exp_nonpos(-2.0 * ax);
    let big = (1.0 - t) / (1.0 + t);
    let y = if ax < 0.625 { small } else { big };
    // Sign from x (also gives tanh(-0) = -0, which the sum above loses).
    y.copysign(x)
}

/// Logistic sigmoid `1 / (1 + e^-x)` in `f32`.
///
/// Evaluated as `1/(1+t)` for `x >= 0` and `t/(1+t)` for `x < 0` with
/// `t = e^-|x|`, so it never forms `inf/inf`, saturates correctly
/// (`sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`) and keeps its relative
/// accuracy for large negative `x` (subnormal results included). NaN
/// gives NaN. Error within 2.4 ulp (relative error below 1.8e-7).
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let t = exp_nonpos(-x.abs());
    let num = if x >= 0.0 { 1.0 } else { t };
    num / (1.0 + t)
}

/// Error function in `f32`.
///
/// For |x| < 1: `x + x P(x^2)`; for |x| >= 1: `1 - e^(-x^2 + S(x))` with `S`
/// a polynomial fit of `ln(erfc x) + x^2` on [1, 4] (|x| is clamped to 4,
/// where `erf` already rounds to 1). Odd, `erf(±inf) = ±1`, NaN gives
/// NaN. Absolute error below 1e-7 (measured 6.1e-8).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let ax = x.abs();
    // |x| < 1.
    let u = x * x;
    let mut pa = 7.875_875e-5_f32;
    pa = pa.mul_add(u, -8.016_864e-4);
    pa = pa.mul_add(u, 5.189_087_2e-3);
    pa = pa.mul_add(u, -2.685_421_1e-2);
    pa = pa.mul_add(u, 0.112_835_94);
    pa = pa.mul_add(u, -0.376_126_26);
    pa = pa.mul_add(u, 0.128_379_17);
    // x (1 + pa): the leading term is exact, which keeps ~1 ulp.
    let small = x.mul_add(pa, x);
    // |x| >= 1.
    let xb = if ax < 1.0 { 1.0 } else { ax };
    let xb = if xb > 4.0 { 4.0 } else { xb };
    let t = xb - 2.5; // exact
    let mut ps = 1.637_151_4e-6_f32;
    ps = ps.mul_add(t, -1.331_501_4e-5);
    ps = ps.mul_add(t, 7.729_138e-5);
    ps = ps.mul_add(t, -4.201_225_2e-4);
    ps = ps.mul_add(t, 2.165_303_6e-3);
    ps = ps.mul_add(t, -1.085_854_1e-2);
    ps = ps.mul_add(t, 5.610_629_5e-2);
    ps = ps.mul_add(t, -0.352_680_68);
    ps = ps.mul_add(t, -1.556_815_3);
    let q = (-xb).mul_add(xb, ps);
    let big = (1.0 - exp_nonpos(q)).copysign(x);
    if ax < 1.0 {
        small
    } else {
        big
    }
}

/// Reduce `x` to `r` in about [-pi/4, pi/4] and the quadrant `q` (mod 4)
/// with `x = q pi/2 + r`.
#[inline(always)]
fn reduce_pio2(x: f32) -> (f32, i32) {
    let (n, q) = round_mul(x, FRAC_2_PI);
    // x - n*PIO2_1 is exact (both are multiples of 2^-23 and the difference
    // is below 2 while |n| < 2^22); the two later steps round once each.
    let r = (-n).mul_add(PIO2_1, x);
    let r = (-n).mul_add(PIO2_2, r);
    let r = (-n).mul_add(PIO2_3, r);
    (r, q)
}

/// `sin(r)` or `cos(r)` for reduced `r`, chosen and signed by quadrant `q`
/// (sin(x) uses q, cos(x) uses q + 1). Non-finite `x` gives NaN.
#[inline(always)]
fn sin_quadrant(x: f32, r: f32, q: i32) -> f32 {
    let u = r * r;
    let mut ps = 2.724_378_2e-6_f32;
    ps = ps.mul_add(u, -1.984_004e-4);
    ps = ps.mul_add(u, 8.333_332e-3);
    ps = ps.mul_add(u, -0.166_666_67);
    let s = (r * u).mul_add(ps, r);
    let mut pc = -2.729_583_2e-7_f32;
    pc = pc.mul_add(u, 2.480_056e-5);
    pc = pc.mul_add(u, -1.388_888_8e-3);
    pc = pc.mul_add(u, 4.166_666_8e-2);
    pc = pc.mul_add(u, -0.5);
    let c = pc.mul_add(u, 1.0);
    let v = if q & 1 == 0 { s } else { c };
    let v = f32::from_bits(v.to_bits() ^ (((q as u32) & 2) << 30));
    // Only matters outside the accurate range (|x| > 6.5e6).
    let v = if v > 1.0 { 1.0 } else { v };
    let v = if v < -1.0 { -1.0 } else { v };
    if x.abs() < f32::INFINITY {
        v
    } else {
        f32::NAN
    }
}

/// Sine in `f32` (argument reduction by pi/2, then short polynomials).
///
/// Error within 1.5 ulp for |x| <= 1e6 (also close to multiples of pi),
/// within 2.3 ulp up to 6.5e6; beyond, the single-precision reduction
/// breaks down and results are meaningless (but stay in [-1, 1]).
/// `sin(±inf)` and `sin(NaN)` are NaN, `sin(-0) = -0`.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    let (r, q) = reduce_pio2(x);
    let y = sin_quadrant(x, r, q);
    // The reduction turns -0 into +0 (x is exact for |x| < pi/4 anyway).
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// Cosine in `f32`; same method and accuracy as [`sin_f32`].
/// `cos(±inf)` and `cos(NaN)` are NaN.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    let (r, q) = reduce_pio2(x);
    sin_quadrant(x, r, q.wrapping_add(1))
}

/// `e^x` in `f64` (`std`).
#[inline]
pub fn exp_f64(x: f64) -> f64 {
    x.exp()
}

/// Natural logarithm in `f64` (`std`).
#[inline]
pub fn log_f64(x: f64) -> f64 {
    x.ln()
}

/// Hyperbolic tangent in `f64` (`std`).
#[inline]
pub fn tanh_f64(x: f64) -> f64 {
    x.tanh()
}

/// Logistic sigmoid in `f64`, in the overflow-free form
/// (`1/(1+e^-x)` for `x >= 0`, `e^x/(1+e^x)` otherwise).
#[inline]
pub fn sigmoid_f64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let t = x.exp();
        t / (1.0 + t)
    }
}

/// Error function in `f64` (`libm::erf`).
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// Sine in `f64` (`std`).
#[inline]
pub fn sin_f64(x: f64) -> f64 {
    x.sin()
}

/// Cosine in `f64` (`std`).
#[inline]
pub fn cos_f64(x: f64) -> f64 {
    x.cos()
}
