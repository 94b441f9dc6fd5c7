//! Fast element-wise math over slices (exp, log, tanh, sigmoid, erf, sin, cos;
//! gamma and erfinv in [`special`]).
//!
//! # Approach
//!
//! The `f32` functions in [`scalar`] are branch-free approximations built only
//! from operations LLVM can vectorise: compares that become blends, bit tricks
//! through `to_bits`/`from_bits`, `mul_add` and short polynomials whose
//! coefficients were fitted (Chebyshev, near-minimax) on a reduced range. They
//! are `#[inline(always)]`, so a plain loop over a slice compiles to SIMD code.
//!
//! The slice entry points (`exp_f32`, `sigmoid_f32_inplace`, `map_f32`, ...)
//! run that loop inside one of three builds of the same code, picked by the
//! process-wide [`SimdLevel`] ([`simd_level`], detected once and cached):
//! - `Avx512`: compiled with
//!   `#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]`,
//!   16-lane code with hardware FMA and masked tails, when the CPU has all of
//!   those;
//! - `Avx2Fma`: compiled with `#[target_feature(enable = "avx2,fma")]`, 8-lane
//!   code with hardware FMA, when the CPU has AVX2 and FMA;
//! - `Plain`: the baseline build (SSE2 on x86_64, software `mul_add` there),
//!   and the only one on other targets.
//!
//! The environment variable `OXNET_SIMD` (`plain`, `avx2` or `avx512`), read
//! once at the first call, lowers the level (for tests and benchmarks; it
//! never raises it above what the CPU has), and [`set_simd_level`] changes it
//! at run time. Since the kernels use `mul_add` (a correctly rounded fused
//! multiply-add) and no reassociation, all builds return bit-identical
//! results, equal to calling the scalar function on each element (the tests
//! compare every build the CPU has with the plain one). The reductions
//! (`reduce`) and the optimizer update loop (`optimizer`) have the same three
//! builds, chosen by the same level. Slices of at least 32K elements are split
//! into 16K-element chunks and spread over the engine's pool
//! ([`oxnet_core::parallel`]); shorter ones run on the calling thread.
//!
//! Accuracy of the `f32` kernels, measured against `f64` references over a
//! strided sample of all `f32` inputs (see the tests): relative error below
//! 1.8e-7 for normal results, i.e. at most 0.94 ulp for exp, 0.83 for log,
//! 1.51 for tanh, 2.37 for sigmoid and 1.49 for sin and cos, with subnormal
//! results within 1.5 steps of 2^-149; erf within 6.1e-8 absolute error.
//! Special values (±0, ±inf, NaN, overflow, underflow) behave as in `std`.
//! sin and cos reduce the argument with a three-part Cody-Waite split of pi/2,
//! so they keep that accuracy up to |x| = 1e6 and stay within 2.3 ulp up to
//! 6.5e6; beyond, the reduction breaks down (results stay in [-1, 1]).
//!
//! Speed, one thread of a 3.7 GHz Zen 4 (per element: 1.3-1.4 cycles for exp and
//! sigmoid, 2-4.5 for the others), AVX2+FMA build: exp 2.9 Gelem/s, sigmoid
//! 2.6, cos 1.8, sin 1.7, tanh 1.4, log 1.1, erf 0.85, against 0.34 for a
//! `f32::exp` loop. The AVX-512 build on an AMD EPYC with AVX-512, one thread,
//! 1M elements (`cargo bench -p oxnet-ops --bench simd_levels`, two runs):
//! exp 3.9 Gelem/s (1.30-1.37× AVX2), sigmoid 3.6-3.7 (1.35-1.49×), tanh
//! 2.2-2.3 (1.9×), erf 1.6-1.7 (2.2-2.4×; the wider register file holds its
//! polynomial). The plain build calls a software `fmaf` for every `mul_add`
//! on a CPU without FMA: 0.02-0.05 Gelem/s, a last resort.
//!
//! [`special`] holds the special functions of the `gamma` and `erfinv`
//! operators, written the same way, with slice functions here
//! ([`gamma_f32`], [`erfinv_f32`]) that call them by name: erfinv in
//! `f32` (Giles' polynomials in `-ln(1 - x^2)`, relative error below 2.6e-7)
//! and gamma in `f64` lanes (Lanczos with a vectorised `f64` log/exp and
//! the reflection formula, blended; relative error below 6.0e-8). On the
//! AVX2 (no AVX-512) EPYC of the development VM, one thread, 1M elements
//! (`special_speed`): erfinv 2.4 ms, gamma 7.6 ms, against 28 ms and 24 ms
//! for scipy (`scipy.special`), and 112 ms and 79 ms for the `f64` loops.
//!
//! The `f64` functions are used for numeric gradient checks, where accuracy
//! matters more than speed: they wrap `std` and `libm` and are only
//! parallelised, not approximated.

use oxnet_core::parallel;

/// Branch-free scalar kernels (`f32`) and accurate scalar references (`f64`).
///
/// The `f32` functions are meant to be called in loops that LLVM vectorises;
/// the slice functions of the parent module do exactly that.
pub mod scalar;

/// Branch-free special functions (`f32` gamma and erfinv, see the
/// [module docs](special)) and their accurate `f64` references; the slice
/// functions are [`gamma_f32`] and [`erfinv_f32`].
pub mod special;

#[cfg(test)]
mod tests;

/// Element types the slice drivers handle, with their parallel split sizes.
trait Elem: Copy + Send + Sync {
    /// Slices at least this long are split over the pool.
    const PAR_MIN_LEN: usize;
    /// Elements per parallel task.
    const PAR_CHUNK: usize;
}

impl Elem for f32 {
    const PAR_MIN_LEN: usize = 32 * 1024;
    const PAR_CHUNK: usize = 16 * 1024;
}

// The f64 kernels are std/libm calls costing several ns per element, so
// splitting pays off earlier.
impl Elem for f64 {
    const PAR_MIN_LEN: usize = 8 * 1024;
    const PAR_CHUNK: usize = 4 * 1024;
}

/// The instruction-set level the vectorised loops of oxnet-ops are built for.
///
/// Every loop that has per-level builds (the slice kernels of this module,
/// the reduction rows in `reduce`, the optimizer update loop) exists as a
/// plain build (the baseline target, SSE2 on x86_64), an AVX2+FMA build and
/// an AVX-512 build. [`simd_level`] picks one for the whole process. All
/// builds return bit-identical results: the loops use `mul_add` (a correctly
/// rounded fused multiply-add, whatever the instruction set) and no
/// reassociation, so a wider build only evaluates more elements at once.
///
/// The variants are ordered: `Plain < Avx2Fma < Avx512`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// The baseline build (SSE2 on x86_64; the only level on other targets).
    Plain,
    /// Built with `avx2,fma`: 8 `f32` lanes per instruction.
    Avx2Fma,
    /// Built with `avx512f,avx512bw,avx512dq,avx512vl,avx2,fma`: 16 `f32`
    /// lanes per instruction, masked loop tails.
    Avx512,
}

impl SimdLevel {
    /// All levels, lowest first.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::Plain, SimdLevel::Avx2Fma, SimdLevel::Avx512];

    /// The highest level this CPU supports (detected on each call; see
    /// [`simd_level`] for the cached choice).
    pub fn best_supported() -> SimdLevel {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            if avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                return SimdLevel::Avx512;
            }
            if avx2 {
                return SimdLevel::Avx2Fma;
            }
        }
        SimdLevel::Plain
    }

    /// True when this CPU can run the builds of this level.
    pub fn is_supported(self) -> bool {
        self <= SimdLevel::best_supported()
    }

    /// The level's name as `OXNET_SIMD` spells it: `plain`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Plain => "plain",
            SimdLevel::Avx2Fma => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// Parses an `OXNET_SIMD` value (`plain`, `avx2` or `avx512`, any case,
    /// surrounding spaces ignored); `None` for anything else.
    pub fn parse(s: &str) -> Option<SimdLevel> {
        let s = s.trim();
        SimdLevel::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(s))
    }

    fn code(self) -> u8 {
        match self {
            SimdLevel::Plain => 1,
            SimdLevel::Avx2Fma => 2,
            SimdLevel::Avx512 => 3,
        }
    }
}

impl std::fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The chosen level: 0 while not yet chosen, else `SimdLevel::code`.
static LEVEL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// The level the vectorised loops run at in this process.
///
/// Chosen on first use and cached: the highest level the CPU supports
/// ([`SimdLevel::best_supported`]), lowered to the value of the environment
/// variable `OXNET_SIMD` (`plain`, `avx2` or `avx512`) when it is set. The
/// variable can only lower the level (asking for a level the CPU lacks gives
/// the best one it has); other values are ignored. It is read once, at the
/// first call; [`set_simd_level`] changes the level later.
#[inline]
pub fn simd_level() -> SimdLevel {
    match LEVEL.load(std::sync::atomic::Ordering::Relaxed) {
        1 => SimdLevel::Plain,
        2 => SimdLevel::Avx2Fma,
        3 => SimdLevel::Avx512,
        _ => detect_level(),
    }
}

#[cold]
fn detect_level() -> SimdLevel {
    let best = SimdLevel::best_supported();
    let asked = std::env::var("OXNET_SIMD").ok().and_then(|v| SimdLevel::parse(&v));
    let level = asked.map_or(best, |a| a.min(best));
    LEVEL.store(level.code(), std::sync::atomic::Ordering::Relaxed);
    level
}

/// Sets the level of [`simd_level`] for the whole process (for benchmarks
/// and tests comparing levels), lowered to the best one the CPU supports;
/// returns the level now in force.
///
/// Switching while other threads run kernels is safe: every level gives the
/// same bits, and no level above the CPU's is ever chosen.
pub fn set_simd_level(level: SimdLevel) -> SimdLevel {
    let level = level.min(SimdLevel::best_supported());
    LEVEL.store(level.code(), std::sync::atomic::Ordering::Relaxed);
    level
}

/// True when the loops run an AVX2+FMA or wider build on this CPU
/// (`simd_level() >= SimdLevel::Avx2Fma`; always false off x86_64).
#[inline]
pub fn avx2_fma_enabled() -> bool {
    simd_level() >= SimdLevel::Avx2Fma
}

/// True when the loops run their AVX-512 build
/// (`simd_level() == SimdLevel::Avx512`; always false off x86_64).
#[inline]
pub fn avx512_enabled() -> bool {
    simd_level() == SimdLevel::Avx512
}

// ---------------------------------------------------------------------------
// Loops. Each has a plain body (`*_loop`, inlined everywhere), an AVX2+FMA
// build (`*_avx2`), an AVX-512 build (`*_avx512`) and a serial dispatcher
// (`*_serial`) that picks one by `simd_level()`.

#[inline(always)]
fn unary_loop<T: Copy, F: Fn(T) -> T>(x: &[T], out: &mut [T], f: &F) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f(v);
    }
}

#[inline(always)]
fn inplace_loop<T: Copy, F: Fn(T) -> T>(x: &mut [T], f: &F) {
    for v in x.iter_mut() {
        *v = f(*v);
    }
}

#[inline(always)]
fn binary_loop<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], out: &mut [T], f: &F) {
    for ((o, &u), &v) in out.iter_mut().zip(a).zip(b) {
        *o = f(u, v);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn unary_avx2<T: Copy, F: Fn(T) -> T>(x: &[T], out: &mut [T], f: &F) {
    unary_loop(x, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn inplace_avx2<T: Copy, F: Fn(T) -> T>(x: &mut [T], f: &F) {
    inplace_loop(x, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn binary_avx2<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], out: &mut [T], f: &F) {
    binary_loop(a, b, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn unary_avx512<T: Copy, F: Fn(T) -> T>(x: &[T], out: &mut [T], f: &F) {
    unary_loop(x, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn inplace_avx512<T: Copy, F: Fn(T) -> T>(x: &mut [T], f: &F) {
    inplace_loop(x, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn binary_avx512<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], out: &mut [T], f: &F) {
    binary_loop(a, b, out, f)
}

#[inline(always)]
fn unary_serial<T: Copy, F: Fn(T) -> T>(x: &[T], out: &mut [T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: simd_level() never exceeds what the CPU supports.
        SimdLevel::Avx512 => return unsafe { unary_avx512(x, out, f) },
        SimdLevel::Avx2Fma => return unsafe { unary_avx2(x, out, f) },
        SimdLevel::Plain => {}
    }
    unary_loop(x, out, f)
}

#[inline(always)]
fn inplace_serial<T: Copy, F: Fn(T) -> T>(x: &mut [T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: simd_level() never exceeds what the CPU supports.
        SimdLevel::Avx512 => return unsafe { inplace_avx512(x, f) },
        SimdLevel::Avx2Fma => return unsafe { inplace_avx2(x, f) },
        SimdLevel::Plain => {}
    }
    inplace_loop(x, f)
}

#[inline(always)]
fn binary_serial<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], out: &mut [T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: simd_level() never exceeds what the CPU supports.
        SimdLevel::Avx512 => return unsafe { binary_avx512(a, b, out, f) },
        SimdLevel::Avx2Fma => return unsafe { binary_avx2(a, b, out, f) },
        SimdLevel::Plain => {}
    }
    binary_loop(a, b, out, f)
}

// ---------------------------------------------------------------------------
// Per-level builds for other modules.

/// A loop that other modules of the crate want built per [`SimdLevel`]:
/// [`run_at_level`] calls [`LevelKernel::run`] inside a function compiled
/// for the current level. Implementations mark `run` `#[inline(always)]`
/// and call only `#[inline(always)]` code in their hot loop, so that the
/// whole loop is compiled (and vectorised) for that level.
pub(crate) trait LevelKernel {
    /// What the loop returns.
    type Out;
    /// The loop.
    fn run(self) -> Self::Out;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn level_kernel_avx2<K: LevelKernel>(k: K) -> K::Out {
    k.run()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn level_kernel_avx512<K: LevelKernel>(k: K) -> K::Out {
    k.run()
}

/// Runs `k` in its build for [`simd_level`] (AVX-512, AVX2+FMA or plain).
#[inline(always)]
pub(crate) fn run_at_level<K: LevelKernel>(k: K) -> K::Out {
    // SAFETY: simd_level() never exceeds what the CPU supports.
    unsafe { run_unchecked(simd_level(), k) }
}

/// Runs `k` in its build for `level`, lowered to the best level the CPU
/// supports (for tests comparing the builds).
#[cfg(test)]
pub(crate) fn run_at<K: LevelKernel>(level: SimdLevel, k: K) -> K::Out {
    // SAFETY: the level is lowered to one the CPU supports.
    unsafe { run_unchecked(level.min(SimdLevel::best_supported()), k) }
}

/// # Safety
/// The CPU must support `level`.
#[inline(always)]
unsafe fn run_unchecked<K: LevelKernel>(level: SimdLevel, k: K) -> K::Out {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => level_kernel_avx512(k),
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2Fma => level_kernel_avx2(k),
        _ => k.run(),
    }
}

// Parallel drivers: split long slices over the pool, run short ones inline.

#[inline(always)]
fn unary<T: Elem, F: Fn(T) -> T + Sync>(x: &[T], out: &mut [T], f: F) {
    assert_eq!(x.len(), out.len(), "simd_math: input and output lengths differ");
    if x.len() >= T::PAR_MIN_LEN {
        parallel::for_each_chunk_mut(out, T::PAR_CHUNK, |c, oc| {
            unary_serial(&x[c * T::PAR_CHUNK..][..oc.len()], oc, &f)
        });
    } else {
        unary_serial(x, out, &f);
    }
}

#[inline(always)]
fn inplace<T: Elem, F: Fn(T) -> T + Sync>(x: &mut [T], f: F) {
    if x.len() >= T::PAR_MIN_LEN {
        parallel::for_each_chunk_mut(x, T::PAR_CHUNK, |_, xc| inplace_serial(xc, &f));
    } else {
        inplace_serial(x, &f);
    }
}

#[inline(always)]
fn binary<T: Elem, F: Fn(T, T) -> T + Sync>(a: &[T], b: &[T], out: &mut [T], f: F) {
    assert_eq!(a.len(), out.len(), "simd_math: input and output lengths differ");
    assert_eq!(b.len(), out.len(), "simd_math: input and output lengths differ");
    if a.len() >= T::PAR_MIN_LEN {
        parallel::for_each_chunk_mut(out, T::PAR_CHUNK, |c, oc| {
            let at = c * T::PAR_CHUNK;
            binary_serial(&a[at..][..oc.len()], &b[at..][..oc.len()], oc, &f)
        });
    } else {
        binary_serial(a, b, out, &f);
    }
}

// ---------------------------------------------------------------------------
// Public slice API.

macro_rules! slice_fns {
    ($how:literal; $($name:ident, $inplace:ident, $ty:ty, $kernel:ident, $what:literal;)*) => {$(
        #[doc = concat!(
            "Element-wise ", $what, ": `out[i] = `[`scalar::", stringify!($kernel),
            "`]`(x[i])`.\n\n", $how, "\n\n",
            "# Panics\n\nIf `x` and `out` have different lengths."
        )]
        pub fn $name(x: &[$ty], out: &mut [$ty]) {
            unary(x, out, scalar::$kernel)
        }

        #[doc = concat!(
            "In-place element-wise ", $what, ": `x[i] = `[`scalar::", stringify!($kernel),
            "`]`(x[i])`, with the same results as [`", stringify!($name), "`]."
        )]
        pub fn $inplace(x: &mut [$ty]) {
            inplace(x, scalar::$kernel)
        }
    )*};
}

slice_fns! {
    "Vectorised (AVX-512 or AVX2+FMA when the CPU has it, see [`simd_level`]) and \
     split over the pool for long slices; bit-identical to the scalar kernel. See the [module docs](self) \
     for accuracy.";
    exp_f32, exp_f32_inplace, f32, exp_f32, "exponential `e^x`";
    log_f32, log_f32_inplace, f32, log_f32, "natural logarithm";
    tanh_f32, tanh_f32_inplace, f32, tanh_f32, "hyperbolic tangent";
    sigmoid_f32, sigmoid_f32_inplace, f32, sigmoid_f32, "logistic sigmoid `1/(1+e^-x)`";
    erf_f32, erf_f32_inplace, f32, erf_f32, "error function";
    sin_f32, sin_f32_inplace, f32, sin_f32, "sine";
    cos_f32, cos_f32_inplace, f32, cos_f32, "cosine";
}

slice_fns! {
    "Accurate `std`/`libm` evaluation (for numeric gradient checks), split over \
     the pool for long slices.";
    exp_f64, exp_f64_inplace, f64, exp_f64, "exponential `e^x`";
    log_f64, log_f64_inplace, f64, log_f64, "natural logarithm";
    tanh_f64, tanh_f64_inplace, f64, tanh_f64, "hyperbolic tangent";
    sigmoid_f64, sigmoid_f64_inplace, f64, sigmoid_f64, "logistic sigmoid `1/(1+e^-x)`";
    erf_f64, erf_f64_inplace, f64, erf_f64, "error function";
    sin_f64, sin_f64_inplace, f64, sin_f64, "sine";
    cos_f64, cos_f64_inplace, f64, cos_f64, "cosine";
}

/// Slice functions of `f32` kernels too large to go through [`unary`]: its
/// loop calls the kernel through `Fn::call`, which LLVM may decline to
/// inline for a kernel of that size (it did for `special::gamma_f32` in the
/// release build), leaving one call per element and a scalar loop. Here
/// the kernel is called by name inside a [`LevelKernel`], so the
/// `#[inline(always)]` chain reaches every build.
macro_rules! direct_slice_fns {
    ($how:literal; $($name:ident, $inplace:ident, $kernel:path, $what:literal;)*) => {$(
        #[doc = concat!(
            "Element-wise ", $what, ": `out[i] = `[`", stringify!($kernel), "`]`(x[i])`.\n\n",
            $how, "\n\n# Panics\n\nIf `x` and `out` have different lengths."
        )]
        pub fn $name(x: &[f32], out: &mut [f32]) {
            struct Run<'a>(&'a [f32], &'a mut [f32]);
            impl LevelKernel for Run<'_> {
                type Out = ();
                #[inline(always)]
                fn run(self) {
                    for (o, &v) in self.1.iter_mut().zip(self.0) {
                        *o = $kernel(v);
                    }
                }
            }
            assert_eq!(x.len(), out.len(), "simd_math: input and output lengths differ");
            let chunk = <f32 as Elem>::PAR_CHUNK;
            if x.len() >= <f32 as Elem>::PAR_MIN_LEN {
                parallel::for_each_chunk_mut(out, chunk, |c, oc| run_at_level(Run(&x[c * chunk..][..oc.len()], oc)));
            } else {
                run_at_level(Run(x, out));
            }
        }

        #[doc = concat!(
            "In-place element-wise ", $what, ": `x[i] = `[`", stringify!($kernel),
            "`]`(x[i])`, with the same results as [`", stringify!($name), "`]."
        )]
        pub fn $inplace(x: &mut [f32]) {
            struct Run<'a>(&'a mut [f32]);
            impl LevelKernel for Run<'_> {
                type Out = ();
                #[inline(always)]
                fn run(self) {
                    for v in self.0.iter_mut() {
                        *v = $kernel(*v);
                    }
                }
            }
            let chunk = <f32 as Elem>::PAR_CHUNK;
            if x.len() >= <f32 as Elem>::PAR_MIN_LEN {
                parallel::for_each_chunk_mut(x, chunk, |_, xc| run_at_level(Run(xc)));
            } else {
                run_at_level(Run(x));
            }
        }
    )*};
}

direct_slice_fns! {
    "Vectorised (AVX-512 or AVX2+FMA when the CPU has it, see [`simd_level`]) and \
     split over the pool for long slices; bit-identical to the scalar kernel. See \
     [`special`] for the method and accuracy.";
    gamma_f32, gamma_f32_inplace, special::gamma_f32, "gamma function";
    erfinv_f32, erfinv_f32_inplace, special::erfinv_f32, "inverse error function";
}

/// Apply `f` to every element: `out[i] = f(x[i])`.
///
/// `f` is inlined into the same per-level (AVX-512, AVX2+FMA or plain) and
/// parallel loop as the built-in
/// functions, so a branch-free `f` (for example one composed from the
/// [`scalar`] kernels) is vectorised too. `f` may run on several threads.
/// Inlining is LLVM's choice: a large `f` (such as [`special::gamma_f32`])
/// can stay a call per element; such kernels get their own slice functions
/// ([`gamma_f32`]).
///
/// # Panics
///
/// If `x` and `out` have different lengths.
pub fn map_f32(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32 + Sync) {
    unary(x, out, f)
}

/// In-place [`map_f32`]: `x[i] = f(x[i])`.
pub fn map_f32_inplace(x: &mut [f32], f: impl Fn(f32) -> f32 + Sync) {
    inplace(x, f)
}

/// Apply `f` to every element of an `f64` slice: `out[i] = f(x[i])`, split
/// over the pool for long slices.
///
/// # Panics
///
/// If `x` and `out` have different lengths.
pub fn map_f64(x: &[f64], out: &mut [f64], f: impl Fn(f64) -> f64 + Sync) {
    unary(x, out, f)
}

/// In-place [`map_f64`]: `x[i] = f(x[i])`.
pub fn map_f64_inplace(x: &mut [f64], f: impl Fn(f64) -> f64 + Sync) {
    inplace(x, f)
}

/// Sigmoid gradient from the forward output: `dx[i] = dy[i] * y[i] * (1 - y[i])`
/// (evaluated as `dy * (y * (1 - y))`), vectorised and parallel like
/// [`sigmoid_f32`].
///
/// # Panics
///
/// If the three slices do not all have the same length.
pub fn sigmoid_backward_f32(y: &[f32], dy: &[f32], dx: &mut [f32]) {
    binary(y, dy, dx, |y, g| g * (y * (1.0 - y)))
}

/// `f64` version of [`sigmoid_backward_f32`]: `dx[i] = dy[i] * (y[i] * (1 - y[i]))`.
///
/// # Panics
///
/// If the three slices do not all have the same length.
pub fn sigmoid_backward_f64(y: &[f64], dy: &[f64], dx: &mut [f64]) {
    binary(y, dy, dx, |y, g| g * (y * (1.0 - y)))
}
