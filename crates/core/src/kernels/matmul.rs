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
//! * `gemm_strided_raw` (crate-private, `unsafe`) takes raw pointers.
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
//! multiply-adds run on rayon's current pool; smaller ones run on the calling
//! thread so tiny products pay no synchronisation cost.

use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;

/// Minimum `m·n·k` (multiply-adds) for one product to be split across
/// rayon's threads. Below it, a product runs on the calling thread.
///
/// Measured with square `f32` products, each threaded call following a
/// single-threaded one (so rayon's workers may be asleep, as between the
/// engine's operators): threading costs time up to 128³ (0.5× at 96³,
/// 0.8× at 128³), breaks even around 144³–160³, and gains from 192³ on
/// (about 1.4× at 192³, 1.6× at 256³ and 1.8× at 384³ on two cores).
pub const PARALLEL_WORK_THRESHOLD: usize = 192 * 192 * 192;

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

// ---------------------------------------------------------------------------
// Strided views
// ---------------------------------------------------------------------------

/// Checks that every element of a `rows x cols` view lies inside `len`.
/// Returns the offset to store (0 for an empty view, which is never read).
fn check_view(
    len: usize,
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
) -> Result<usize, MatmulError> {
    // Keeps every index `gemm` computes (`i as isize * stride`) exact.
    if rows > isize::MAX as usize || cols > isize::MAX as usize {
        return Err(MatmulError::Overflow);
    }
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    let r = (rows as i128 - 1) * row_stride as i128;
    let c = (cols as i128 - 1) * col_stride as i128;
    let lo = offset as i128 + r.min(0) + c.min(0);
    let hi = offset as i128 + r.max(0) + c.max(0);
    if lo < 0 || hi >= len as i128 {
        return Err(MatmulError::OutOfBounds {
            rows,
            cols,
            offset,
            row_stride,
            col_stride,
            len,
        });
    }
    Ok(offset)
}

/// True when no two elements of a `rows x cols` view share an address.
///
/// Sufficient condition (exact for the usual layouts): along the dimension
/// with the smaller absolute stride, the whole extent fits between two
/// steps of the other dimension.
fn is_injective(rows: usize, cols: usize, row_stride: isize, col_stride: isize) -> bool {
    let mut dims = [
        (rows, row_stride.unsigned_abs()),
        (cols, col_stride.unsigned_abs()),
    ];
    if rows == 0 || cols == 0 {
        return true;
    }
    if rows == 1 || cols == 1 {
        let (extent, stride) = if rows > 1 { dims[0] } else { dims[1] };
        return extent <= 1 || stride != 0;
    }
    if dims[0].1 > dims[1].1 {
        dims.swap(0, 1);
    }
    let (inner, outer) = (dims[0], dims[1]);
    inner.1 != 0 && (inner.0 as u128) * (inner.1 as u128) <= outer.1 as u128
}

fn to_isize(x: usize) -> Result<isize, MatmulError> {
    isize::try_from(x).map_err(|_| MatmulError::Overflow)
}

fn checked_len(x: usize, y: usize) -> Result<usize, MatmulError> {
    x.checked_mul(y).ok_or(MatmulError::Overflow)
}

/// A read-only, bounds-checked strided matrix view over a slice.
///
/// Element `(i, j)` lives at `data[offset + i·row_stride + j·col_stride]`.
/// Strides are in elements and may be zero (broadcast) or negative.
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T> MatRef<'a, T> {
    /// Builds a view, checking that every element it describes is inside
    /// `data`.
    pub fn new(
        data: &'a [T],
        offset: usize,
        rows: usize,
        cols: usize,
        row_stride: isize,
        col_stride: isize,
    ) -> Result<Self, MatmulError> {
        let offset = check_view(data.len(), offset, rows, cols, row_stride, col_stride)?;
        Ok(Self {
            data,
            offset,
            rows,
            cols,
            row_stride,
            col_stride,
        })
    }

    /// Views `data` as a contiguous row-major `rows x cols` matrix; its
    /// length must be exactly `rows·cols`.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self, MatmulError> {
        let expected = checked_len(rows, cols)?;
        if data.len() != expected {
            return Err(MatmulError::LengthMismatch {
                operand: "matrix",
                expected,
                actual: data.len(),
            });
        }
        Self::new(data, 0, rows, cols, to_isize(cols)?, 1)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance between consecutive rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.row_stride
    }

    /// Distance between consecutive columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.col_stride
    }

    /// The transposed view (no data moves).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Element `(i, j)`, or `None` outside the view.
    pub fn get(&self, i: usize, j: usize) -> Option<&'a T> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        let idx =
            self.offset as isize + i as isize * self.row_stride + j as isize * self.col_stride;
        self.data.get(idx as usize)
    }

    /// Pointer to element (0, 0). Only dereferenced for non-empty views.
    fn as_ptr(&self) -> *const T {
        self.data.as_ptr().wrapping_add(self.offset)
    }
}

/// A mutable, bounds-checked strided matrix view over a slice.
///
/// Same layout rules as [`MatRef`], plus: no two elements may share memory
/// (checked on construction), so a product can write them in parallel.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T> MatMut<'a, T> {
    /// Builds a view, checking that every element it describes is inside
    /// `data` and that distinct elements do not overlap.
    pub fn new(
        data: &'a mut [T],
        offset: usize,
        rows: usize,
        cols: usize,
        row_stride: isize,
        col_stride: isize,
    ) -> Result<Self, MatmulError> {
        let offset = check_view(data.len(), offset, rows, cols, row_stride, col_stride)?;
        if !is_injective(rows, cols, row_stride, col_stride) {
            return Err(MatmulError::OverlappingDestination);
        }
        Ok(Self {
            data,
            offset,
            rows,
            cols,
            row_stride,
            col_stride,
        })
    }

    /// Views `data` as a contiguous row-major `rows x cols` matrix; its
    /// length must be exactly `rows·cols`.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self, MatmulError> {
        let expected = checked_len(rows, cols)?;
        if data.len() != expected {
            return Err(MatmulError::LengthMismatch {
                operand: "matrix",
                expected,
                actual: data.len(),
            });
        }
        let rs = to_isize(cols)?;
        Self::new(data, 0, rows, cols, rs, 1)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance between consecutive rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.row_stride
    }

    /// Distance between consecutive columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.col_stride
    }

    /// A shorter-lived view of the same elements, so the view can be used
    /// again after being passed by value.
    pub fn reborrow(&mut self) -> MatMut<'_, T> {
        MatMut {
            data: self.data,
            offset: self.offset,
            rows: self.rows,
            cols: self.cols,
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }

    /// The transposed view (no data moves).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Element `(i, j)`, or `None` outside the view.
    pub fn get(&self, i: usize, j: usize) -> Option<&T> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        let idx =
            self.offset as isize + i as isize * self.row_stride + j as isize * self.col_stride;
        self.data.get(idx as usize)
    }

    /// Pointer to element (0, 0). Only dereferenced for non-empty views.
    fn as_mut_ptr(&mut self) -> *mut T {
        self.data.as_mut_ptr().wrapping_add(self.offset)
    }
}

/// Checks that `dst = a·b` is well-shaped; returns `(m, n, k)`.
fn check_shapes<T>(
    dst: &MatMut<'_, T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
) -> Result<(usize, usize, usize), MatmulError> {
    if dst.rows != a.rows || a.cols != b.rows || dst.cols != b.cols {
        return Err(MatmulError::ShapeMismatch {
            dst_rows: dst.rows,
            dst_cols: dst.cols,
            a_rows: a.rows,
            a_cols: a.cols,
            b_rows: b.rows,
            b_cols: b.cols,
        });
    }
    Ok((dst.rows, dst.cols, a.cols))
}

// ---------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------

mod sealed {
    use gemm::Parallelism;

    /// The CPU kernel for one element type; not nameable outside this module,
    /// which keeps `MatmulScalar` closed and `gemm`'s types out of the API.
    pub trait Sealed: Sized {
        /// `dst = alpha·a·b` (+ `dst` when `accumulate`), BLAS-style strides.
        ///
        /// # Safety
        /// Every element addressed by the three `m x n`, `m x k`, `k x n`
        /// views must be valid (dst: writable, and readable when
        /// `accumulate`); dst's elements must be pairwise distinct and must
        /// not overlap `a` or `b`.
        #[allow(clippy::too_many_arguments)]
        unsafe fn cpu_gemm(
            m: usize,
            n: usize,
            k: usize,
            dst: *mut Self,
            dst_rs: isize,
            dst_cs: isize,
            accumulate: bool,
            a: *const Self,
            a_rs: isize,
            a_cs: isize,
            b: *const Self,
            b_rs: isize,
            b_cs: isize,
            alpha: Self,
            parallelism: Parallelism,
        );
    }
}

/// An element type the matrix product supports: `f32`, `f64`,
/// [`half::f16`] and [`half::bf16`]. Sealed.
pub trait MatmulScalar: sealed::Sealed + Copy + Send + Sync + 'static {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity (the `alpha` of a plain product).
    const ONE: Self;

    /// Routes a product of this element type to the matching method of
    /// `backend` (e.g. `f32` to [`MatmulBackend::gemm_f32`]).
    fn dispatch<B: MatmulBackend + ?Sized>(
        backend: &B,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        alpha: Self,
        accumulate: bool,
    ) -> Result<(), MatmulError>;
}

/// Implements `Sealed` by handing the product straight to `gemm::gemm`.
///
/// `gemm` 0.19 computes `dst := alpha·dst + beta·lhs·rhs`, reading `dst`
/// only when `read_dst`, and takes each matrix's column stride before its
/// row stride. Our `alpha` is therefore its `beta`, and its `alpha` is one.
macro_rules! native_gemm {
    ($t:ty, $one:expr) => {
        impl sealed::Sealed for $t {
            #[inline]
            unsafe fn cpu_gemm(
                m: usize,
                n: usize,
                k: usize,
                dst: *mut Self,
                dst_rs: isize,
                dst_cs: isize,
                accumulate: bool,
                a: *const Self,
                a_rs: isize,
                a_cs: isize,
                b: *const Self,
                b_rs: isize,
                b_cs: isize,
                alpha: Self,
                parallelism: Parallelism,
            ) {
                // SAFETY: forwarded from the caller's contract.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        dst,
                        dst_cs,
                        dst_rs,
                        accumulate,
                        a,
                        a_cs,
                        a_rs,
                        b,
                        b_cs,
                        b_rs,
                        $one,
                        alpha,
                        false,
                        false,
                        false,
                        parallelism,
                    )
                }
            }
        }
    };
}

// `gemm` dispatches on `TypeId`: its `f16` must be the very `half::f16` we
// implement for, or it would panic at run time. This fails to compile instead.
const _: fn(gemm::f16) -> f16 = |x| x;

native_gemm!(f32, 1.0f32);
native_gemm!(f64, 1.0f64);
native_gemm!(f16, f16::ONE);

/// Copies a strided `rows x cols` bf16 matrix into a row-major f32 buffer.
///
/// # Safety
/// Every element of the view must be readable.
unsafe fn gather_bf16(
    rows: usize,
    cols: usize,
    src: *const bf16,
    rs: isize,
    cs: isize,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        let row = src.wrapping_offset(i as isize * rs);
        for j in 0..cols {
            // SAFETY: (i, j) is inside the view.
            out.push(unsafe { *row.wrapping_offset(j as isize * cs) }.to_f32());
        }
    }
    out
}

impl sealed::Sealed for bf16 {
    unsafe fn cpu_gemm(
        m: usize,
        n: usize,
        k: usize,
        dst: *mut Self,
        dst_rs: isize,
        dst_cs: isize,
        accumulate: bool,
        a: *const Self,
        a_rs: isize,
        a_cs: isize,
        b: *const Self,
        b_rs: isize,
        b_cs: isize,
        alpha: Self,
        parallelism: Parallelism,
    ) {
        if m == 0 || n == 0 {
            return;
        }
        if k == 0 {
            if !accumulate {
                for i in 0..m {
                    for j in 0..n {
                        // SAFETY: (i, j) is inside the destination view.
                        unsafe {
                            *dst.wrapping_offset(i as isize * dst_rs + j as isize * dst_cs) =
                                bf16::ZERO
                        };
                    }
                }
            }
            return;
        }
        // SAFETY: the views are valid per the caller's contract.
        let (a32, b32) = unsafe {
            (
                gather_bf16(m, k, a, a_rs, a_cs),
                gather_bf16(k, n, b, b_rs, b_cs),
            )
        };
        let mut d32 = if accumulate {
            // SAFETY: dst is readable when accumulating.
            unsafe { gather_bf16(m, n, dst, dst_rs, dst_cs) }
        } else {
            vec![0.0f32; m * n]
        };
        // SAFETY: three private, contiguous row-major buffers of the right sizes.
        unsafe {
            f32::cpu_gemm(
                m,
                n,
                k,
                d32.as_mut_ptr(),
                n as isize,
                1,
                accumulate,
                a32.as_ptr(),
                k as isize,
                1,
                b32.as_ptr(),
                n as isize,
                1,
                alpha.to_f32(),
                parallelism,
            );
        }
        for i in 0..m {
            for j in 0..n {
                // SAFETY: (i, j) is inside the destination view.
                unsafe {
                    *dst.wrapping_offset(i as isize * dst_rs + j as isize * dst_cs) =
                        bf16::from_f32(d32[i * n + j])
                };
            }
        }
    }
}

impl MatmulScalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn dispatch<B: MatmulBackend + ?Sized>(
        backend: &B,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        alpha: Self,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        backend.gemm_f32(dst, a, b, alpha, accumulate)
    }
}

impl MatmulScalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn dispatch<B: MatmulBackend + ?Sized>(
        backend: &B,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        alpha: Self,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        backend.gemm_f64(dst, a, b, alpha, accumulate)
    }
}

impl MatmulScalar for f16 {
    const ZERO: Self = f16::ZERO;
    const ONE: Self = f16::ONE;
    fn dispatch<B: MatmulBackend + ?Sized>(
        backend: &B,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        alpha: Self,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        backend.gemm_f16(dst, a, b, alpha, accumulate)
    }
}

impl MatmulScalar for bf16 {
    const ZERO: Self = bf16::ZERO;
    const ONE: Self = bf16::ONE;
    fn dispatch<B: MatmulBackend + ?Sized>(
        backend: &B,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        alpha: Self,
        accumulate: bool,
    ) -> Result<(), MatmulError> {
        backend.gemm_bf16(dst, a, b, alpha, accumulate)
    }
}

// ---------------------------------------------------------------------------
// Backends
// ---------------------------------------------------------------------------

/// Something that can compute `dst = alpha·a·b` (or `dst += alpha·a·b`
/// when `accumulate`) for each supported element type.
///
/// The views arrive bounds-checked, with a non-overlapping destination, and
/// — when called through [`gemm_strided_with`] — with matching shapes.
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
                dst.row_stride,
                dst.col_stride,
                accumulate,
                a.as_ptr(),
                a.row_stride,
                a.col_stride,
                b.as_ptr(),
                b.row_stride,
                b.col_stride,
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

/// True when a batch should be spread over rayon's threads: each product is
/// too small to thread on its own, but the batch as a whole is large enough.
fn spread_over_batch(batch: usize, m: usize, k: usize, n: usize) -> bool {
    let work = m.saturating_mul(n).saturating_mul(k);
    batch > 1
        && work < PARALLEL_WORK_THRESHOLD
        && work.saturating_mul(batch) >= PARALLEL_WORK_THRESHOLD
        && rayon::current_num_threads() > 1
}

/// Threads a product only when it is big enough to pay for it.
fn choose_parallelism(m: usize, n: usize, k: usize, allow: bool) -> Parallelism {
    let work = m.saturating_mul(n).saturating_mul(k);
    if allow && work >= PARALLEL_WORK_THRESHOLD && rayon::current_num_threads() > 1 {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    }
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// Raw strided product on the default CPU backend:
/// `dst = alpha·a·b`, or `dst = dst + alpha·a·b` when `accumulate`.
///
/// `dst` is `m x n`, `a` is `m x k`, `b` is `k x n`; element `(i, j)` of a
/// matrix `x` is at `x + i·x_rs + j·x_cs` (BLAS order: row stride first).
///
/// # Safety
/// Every element of the three views must be valid to read (and, for `dst`,
/// to write); distinct elements of `dst` must not share memory, and `dst`
/// must not overlap `a` or `b`. When `accumulate` is false `dst` is
/// written but never read.
#[allow(clippy::too_many_arguments, dead_code)]
pub(crate) unsafe fn gemm_strided_raw<T: MatmulScalar>(
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
) {
    let parallelism = choose_parallelism(m, n, k, true);
    // SAFETY: forwarded from the caller's contract.
    unsafe {
        T::cpu_gemm(
            m,
            n,
            k,
            dst,
            dst_rs,
            dst_cs,
            accumulate,
            a,
            a_rs,
            a_cs,
            b,
            b_rs,
            b_cs,
            alpha,
            parallelism,
        )
    }
}

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
    Ok(if trans {
        (1, to_isize(rows)?)
    } else {
        (to_isize(cols)?, 1)
    })
}

fn check_len(operand: &'static str, actual: usize, expected: usize) -> Result<(), MatmulError> {
    if actual != expected {
        return Err(MatmulError::LengthMismatch {
            operand,
            expected,
            actual,
        });
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
    matmul_with(
        &CpuGemm::new(),
        a,
        b,
        out,
        m,
        k,
        n,
        trans_a,
        trans_b,
        accumulate,
    )
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
/// batch as a whole is not, the batch is spread over rayon's threads (each
/// product single-threaded); otherwise the products run in turn and each is
/// threaded internally if large enough.
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
        out.par_chunks_mut(out_step)
            .zip(a.par_chunks(a_step))
            .zip(b.par_chunks(b_step))
            .try_for_each(|((o, a), b)| {
                matmul_unchecked_len(&backend, a, b, o, m, k, n, trans_a, trans_b, accumulate)
            })
    } else {
        let backend = CpuGemm::new();
        out.chunks_mut(out_step)
            .zip(a.chunks(a_step))
            .zip(b.chunks(b_step))
            .try_for_each(|((o, a), b)| {
                matmul_unchecked_len(&backend, a, b, o, m, k, n, trans_a, trans_b, accumulate)
            })
    }
}

#[cfg(test)]
mod tests {
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
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
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
            assert!(
                (g - w).abs() <= *t,
                "{what}: element {idx}: got {g}, want {w} (tol {t})"
            );
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
                        let what = format!(
                            "{} m={m} k={k} n={n} ta={ta} tb={tb} acc={acc}",
                            std::any::type_name::<T>()
                        );
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

    /// Exercises the threaded path (above the threshold) in every type.
    fn check_threaded<T: TestScalar>() {
        let (m, k, n) = (200, 190, 210);
        assert!(m * k * n >= PARALLEL_WORK_THRESHOLD);
        if rayon::current_num_threads() > 1 {
            assert!(matches!(
                choose_parallelism(m, n, k, true),
                Parallelism::Rayon(0)
            ));
        }
        for (ta, tb, acc) in [(false, false, false), (true, true, true)] {
            let a: Vec<T> = values(m * k, 11);
            let b: Vec<T> = values(k * n, 12);
            let out0: Vec<T> = values(m * n, 13);
            let mut out = out0.clone();
            matmul(&a, &b, &mut out, m, k, n, ta, tb, acc).unwrap();
            let (want, tol) = reference(&a, &b, &out0, m, k, n, ta, tb, acc);
            assert_close(&out, &want, &tol, "threaded");
        }
    }

    #[test]
    fn matmul_threaded_all_types() {
        check_threaded::<f32>();
        check_threaded::<f64>();
        check_threaded::<f16>();
        check_threaded::<bf16>();
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

    fn check_batch<T: TestScalar>(
        batch: usize,
        m: usize,
        k: usize,
        n: usize,
        combos: &[(bool, bool, bool)],
    ) {
        for &(ta, tb, acc) in combos {
            let a: Vec<T> = values(batch * m * k, 21);
            let b: Vec<T> = values(batch * k * n, 22);
            let out0: Vec<T> = if acc {
                values(batch * m * n, 23)
            } else {
                vec![T::from_f64(f64::NAN); batch * m * n]
            };
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
        assert_eq!(
            spread_over_batch(512, 24, 24, 24),
            rayon::current_num_threads() > 1
        );
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
        assert!(matches!(
            err,
            MatmulError::LengthMismatch {
                operand: "a",
                expected: 6,
                actual: 5
            }
        ));
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
        assert_eq!(
            MatRef::new(&data, 0, usize::MAX, 1, 0, 0).unwrap_err(),
            MatmulError::Overflow
        );
        let mut d = vec![0.0f64; 12];
        assert!(MatMut::new(&mut d, 0, 3, 4, 0, 1).is_err());
        assert!(MatMut::new(&mut d, 0, 3, 4, 2, 1).is_err());
        assert!(MatMut::new(&mut d, 0, 3, 4, 1, 3).is_ok());
        assert!(MatMut::new(&mut d, 0, 1, 4, 0, 1).is_ok());
        assert!(MatMut::new(&mut d, 0, 4, 1, 0, 1).is_err());
        assert_eq!(
            MatMut::new(&mut d, 0, 2, 6, 3, 1).unwrap_err(),
            MatmulError::OverlappingDestination
        );
        // Shape mismatch is an error, not a panic.
        let a = MatRef::new(&data, 0, 3, 4, 4, 1).unwrap();
        let b = MatRef::new(&data, 0, 3, 4, 4, 1).unwrap();
        let dst = MatMut::new(&mut d, 0, 3, 4, 4, 1).unwrap();
        assert!(matches!(
            gemm_strided(dst, a, b, 1.0, false),
            Err(MatmulError::ShapeMismatch { .. })
        ));
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
            gemm_strided_raw(
                2,
                2,
                2,
                out.as_mut_ptr(),
                2,
                1,
                true,
                a.as_ptr(),
                2,
                1,
                b.as_ptr(),
                2,
                1,
                2.0,
            );
        }
        assert_eq!(out, [39.0, 45.0, 87.0, 101.0]);
    }
}
