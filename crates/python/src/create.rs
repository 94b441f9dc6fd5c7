//! Creating arrays: `nd.array`, `zeros`, `ones`, `full`, `empty`, `arange`
//! and seeding the global generator (the random draws are registry operators).

use crate::array::{wrap, PyNDArray};
use crate::errors::IntoPyResult;
use crate::{context, dtype, numpy_interop};
use numpy::PyUntypedArray;
use oxnet_core::{DType, NDArray};
use pyo3::prelude::*;

/// A new engine array copied from an NDArray, a numpy array, or anything
/// `numpy.asarray` takes (lists, scalars). Without `want`, NDArrays keep their
/// dtype and everything else becomes float32, as in the reference.
pub fn array_from_any(obj: &Bound<'_, PyAny>, want: Option<DType>) -> PyResult<NDArray> {
    if let Ok(a) = obj.cast::<PyNDArray>() {
        let src = &a.get().inner;
        return src.astype(want.unwrap_or(src.dtype())).py();
    }
    let target = want.unwrap_or(DType::F32);
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        return numpy_interop::from_numpy(arr, Some(target));
    }
    let py = obj.py();
    let np_type = dtype::to_numpy_type(py, target)?;
    let arr = py.import("numpy")?.call_method1("asarray", (obj, np_type))?;
    numpy_interop::from_numpy(arr.cast::<PyUntypedArray>()?, Some(target))
}

/// A shape given as an int or a tuple.
fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(n) = obj.extract::<usize>() {
        return Ok(vec![n]);
    }
    obj.extract()
}

/// `nd.array(source, ctx=None, dtype=None)`: a copy of `source`.
#[pyfunction]
#[pyo3(signature = (source_array, ctx=None, dtype=None))]
pub fn array<'py>(
    source_array: &Bound<'py, PyAny>,
    ctx: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyNDArray>> {
    let device = context::from_py_opt(ctx)?;
    device.ensure_available().py()?;
    let want = dtype::from_py_opt(dtype)?;
    let mut a = array_from_any(source_array, want)?;
    if device != a.device() {
        a = source_array.py().detach(|| a.to_device(device)).py()?;
    }
    wrap(source_array.py(), a)
}

/// `nd.full(shape, val, ctx=None, dtype=float32)`; `op` is the operator
/// name the profiler shows (MXNet's `_full`, `_zeros`, `_ones`).
#[pyfunction]
#[pyo3(signature = (shape, val, ctx=None, dtype=None, op="_full"))]
pub fn full<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyAny>,
    val: f64,
    ctx: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
    op: &str,
) -> PyResult<Bound<'py, PyNDArray>> {
    let device = context::from_py_opt(ctx)?;
    let dt = dtype::from_py_opt(dtype)?.unwrap_or(DType::F32);
    let shape = shape_of(shape)?;
    let _profiled = oxnet_core::profiler::op_scope(op);
    wrap(py, py.detach(|| NDArray::full(&shape, val, dt, device)).py()?)
}

/// `nd.empty(shape, ctx=None, dtype=float32)` (zero-filled: no uninitialised memory reaches Python).
#[pyfunction]
#[pyo3(signature = (shape, ctx=None, dtype=None))]
pub fn empty<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyAny>,
    ctx: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyNDArray>> {
    full(py, shape, 0.0, ctx, dtype, "_zeros")
}

/// `nd.arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=float32)`.
#[pyfunction]
#[pyo3(signature = (start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None))]
pub fn arange<'py>(
    py: Python<'py>,
    start: f64,
    stop: Option<f64>,
    step: f64,
    repeat: usize,
    ctx: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyNDArray>> {
    let device = context::from_py_opt(ctx)?;
    device.ensure_available().py()?;
    let dt = dtype::from_py_opt(dtype)?.unwrap_or(DType::F32);
    let (begin, end) = match stop {
        Some(s) => (start, s),
        None => (0.0, start),
    };
    let mut a = NDArray::arange(begin, end, step, dt).py()?;
    if repeat > 1 {
        a = oxnet_core::invoke1("repeat", &[&a], &[("repeats", (repeat as i64).into())]).py()?;
    }
    if device != a.device() {
        a = py.detach(|| a.to_device(device)).py()?;
    }
    wrap(py, a)
}

/// Seeds oxnet's global random generator.
#[pyfunction]
pub fn seed(seed_state: u64) {
    oxnet_core::random::seed(seed_state);
}

/// `nd.waitall()`: waits for the work queued on the GPUs (CPU computation
/// is synchronous); a GPU kernel's asynchronous error surfaces here.
#[pyfunction]
pub fn waitall(py: Python<'_>) -> PyResult<()> {
    py.detach(oxnet_core::gpu::synchronize_all).py()
}

/// The operators that ran on the host for lack of a GPU kernel so far.
#[pyfunction]
pub fn gpu_host_fallbacks() -> Vec<String> {
    oxnet_core::gpu::fallback::fallen_back()
}

/// (free, total) bytes of a GPU's memory.
#[pyfunction]
pub fn gpu_memory_info(ordinal: usize) -> PyResult<(usize, usize)> {
    #[cfg(feature = "cuda")]
    return oxnet_core::gpu::memory_info(ordinal).py();
    #[cfg(not(feature = "cuda"))]
    oxnet_core::gpu::ensure_device(ordinal).py().map(|_| (0, 0))
}

/// The compute capability (major, minor) of a GPU.
#[pyfunction]
pub fn gpu_compute_capability(ordinal: usize) -> PyResult<(i32, i32)> {
    #[cfg(feature = "cuda")]
    return oxnet_core::gpu::compute_capability(ordinal).py();
    #[cfg(not(feature = "cuda"))]
    oxnet_core::gpu::ensure_device(ordinal).py().map(|_| (0, 0))
}

/// How many GPUs oxnet can use (0 without the `cuda` feature or a driver).
#[pyfunction]
pub fn num_gpus() -> usize {
    oxnet_core::gpu::num_gpus()
}
