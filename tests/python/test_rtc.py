"""mx.rtc: CUDA source compiled with NVRTC and launched on oxnet's arrays.

Compiling needs NVRTC only (the nvidia-cuda-nvrtc wheel of
requirements-dev.txt), so source errors and signature checks are tested on
every machine; launching needs a GPU (skipped, saying why, without one).
"""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

AXPY = r"""
extern "C" __global__ void axpy(const float *x, float *y, float alpha) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    y[i] += alpha * x[i];
}
"""

TEMPLATED = r"""
template <typename DType>
__global__ void axpy(const DType *x, DType *y, DType alpha) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    y[i] += alpha * x[i];
}
// reverses each block's slice through dynamic shared memory
// (NVRTC has no <cstdint>: `long long` is the signature's int64_t)
extern "C" __global__ void reverse_blocks(const long long *x, long long *y) {
    extern __shared__ long long tile[];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    tile[t] = x[base + t];
    __syncthreads();
    y[base + t] = tile[blockDim.x - 1 - t];
}
"""


def module(source, **kw):
    try:
        return mx.rtc.CudaModule(source, **kw)
    except MXNetError as e:
        if "NVRTC was not found" in str(e) or "no GPU backend" in str(e):
            pytest.skip(str(e))
        raise


def test_a_source_error_is_reported_with_nvrtc_log():
    module(AXPY)  # skips without NVRTC
    with pytest.raises(MXNetError, match="undefined_name"):
        mx.rtc.CudaModule('extern "C" __global__ void k(float *y) { y[0] = undefined_name; }')
    with pytest.raises(MXNetError, match="leave it out"):
        mx.rtc.CudaModule(AXPY, options=["-arch=sm_80"])


def test_signatures_are_parsed_as_mxnet_does():
    m = module(AXPY)
    k = m.get_kernel("axpy", "const float *x, float *y, float alpha")
    assert k._is_ndarray == [True, True, False]
    assert k._dtypes == [np.float32] * 3
    k = m.get_kernel("axpy", "const int64_t *, double*, int")
    assert k._dtypes == [np.int64, np.float64, np.int32]
    with pytest.raises(TypeError, match="Unsupported kernel argument type"):
        m.get_kernel("axpy", "const float *x, bool y")
    with pytest.raises(ValueError, match="Invalid function prototype"):
        m.get_kernel("axpy", "const float **x")


def test_launch_needs_a_gpu_context_and_the_right_arguments():
    m = module(AXPY)
    k = m.get_kernel("axpy", "const float *x, float *y, float alpha")
    x = mx.nd.ones((4,))
    with pytest.raises(MXNetError, match="GPU context"):
        k.launch([x, x, 1.0], mx.cpu(), (1, 1, 1), (4, 1, 1))
    with pytest.raises(ValueError, match="takes 3 arguments"):
        k.launch([x, 1.0], mx.gpu(0), (1, 1, 1), (4, 1, 1))


gpu_only = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU on this machine (mx.context.num_gpus() is 0)")


@gpu_only
def test_axpy_runs_on_oxnet_arrays():
    gpu = mx.gpu(0)
    k = module(AXPY).get_kernel("axpy", "const float *x, float *y, float alpha")
    x = mx.nd.array(np.arange(10, dtype=np.float32), ctx=gpu)
    y = mx.nd.ones((10,), ctx=gpu)
    k.launch([x, y, 3.0], gpu, (1, 1, 1), (10, 1, 1))
    np.testing.assert_allclose(y.asnumpy(), 1 + 3 * np.arange(10))
    # in order with oxnet's own operators on the stream
    z = (y * 2).asnumpy()
    np.testing.assert_allclose(z, 2 + 6 * np.arange(10))


@gpu_only
def test_exported_templates_and_dynamic_shared_memory():
    gpu = mx.gpu(0)
    m = module(TEMPLATED, exports=["axpy<float>", "axpy<double>"])
    for name, dtype in (("axpy<float>", "float"), ("axpy<double>", "double")):
        k = m.get_kernel(name, f"const {dtype} *x, {dtype} *y, {dtype} alpha")
        x = mx.nd.ones((8,), dtype="float64" if dtype == "double" else "float32", ctx=gpu)
        y = mx.nd.zeros((8,), dtype=x.dtype, ctx=gpu)
        k.launch([x, y, 0.5], gpu, (2, 1, 1), (4, 1, 1))
        np.testing.assert_allclose(y.asnumpy(), np.full(8, 0.5))
    k = m.get_kernel("reverse_blocks", "const int64_t *x, int64_t *y")
    x = mx.nd.array(np.arange(12), dtype="int64", ctx=gpu)
    y = mx.nd.zeros((12,), dtype="int64", ctx=gpu)
    k.launch([x, y], gpu, (3, 1, 1), (4, 1, 1), shared_mem=4 * 8)
    np.testing.assert_array_equal(y.asnumpy(), np.arange(12).reshape(3, 4)[:, ::-1].ravel())


@gpu_only
def test_wrong_arrays_are_refused_naming_the_argument():
    gpu = mx.gpu(0)
    k = module(AXPY).get_kernel("axpy", "const float *x, float *y, float alpha")
    y = mx.nd.zeros((4,), ctx=gpu)
    with pytest.raises(TypeError, match="argument 0 is float32\\*, the array is float64"):
        k.launch([mx.nd.zeros((4,), dtype="float64", ctx=gpu), y, 1.0], gpu, (1, 1, 1), (4, 1, 1))
    with pytest.raises(MXNetError, match="argument 0 is on cpu"):
        k.launch([mx.nd.zeros((4,)), y, 1.0], gpu, (1, 1, 1), (4, 1, 1))
    with pytest.raises(MXNetError, match="no kernel `missing`"):
        module(AXPY).get_kernel("missing", "float *y").launch([y], gpu, (1, 1, 1), (4, 1, 1))
