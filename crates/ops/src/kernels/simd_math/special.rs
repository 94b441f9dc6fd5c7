//! Branch-free special functions for the `f32` element-wise operators
//! (`gamma`, `erfinv`), and their accurate `f64` references.
//!
//! Like [`scalar`](super::scalar), the `f32` kernels are `#[inline(always)]`
//! and built only from operations LLVM vectorises (compare+select, bit
//! tricks, `mul_add`, short polynomials, `sqrt`, division), so a loop over
//! them compiled in the per-level SIMD builds is vectorised and gives the
//! same bits in every build. Their slice functions are
//! [`gamma_f32`](super::gamma_f32) and [`erfinv_f32`](super::erfinv_f32)
//! (and `_inplace`), which call them by name. Passed to
//! [`map_f32`](super::map_f32) as a function item, `gamma_f32` was not
//! inlined through the `Fn::call` shim in the crate's release build (a
//! call per element and a scalar loop, 15x slower), so don't.
//!
//! * [`gamma_f32`] works in `f64` lanes (the `f32 -> f64` conversion
//!   vectorises): a Lanczos approximation (`g = 7`, `n = 9`, Godfrey's
//!   coefficients) with a vectorisable `f64` log and exp, and the reflection
//!   `gamma(x) = pi / (sin(pi x) gamma(1 - x))` for `x < 0`, blended. An
//!   `f32` evaluation cannot reach 1e-6: the exponent `(z - 1/2) ln t - t`
//!   reaches 120, where one `f32` rounding is already 4e-6 of relative
//!   error in the result.
//! * [`erfinv_f32`] is Giles' single-precision approximation ("Approximating
//!   the erfinv function", GPU Computing Gems, 2011): both of its
//!   polynomials in `w = -ln(1 - x^2)` are evaluated and the right one
//!   selected, with `1 - x^2` formed by one fused multiply-add.
//!
//! Accuracy against the `f64` references over every `f32` input (the
//! ignored test `special_accuracy_sweep`): gamma within 5.97e-8 relative
//! error (0.50 ulp: the final rounding to `f32`), erfinv within 2.59e-7
//! (3.5 ulp, at x = 0.9973) on [-1, 1], up to the last `f32` below 1.

use super::scalar::log_f32;

// ---------------------------------------------------------------------------
// Shared helpers.

/// `1.5 * 2^52`: adding it to an `f64` with |v| < 2^51 rounds `v` to the
/// nearest integer (ties to even), which then sits in the low mantissa bits
/// of the sum (its parity in the lowest bit); subtracting it again gives
/// the integer as a float.
const ROUND_MAGIC_F64: f64 = 6_755_399_441_055_744.0;

/// Horner evaluation, constant term first (unrolled: `N` is a constant).
#[inline(always)]
fn horner<const N: usize>(t: f64, c: &[f64; N]) -> f64 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(t, c[i]);
    }
    p
}

/// [`horner`] in `f32`.
#[inline(always)]
fn horner_f32<const N: usize>(t: f32, c: &[f32; N]) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(t, c[i]);
    }
    p
}

// ---------------------------------------------------------------------------
// f64-lane log and exp (for the gamma kernel; restricted ranges).

/// `ln 2` split for exact reductions: the high part has 32 trailing zero
/// bits (fdlibm's split), so `n * LN2_HI_F64` is exact for |n| < 2^20.
const LN2_HI_F64: f64 = 6.931_471_803_691_238e-1;
const LN2_LO_F64: f64 = 1.908_214_929_270_587_7e-10;

/// `2 atanh(s) / s` as a series in `s^2` (Taylor, to `s^12`; truncation
/// error below 5e-13 for |s| <= 0.172).
const ATANH2: [f64; 7] = [2.0, 2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0, 2.0 / 13.0];

/// `1 / k!`, k = 0..=9: the Taylor series of `e^r` (truncation error below
/// 1e-11 relative for |r| <= ln2/2).
const INV_FACT: [f64; 10] = [
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
];

/// Natural logarithm of a positive normal `f64` (NaN stays NaN), absolute
/// error below 1e-12: `t = 2^e m` with `m` in [sqrt(1/2), sqrt(2)),
/// `ln m = 2 atanh(s)`, `s = (m - 1)/(m + 1)`.
#[inline(always)]
fn ln_pos_f64(t: f64) -> f64 {
    const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;
    // 2^52 + 1023: the biased exponent placed in the mantissa of 2^52,
    // minus this, is `e` (exact; avoids an i64 -> f64 conversion, which
    // AVX2 lacks).
    const EXP_BIAS_MAGIC: f64 = 4_503_599_627_371_519.0;
    // Shift the mantissa range so that [sqrt(1/2), sqrt(2)) maps to one
    // exponent value.
    let ix = t.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF_BITS);
    let e = f64::from_bits((ix >> 52) | 0x4330_0000_0000_0000) - EXP_BIAS_MAGIC;
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff).wrapping_add(SQRT_HALF_BITS));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let p = horner(s * s, &ATANH2);
    e.mul_add(LN2_HI_F64, e.mul_add(LN2_LO_F64, s * p))
}

/// `e^y` in `f64` for |y| <= 700 (no overflow or underflow handling),
/// relative error below 1e-11: `y = n ln2 + r`, |r| <= ln2/2, `e^r` by its
/// Taylor series, `2^n` built from exponent bits.
#[inline(always)]
fn exp_f64_lanes(y: f64) -> f64 {
    let tm = y.mul_add(std::f64::consts::LOG2_E, ROUND_MAGIC_F64);
    let n = tm - ROUND_MAGIC_F64;
    let r = (-n).mul_add(LN2_HI_F64, y);
    let r = (-n).mul_add(LN2_LO_F64, r);
    let p = horner(r, &INV_FACT);
    // n (two's complement in the low bits of tm) plus the bias, shifted
    // into the exponent field.
    let scale = tm.to_bits().wrapping_sub(ROUND_MAGIC_F64.to_bits()).wrapping_add(1023) << 52;
    p * f64::from_bits(scale)
}

// ---------------------------------------------------------------------------
// Gamma.

/// Gamma arguments (after the reflection, `1 - x`) are clamped to this.
/// Beyond, the results are `+inf` on the positive side (gamma overflows
/// `f32` from about 35.04) and round to `±0` on the reflected side
/// (|gamma(x)| <= pi / (|sin(pi x)| gamma(44)) < 1e-47 for x < -43, since
/// |sin(pi x)| >= 1.2e-5 there for non-integer `f32`).
const GAMMA_ZMAX: f64 = 44.0;

/// Lanczos' `g` (with `n = 9` terms): `gamma(z) = t^(z - 1/2) e^-t P(z) /
/// (z Q(z))` with `t = z + g - 1/2`.
const LANCZOS_G: f64 = 7.0;

/// `sqrt(2 pi)` times the numerator of the `g = 7, n = 9` Lanczos sum
/// (Godfrey's coefficients `c_0 + sum_k c_k / (z + k - 1)`) brought to one
/// fraction, constant term first (computed exactly from the published
/// coefficients). All are positive, so Horner's rule is stable for
/// `z >= 0`. Relative error of the approximation: 4e-14 on (0, 44].
const LANCZOS_P: [f64; 9] = [
    8_546_756.818_814_375,
    10_433_559.178_127_712,
    5_571_934.910_626_382,
    1_700_220.144_176_771_9,
    324_225.495_474_121_8,
    39_566.827_664_428_136,
    3_017.564_847_168_611,
    131.493_541_573_376_86,
    2.506_628_274_630_524,
];

/// `(z + 1) (z + 2) ... (z + 7)`, constant term first: the denominator of
/// the Lanczos sum divided by `z`.
const LANCZOS_Q: [f64; 8] = [5040.0, 13_068.0, 13_132.0, 6769.0, 1960.0, 322.0, 28.0, 1.0];

/// `sin(pi f) / f` as a polynomial in `f^2`, |f| <= 1/2, constant term
/// first (least-squares fit on Chebyshev nodes, relative error 6.3e-14).
const SINPI: [f64; 7] = [
    3.141_592_653_589_597_3,
    -5.167_712_779_977_193,
    2.550_164_035_414_162,
    -0.599_264_425_651_692_9,
    0.082_144_731_491_086_03,
    -0.007_363_782_877_114_587,
    0.000_447_197_503_507_529_8,
];

/// The gamma function in `f32`, evaluated in `f64` lanes.
///
/// For `x >= 0`, the Lanczos approximation of `gamma(x)`; for `x < 0`, the
/// reflection `pi / (sin(pi x) gamma(1 - x))` with `sin(pi x)` computed
/// from the exact remainder `x - round(x)` (accurate next to the poles).
/// Both sides share one evaluation and one division (`num / den`), rounded
/// once to `f32`. Relative error within 6.0e-8 (the final rounding), also
/// for subnormal results (x < -34.5); results overflow to `+inf` above
/// about 35.04 and underflow to `±0` below about -43 as in `libm::tgamma`.
/// `gamma(±0) = ±inf`, `gamma(+inf) = +inf`; negative integers, `-inf` and
/// NaN give NaN.
#[inline(always)]
pub fn gamma_f32(x: f32) -> f32 {
    let xd = x as f64;
    let neg = x < 0.0;
    // gamma(z) with z = x, or z = 1 - x for the reflection (exact in f64).
    let z = if neg { 1.0 - xd } else { xd };
    let z = if z > GAMMA_ZMAX { GAMMA_ZMAX } else { z };
    let t = z + (LANCZOS_G - 0.5);
    let e = exp_f64_lanes((z - 0.5).mul_add(ln_pos_f64(t), -t));
    // gamma(z) = lp / lq (lq = 0 with the sign of z at z = ±0).
    let lp = e * horner(z, &LANCZOS_P);
    let lq = z * horner(z, &LANCZOS_Q);
    // sin(pi x) = (-1)^k sin(pi fs) for x = k + fs, |fs| <= 1/2. Below
    // -2^23 every f32 is an integer (a pole).
    let xc = if xd < -8_388_608.0 { -8_388_608.0 } else { xd };
    let tm = xc + ROUND_MAGIC_F64;
    let fs = xc - (tm - ROUND_MAGIC_F64);
    let s = fs * horner(fs * fs, &SINPI);
    let s = f64::from_bits(s.to_bits() ^ (tm.to_bits() << 63));
    let num = if neg { std::f64::consts::PI * lq } else { lp };
    let den = if neg { s * lp } else { lq };
    let y = (num / den) as f32;
    // Poles at the negative integers (and -inf): NaN, as libm.
    if neg && fs == 0.0 {
        f32::NAN
    } else {
        y
    }
}

/// The gamma function in `f64` (`libm::tgamma`).
#[inline]
pub fn gamma_f64(x: f64) -> f64 {
    libm::tgamma(x)
}

// ---------------------------------------------------------------------------
// Inverse error function.

/// Giles' central polynomial: `erfinv(x) / x` in `w - 2.5` for `w < 5`,
/// constant term first.
const ERFINV_CENTRAL: [f32; 9] = [
    1.501_409_4,
    0.246_640_73,
    -0.004_177_681_6,
    -0.001_253_725,
    0.000_218_580_87,
    -4.391_506_5e-6,
    -3.523_387_7e-6,
    3.432_739_4e-7,
    2.810_226_4e-8,
];

/// Giles' tail polynomial: `erfinv(x) / x` in `sqrt(w) - 3` for `w >= 5`
/// (`|x| > 0.9966`), constant term first.
const ERFINV_TAIL: [f32; 9] = [
    2.832_976_8,
    1.001_674,
    0.009_438_870_5,
    -0.007_622_461_3,
    0.005_739_507_7,
    -0.003_673_428_4,
    0.001_349_343_2,
    0.000_100_950_56,
    -0.000_200_214_26,
];

/// The inverse error function in `f32`: `erf(erfinv(x)) = x` on (-1, 1).
///
/// `x P(w)` with `w = -ln(1 - x^2)` ([`log_f32`]; `1 - x^2` by one fused
/// multiply-add) and `P` Giles' central or tail polynomial (both evaluated,
/// one selected). Relative error within 2.6e-7 on (-1, 1), up to the last
/// `f32` below 1 (where the result is 3.87). `erfinv(±1) = ±inf`, `|x| > 1`
/// and NaN give NaN; odd (`erfinv(-0) = -0`), subnormal inputs included.
#[inline(always)]
pub fn erfinv_f32(x: f32) -> f32 {
    let w = -log_f32((-x).mul_add(x, 1.0));
    let central = horner_f32(w - 2.5, &ERFINV_CENTRAL);
    let tail = horner_f32(w.sqrt() - 3.0, &ERFINV_TAIL);
    let p = if w < 5.0 { central } else { tail };
    let y = p * x;
    let ax = x.abs();
    let y = if ax == 1.0 { x * f32::INFINITY } else { y };
    // Also false for NaN.
    if ax <= 1.0 {
        y
    } else {
        f32::NAN
    }
}

/// The inverse error function in `f64`: `erf(erfinv(y)) = y` on (-1, 1),
/// ±∞ at ±1, NaN beyond. Winitzki's closed form (relative error about
/// 2e-3) refined by Newton steps on `erf(x) - y`, each of which squares the
/// error. Accurate rather than fast (numeric gradient checks).
pub fn erfinv_f64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    const A: f64 = 0.147;
    let ln = (1.0 - y * y).ln();
    let t = 2.0 / (std::f64::consts::PI * A) + ln / 2.0;
    let mut x = y.signum() * ((t * t - ln / A).sqrt() - t).sqrt();
    let slope = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..3 {
        let d = slope * (-x * x).exp();
        if d == 0.0 {
            break;
        }
        x -= (libm::erf(x) - y) / d;
    }
    x
}
