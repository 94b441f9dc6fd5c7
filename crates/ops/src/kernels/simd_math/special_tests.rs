//! Tests of the special-function kernels ([`special`]): accuracy against the
//! `f64` references (`libm::tgamma`, the Newton-refined `erfinv_f64`),
//! special values, and agreement of every SIMD build with the plain one.
//! A child of `tests`, whose helpers (`fold`, `Rng`, `run_level`, ...) it
//! shares.

use super::*;
use crate::kernels::simd_math::special;

/// Gamma inputs: a grid over the finite range and beyond, random bit
/// patterns, the floats next to the poles (0 and the negative integers)
/// and to the positive integers, tiny arguments and edge values.
fn gamma_points() -> Vec<f32> {
    let mut rng = Rng(21);
    let mut pts = points(&mut rng, -46.0, 46.0, 60.0, N);
    pts.extend(grid(-2.0, 3.0, N / 2));
    pts.extend((0..N / 4).map(|_| rng.bits_upto(f32::MAX)));
    for k in -45i32..=40 {
        let c = k as f32;
        for d in 1..=3u32 {
            pts.push(f32::from_bits(c.to_bits() + d));
            if c != 0.0 {
                pts.push(f32::from_bits(c.to_bits() - d));
            }
        }
    }
    // Around the overflow threshold (about 35.04) and the end of the
    // subnormal results (about -43).
    pts.extend(grid(34.9, 35.2, 20_000));
    pts.extend(grid(-44.0, -41.0, 20_000));
    pts.extend([1e-38, 2.9e-39, 3e-39, 1e-30, -1e-30, 1e-7, -1e-7, -8_388_607.5, -8_388_608.0, -4_194_303.5]);
    pts
}

#[test]
fn gamma_accuracy() {
    let e = measure("gamma", special::gamma_f32, special::gamma_f64, gamma_points().into_iter());
    println!("gamma: {e:?}");
    // Measured 5.96e-8 (the final rounding); the operator's requirement is 1e-6.
    assert!(e.rel <= 1.5e-7, "gamma: {e:?}");
    let g = special::gamma_f32;
    assert_eq!(g(1.0), 1.0);
    assert_eq!(g(2.0), 1.0);
    assert_eq!(g(5.0), 24.0);
    assert_eq!(g(0.5), std::f64::consts::PI.sqrt() as f32);
    assert_eq!(g(0.0), f32::INFINITY);
    assert_eq!(g(-0.0), f32::NEG_INFINITY);
    assert_eq!(g(f32::INFINITY), f32::INFINITY);
    assert_eq!(g(35.05), f32::INFINITY);
    assert!(g(35.04).is_finite());
    assert_eq!(g(1e-45), f32::INFINITY);
    assert_eq!(g(-1e-45), f32::NEG_INFINITY);
    for x in [f32::NEG_INFINITY, f32::NAN, -1.0, -2.0, -43.0, -8_388_608.0, -3e38, -f32::MAX] {
        assert!(g(x).is_nan(), "gamma({x:e}) = {}", g(x));
    }
    // Underflow keeps the sign of the result, as libm (+0 when floor(x) is
    // even, -0 when odd).
    for x in [-44.5f32, -45.5, -184.5, -1e6 - 0.5] {
        let want = libm::tgamma(x as f64) as f32;
        assert!(g(x) == 0.0 && g(x).to_bits() == want.to_bits(), "gamma({x}) = {:e}, libm {want:e}", g(x));
    }
}

/// The floats just below 1 (where erfinv grows) and their negatives.
fn near_one(n: u32) -> impl Iterator<Item = f32> {
    (1..=n).flat_map(|k| {
        let x = f32::from_bits(1f32.to_bits() - k);
        [x, -x]
    })
}

#[test]
fn erfinv_accuracy() {
    let mut rng = Rng(22);
    let mut pts = points(&mut rng, -1.0, 1.0, 1.5, 2 * N);
    pts.extend(near_one(50_000));
    pts.extend(grid(-1e-3, 1e-3, N / 4));
    let e = measure("erfinv", special::erfinv_f32, special::erfinv_f64, pts.into_iter());
    println!("erfinv: {e:?}");
    // Measured 2.59e-7 over all of (-1, 1).
    assert!(e.rel <= 3e-7, "erfinv: {e:?}");
    let f = special::erfinv_f32;
    assert_eq!(f(0.5), 0.476_936_28);
    assert_eq!(f(1.0), f32::INFINITY);
    assert_eq!(f(-1.0), f32::NEG_INFINITY);
    assert_eq!(f(0.0), 0.0);
    assert!(f(-0.0) == 0.0 && f(-0.0).is_sign_negative());
    assert_eq!(f(f32::from_bits(1)), f32::from_bits(1));
    for x in [1.000_000_1f32, -1.000_000_1, 2.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        assert!(f(x).is_nan(), "erfinv({x:e}) = {}", f(x));
    }
}

/// Inputs for the build comparison: `mixed_input` plus values in (-1, 1),
/// next to ±1 and next to the gamma poles.
fn dispatch_input(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut x = mixed_input(len, seed);
    for (i, v) in x.iter_mut().enumerate() {
        match i % 7 {
            3 => *v = rng.bits_upto(1.0),
            4 => *v = f32::from_bits(1f32.to_bits() - (rng.next_u64() % 1000) as u32),
            5 => *v = -((rng.next_u64() % 50) as f32) + 1e-3 * rng.bits_upto(1.0),
            _ => {}
        }
    }
    x
}

/// A kernel called by name (no `Fn::call`), so that it is compiled into
/// each per-level build as the slice functions do.
trait Kernel {
    fn f(x: f32) -> f32;
}

struct GammaK;
impl Kernel for GammaK {
    #[inline(always)]
    fn f(x: f32) -> f32 {
        special::gamma_f32(x)
    }
}

struct ErfinvK;
impl Kernel for ErfinvK {
    #[inline(always)]
    fn f(x: f32) -> f32 {
        special::erfinv_f32(x)
    }
}

struct Loop<'a, K>(&'a [f32], &'a mut [f32], std::marker::PhantomData<K>);
impl<K: Kernel> LevelKernel for Loop<'_, K> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        for (o, &v) in self.1.iter_mut().zip(self.0) {
            *o = K::f(v);
        }
    }
}

/// Every build the CPU supports gives the plain build's bits, which are
/// the scalar kernel's, on every loop-tail length.
#[test]
fn special_dispatch_paths_agree() {
    fn check<K: Kernel>(name: &str) -> Vec<SimdLevel> {
        let mut levels_run = vec![];
        for len in [4099, 1, 7, 15, 17, 33, 100] {
            let x = dispatch_input(len, 77 + len as u64);
            let mut plain = vec![0.0f32; len];
            run_at(SimdLevel::Plain, Loop::<K>(&x, &mut plain, Default::default()));
            for (i, v) in x.iter().enumerate() {
                assert!(same(plain[i], K::f(*v)), "plain {name}({v:e})");
            }
            for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                if !level.is_supported() {
                    continue;
                }
                if !levels_run.contains(&level) {
                    levels_run.push(level);
                }
                let mut got = vec![0.0f32; len];
                run_at(level, Loop::<K>(&x, &mut got, Default::default()));
                for (i, v) in x.iter().enumerate() {
                    assert!(same(plain[i], got[i]), "{level} {name}({v:e}): {:e} vs {:e}", got[i], plain[i]);
                }
            }
        }
        levels_run
    }
    check::<GammaK>("gamma");
    let levels = check::<ErfinvK>("erfinv");
    println!("levels compared with plain: {levels:?} (best supported: {})", SimdLevel::best_supported());
}

/// The slice entry points (parallel for long slices), at every level,
/// match the scalar kernels.
#[test]
fn special_slices_match_scalar() {
    type Fns = (&'static str, SliceFn, InplaceFn, fn(f32) -> f32);
    let fns: [Fns; 2] = [
        ("gamma", gamma_f32, gamma_f32_inplace, special::gamma_f32),
        ("erfinv", erfinv_f32, erfinv_f32_inplace, special::erfinv_f32),
    ];
    let before = simd_level();
    for level in SimdLevel::ALL {
        let now = set_simd_level(level);
        for len in [0, 1, 7, 33, 100_003] {
            let x = dispatch_input(len, 5 + len as u64);
            for (name, slice_fn, inplace_fn, f) in fns {
                let mut out = vec![0.0f32; len];
                slice_fn(&x, &mut out);
                let mut inp = x.clone();
                inplace_fn(&mut inp);
                for i in 0..len {
                    assert!(same(out[i], f(x[i])) && same(inp[i], f(x[i])), "{now} {name}({:e})", x[i]);
                }
            }
        }
    }
    set_simd_level(before);
}

/// Accuracy over every third `f32` input (`OXNET_SWEEP_STRIDE=1`: all of
/// them, about 18 minutes on 2 cores); run in release:
/// `cargo test --release -p oxnet-ops special_accuracy_sweep -- --ignored --nocapture`.
#[test]
#[ignore]
fn special_accuracy_sweep() {
    type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f32, f32);
    let cases: [Case; 2] = [
        ("gamma", special::gamma_f32, special::gamma_f64, f32::NEG_INFINITY, f32::INFINITY),
        ("erfinv", special::erfinv_f32, special::erfinv_f64, -1.0, 1.0),
    ];
    let stride: u64 = std::env::var("OXNET_SWEEP_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    for (name, f, reference, lo, hi) in cases {
        let errs: Vec<Err> = oxnet_core::parallel::map(16, |part| {
            let mut err = Err::default();
            let mut b = part as u64 * stride;
            while b <= u32::MAX as u64 {
                let x = f32::from_bits(b as u32);
                if x >= lo && x <= hi {
                    fold(name, x, f(x), reference(x as f64), &mut err);
                }
                b += 16 * stride;
            }
            err
        });
        let worst_rel = errs.iter().max_by(|a, b| a.rel.total_cmp(&b.rel)).unwrap();
        let worst_abs = errs.iter().max_by(|a, b| a.abs.total_cmp(&b.abs)).unwrap();
        let ulp = errs.iter().map(|e| e.ulp).fold(0.0, f64::max);
        println!(
            "{name:8} on [{lo:e}, {hi:e}], f32 stride {stride}: max rel {:.3e} (x={:e}), max abs {:.3e} (x={:e}), \
             max {ulp:.2} ulp",
            worst_rel.rel, worst_rel.rel_at, worst_abs.abs, worst_abs.abs_at
        );
    }
}

/// Single-thread throughput on 1M `f32` (best of 30); run in release:
/// `cargo test --release -p oxnet-ops special_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn special_speed() {
    let n = 1 << 20;
    let xg: Vec<f32> = (0..n).map(|i| 0.1 + 4.9 * (i as f32 / n as f32)).collect();
    let xe: Vec<f32> = (0..n).map(|i| -0.99 + 1.98 * (i as f32 / n as f32)).collect();
    let mut out = vec![0.0f32; n];
    let best_ms = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best * 1e3
    };
    println!("SIMD level: {}", simd_level());
    oxnet_core::parallel::on_this_thread(|| {
        let g = best_ms(&mut || gamma_f32(std::hint::black_box(&xg), &mut out));
        let e = best_ms(&mut || erfinv_f32(std::hint::black_box(&xe), &mut out));
        let g64 = best_ms(&mut || {
            for (o, &v) in out.iter_mut().zip(&xg) {
                *o = special::gamma_f64(std::hint::black_box(v) as f64) as f32;
            }
        });
        let e64 = best_ms(&mut || {
            for (o, &v) in out.iter_mut().zip(&xe) {
                *o = special::erfinv_f64(std::hint::black_box(v) as f64) as f32;
            }
        });
        println!("1M f32, one thread: gamma {g:.2} ms (f64 libm loop {g64:.2} ms), erfinv {e:.2} ms (f64 loop {e64:.2} ms)");
    });
}
