//! Backends: the [`MatmulBackend`] seam and the default [`CpuGemm`].

use gemm::Parallelism;
use half::{bf16, f16};

use super::views::check_shapes;
use super::{MatMut, MatRef, MatmulError, MatmulScalar, PARALLEL_WORK_THRESHOLD};

/// Something that can compute `dst = alpha·a·b` (or `dst += alpha·a·b`
/// when `accumulate`) for each supported element type.
///
/// The views arrive bounds-checked, with a non-overlapping destination, and
/// — when called through [`gemm_strided_with`](super::gemm_strided_with) — with matching shapes.
/// An implementation must honour the module's conventions: with `k == 0` the
/// destination is zeroed (left alone when accumulating), and when not
/// accumulating the old destination is never read.
pub trait MatmulBackend: Send + Sync {
    /// `f32` product.
    fn gemm_f32(
        &self,
        dst: MatMut<'_, f32>,
        a: MatRef<'_, f32>,
        b: MatRef<'_, f32>,
        alpha: f32,
        accumulate: bool,
    ) -> Result<(), MatmulError>;

    /// `f64` product.
    fn gemm_f64(
        &self,
        dst: MatMut<'_, f64>,
        a: MatRef<'_, f64>,
        b: MatRef<'_, f64>,
        alpha: f64,
        accumulate: bool,
    ) -> Result<(), MatmulError>;

    /// `f16` product.
    fn gemm_f16(
        &self,
        dst: MatMut<'_, f16>,
        a: MatRef<'_, f16>,
        b: MatRef<'_, f16>,
        alpha: f16,
        accumulate: bool,
    ) -> Result<(), MatmulError>;

    /// `bf16` product.
    fn gemm_bf16(
        &self,
        dst: MatMut<'_, bf16>,
        a: MatRef<'_, bf16>,
        b: MatRef<'_, bf16>,
        alpha: bf16,
        accumulate: bool,
    ) -> Result<(), MatmulError>;
}

/// The default backend: the `gemm` crate on the CPU.
///
/// [`CpuGemm::new`] (also the [`Default`]) threads products of at least
/// [`PARALLEL_WORK_THRESHOLD`] multiply-adds on rayon's current pool;
/// [`CpuGemm::single_threaded`] never threads (for callers that already run
/// many products in parallel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuGemm {
    threaded: bool,
}

impl Default for CpuGemm {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuGemm {
    /// A backend that threads large products.
    pub const fn new() -> Self {
        Self { threaded: true }
    }

    /// A backend that always runs on the calling thread.
    pub const fn single_threaded() -> Self {
        Self { threaded: false }
    }

    fn run<T: MatmulScalar>(
        &self,
        mut dst: MatMut<'_, T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        alpha: T,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        let (m, n, k) = check_shapes(&dst, &a, &b)?;
        let parallelism = choose_parallelism(m, n, k, self.threaded);
        // SAFETY: the views were bounds-checked on construction, `dst` is
        // injective (checked by `MatMut::new`) and, being borrowed mutably,
        // cannot overlap `a` or `b`; the shapes agree.
        unsafe {
            T::cpu_gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                dst.row_stride(),
                dst.col_stride(),
                accumulate,
                a.as_ptr(),
                a.row_stride(),
                a.col_stride(),
                b.as_ptr(),
                b.row_stride(),
                b.col_stride(),
                alpha,
                parallelism,
            );
        }
        Ok(())
    }
}

impl MatmulBackend for CpuGemm {
    fn gemm_f32(
        &self,
        dst: MatMut<'_, f32>,
        a: MatRef<'_, f32>,
        b: MatRef<'_, f32>,
        alpha: f32,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        self.run(dst, a, b, alpha, accumulate)
    }

    fn gemm_f64(
        &self,
        dst: MatMut<'_, f64>,
        a: MatRef<'_, f64>,
        b: MatRef<'_, f64>,
        alpha: f64,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        self.run(dst, a, b, alpha, accumulate)
    }

    fn gemm_f16(
        &self,
        dst: MatMut<'_, f16>,
        a: MatRef<'_, f16>,
        b: MatRef<'_, f16>,
        alpha: f16,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        self.run(dst, a, b, alpha, accumulate)
    }

    fn gemm_bf16(
        &self,
        dst: MatMut<'_, bf16>,
        a: MatRef<'_, bf16>,
        b: MatRef<'_, bf16>,
        alpha: bf16,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        self.run(dst, a, b, alpha, accumulate)
    }
}

/// Threads a product only when it is big enough to pay for it.
pub(super) fn choose_parallelism(m: usize, n: usize, k: usize, allow: bool) -> Parallelism {
    let work = m.saturating_mul(n).saturating_mul(k);
    if allow && work >= PARALLEL_WORK_THRESHOLD && rayon::current_num_threads() > 1 {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    }
}
