//! Matrix products: the engine's single entry point for GEMM.
//!
//! Every matrix product in oxnet goes through this module. The default
//! implementation, [`CpuGemm`], runs on the [`gemm`] crate; the
//! [`MatmulBackend`] trait is the seam where a BLAS or GPU library can stand
//! in later without touching the callers.
//!
//! Layers, from the most convenient to the most general:
//!
//! * [`matmul`] and [`batch_matmul`] work on contiguous row-major slices and
//!   express transposed operands through strides (nothing is ever copied,
//!   except for `bf16`, see below).
//! * [`gemm_strided`] / [`gemm_strided_with`] take arbitrary strided views,
//!   [`MatRef`] and [`MatMut`], whose constructors check that every element
//!   they describe lies inside the underlying slice.
//! * `backend::gemm_threaded` (module-private, `unsafe`) takes raw pointers
//!   and splits the product over the thread pool; [`CpuGemm`] ends there.
//!
//! All of them compute `dst = alpha·a·b` or, when `accumulate` is true,
//! `dst = dst + alpha·a·b`. Bad sizes are reported through [`MatmulError`],
//! never by panicking. Degenerate sizes are handled: with `m == 0` or
//! `n == 0` nothing is touched, and with `k == 0` the destination is zeroed
//! (or left unchanged when accumulating). When not accumulating, the old
//! contents of the destination are never read, so it may hold NaNs.
//!
//! Supported element types are `f32`, `f64`, [`half::f16`] (native in `gemm`)
//! and [`half::bf16`] (`gemm` has no `bf16` kernels: operands are converted to
//! `f32`, multiplied, and the result is rounded back once).
//!
//! Threading: products with at least [`PARALLEL_WORK_THRESHOLD`]
//! multiply-adds are cut into one piece of whole output rows or columns per
//! thread of [`oxnet_core::parallel`]'s pool, each piece a single-threaded `gemm`
//! call; smaller ones run on the calling thread so tiny products pay no
//! synchronisation cost. (`gemm`'s own threading, on rayon, is not used: it
//! scaled poorly on the 64-row products of a training step.)

mod backend;
mod element;
mod views;

#[cfg(test)]
mod tests;

pub use backend::{CpuGemm, MatmulBackend};
pub use element::MatmulScalar;
pub use views::{MatMut, MatRef};

use views::{check_shapes, checked_len, to_isize};

/// Minimum `m·n·k` (multiply-adds) for one product to be split across
/// the pool's threads. Below it, a product runs on the calling thread.
///
/// A product is cut into at most `m·n·k / PARALLEL_WORK_THRESHOLD` pieces,
/// so splitting starts at twice this work. The pool's helpers are usually
/// awake between operators (see [`oxnet_core::parallel`]), so a split pays from
/// about ten microseconds of work on. Measured on two cores with 5–50 µs of
/// serial work between calls (single thread → split): 64×64×64 6–8 µs, not
/// split; 128³ 46–64 → 31–33 µs; 64×256×64 29–37 → 17–19 µs; 64×256×256
/// 92–100 → 51–95 µs; 64×784×256 286–317 → 148–286 µs.
pub const PARALLEL_WORK_THRESHOLD: usize = 64 * 64 * 64;

/// Why a matrix product was refused. Nothing is written when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatmulError {
    /// A contiguous operand does not hold exactly the number of elements its
    /// shape calls for.
    #[error("matmul: `{operand}` has {actual} elements, expected {expected}")]
    LengthMismatch {
        /// Which operand: `"a"`, `"b"` or `"out"` for [`matmul`] and
        /// [`batch_matmul`], `"matrix"` for [`MatRef::row_major`] and
        /// [`MatMut::row_major`].
        operand: &'static str,
        /// Elements required by the shape.
        expected: usize,
        /// Elements actually supplied.
        actual: usize,
    },
    /// The shapes of the destination and the two factors do not agree.
    #[error(
        "matmul: shape mismatch: dst is {dst_rows}x{dst_cols}, a is {a_rows}x{a_cols}, \
         b is {b_rows}x{b_cols}"
    )]
    ShapeMismatch {
        /// Rows of the destination.
        dst_rows: usize,
        /// Columns of the destination.
        dst_cols: usize,
        /// Rows of the left factor.
        a_rows: usize,
        /// Columns of the left factor.
        a_cols: usize,
        /// Rows of the right factor.
        b_rows: usize,
        /// Columns of the right factor.
        b_cols: usize,
    },
    /// A strided view reaches outside the slice it was built on.
    #[error(
        "matmul: a {rows}x{cols} view at offset {offset} with strides ({row_stride}, \
         {col_stride}) does not fit in {len} elements"
    )]
    OutOfBounds {
        /// Rows of the view.
        rows: usize,
        /// Columns of the view.
        cols: usize,
        /// Offset of element (0, 0).
        offset: usize,
        /// Distance between consecutive rows, in elements.
        row_stride: isize,
        /// Distance between consecutive columns, in elements.
        col_stride: isize,
        /// Length of the underlying slice.
        len: usize,
    },
    /// A destination view maps two different elements to the same memory.
    #[error("matmul: the destination's strides make distinct elements share memory")]
    OverlappingDestination,
    /// A size computation does not fit in the machine's integers.
    #[error("matmul: size overflow")]
    Overflow,
}

/// True when a batch should be spread over the pool's threads: each product
/// is too small to thread on its own, but the batch as a whole is large
/// enough.
fn spread_over_batch(batch: usize, m: usize, k: usize, n: usize) -> bool {
    let work = m.saturating_mul(n).saturating_mul(k);
    batch > 1
        && work < PARALLEL_WORK_THRESHOLD
        && work.saturating_mul(batch) >= PARALLEL_WORK_THRESHOLD
        && oxnet_core::parallel::num_threads() > 1
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// Strided product on the default backend ([`CpuGemm::new`]):
/// `dst = alpha·a·b`, or `dst = dst + alpha·a·b` when `accumulate`.
///
/// `dst` must be `m x n`, `a` `m x k` and `b` `k x n`, otherwise
/// [`MatmulError::ShapeMismatch`] is returned and nothing is written.
pub fn gemm_strided<T: MatmulScalar>(
    dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    alpha: T,
    accumulate: bool,
) -> Result<(), MatmulError> {
    gemm_strided_with(&CpuGemm::new(), dst, a, b, alpha, accumulate)
}

/// Strided product on a chosen backend; same contract as [`gemm_strided`].
pub fn gemm_strided_with<T: MatmulScalar, B: MatmulBackend + ?Sized>(
    backend: &B,
    dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    alpha: T,
    accumulate: bool,
) -> Result<(), MatmulError> {
    check_shapes(&dst, &a, &b)?;
    T::dispatch(backend, dst, a, b, alpha, accumulate)
}

/// Row and column strides of a row-major operand that is logically
/// `rows x cols`, stored as `cols x rows` when `trans`.
fn operand_strides(rows: usize, cols: usize, trans: bool) -> Result<(isize, isize), MatmulError> {
    Ok(if trans { (1, to_isize(rows)?) } else { (to_isize(cols)?, 1) })
}

fn check_len(operand: &'static str, actual: usize, expected: usize) -> Result<(), MatmulError> {
    if actual != expected {
        return Err(MatmulError::LengthMismatch { operand, expected, actual });
    }
    Ok(())
}

/// One product on contiguous operands whose lengths are already checked.
#[allow(clippy::too_many_arguments)]
fn matmul_unchecked_len<T: MatmulScalar, B: MatmulBackend + ?Sized>(
    backend: &B,
    a: &[T],
    b: &[T],
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
    trans_a: bool,
    trans_b: bool,
    accumulate: bool,
) -> Result<(), MatmulError> {
    let (a_rs, a_cs) = operand_strides(m, k, trans_a)?;
    let (b_rs, b_cs) = operand_strides(k, n, trans_b)?;
    let a = MatRef::new(a, 0, m, k, a_rs, a_cs)?;
    let b = MatRef::new(b, 0, k, n, b_rs, b_cs)?;
    let out = MatMut::new(out, 0, m, n, to_isize(n)?, 1)?;
    gemm_strided_with(backend, out, a, b, T::ONE, accumulate)
}

/// Product of contiguous row-major matrices on the default backend:
/// `out = op(a)·op(b)`, or `out += op(a)·op(b)` when `accumulate`.
///
/// `op(a)` is `m x k`: `a` holds it row-major, or — when `trans_a` — holds
/// its transpose (`k x m` row-major). Likewise `op(b)` is `k x n`, stored
/// `n x k` when `trans_b`. `out` is `m x n` row-major. Transposes are
/// strides, not copies. Each slice must hold exactly its matrix, otherwise
/// [`MatmulError::LengthMismatch`] is returned and nothing is written.
#[allow(clippy::too_many_arguments)]
pub fn matmul<T: MatmulScalar>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
    trans_a: bool,
    trans_b: bool,
    accumulate: bool,
) -> Result<(), MatmulError> {
    matmul_with(&CpuGemm::new(), a, b, out, m, k, n, trans_a, trans_b, accumulate)
}

/// [`matmul`] on a chosen backend.
#[allow(clippy::too_many_arguments)]
pub fn matmul_with<T: MatmulScalar, B: MatmulBackend + ?Sized>(
    backend: &B,
    a: &[T],
    b: &[T],
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
    trans_a: bool,
    trans_b: bool,
    accumulate: bool,
) -> Result<(), MatmulError> {
    check_len("a", a.len(), checked_len(m, k)?)?;
    check_len("b", b.len(), checked_len(k, n)?)?;
    check_len("out", out.len(), checked_len(m, n)?)?;
    matmul_unchecked_len(backend, a, b, out, m, k, n, trans_a, trans_b, accumulate)
}

/// A batch of independent [`matmul`]s on the default backend.
///
/// `a` holds `batch` consecutive `op(a)` matrices (`m·k` elements each),
/// `b` holds `batch` `op(b)` matrices (`k·n` each) and `out` receives
/// `batch` `m x n` results; transposes and `accumulate` apply to every
/// product. When each product is below [`PARALLEL_WORK_THRESHOLD`] but the
/// batch as a whole is not, the batch is spread over the pool's threads
/// (each product single-threaded); otherwise the products run in turn and
/// each is threaded internally if large enough.
#[allow(clippy::too_many_arguments)]
pub fn batch_matmul<T: MatmulScalar>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    trans_a: bool,
    trans_b: bool,
    accumulate: bool,
) -> Result<(), MatmulError> {
    let a_step = checked_len(m, k)?;
    let b_step = checked_len(k, n)?;
    let out_step = checked_len(m, n)?;
    check_len("a", a.len(), checked_len(batch, a_step)?)?;
    check_len("b", b.len(), checked_len(batch, b_step)?)?;
    check_len("out", out.len(), checked_len(batch, out_step)?)?;
    // Also guards the chunk sizes below against zero.
    if out.is_empty() {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            out.fill(T::ZERO);
        }
        return Ok(());
    }
    if spread_over_batch(batch, m, k, n) {
        let backend = CpuGemm::single_threaded();
        let per_task = batch.div_ceil(oxnet_core::parallel::num_threads() * 4);
        oxnet_core::parallel::try_for_each_chunk_mut(out, out_step * per_task, |t, outs| {
            let first = t * per_task;
            outs.chunks_mut(out_step).enumerate().try_for_each(|(i, o)| {
                let (a, b) = (&a[(first + i) * a_step..][..a_step], &b[(first + i) * b_step..][..b_step]);
                matmul_unchecked_len(&backend, a, b, o, m, k, n, trans_a, trans_b, accumulate)
            })
        })
    } else {
        let backend = CpuGemm::new();
        out.chunks_mut(out_step).zip(a.chunks(a_step)).zip(b.chunks(b_step)).try_for_each(|((o, a), b)| {
            matmul_unchecked_len(&backend, a, b, o, m, k, n, trans_a, trans_b, accumulate)
        })
    }
}
