//! Element types of the matrix product: [`MatmulScalar`] and the sealed
//! per-type CPU kernels behind it.

use half::{bf16, f16};

use super::{MatMut, MatRef, MatmulBackend, MatmulError};

mod sealed {
    /// The CPU kernel for one element type; not nameable outside this module,
    /// which keeps `MatmulScalar` closed and `gemm`'s types out of the API.
    pub trait Sealed: Sized {
        /// `dst = alpha·a·b` (+ `dst` when `accumulate`), BLAS-style
        /// strides, on the calling thread (threading is the caller's:
        /// see `backend::gemm_threaded`).
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
                        gemm::Parallelism::None,
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
unsafe fn gather_bf16(rows: usize, cols: usize, src: *const bf16, rs: isize, cs: isize) -> Vec<f32> {
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
                            *dst.wrapping_offset(i as isize * dst_rs + j as isize * dst_cs) = bf16::ZERO
                        };
                    }
                }
            }
            return;
        }
        // SAFETY: the views are valid per the caller's contract.
        let (a32, b32) = unsafe { (gather_bf16(m, k, a, a_rs, a_cs), gather_bf16(k, n, b, b_rs, b_cs)) };
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

/// Each scalar type routes to its backend method.
macro_rules! matmul_scalar {
    ($t:ty, $zero:expr, $one:expr, $method:ident) => {
        impl MatmulScalar for $t {
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            fn dispatch<B: MatmulBackend + ?Sized>(
                backend: &B,
                dst: MatMut<'_, Self>,
                a: MatRef<'_, Self>,
                b: MatRef<'_, Self>,
                alpha: Self,
                accumulate: bool,
            ) -> Result<(), MatmulError> {
                backend.$method(dst, a, b, alpha, accumulate)
            }
        }
    };
}
matmul_scalar!(f32, 0.0, 1.0, gemm_f32);
matmul_scalar!(f64, 0.0, 1.0, gemm_f64);
matmul_scalar!(f16, f16::ZERO, f16::ONE, gemm_f16);
matmul_scalar!(bf16, bf16::ZERO, bf16::ONE, gemm_bf16);
