use super::*;

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Finite f32 with |x| <= max, log-uniform-ish magnitude (random bits).
    fn bits_upto(&mut self, max: f32) -> f32 {
        loop {
            let v = f32::from_bits((self.next_u64() >> 32) as u32);
            if v.abs() <= max {
                return v;
            }
        }
    }
}

fn edge_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x0000_1234),
        f32::EPSILON,
        1.0,
        1e-30,
        1e-10,
        1e-5,
        0.5,
        2.0,
        10.0,
        88.72283,
        88.72284,
        89.0,
        100.0,
        103.9,
        104.0,
        1e4,
        1e10,
        1e30,
        f32::MAX,
    ];
    let neg: Vec<f32> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
    (0..=n).map(move |i| lo + (hi - lo) * (i as f32 / n as f32))
}

#[derive(Debug, Default)]
struct Err {
    /// max |got - ref| / max(|ref|, f32::MIN_POSITIVE)
    rel: f64,
    rel_at: f32,
    /// max |got - ref|
    abs: f64,
    abs_at: f32,
    /// max error in units of the last place of the rounded reference
    ulp: f64,
}

fn ulp_of(r: f64) -> f64 {
    let a = (r.abs() as f32).min(f32::MAX);
    let e = ((a.to_bits() >> 23) as i32).max(1);
    2f64.powi(e - 127 - 23)
}

/// Compare `got` with the f64 reference `r` on input `x`, folding the
/// error into `err`. Special values (NaN, infinities, overflow) must match
/// exactly (overflow allows a result of ±f32::MAX at the boundary).
fn fold(name: &str, x: f32, got: f32, r: f64, err: &mut Err) {
    if r.is_nan() {
        assert!(got.is_nan(), "{name}({x:e}) = {got:e}, want NaN");
        return;
    }
    let rf = r as f32;
    if rf.is_infinite() {
        assert!(got == rf || got == rf.signum() * f32::MAX, "{name}({x:e}) = {got:e}, want {rf}");
        return;
    }
    assert!(got.is_finite(), "{name}({x:e}) = {got:e}, want {r:e}");
    assert_eq!(
        got.is_sign_negative(),
        rf.is_sign_negative() || (rf == 0.0 && got == 0.0 && got.is_sign_negative()),
        "{name}({x:e}) = {got:e}: sign differs from {r:e}"
    );
    let d = (got as f64 - r).abs();
    let rel = d / r.abs().max(f32::MIN_POSITIVE as f64);
    if rel > err.rel {
        err.rel = rel;
        err.rel_at = x;
    }
    if d > err.abs {
        err.abs = d;
        err.abs_at = x;
    }
    err.ulp = err.ulp.max(d / ulp_of(r));
}

fn measure(
    name: &str,
    f: fn(f32) -> f32,
    reference: fn(f64) -> f64,
    points: impl Iterator<Item = f32>,
) -> Err {
    let mut err = Err::default();
    for x in points {
        fold(name, x, f(x), reference(x as f64), &mut err);
    }
    err
}

fn sigmoid_ref(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn points(rng: &mut Rng, lo: f32, hi: f32, max_bits: f32, n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = grid(lo, hi, n).collect();
    v.extend((0..n).map(|_| rng.bits_upto(max_bits)));
    v.extend(edge_values());
    v
}

const N: usize = 200_000;

#[test]
fn exp_accuracy() {
    let mut rng = Rng(1);
    let pts = points(&mut rng, -110.0, 95.0, 120.0, N);
    let e = measure("exp", scalar::exp_f32, f64::exp, pts.into_iter());
    println!("exp: {e:?}");
    assert!(e.rel <= 3e-7, "exp: {e:?}");
    assert!(e.ulp <= 2.0, "exp: {e:?}");
    assert_eq!(scalar::exp_f32(0.0), 1.0);
    assert_eq!(scalar::exp_f32(88.8), f32::INFINITY);
    assert_eq!(scalar::exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(scalar::exp_f32(-104.0), 0.0);
    assert_eq!(scalar::exp_f32(f32::NEG_INFINITY), 0.0);
    assert!(scalar::exp_f32(-100.0) > 0.0); // subnormal, not flushed
}

#[test]
fn log_accuracy() {
    let mut rng = Rng(2);
    let mut pts = points(&mut rng, 1e-3, 100.0, f32::MAX, N);
    pts.extend(grid(0.5, 2.0, N));
    // Around 1, where log is tiny and relative accuracy is hardest.
    for k in 0..2000u32 {
        pts.push(f32::from_bits(1f32.to_bits() + k));
        pts.push(f32::from_bits(1f32.to_bits() - k));
    }
    let e = measure("log", scalar::log_f32, f64::ln, pts.into_iter());
    println!("log: {e:?}");
    assert!(e.rel <= 3e-7, "log: {e:?}");
    assert!(e.ulp <= 2.0, "log: {e:?}");
    assert_eq!(scalar::log_f32(1.0), 0.0);
    assert_eq!(scalar::log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(scalar::log_f32(-0.0), f32::NEG_INFINITY);
    assert_eq!(scalar::log_f32(f32::INFINITY), f32::INFINITY);
    assert!(scalar::log_f32(-1.0).is_nan());
    assert!(scalar::log_f32(f32::NEG_INFINITY).is_nan());
    assert!(scalar::log_f32(f32::NAN).is_nan());
}

#[test]
fn tanh_accuracy() {
    let mut rng = Rng(3);
    let mut pts = points(&mut rng, -12.0, 12.0, 30.0, N);
    pts.extend(grid(-1.0, 1.0, N));
    let e = measure("tanh", scalar::tanh_f32, f64::tanh, pts.into_iter());
    println!("tanh: {e:?}");
    assert!(e.rel <= 3e-7, "tanh: {e:?}");
    assert_eq!(scalar::tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(scalar::tanh_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(scalar::tanh_f32(20.0), 1.0);
    assert!(scalar::tanh_f32(-0.0).is_sign_negative());
}

#[test]
fn sigmoid_accuracy() {
    let mut rng = Rng(4);
    let pts = points(&mut rng, -110.0, 110.0, 200.0, N);
    let e = measure("sigmoid", scalar::sigmoid_f32, sigmoid_ref, pts.into_iter());
    println!("sigmoid: {e:?}");
    assert!(e.rel <= 3e-7, "sigmoid: {e:?}");
    assert_eq!(scalar::sigmoid_f32(0.0), 0.5);
    assert_eq!(scalar::sigmoid_f32(f32::INFINITY), 1.0);
    assert_eq!(scalar::sigmoid_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(scalar::sigmoid_f32(100.0), 1.0);
    assert!(scalar::sigmoid_f32(-100.0) > 0.0);
}

#[test]
fn erf_accuracy() {
    let mut rng = Rng(5);
    let pts = points(&mut rng, -6.0, 6.0, 10.0, 2 * N);
    let e = measure("erf", scalar::erf_f32, libm::erf, pts.into_iter());
    println!("erf: {e:?}");
    assert!(e.abs <= 2e-7, "erf: {e:?}");
    assert_eq!(scalar::erf_f32(f32::INFINITY), 1.0);
    assert_eq!(scalar::erf_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(scalar::erf_f32(0.0), 0.0);
    assert!(scalar::erf_f32(-0.0).is_sign_negative());
}

/// Points for sin/cos: grid, random bits and the floats nearest to
/// multiples of pi/2 (where one of them is tiny), |x| <= 1e4.
fn trig_points(seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut pts = points(&mut rng, -1e4, 1e4, 1e4, N);
    pts.extend(grid(-10.0, 10.0, N / 4));
    for k in -6400i32..=6400 {
        let c = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        for d in -2i32..=2 {
            pts.push(f32::from_bits(c.to_bits().wrapping_add_signed(d)));
        }
    }
    pts.retain(|x| !x.is_finite() || x.abs() <= 1e4 || x.is_nan());
    pts
}

#[test]
fn sin_cos_accuracy() {
    let pts = trig_points(6);
    let e = measure("sin", scalar::sin_f32, f64::sin, pts.iter().copied());
    println!("sin: {e:?}");
    assert!(e.rel <= 3e-7, "sin: {e:?}");
    let e = measure("cos", scalar::cos_f32, f64::cos, pts.iter().copied());
    println!("cos: {e:?}");
    assert!(e.rel <= 3e-7, "cos: {e:?}");
    assert!(scalar::sin_f32(-0.0).is_sign_negative());
    assert_eq!(scalar::cos_f32(0.0), 1.0);
    for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        assert!(scalar::sin_f32(x).is_nan() && scalar::cos_f32(x).is_nan());
    }
    // Far outside the accurate range the results stay bounded.
    let mut rng = Rng(7);
    for _ in 0..10_000 {
        let x = rng.bits_upto(f32::MAX);
        if x.abs() > 1e4 {
            assert!(scalar::sin_f32(x).abs() <= 1.0 && scalar::cos_f32(x).abs() <= 1.0);
        }
    }
}

#[test]
fn f64_scalars() {
    for x in [-800.0f64, -30.0, -1.0, 0.0, 0.5, 30.0, 800.0] {
        let want = 1.0 / (1.0 + (-x).exp());
        assert!((scalar::sigmoid_f64(x) - want).abs() <= 4e-16 * want.max(1e-300));
    }
    assert_eq!(scalar::sigmoid_f64(f64::NEG_INFINITY), 0.0);
    assert_eq!(scalar::sigmoid_f64(f64::INFINITY), 1.0);
    assert!((scalar::erf_f64(1.0) - 0.842_700_792_949_714_9).abs() < 1e-15);
    assert_eq!(scalar::exp_f64(1.5), 1.5f64.exp());
    assert_eq!(scalar::log_f64(1.5), 1.5f64.ln());
    assert_eq!(scalar::tanh_f64(1.5), 1.5f64.tanh());
    assert_eq!(scalar::sin_f64(1.5), 1.5f64.sin());
    assert_eq!(scalar::cos_f64(1.5), 1.5f64.cos());
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Inputs mixing normal ranges, random bit patterns and edge values.
fn mixed_input(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let edges = edge_values();
    (0..len)
        .map(|i| match i % 5 {
            0 => edges[(rng.next_u64() % edges.len() as u64) as usize],
            1 => f32::from_bits((rng.next_u64() >> 32) as u32),
            _ => rng.bits_upto(1.0) * 20.0,
        })
        .collect()
}

type SliceFn = fn(&[f32], &mut [f32]);
type InplaceFn = fn(&mut [f32]);
/// (name, slice version, in-place version, scalar kernel)
type F32Fns = (&'static str, SliceFn, InplaceFn, fn(f32) -> f32);

const F32_FNS: [F32Fns; 7] = [
    ("exp", exp_f32, exp_f32_inplace, scalar::exp_f32),
    ("log", log_f32, log_f32_inplace, scalar::log_f32),
    ("tanh", tanh_f32, tanh_f32_inplace, scalar::tanh_f32),
    ("sigmoid", sigmoid_f32, sigmoid_f32_inplace, scalar::sigmoid_f32),
    ("erf", erf_f32, erf_f32_inplace, scalar::erf_f32),
    ("sin", sin_f32, sin_f32_inplace, scalar::sin_f32),
    ("cos", cos_f32, cos_f32_inplace, scalar::cos_f32),
];

const LENS: [usize; 6] = [0, 1, 7, 8, 33, 100_003];

#[test]
fn slices_match_scalar() {
    for len in LENS {
        let x = mixed_input(len, len as u64 + 11);
        for (name, slice_fn, inplace_fn, scalar_fn) in F32_FNS {
            let mut out = vec![0.0f32; len];
            slice_fn(&x, &mut out);
            let mut inp = x.clone();
            inplace_fn(&mut inp);
            for i in 0..len {
                let want = scalar_fn(x[i]);
                assert!(same(out[i], want), "{name}[{i}] len {len}: {} vs {want}", out[i]);
                assert!(same(inp[i], want), "{name}_inplace[{i}] len {len}");
            }
        }
        let f = |v: f32| scalar::exp_f32(v) * 0.5 + 1.0;
        let mut out = vec![0.0f32; len];
        map_f32(&x, &mut out, f);
        let mut inp = x.clone();
        map_f32_inplace(&mut inp, f);
        for i in 0..len {
            assert!(same(out[i], f(x[i])) && same(inp[i], f(x[i])), "map_f32[{i}]");
        }
    }
}

/// Runs the unary, in-place and binary loops of `level` (`None` when the
/// CPU lacks it), so each build can be compared with the plain one.
/// `f` is a function item (not a pointer), so each build inlines and
/// vectorises it.
fn run_level<F: Fn(f32) -> f32 + Copy>(
    level: SimdLevel,
    x: &[f32],
    f: F,
) -> Option<(Vec<f32>, Vec<f32>, Vec<f32>)> {
    if !level.is_supported() {
        return None;
    }
    let mut out = vec![0.0f32; x.len()];
    let mut inp = x.to_vec();
    let mut bin = vec![0.0f32; x.len()];
    let g = |u: f32, v: f32| f(u).mul_add(v, -u);
    let y: Vec<f32> = x.iter().rev().copied().collect();
    match level {
        SimdLevel::Plain => {
            unary_loop(x, &mut out, &f);
            inplace_loop(&mut inp, &f);
            binary_loop(x, &y, &mut bin, &g);
        }
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2Fma => {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            unsafe {
                unary_avx2(x, &mut out, &f);
                inplace_avx2(&mut inp, &f);
                binary_avx2(x, &y, &mut bin, &g);
            }
        }
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => {
            // SAFETY: the CPU supports the AVX-512 subsets (checked above).
            unsafe {
                unary_avx512(x, &mut out, &f);
                inplace_avx512(&mut inp, &f);
                binary_avx512(x, &y, &mut bin, &g);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => return None,
    }
    Some((out, inp, bin))
}

/// Every build the CPU supports (plain, AVX2+FMA, AVX-512) gives the same
/// bits as the plain build, for every kernel, on edge values, random bit
/// patterns and lengths with loop tails of every size.
#[test]
fn dispatch_paths_agree() {
    fn check<F: Fn(f32) -> f32 + Copy>(name: &str, f: F, levels_run: &mut Vec<SimdLevel>) {
        for len in [4099, 1, 7, 15, 17, 33, 100] {
            let x = mixed_input(len, 99 + len as u64);
            let plain = run_level(SimdLevel::Plain, &x, f).unwrap();
            for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                let Some(got) = run_level(level, &x, f) else { continue };
                if !levels_run.contains(&level) {
                    levels_run.push(level);
                }
                for (i, v) in x.iter().enumerate() {
                    assert!(same(plain.0[i], got.0[i]), "{level} {name}({v:e})");
                    assert!(same(plain.1[i], got.1[i]), "{level} {name} in place ({v:e})");
                    assert!(same(plain.2[i], got.2[i]), "{level} {name} binary ({v:e})");
                }
            }
        }
    }
    let mut levels_run = vec![];
    check("exp", scalar::exp_f32, &mut levels_run);
    check("log", scalar::log_f32, &mut levels_run);
    check("tanh", scalar::tanh_f32, &mut levels_run);
    check("sigmoid", scalar::sigmoid_f32, &mut levels_run);
    check("erf", scalar::erf_f32, &mut levels_run);
    check("sin", scalar::sin_f32, &mut levels_run);
    check("cos", scalar::cos_f32, &mut levels_run);
    check("sigmoid grad", |y: f32| y * (1.0 - y), &mut levels_run);
    println!("levels compared with plain: {levels_run:?} (best supported: {})", SimdLevel::best_supported());
}

/// Every level, run through the public entry points after `set_simd_level`,
/// gives the scalar results (restores the level afterwards).
#[test]
fn set_level_entry_points_agree() {
    let before = simd_level();
    let x = mixed_input(40_000, 7);
    for level in SimdLevel::ALL {
        let now = set_simd_level(level);
        assert!(now <= level && now.is_supported());
        for (name, slice_fn, _, scalar_fn) in F32_FNS {
            let mut out = vec![0.0f32; x.len()];
            slice_fn(&x, &mut out);
            for i in (0..x.len()).step_by(3) {
                assert!(same(out[i], scalar_fn(x[i])), "{now} {name}({:e})", x[i]);
            }
        }
    }
    set_simd_level(before);
}

#[test]
fn level_names_and_order() {
    for level in SimdLevel::ALL {
        assert_eq!(SimdLevel::parse(level.name()), Some(level));
        assert_eq!(level.to_string(), level.name());
    }
    assert_eq!(SimdLevel::parse(" AVX512 "), Some(SimdLevel::Avx512));
    assert_eq!(SimdLevel::parse("sse"), None);
    assert!(SimdLevel::Plain < SimdLevel::Avx2Fma && SimdLevel::Avx2Fma < SimdLevel::Avx512);
    assert!(SimdLevel::Plain.is_supported());
    assert!(simd_level().is_supported());
    assert_eq!(avx2_fma_enabled(), simd_level() >= SimdLevel::Avx2Fma);
}

#[test]
fn sigmoid_backward_matches() {
    for len in LENS {
        let mut rng = Rng(len as u64 + 3);
        let y: Vec<f32> = (0..len).map(|_| rng.bits_upto(1.0).abs()).collect();
        let dy: Vec<f32> = (0..len).map(|_| rng.bits_upto(1.0) * 3.0).collect();
        let mut dx = vec![0.0f32; len];
        sigmoid_backward_f32(&y, &dy, &mut dx);
        for i in 0..len {
            assert_eq!(dx[i].to_bits(), (dy[i] * (y[i] * (1.0 - y[i]))).to_bits());
        }
        let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
        let dy64: Vec<f64> = dy.iter().map(|&v| v as f64).collect();
        let mut dx64 = vec![0.0f64; len];
        sigmoid_backward_f64(&y64, &dy64, &mut dx64);
        for i in 0..len {
            assert_eq!(dx64[i], dy64[i] * (y64[i] * (1.0 - y64[i])));
        }
    }
}

#[test]
fn f64_slices_match_scalar() {
    type F64Fns = (fn(&[f64], &mut [f64]), fn(&mut [f64]), fn(f64) -> f64);
    let fns: [F64Fns; 7] = [
        (exp_f64, exp_f64_inplace, scalar::exp_f64),
        (log_f64, log_f64_inplace, scalar::log_f64),
        (tanh_f64, tanh_f64_inplace, scalar::tanh_f64),
        (sigmoid_f64, sigmoid_f64_inplace, scalar::sigmoid_f64),
        (erf_f64, erf_f64_inplace, scalar::erf_f64),
        (sin_f64, sin_f64_inplace, scalar::sin_f64),
        (cos_f64, cos_f64_inplace, scalar::cos_f64),
    ];
    for len in LENS {
        let x: Vec<f64> = mixed_input(len, 5).iter().map(|&v| v as f64).collect();
        for (slice_fn, inplace_fn, scalar_fn) in fns {
            let mut out = vec![0.0f64; len];
            slice_fn(&x, &mut out);
            let mut inp = x.clone();
            inplace_fn(&mut inp);
            for i in 0..len {
                let want = scalar_fn(x[i]);
                assert!(out[i].to_bits() == want.to_bits() || (out[i].is_nan() && want.is_nan()));
                assert!(inp[i].to_bits() == want.to_bits() || (inp[i].is_nan() && want.is_nan()));
            }
        }
        let mut out = vec![0.0f64; len];
        map_f64(&x, &mut out, |v| v * 2.0);
        let mut inp = x.clone();
        map_f64_inplace(&mut inp, |v| v * 2.0);
        for i in 0..len {
            assert!(out[i].to_bits() == (x[i] * 2.0).to_bits() || x[i].is_nan());
            assert!(inp[i].to_bits() == (x[i] * 2.0).to_bits() || x[i].is_nan());
        }
    }
}

#[test]
#[should_panic(expected = "lengths differ")]
fn length_mismatch_panics() {
    exp_f32(&[1.0, 2.0], &mut [0.0]);
}

/// Accuracy over (a strided sample of) every f32 input; run in release:
/// `cargo test --release -p oxnet-ops simd_math -- --ignored --nocapture`.
#[test]
#[ignore]
fn accuracy_sweep() {
    // (name, kernel, reference, input range)
    type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f32, f32);
    let cases: [Case; 7] = [
        ("exp", scalar::exp_f32, f64::exp, -87.0, 88.0),
        ("log", scalar::log_f32, f64::ln, 0.0, f32::MAX),
        ("tanh", scalar::tanh_f32, f64::tanh, -f32::MAX, f32::MAX),
        ("sigmoid", scalar::sigmoid_f32, sigmoid_ref, -100.0, 100.0),
        ("erf", scalar::erf_f32, libm::erf, -f32::MAX, f32::MAX),
        ("sin", scalar::sin_f32, f64::sin, -1e5, 1e5),
        ("cos", scalar::cos_f32, f64::cos, -1e5, 1e5),
    ];
    for (name, f, reference, lo, hi) in cases {
        let errs: Vec<Err> = oxnet_core::parallel::map(16, |part| {
            let mut err = Err::default();
            let mut b = part as u64;
            while b <= u32::MAX as u64 {
                let x = f32::from_bits(b as u32);
                if x >= lo && x <= hi {
                    fold(name, x, f(x), reference(x as f64), &mut err);
                }
                b += 16 * 3;
            }
            err
        });
        let worst_rel = errs.iter().max_by(|a, b| a.rel.total_cmp(&b.rel)).unwrap();
        let worst_abs = errs.iter().max_by(|a, b| a.abs.total_cmp(&b.abs)).unwrap();
        let ulp = errs.iter().map(|e| e.ulp).fold(0.0, f64::max);
        println!(
            "{name:8} on [{lo:e}, {hi:e}]: max rel {:.3e} (x={:e}), max abs {:.3e} (x={:e}), max {ulp:.2} ulp",
            worst_rel.rel, worst_rel.rel_at, worst_abs.abs, worst_abs.abs_at
        );
    }
}

/// Single-thread throughput of the slice kernels on 1M f32 (best of many
/// runs, so a busy machine does not hide the peak); run in release:
/// `cargo test --release -p oxnet-ops simd_math_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn simd_math_speed() {
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 20.0 - 10.0).collect();
    let mut out = vec![0.0f32; n];
    let best_rate = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..300 {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        n as f64 / best / 1e9
    };
    println!("SIMD level: {} (OXNET_SIMD lowers it)", simd_level());
    let copy = oxnet_core::parallel::on_this_thread(|| {
        best_rate(&mut || map_f32(std::hint::black_box(&x), &mut out, |v| v))
    });
    println!("copy     1M f32: {copy:5.2} Gelem/s on 1 thread (memory ceiling)");
    for (name, slice_fn, _, _) in F32_FNS {
        let one = oxnet_core::parallel::on_this_thread(|| {
            best_rate(&mut || slice_fn(std::hint::black_box(&x), &mut out))
        });
        let all = best_rate(&mut || slice_fn(std::hint::black_box(&x), &mut out));
        // 16K elements (128 KiB in + out) stay in L2: compute throughput.
        let hot = best_rate(&mut || {
            for (xc, oc) in x.chunks(16384).zip(out.chunks_mut(16384)) {
                slice_fn(std::hint::black_box(xc), oc);
            }
        });
        println!(
            "{name:8} 1M f32: {one:5.2} Gelem/s on 1 thread, {all:5.2} on the pool; \
             16K-element calls: {hot:5.2} Gelem/s"
        );
    }
    let std_rate = best_rate(&mut || {
        for (o, &v) in out.iter_mut().zip(&x) {
            *o = std::hint::black_box(v).exp();
        }
    });
    println!("std f32::exp loop: {std_rate:.2} Gelem/s");
}

/// The special-function kernels (gamma, erfinv), tested with the helpers
/// above.
#[path = "special_tests.rs"]
mod special_tests;
