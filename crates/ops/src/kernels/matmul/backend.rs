//! Backends: the [`MatmulBackend`] seam and the default [`CpuGemm`].

use half::{bf16, f16};

use super::views::check_shapes;
use super::{MatMut, MatRef, MatmulError, MatmulScalar, PARALLEL_WORK_THRESHOLD};
use oxnet_core::parallel;

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
/// [`CpuGemm::new`] (also the [`Default`]) splits products of at least
/// [`PARALLEL_WORK_THRESHOLD`] multiply-adds over [`oxnet_core::parallel`]'s pool;
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
        // SAFETY: the views were bounds-checked on construction, `dst` is
        // injective (checked by `MatMut::new`) and, being borrowed mutably,
        // cannot overlap `a` or `b`; the shapes agree.
        unsafe {
            gemm_threaded(
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
                self.threaded,
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

/// How a product is cut for the pool: `parts` pieces of whole output rows
/// (`along_rows`) or columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) parts: usize,
    pub(super) along_rows: bool,
}

impl Split {
    /// Rows or columns per piece of a side of `side`: a multiple of 16 (the
    /// `gemm` tiles), the last piece taking the rest.
    fn piece_len(&self, side: usize) -> usize {
        side.div_ceil(self.parts.max(1)).div_ceil(16) * 16
    }
}

/// Output rows or columns below which a piece is not worth a thread (the
/// `gemm` kernels work on 16-wide tiles; thinner pieces waste them).
const MIN_PIECE: usize = 32;

/// Cuts a product into one piece per thread when it has at least
/// [`PARALLEL_WORK_THRESHOLD`] multiply-adds, along the longer side of the
/// output (rows on a tie: measured faster for the square weight gradients
/// of an MLP, and no slower elsewhere).
pub(super) fn split_for(m: usize, n: usize, k: usize, allow: bool) -> Split {
    let work = m.saturating_mul(n).saturating_mul(k);
    let threads = if allow { parallel::num_threads() } else { 1 };
    let along_rows = m >= n;
    let side = if along_rows { m } else { n };
    let by_work = work / PARALLEL_WORK_THRESHOLD.max(1);
    let parts = threads.min(side / MIN_PIECE).min(by_work.max(1)).max(1);
    Split { parts: if work < PARALLEL_WORK_THRESHOLD { 1 } else { parts }, along_rows }
}

/// Raw pointers of one product, to hand to the pool's threads.
#[derive(Clone, Copy)]
struct Operands<T> {
    dst: *mut T,
    a: *const T,
    b: *const T,
}

// SAFETY: the pieces a product is cut into write disjoint parts of `dst`
// and only read `a` and `b` (see `gemm_threaded`).
unsafe impl<T: Send> Send for Operands<T> {}
unsafe impl<T: Sync> Sync for Operands<T> {}

impl<T> Operands<T> {
    /// The three pointers (a method, so closures capture the whole struct).
    fn get(&self) -> (*mut T, *const T, *const T) {
        (self.dst, self.a, self.b)
    }
}

/// `dst = alpha·a·b` (+ `dst` when `accumulate`), cut into pieces of whole
/// output rows or columns that run in parallel when threading is `allow`ed
/// and the product is big enough ([`split_for`]).
///
/// # Safety
/// As for the sealed `cpu_gemm`: every element of the three views is valid,
/// `dst`'s elements are pairwise distinct and do not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm_threaded<T: MatmulScalar>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    dst_cs: isize,
    accumulate: bool,
    a: *const T,
    a_rs: isize,
    a_cs: isize,
    b: *const T,
    b_rs: isize,
    b_cs: isize,
    alpha: T,
    allow: bool,
) {
    if through_column_major_scratch(m, n, k, dst_rs, dst_cs, accumulate, a_cs, b_rs) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { gemm_nt_via_scratch(m, n, k, dst, dst_rs, a, a_rs, b, b_cs, alpha, allow) };
        return;
    }
    let split = split_for(m, n, k, allow);
    if split.parts <= 1 {
        // SAFETY: forwarded from the caller's contract.
        unsafe { T::cpu_gemm(m, n, k, dst, dst_rs, dst_cs, accumulate, a, a_rs, a_cs, b, b_rs, b_cs, alpha) };
        return;
    }
    let ops = Operands { dst, a, b };
    let side = if split.along_rows { m } else { n };
    let step = split.piece_len(side);
    parallel::for_each(side.div_ceil(step), |p| {
        let (dst, a, b) = ops.get();
        let start = p * step;
        let len = step.min(side - start);
        let at = start as isize;
        // SAFETY: piece `p` is the product restricted to output rows (or
        // columns) `start..start + len`, all inside the views; pieces write
        // disjoint parts of `dst` (its elements are pairwise distinct) and
        // every piece runs before `for_each` returns, while the views live.
        unsafe {
            if split.along_rows {
                T::cpu_gemm(
                    len,
                    n,
                    k,
                    dst.wrapping_offset(at * dst_rs),
                    dst_rs,
                    dst_cs,
                    accumulate,
                    a.wrapping_offset(at * a_rs),
                    a_rs,
                    a_cs,
                    b,
                    b_rs,
                    b_cs,
                    alpha,
                )
            } else {
                T::cpu_gemm(
                    m,
                    len,
                    k,
                    dst.wrapping_offset(at * dst_cs),
                    dst_rs,
                    dst_cs,
                    accumulate,
                    a,
                    a_rs,
                    a_cs,
                    b.wrapping_offset(at * b_cs),
                    b_rs,
                    b_cs,
                    alpha,
                )
            }
        }
    });
}

/// Whether [`gemm_nt_via_scratch`] beats handing the product to `gemm` as
/// it is: a row-major output (`gemm` then computes the transposed product,
/// whose left operand is `b`) from a row-major `a` and a `b` stored as its
/// row-major transpose (`X·Wᵀ`, what FullyConnected's forward computes).
/// Both operands then run along `k`, and `gemm` repacks its left one
/// transposed: `n·k` elements. Computing into a column-major scratch makes
/// `a` the left operand instead (`m·k` elements) at the price of a
/// transposing copy of the `m·n` result, which pays when `n` is larger
/// than `m` by enough: `(n - m)·k ≥ 2·m·n`. The MLP's 64x784 by 784x256
/// forward product: 163 -> 137 us on two threads, 290 -> 247 us on one.
#[allow(clippy::too_many_arguments)]
pub(super) fn through_column_major_scratch(
    m: usize,
    n: usize,
    k: usize,
    dst_rs: isize,
    dst_cs: isize,
    accumulate: bool,
    a_cs: isize,
    b_rs: isize,
) -> bool {
    /// The largest scratch (elements) worth allocating per product.
    const MAX_SCRATCH: usize = 1 << 20;
    !accumulate
        && dst_cs == 1
        && dst_rs >= n as isize
        && a_cs == 1
        && b_rs == 1
        && m > 0
        && m < n
        && m.saturating_mul(n) <= MAX_SCRATCH
        && (n - m).saturating_mul(k) >= 2 * m * n
}

/// `dst = alpha·a·b` for the case [`through_column_major_scratch`]
/// accepts: each piece of output columns (one per thread, as
/// [`split_for`] cuts products) goes into its part of a column-major
/// `m x n` scratch, then the same thread copies it into those columns of
/// the row-major `dst`, block by block, while it is still in its cache.
///
/// # Safety
/// As for [`gemm_threaded`], with `dst` row-major (column stride 1), `a`
/// of column stride 1 and `b` of row stride 1.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_nt_via_scratch<T: MatmulScalar>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    a: *const T,
    a_rs: isize,
    b: *const T,
    b_cs: isize,
    alpha: T,
    allow: bool,
) {
    // Written by `gemm` (which does not read it: no accumulation) before
    // the copy reads it; never viewed as a slice, so it may start uninitialised.
    let mut scratch: Vec<T> = Vec::with_capacity(m * n);
    let ops = Operands { dst, a, b };
    let scratch_at = scratch.as_mut_ptr() as usize;
    let split = split_for(m, n, k, allow);
    let step = split.piece_len(n);
    parallel::for_each(n.div_ceil(step), |p| {
        let (dst, a, b) = ops.get();
        let sp = scratch_at as *mut T;
        let (c0, len) = (p * step, step.min(n - p * step));
        // SAFETY: this piece writes scratch columns c0..c0 + len (elements
        // c0·m .. (c0 + len)·m, inside the m·n allocated) and dst columns
        // c0..c0 + len of every row; pieces are disjoint, and every piece
        // finishes before `for_each` returns, while the scratch lives.
        unsafe {
            let piece = sp.add(c0 * m);
            T::cpu_gemm(
                m,
                len,
                k,
                piece,
                1,
                m as isize,
                false,
                a,
                a_rs,
                1,
                b.offset(c0 as isize * b_cs),
                1,
                b_cs,
                alpha,
            );
            copy_transposed(m, len, piece, dst.add(c0), dst_rs);
        }
    });
}

/// Copies the column-major `rows x cols` block at `src` (column stride
/// `rows`) into the row-major one at `dst` (row stride `dst_rs`), in
/// square tiles whose source columns and destination rows stay in L1.
///
/// # Safety
/// Both blocks are valid for the elements they describe and do not overlap.
unsafe fn copy_transposed<T: Copy>(rows: usize, cols: usize, src: *const T, dst: *mut T, dst_rs: isize) {
    const TILE: usize = 32;
    for i0 in (0..rows).step_by(TILE) {
        for j0 in (0..cols).step_by(TILE) {
            for i in i0..(i0 + TILE).min(rows) {
                // SAFETY: (i, j) is inside both blocks.
                unsafe {
                    let row = dst.offset(i as isize * dst_rs);
                    for j in j0..(j0 + TILE).min(cols) {
                        *row.add(j) = *src.add(i + j * rows);
                    }
                }
            }
        }
    }
}
