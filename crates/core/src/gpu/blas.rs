//! Matrix products on the GPU through cuBLAS (loaded at run time, like the
//! driver): one handle per device, bound to the device's stream.

use super::driver;
use crate::{DType, Error, Result};
use cudarc::cublas::sys as cb;
use std::sync::{Mutex, OnceLock};

/// One cuBLAS handle per device, created on first use.
static HANDLES: OnceLock<Mutex<Vec<Option<usize>>>> = OnceLock::new();

fn handle(ordinal: usize) -> Result<cb::cublasHandle_t> {
    // SAFETY: only tries to open the library.
    if !unsafe { cb::is_culib_present() } {
        return Err(Error::Device(
            "cuBLAS (libcublas.so.13 or .12) was not found: install the CUDA toolkit or `pip install nvidia-cublas`, \
             or put its lib folder on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let stream = driver::stream(ordinal)?; // also makes the context current
    let mut handles =
        HANDLES.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|e| e.into_inner());
    if handles.len() <= ordinal {
        handles.resize(ordinal + 1, None);
    }
    if let Some(h) = handles[ordinal] {
        return Ok(h as cb::cublasHandle_t);
    }
    let mut h: cb::cublasHandle_t = std::ptr::null_mut();
    // SAFETY: a fresh handle in the current context, bound to our stream.
    unsafe {
        cb::cublasCreate_v2(&mut h)
            .result()
            .map_err(|e| Error::Device(format!("cuBLAS: cannot create a handle: {e:?}")))?;
        cb::cublasSetStream_v2(h, stream as cb::cudaStream_t)
            .result()
            .map_err(|e| Error::Device(format!("cuBLAS: cannot set the stream: {e:?}")))?;
    }
    handles[ordinal] = Some(h as usize);
    Ok(h)
}

/// A row-major product `c = alpha * op(a) @ op(b) + beta * c` on
/// `gpu(ordinal)`: `op(a)` is m x k, `op(b)` is k x n, `c` is m x n, all
/// contiguous row-major blocks at device addresses (`ta`: `a` is stored
/// k x m; `tb`: `b` is stored n x k). float32 and float64; float16 and
/// bfloat16 accumulate in float32 (tensor cores).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    ordinal: usize,
    dtype: DType,
    ta: bool,
    tb: bool,
    (m, n, k): (usize, usize, usize),
    a: u64,
    b: u64,
    c: u64,
    (alpha, beta): (f64, f64),
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let h = handle(ordinal)?;
    let dim = |v: usize| {
        i32::try_from(v).map_err(|_| Error::Shape(format!("a matrix extent of {v} is too large for cuBLAS")))
    };
    let (mi, ni, ki) = (dim(m)?, dim(n)?, dim(k.max(1))?);
    // Row-major C (m x n) is column-major C^T (n x m) = op(B)^T op(A)^T:
    // swap the operands; each stored row-major matrix read column-major is
    // its own transpose, with its row length as leading dimension.
    let lda = if ta { mi } else { ki };
    let ldb = if tb { ki } else { ni };
    let op =
        |t: bool| if t { cb::cublasOperation_t::CUBLAS_OP_T } else { cb::cublasOperation_t::CUBLAS_OP_N };
    // SAFETY: the caller's blocks hold the matrices described.
    let status = unsafe {
        match dtype {
            DType::F32 => {
                let (al, be) = (alpha as f32, beta as f32);
                cb::cublasSgemm_v2(
                    h,
                    op(tb),
                    op(ta),
                    ni,
                    mi,
                    ki,
                    &al,
                    b as *const f32,
                    ldb,
                    a as *const f32,
                    lda,
                    &be,
                    c as *mut f32,
                    ni,
                )
            }
            DType::F64 => cb::cublasDgemm_v2(
                h,
                op(tb),
                op(ta),
                ni,
                mi,
                ki,
                &alpha,
                b as *const f64,
                ldb,
                a as *const f64,
                lda,
                &beta,
                c as *mut f64,
                ni,
            ),
            DType::F16 | DType::BF16 => {
                let t = if dtype == DType::F16 {
                    cb::cudaDataType::CUDA_R_16F
                } else {
                    cb::cudaDataType::CUDA_R_16BF
                };
                let (al, be) = (alpha as f32, beta as f32);
                let void = |p: &f32| p as *const f32 as *const std::ffi::c_void;
                cb::cublasGemmEx(
                    h,
                    op(tb),
                    op(ta),
                    ni,
                    mi,
                    ki,
                    void(&al),
                    b as *const std::ffi::c_void,
                    t,
                    ldb,
                    a as *const std::ffi::c_void,
                    t,
                    lda,
                    void(&be),
                    c as *mut std::ffi::c_void,
                    t,
                    ni,
                    cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                )
            }
            other => {
                return Err(Error::DType(format!(
                    "GPU matrix products take float16, bfloat16, float32 and float64, not {other}"
                )))
            }
        }
    };
    status.result().map_err(|e| Error::Device(format!("cuBLAS gemm ({m}x{k} by {k}x{n}) failed: {e:?}")))
}
