"""Extension libraries with CUDA kernels (seed 004 on the GPU):
`setForward(f, "gpu")`, `setBackward(f, "gpu")`, `setCreateOpState(f, "gpu")`,
`OpResource::get_cuda_stream` and `alloc_gpu`, for a library built against
oxnet's SDK and the same source built against MXNet 1.9.1's (loaded unchanged).

tests/gpu/ext/gpu_ops.cu is compiled here with nvcc. Skipped, saying why,
without a GPU, without nvcc, or (for the MXNet build) without MXNet's SDK.
"""

import ctypes
import pathlib
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "gpu"))
import build_ext  # noqa: E402

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU on this machine (mx.context.num_gpus() is 0)")

GPU = mx.gpu(0)
PREFIX = {"oxnet": "ox", "mxnet": "mx"}


@pytest.fixture(scope="module", params=["oxnet", "mxnet"])
def lib(request, tmp_path_factory):
    """(operator prefix, ctypes handle) of the library built with one SDK and loaded."""
    try:
        path = build_ext.build(request.param, tmp_path_factory.mktemp(request.param))
    except build_ext.Unavailable as e:
        pytest.skip(str(e))
    mx.library.load(path, verbose=False)
    return PREFIX[request.param], ctypes.CDLL(path)


def op(lib, name):
    return getattr(mx.nd, f"{lib[0]}_{name}")


def data(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x[np.abs(x) < 1e-3] = 0.5  # no ties at the kink
    return x


def test_gpu_kernel_runs_on_device_arrays(lib):
    x = data((64, 33), 1)
    y = op(lib, "scaled_relu")(mx.nd.array(x, ctx=GPU), alpha=2.5)
    assert y.context == GPU
    np.testing.assert_allclose(y.asnumpy(), 2.5 * np.maximum(x, 0), rtol=1e-6)
    assert f"{lib[0]}_scaled_relu" not in mx.context.gpu_host_fallbacks()
    # the CPU kernel of the same operator agrees
    np.testing.assert_allclose(op(lib, "scaled_relu")(mx.nd.array(x), alpha=2.5).asnumpy(), y.asnumpy())


def test_gpu_backward_with_write_and_add_requests(lib):
    x_np, dy_np = data((17, 9), 2), data((17, 9), 3)
    want = 0.5 * dy_np * (x_np > 0)
    x, dy = mx.nd.array(x_np, ctx=GPU), mx.nd.array(dy_np, ctx=GPU)
    x.attach_grad()
    with autograd.record():
        y = op(lib, "scaled_relu")(x, alpha=0.5)
    y.backward(dy)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = op(lib, "scaled_relu")(x, alpha=0.5)
        y.backward(dy)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * want, rtol=1e-6)


def test_hybridized_block_with_the_library_operator_trains_on_the_gpu(lib):
    name = f"{lib[0]}_scaled_relu"

    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.dense = gluon.nn.Dense(8)

        def hybrid_forward(self, F, x):
            return getattr(F, name)(self.dense(x), alpha=1.5)

    x_np = data((6, 5), 4)
    grads = {}
    for ctx in (mx.cpu(), GPU):
        net = Net()
        net.initialize(mx.init.Constant(0.1), ctx=ctx)
        net.dense.weight.set_data(mx.nd.array(data((8, 5), 5), ctx=ctx))
        net.hybridize()
        x = mx.nd.array(x_np, ctx=ctx)
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        grads[str(ctx)] = net.dense.weight.grad(ctx).asnumpy()
    np.testing.assert_allclose(grads[str(GPU)], grads[str(mx.cpu())], rtol=1e-5, atol=1e-6)


def test_stateful_operator_gets_a_gpu_state(lib):
    prefix, handle = lib
    calls = handle.gpu_state_forward_calls
    before = calls()
    x_np = data((5, 4), 6)
    x = mx.nd.array(x_np, ctx=GPU)
    x.attach_grad()
    with autograd.record():
        y = op(lib, "state_scale")(x, scale=3.0)
    y.backward(mx.nd.ones_like(y))
    np.testing.assert_allclose(y.asnumpy(), 3 * x_np, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), np.full_like(x_np, 3.0))
    assert handle.gpu_state_last_device() == 1, "the state was not created for the GPU"
    assert calls() == before + 1
    # and a CPU instance for CPU arrays
    np.testing.assert_allclose(op(lib, "state_scale")(mx.nd.array(x_np), scale=2.0).asnumpy(), 2 * x_np)
    assert handle.gpu_state_last_device() == 0


def test_a_failing_gpu_kernel_raises_with_its_message(lib):
    with pytest.raises(mx.base.MXNetError, match="refused on purpose"):
        op(lib, "fail")(mx.nd.ones((3,), ctx=GPU)).wait_to_read()
    # the process goes on: the next call works
    y = op(lib, "scaled_relu")(mx.nd.ones((3,), ctx=GPU), alpha=2.0)
    np.testing.assert_allclose(y.asnumpy(), [2.0, 2.0, 2.0])
