use half::{bf16, f16};

use super::backend::{gemm_threaded, split_for, through_column_major_scratch};
use super::*;

/// Test-side conversions and precision of each element type.
trait TestScalar: MatmulScalar + std::fmt::Debug {
    /// Unit roundoff of the storage type (one final rounding).
    const ROUND: f64;
    /// Unit roundoff of the accumulation (f32 for the half types).
    const ACC: f64;

    /// Error bound for a result `want` of `k` products whose absolute
    /// values sum to `mag`.
    fn tol(want: f64, mag: f64, k: usize) -> f64 {
        2.0 * Self::ROUND * (want.abs() + mag) + Self::ACC * (k as f64 + 4.0) * mag
    }
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl TestScalar for f32 {
    const ROUND: f64 = f32::EPSILON as f64 / 2.0;
    const ACC: f64 = f32::EPSILON as f64;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl TestScalar for f64 {
    const ROUND: f64 = f64::EPSILON / 2.0;
    const ACC: f64 = f64::EPSILON;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl TestScalar for f16 {
    const ROUND: f64 = 1.0 / 2048.0;
    const ACC: f64 = f32::EPSILON as f64;
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

impl TestScalar for bf16 {
    const ROUND: f64 = 1.0 / 256.0;
    const ACC: f64 = f32::EPSILON as f64;
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}

/// Deterministic values in multiples of 1/512 within [-2, 2], rounded to
/// `T` (exact in f16/f32/f64, rounded in bf16). The reference reads the
/// same rounded values; products need more bits than the accumulators
/// hold, so rounding in the kernels is exercised.
fn values<T: TestScalar>(len: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let q = ((s >> 33) % 2049) as i64 - 1024;
            T::from_f64(q as f64 / 512.0)
        })
        .collect()
}

/// Naive f64 reference for `matmul`, plus the per-element error bound.
#[allow(clippy::too_many_arguments)]
fn reference<T: TestScalar>(
    a: &[T],
    b: &[T],
    out0: &[T],
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
    acc: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut want = vec![0.0; m * n];
    let mut tol = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0.0, 0.0);
            for p in 0..k {
                let x = if ta { a[p * m + i] } else { a[i * k + p] }.to_f64();
                let y = if tb { b[j * k + p] } else { b[p * n + j] }.to_f64();
                s += x * y;
                mag += (x * y).abs();
            }
            if acc {
                s += out0[i * n + j].to_f64();
                mag += out0[i * n + j].to_f64().abs();
            }
            want[i * n + j] = s;
            tol[i * n + j] = T::tol(s, mag, k);
        }
    }
    (want, tol)
}

fn assert_close<T: TestScalar>(got: &[T], want: &[f64], tol: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (idx, ((g, w), t)) in got.iter().zip(want).zip(tol).enumerate() {
        let g = g.to_f64();
        assert!((g - w).abs() <= *t, "{what}: element {idx}: got {g}, want {w} (tol {t})");
    }
}

const SIZES: &[(usize, usize, usize)] = &[
    (0, 0, 0),
    (0, 3, 4),
    (3, 0, 4),
    (3, 4, 0),
    (1, 1, 1),
    (1, 5, 1),
    (2, 2, 2),
    (1, 33, 64),
    (64, 33, 1),
    (33, 1, 64),
    (5, 7, 3),
    (17, 33, 9),
    (130, 70, 90),
];

fn check_matmul<T: TestScalar>() {
    for &(m, k, n) in SIZES {
        for ta in [false, true] {
            for tb in [false, true] {
                for acc in [false, true] {
                    let a: Vec<T> = values(m * k, 1 + m as u64);
                    let b: Vec<T> = values(k * n, 2 + n as u64);
                    let out0: Vec<T> = if acc {
                        values(m * n, 3 + k as u64)
                    } else {
                        // Never read when not accumulating.
                        vec![T::from_f64(f64::NAN); m * n]
                    };
                    let mut out = out0.clone();
                    matmul(&a, &b, &mut out, m, k, n, ta, tb, acc).unwrap();
                    let (want, tol) = reference(&a, &b, &out0, m, k, n, ta, tb, acc);
                    let what =
                        format!("{} m={m} k={k} n={n} ta={ta} tb={tb} acc={acc}", std::any::type_name::<T>());
                    assert_close(&out, &want, &tol, &what);
                }
            }
        }
    }
}

#[test]
fn matmul_f32() {
    check_matmul::<f32>();
}

#[test]
fn matmul_f64() {
    check_matmul::<f64>();
}

#[test]
fn matmul_f16() {
    check_matmul::<f16>();
}

#[test]
fn matmul_bf16() {
    check_matmul::<bf16>();
}

#[test]
fn matmul_k_zero_semantics() {
    let mut out = vec![f32::NAN; 6];
    matmul::<f32>(&[], &[], &mut out, 2, 0, 3, false, false, false).unwrap();
    assert_eq!(out, vec![0.0; 6]);
    let mut out = vec![1.5f32; 6];
    matmul::<f32>(&[], &[], &mut out, 2, 0, 3, true, true, true).unwrap();
    assert_eq!(out, vec![1.5; 6]);
    let mut out = vec![bf16::from_f32(2.0); 6];
    matmul::<bf16>(&[], &[], &mut out, 3, 0, 2, false, false, true).unwrap();
    assert!(out.iter().all(|x| x.to_f32() == 2.0));
    matmul::<bf16>(&[], &[], &mut out, 3, 0, 2, false, false, false).unwrap();
    assert!(out.iter().all(|x| x.to_f32() == 0.0));
}

/// Exercises the threaded path (above the threshold) in every type: cut
/// along rows (tall output), along columns (wide output, e.g. a 64-row
/// batch), with uneven last pieces.
fn check_threaded<T: TestScalar>() {
    for (m, k, n) in [(200, 190, 210), (64, 100, 300), (300, 70, 50)] {
        assert!(m * k * n >= PARALLEL_WORK_THRESHOLD);
        if oxnet_core::parallel::num_threads() > 1 {
            let split = split_for(m, n, k, true);
            assert!(split.parts > 1);
            assert_eq!(split.along_rows, m >= n);
        }
        assert_eq!(split_for(m, n, k, false).parts, 1);
        for &(ta, tb, acc) in TWO {
            let a: Vec<T> = values(m * k, 11);
            let b: Vec<T> = values(k * n, 12);
            let out0: Vec<T> = values(m * n, 13);
            let mut out = out0.clone();
            matmul(&a, &b, &mut out, m, k, n, ta, tb, acc).unwrap();
            let (want, tol) = reference(&a, &b, &out0, m, k, n, ta, tb, acc);
            assert_close(&out, &want, &tol, &format!("threaded {m}x{k}x{n} ta={ta} tb={tb}"));
        }
    }
}

#[test]
fn matmul_threaded_all_types() {
    check_threaded::<f32>();
    check_threaded::<f64>();
    check_threaded::<f16>();
    check_threaded::<bf16>();
}

/// `X·Wᵀ` with a wide output goes through a column-major scratch (threaded
/// or not) and gives the same values in every type; accumulating, or a
/// tall output, stays on the direct path.
fn check_nt_scratch<T: TestScalar>() {
    for (m, k, n) in [(5, 40, 37), (48, 300, 130)] {
        // row-major dst (m x n), a (m x k) row-major, b given as its n x k transpose
        assert!(through_column_major_scratch(m, n, k, n as isize, 1, false, 1, 1));
        assert!(!through_column_major_scratch(m, n, k, n as isize, 1, true, 1, 1));
        assert!(!through_column_major_scratch(n, m, k, m as isize, 1, false, 1, 1));
        for acc in [false, true] {
            let a: Vec<T> = values(m * k, 21);
            let b: Vec<T> = values(k * n, 22);
            let out0: Vec<T> = values(m * n, 23);
            let mut out = out0.clone();
            matmul(&a, &b, &mut out, m, k, n, false, true, acc).unwrap();
            let (want, tol) = reference(&a, &b, &out0, m, k, n, false, true, acc);
            assert_close(&out, &want, &tol, &format!("X·Wᵀ {m}x{k}x{n} acc={acc}"));
        }
    }
}

#[test]
fn matmul_nt_through_scratch_all_types() {
    check_nt_scratch::<f32>();
    check_nt_scratch::<f64>();
    check_nt_scratch::<f16>();
    check_nt_scratch::<bf16>();
}

/// Every combination of (trans_a, trans_b, accumulate).
const ALL: &[(bool, bool, bool)] = &[
    (false, false, false),
    (false, false, true),
    (false, true, false),
    (false, true, true),
    (true, false, false),
    (true, false, true),
    (true, true, false),
    (true, true, true),
];
/// Two opposite combinations, for the expensive cases.
const TWO: &[(bool, bool, bool)] = &[(false, true, false), (true, false, true)];

fn check_batch<T: TestScalar>(batch: usize, m: usize, k: usize, n: usize, combos: &[(bool, bool, bool)]) {
    for &(ta, tb, acc) in combos {
        let a: Vec<T> = values(batch * m * k, 21);
        let b: Vec<T> = values(batch * k * n, 22);
        let out0: Vec<T> =
            if acc { values(batch * m * n, 23) } else { vec![T::from_f64(f64::NAN); batch * m * n] };
        let mut out = out0.clone();
        batch_matmul(&a, &b, &mut out, batch, m, k, n, ta, tb, acc).unwrap();
        for i in 0..batch {
            let (want, tol) = reference(
                &a[i * m * k..(i + 1) * m * k],
                &b[i * k * n..(i + 1) * k * n],
                &out0[i * m * n..(i + 1) * m * n],
                m,
                k,
                n,
                ta,
                tb,
                acc,
            );
            assert_close(
                &out[i * m * n..(i + 1) * m * n],
                &want,
                &tol,
                &format!("batch {i}/{batch} m={m} k={k} n={n} ta={ta} tb={tb}"),
            );
        }
    }
}

#[test]
fn batch_matmul_all_paths() {
    // Small products, small batch: sequential.
    assert!(!spread_over_batch(3, 4, 5, 6));
    check_batch::<f32>(3, 4, 5, 6, ALL);
    check_batch::<f16>(5, 17, 33, 9, ALL);
    check_batch::<bf16>(5, 17, 33, 9, ALL);
    // Small products, large batch: spread over threads.
    assert_eq!(spread_over_batch(512, 24, 24, 24), oxnet_core::parallel::num_threads() > 1);
    check_batch::<f32>(512, 24, 24, 24, ALL);
    check_batch::<f64>(512, 24, 24, 24, TWO);
    check_batch::<f16>(512, 24, 24, 24, TWO);
    check_batch::<bf16>(512, 24, 24, 24, TWO);
    // Large products: each threaded internally.
    assert!(!spread_over_batch(2, 200, 190, 210));
    check_batch::<f32>(2, 200, 190, 210, TWO);
    // Degenerate.
    check_batch::<f32>(0, 3, 4, 5, ALL);
    check_batch::<f32>(4, 0, 4, 5, ALL);
    check_batch::<f32>(4, 3, 0, 5, ALL);
    check_batch::<f64>(4, 3, 4, 0, ALL);
    check_batch::<f32>(1, 1, 1, 1, ALL);
}

#[test]
fn length_errors_do_not_panic_or_write() {
    let a = vec![1.0f32; 6];
    let b = vec![1.0f32; 12];
    let mut out = vec![7.0f32; 8];
    let err = matmul(&a[..5], &b, &mut out, 2, 3, 4, false, false, false).unwrap_err();
    assert!(matches!(err, MatmulError::LengthMismatch { operand: "a", expected: 6, actual: 5 }));
    assert!(matmul(&a, &b[..11], &mut out, 2, 3, 4, false, false, false).is_err());
    assert!(matmul(&a, &b, &mut out[..7], 2, 3, 4, false, false, false).is_err());
    assert!(matmul(&a, &b, &mut out, usize::MAX, 3, 4, false, false, false).is_err());
    assert!(batch_matmul(&a, &b, &mut out, 2, 1, 3, 4, false, false, false).is_err());
    assert!(out.iter().all(|&x| x == 7.0));
    assert!(!err.to_string().is_empty());
}

#[test]
fn views_are_checked() {
    let data = vec![0.0f64; 12];
    assert!(MatRef::new(&data, 0, 3, 4, 4, 1).is_ok());
    assert!(MatRef::new(&data, 1, 3, 4, 4, 1).is_err());
    assert!(MatRef::new(&data, 11, 3, 4, -4, -1).is_ok());
    assert!(MatRef::new(&data, 10, 3, 4, -4, -1).is_err());
    assert!(MatRef::new(&data, 0, 3, 4, 0, 0).is_ok());
    assert!(MatRef::new(&data, 99, 0, 4, 4, 1).is_ok());
    assert!(MatRef::new(&data, 0, 3, 4, isize::MAX, 1).is_err());
    assert_eq!(MatRef::new(&data, 0, usize::MAX, 1, 0, 0).unwrap_err(), MatmulError::Overflow);
    let mut d = vec![0.0f64; 12];
    assert!(MatMut::new(&mut d, 0, 3, 4, 0, 1).is_err());
    assert!(MatMut::new(&mut d, 0, 3, 4, 2, 1).is_err());
    assert!(MatMut::new(&mut d, 0, 3, 4, 1, 3).is_ok());
    assert!(MatMut::new(&mut d, 0, 1, 4, 0, 1).is_ok());
    assert!(MatMut::new(&mut d, 0, 4, 1, 0, 1).is_err());
    assert_eq!(MatMut::new(&mut d, 0, 2, 6, 3, 1).unwrap_err(), MatmulError::OverlappingDestination);
    // Shape mismatch is an error, not a panic.
    let a = MatRef::new(&data, 0, 3, 4, 4, 1).unwrap();
    let b = MatRef::new(&data, 0, 3, 4, 4, 1).unwrap();
    let dst = MatMut::new(&mut d, 0, 3, 4, 4, 1).unwrap();
    assert!(matches!(gemm_strided(dst, a, b, 1.0, false), Err(MatmulError::ShapeMismatch { .. })));
}

/// Offsets, negative and padded strides, alpha, and untouched padding.
fn check_strided<T: TestScalar>() {
    let (m, k, n) = (7, 5, 6);
    // a: m x k read backwards through a padded buffer.
    let a_buf: Vec<T> = values(3 + m * 9, 31);
    let a = MatRef::new(&a_buf, 3 + (m - 1) * 9 + (k - 1), m, k, -9, -1).unwrap();
    // b: k x n, column-major inside a larger buffer.
    let b_buf: Vec<T> = values(2 + n * 8, 32);
    let b = MatRef::new(&b_buf, 2, k, n, 1, 8).unwrap();
    // dst: an m x n block inside a 10 x 10 canvas, rows reversed.
    let canvas0: Vec<T> = values(100, 33);
    for acc in [false, true] {
        let mut canvas = canvas0.clone();
        let off = 10 * (1 + m - 1) + 2;
        let dst = MatMut::new(&mut canvas, off, m, n, -10, 1).unwrap();
        let alpha = T::from_f64(-0.5);
        gemm_strided(dst, a, b, alpha, acc).unwrap();
        for r in 0..10 {
            for c in 0..10 {
                let inside = (1..1 + m).contains(&r) && (2..2 + n).contains(&c);
                let got = canvas[r * 10 + c].to_f64();
                let old = canvas0[r * 10 + c].to_f64();
                if !inside {
                    assert_eq!(got, old, "padding touched at ({r}, {c})");
                    continue;
                }
                let i = m - r; // canvas row r holds dst row m - r
                let j = c - 2;
                let (mut s, mut mag) = (0.0, 0.0);
                for p in 0..k {
                    let x = a.get(i, p).unwrap().to_f64();
                    let y = b.get(p, j).unwrap().to_f64();
                    s += x * y;
                    mag += (x * y).abs();
                }
                s *= -0.5;
                mag *= 0.5;
                if acc {
                    s += old;
                    mag += old.abs();
                }
                let tol = T::tol(s, mag, k);
                assert!((got - s).abs() <= tol, "({r}, {c}): got {got}, want {s}");
            }
        }
    }
}

#[test]
fn gemm_strided_general_layouts() {
    check_strided::<f32>();
    check_strided::<f64>();
    check_strided::<f16>();
    check_strided::<bf16>();
}

#[test]
fn transposed_views_and_custom_backend() {
    /// A backend that only counts calls, forwarding to the CPU one.
    struct Counting(std::sync::atomic::AtomicUsize);
    impl MatmulBackend for Counting {
        fn gemm_f32(
            &self,
            dst: MatMut<'_, f32>,
            a: MatRef<'_, f32>,
            b: MatRef<'_, f32>,
            alpha: f32,
            accumulate: bool,
        ) -> Result<(), MatmulError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            CpuGemm::new().gemm_f32(dst, a, b, alpha, accumulate)
        }
        fn gemm_f64(
            &self,
            dst: MatMut<'_, f64>,
            a: MatRef<'_, f64>,
            b: MatRef<'_, f64>,
            alpha: f64,
            accumulate: bool,
        ) -> Result<(), MatmulError> {
            CpuGemm::new().gemm_f64(dst, a, b, alpha, accumulate)
        }
        fn gemm_f16(
            &self,
            dst: MatMut<'_, f16>,
            a: MatRef<'_, f16>,
            b: MatRef<'_, f16>,
            alpha: f16,
            accumulate: bool,
        ) -> Result<(), MatmulError> {
            CpuGemm::new().gemm_f16(dst, a, b, alpha, accumulate)
        }
        fn gemm_bf16(
            &self,
            dst: MatMut<'_, bf16>,
            a: MatRef<'_, bf16>,
            b: MatRef<'_, bf16>,
            alpha: bf16,
            accumulate: bool,
        ) -> Result<(), MatmulError> {
            CpuGemm::new().gemm_bf16(dst, a, b, alpha, accumulate)
        }
    }
    let backend = Counting(Default::default());
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
    let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3 x 2
    let mut out = [0.0f32; 4];
    matmul_with(&backend, &a, &b, &mut out, 2, 3, 2, false, false, false).unwrap();
    assert_eq!(out, [4.0, 5.0, 10.0, 11.0]);
    // (a·b)ᵀ = bᵀ·aᵀ, computed through transposed views.
    let mut outt = [0.0f32; 4];
    let at = MatRef::row_major(&a, 2, 3).unwrap().t();
    let bt = MatRef::row_major(&b, 3, 2).unwrap().t();
    let dst = MatMut::row_major(&mut outt, 2, 2).unwrap();
    gemm_strided_with(&backend, dst, bt, at, 1.0, false).unwrap();
    assert_eq!(outt, [4.0, 10.0, 5.0, 11.0]);
    assert_eq!(backend.0.load(std::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn raw_entry_point() {
    let a = [1.0f64, 2.0, 3.0, 4.0];
    let b = [5.0f64, 6.0, 7.0, 8.0];
    let mut out = [1.0f64; 4];
    // SAFETY: 2 x 2 row-major matrices in distinct arrays.
    unsafe {
        gemm_threaded(2, 2, 2, out.as_mut_ptr(), 2, 1, true, a.as_ptr(), 2, 1, b.as_ptr(), 2, 1, 2.0, true);
    }
    assert_eq!(out, [39.0, 45.0, 87.0, 101.0]);
}
