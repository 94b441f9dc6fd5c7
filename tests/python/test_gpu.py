"""The GPU backend, compared with the CPU: transfers, every element-wise
operator with a GPU kernel, broadcasting, requests, errors, and interop
through ``__cuda_array_interface__``. Skipped, saying why, on a machine
without a GPU (``scripts/gpu_check.sh`` runs it on one)."""

import numpy as np
import pytest

import oxnet as mx

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU on this machine (mx.context.num_gpus() is 0)")

GPU = mx.gpu(0)
RNG = np.random.default_rng(7)

# (operator, lowest, highest): inputs drawn inside each operator's domain
UNARY = [
    ("negative", -3, 3), ("abs", -3, 3), ("sign", -3, 3), ("square", -3, 3), ("_copy", -3, 3),
    ("exp", -3, 3), ("log", 0.1, 5), ("log1p", -0.5, 3), ("expm1", -2, 2), ("log2", 0.1, 5),
    ("log10", 0.1, 5), ("sqrt", 0.1, 5), ("rsqrt", 0.1, 5), ("cbrt", -5, 5), ("rcbrt", 0.1, 5),
    ("reciprocal", 0.5, 3), ("sin", -3, 3), ("cos", -3, 3), ("tan", -1, 1), ("arcsin", -0.9, 0.9),
    ("arccos", -0.9, 0.9), ("arctan", -3, 3), ("sinh", -2, 2), ("cosh", -2, 2), ("tanh", -3, 3),
    ("arcsinh", -3, 3), ("arccosh", 1.1, 4), ("arctanh", -0.9, 0.9), ("degrees", -3, 3),
    ("radians", -90, 90), ("sigmoid", -6, 6), ("relu", -3, 3), ("softrelu", -30, 30),
    ("softsign", -3, 3), ("erf", -2, 2), ("gelu", -3, 3), ("floor", -3, 3), ("ceil", -3, 3),
    ("round", -3, 3), ("rint", -3, 3), ("trunc", -3, 3), ("fix", -3, 3), ("gamma", 0.5, 4),
    ("gammaln", 0.5, 4),
]

BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "broadcast_mod",
          "broadcast_hypot", "equal", "not_equal", "greater", "greater_equal", "lesser",
          "lesser_equal", "broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor"]

SCALAR = ["_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
          "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_maximum_scalar", "_minimum_scalar",
          "_mod_scalar", "_rmod_scalar", "_hypot_scalar", "_equal_scalar", "_greater_scalar",
          "_lesser_equal_scalar", "_logical_and_scalar", "_logical_xor_scalar"]


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8", "uint8", "bool"])
def test_round_trip_keeps_every_value(dtype):
    x = (RNG.standard_normal((3, 17, 5)) * 50).astype(dtype)
    g = mx.nd.array(x, ctx=GPU, dtype=dtype)
    assert g.context == GPU and g.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(g.asnumpy(), x)
    np.testing.assert_array_equal(g.as_in_context(mx.cpu()).asnumpy(), x)


def test_views_copies_fills_and_conversions():
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    g = mx.nd.array(x, ctx=GPU)
    # a strided view read back and moved to the host
    np.testing.assert_array_equal(g[1:5, 2:7].asnumpy(), x[1:5, 2:7])
    np.testing.assert_array_equal(g.T.asnumpy(), x.T)
    # a host array into a GPU array and back, converting
    np.testing.assert_array_equal(g.astype("float64").asnumpy(), x.astype(np.float64))
    np.testing.assert_array_equal(g.astype("int32").asnumpy(), x.astype(np.int32))
    # copyto a context and into an array
    h = g.copyto(mx.cpu())
    assert h.context == mx.cpu()
    dst = mx.nd.zeros((6, 8), ctx=GPU)
    g.copyto(dst)
    np.testing.assert_array_equal(dst.asnumpy(), x)
    # fills, zeros, ones, full, arange on the GPU
    np.testing.assert_array_equal(mx.nd.full((2, 3), 2.5, ctx=GPU).asnumpy(), np.full((2, 3), 2.5, np.float32))
    np.testing.assert_array_equal(mx.nd.zeros((4,), ctx=GPU, dtype="int64").asnumpy(), np.zeros(4, np.int64))
    np.testing.assert_array_equal(mx.nd.arange(5, ctx=GPU).asnumpy(), np.arange(5, dtype=np.float32))
    # writing into a view of a GPU array
    g[1:3] = 7.0
    x[1:3] = 7.0
    np.testing.assert_array_equal(g.asnumpy(), x)
    g[4] = mx.nd.array(np.arange(8, dtype=np.float32), ctx=GPU)
    x[4] = np.arange(8)
    np.testing.assert_array_equal(g.asnumpy(), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,lo,hi", UNARY)
def test_unary_operator_matches_cpu(name, lo, hi, dtype):
    x = RNG.uniform(lo, hi, size=(7, 33)).astype(dtype)
    op = getattr(mx.nd, name)
    want = op(mx.nd.array(x, dtype=dtype)).asnumpy()
    got = op(mx.nd.array(x, ctx=GPU, dtype=dtype))
    assert got.context == GPU
    np.testing.assert_allclose(got.asnumpy(), want, **tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("name", BINARY)
def test_broadcasting_binary_operator_matches_cpu(name, dtype):
    a = RNG.uniform(0.5, 3, size=(3, 1, 4)).astype(dtype)
    b = RNG.uniform(0.5, 3, size=(1, 5, 4)).astype(dtype)
    if dtype == np.int32:
        a, b = a * 3, b * 3
    op = getattr(mx.nd, name)
    want = op(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype)).asnumpy()
    got = op(mx.nd.array(a, ctx=GPU, dtype=dtype), mx.nd.array(b, ctx=GPU, dtype=dtype)).asnumpy()
    np.testing.assert_allclose(got, want, **tol(np.float64 if dtype == np.int32 else dtype))
    # the same-shape form through the operators `+ - * /`
    c = mx.nd.array(a[:, :, :], ctx=GPU, dtype=dtype)
    np.testing.assert_allclose((c * c + c - c / c).asnumpy(),
                               (mx.nd.array(a, dtype=dtype) * mx.nd.array(a, dtype=dtype) + mx.nd.array(a, dtype=dtype)
                                - mx.nd.array(a, dtype=dtype) / mx.nd.array(a, dtype=dtype)).asnumpy(), **tol(np.float64 if dtype == np.int32 else dtype))


@pytest.mark.parametrize("name", SCALAR)
def test_scalar_operator_matches_cpu(name):
    x = RNG.uniform(-3, 3, size=(5, 9)).astype(np.float32)
    op = getattr(mx.nd, name)
    for s in (2.0, -1.5):
        want = op(mx.nd.array(x), scalar=s).asnumpy()
        got = op(mx.nd.array(x, ctx=GPU), scalar=s).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_large_sigmoid_and_add_request():
    n = (1 << 22) + 3
    x = RNG.standard_normal(n).astype(np.float32)
    g = mx.nd.array(x, ctx=GPU)
    np.testing.assert_allclose(mx.nd.sigmoid(g).asnumpy(), 1 / (1 + np.exp(-x)), rtol=1e-6, atol=1e-7)
    out = mx.nd.ones((n,), ctx=GPU)
    mx.nd.elemwise_add(g, g, out=out)
    np.testing.assert_allclose(out.asnumpy(), 2 * x, rtol=1e-6)


def test_errors_are_clear():
    g = mx.nd.ones((3,), ctx=GPU)
    with pytest.raises(mx.base.MXNetError, match="different devices"):
        g + mx.nd.ones((3,))
    with pytest.raises(mx.base.MXNetError, match="gpu"):
        mx.nd.ones((3,), ctx=mx.gpu(99))
    with pytest.raises(AttributeError):
        g.__array_interface__
    with pytest.raises(AttributeError):
        mx.nd.ones((3,)).__cuda_array_interface__


def test_cupy_reads_and_writes_oxnet_memory_without_a_copy():
    cupy = pytest.importorskip("cupy")
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    g = mx.nd.array(x, ctx=GPU)
    c = cupy.asarray(g)
    assert c.data.ptr == g.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(cupy.asnumpy(c), x)
    c *= 2  # written in place, seen by oxnet
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(g.asnumpy(), 2 * x)


def test_torch_reads_oxnet_memory_through_dlpack():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    g = mx.nd.array(x, ctx=GPU)
    mx.nd.waitall()
    t = torch.from_dlpack(g)
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), x)


def test_autograd_on_the_gpu_matches_cpu():
    x = RNG.standard_normal((4, 5)).astype(np.float32)

    def run(ctx):
        a = mx.nd.array(x, ctx=ctx)
        a.attach_grad()
        with mx.autograd.record():
            y = (mx.nd.sigmoid(a) * a + mx.nd.tanh(a) * 2 - a / 3).sum()
        y.backward()
        assert a.grad.context == ctx
        return y.asnumpy(), a.grad.asnumpy()

    for want, got in zip(run(mx.cpu()), run(GPU)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("optimizer,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                              ("adam", {"learning_rate": 0.01, "wd": 1e-3})])
def test_hybridized_gluon_training_on_the_gpu_matches_cpu(optimizer, params):
    from oxnet import autograd, gluon

    data = RNG.standard_normal((32, 10)).astype(np.float32)
    labels = RNG.integers(0, 3, size=32).astype(np.float32)

    def train(ctx):
        mx.random.seed(3)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(3))
        net.initialize(mx.init.Xavier(), ctx=ctx)
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), optimizer, dict(params))
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        x, y = mx.nd.array(data, ctx=ctx), mx.nd.array(labels, ctx=ctx)
        for _ in range(3):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
        return [p.data().asnumpy() for p in net.collect_params().values()] + [loss.asnumpy()]

    for want, got in zip(train(mx.cpu()), train(GPU)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    print("operators run on the host for lack of a GPU kernel:", mx.context.gpu_host_fallbacks())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_match_cpu(dtype):
    t = tol(dtype) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    a = RNG.standard_normal((7, 5)).astype(dtype)
    b = RNG.standard_normal((5, 9)).astype(dtype)
    for ta, tb, x, y in [(False, False, a, b), (True, False, a.T.copy(), b), (False, True, a, b.T.copy()),
                         (True, True, a.T.copy(), b.T.copy())]:
        want = mx.nd.dot(mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype), transpose_a=ta, transpose_b=tb)
        got = mx.nd.dot(mx.nd.array(x, ctx=GPU, dtype=dtype), mx.nd.array(y, ctx=GPU, dtype=dtype),
                        transpose_a=ta, transpose_b=tb)
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), **t)
    # N-d lhs and rhs, and a vector
    c = RNG.standard_normal((2, 3, 5)).astype(dtype)
    d = RNG.standard_normal((5, 2, 2)).astype(dtype)
    v = RNG.standard_normal(5).astype(dtype)
    for x, y in [(c, d), (v, d), (c, v), (v, v)]:
        want = mx.nd.dot(mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)).asnumpy()
        got = mx.nd.dot(mx.nd.array(x, ctx=GPU, dtype=dtype), mx.nd.array(y, ctx=GPU, dtype=dtype)).asnumpy()
        np.testing.assert_allclose(got, want, **t)
    # FullyConnected with and without bias, flattened and not
    x = RNG.standard_normal((4, 2, 5)).astype(dtype)
    w = RNG.standard_normal((3, 10)).astype(dtype)
    bias = RNG.standard_normal(3).astype(dtype)
    for kw, inputs in [(dict(num_hidden=3), (x, w, bias)), (dict(num_hidden=3, no_bias=True), (x, w))]:
        want = mx.nd.FullyConnected(*[mx.nd.array(z, dtype=dtype) for z in inputs], **kw).asnumpy()
        got = mx.nd.FullyConnected(*[mx.nd.array(z, ctx=GPU, dtype=dtype) for z in inputs], **kw).asnumpy()
        np.testing.assert_allclose(got, want, **t)
    w2 = RNG.standard_normal((3, 5)).astype(dtype)
    want = mx.nd.FullyConnected(mx.nd.array(x, dtype=dtype), mx.nd.array(w2, dtype=dtype), num_hidden=3, no_bias=True,
                                flatten=False).asnumpy()
    got = mx.nd.FullyConnected(mx.nd.array(x, ctx=GPU, dtype=dtype), mx.nd.array(w2, ctx=GPU, dtype=dtype),
                               num_hidden=3, no_bias=True, flatten=False).asnumpy()
    np.testing.assert_allclose(got, want, **t)


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 2)},
                                {"axis": 1, "exclude": True}, {"axis": -1}])
def test_reductions_match_cpu(op, kw):
    x = RNG.standard_normal((6, 7, 300)).astype(np.float32)
    want = getattr(mx.nd, op)(mx.nd.array(x), **kw).asnumpy()
    got = getattr(mx.nd, op)(mx.nd.array(x, ctx=GPU), **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)
    # a transposed (strided) input
    want = getattr(mx.nd, op)(mx.nd.array(x).transpose((2, 0, 1)), **kw).asnumpy()
    got = getattr(mx.nd, op)(mx.nd.array(x, ctx=GPU).transpose((2, 0, 1)), **kw).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_and_its_gradient_match_cpu(act):
    x = RNG.uniform(-3, 3, size=(8, 13)).astype(np.float32)

    def run(ctx):
        a = mx.nd.array(x, ctx=ctx)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Activation(a, act_type=act)
        y.backward(mx.nd.array(x * 0.5, ctx=ctx))
        return y.asnumpy(), a.grad.asnumpy()

    for want, got in zip(run(mx.cpu()), run(GPU)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_family_and_gradient_match_cpu(op, axis):
    x = RNG.standard_normal((5, 700, 3)).astype(np.float32) * 4

    def run(ctx):
        a = mx.nd.array(x, ctx=ctx)
        a.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, op)(a, axis=axis, temperature=2.0)
        y.backward(mx.nd.array(np.cos(x), ctx=ctx))
        return y.asnumpy(), a.grad.asnumpy()

    for want, got in zip(run(mx.cpu()), run(GPU)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis,keepdims", [(-1, False), (0, True), (1, False)])
def test_pick_and_its_gradient_match_cpu(mode, axis, keepdims):
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 1
    if not keepdims:
        shape.pop(axis)
    index = RNG.integers(-n - 2, 2 * n, size=shape).astype(np.float32)

    def run(ctx):
        a = mx.nd.array(x, ctx=ctx)
        a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.pick(a, mx.nd.array(index, ctx=ctx), axis=axis, keepdims=keepdims, mode=mode)
        y.backward(mx.nd.array(np.arange(y.size, dtype=np.float32).reshape(y.shape) + 1, ctx=ctx))
        return y.asnumpy(), a.grad.asnumpy()

    for want, got in zip(run(mx.cpu()), run(GPU)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_products_accumulate_in_float32(dtype):
    a = RNG.uniform(-1, 1, size=(64, 96)).astype(np.float32)
    b = RNG.uniform(-1, 1, size=(96, 48)).astype(np.float32)
    ha, hb = mx.nd.array(a).astype(dtype), mx.nd.array(b).astype(dtype)
    # the inputs as the half type rounds them, multiplied in float64
    want = ha.astype("float64").asnumpy() @ hb.astype("float64").asnumpy()
    got = mx.nd.dot(ha.as_in_context(GPU), hb.as_in_context(GPU))
    assert got.context == GPU and got.shape == (64, 48)
    got = got.as_in_context(mx.cpu()).astype("float64").asnumpy()
    # float32 accumulation, one rounding to the half type at the end
    np.testing.assert_allclose(got, want, rtol=1e-2 if dtype == "bfloat16" else 2e-3, atol=1e-2)


def test_an_operator_error_on_the_gpu_reaches_the_caller():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4), ctx=GPU)
    with pytest.raises(mx.base.MXNetError, match="take"):
        mx.nd.take(x, mx.nd.array([0, 7], ctx=GPU), mode="raise").asnumpy()
    # the device is still usable afterwards
    np.testing.assert_array_equal((x * 2).asnumpy(), np.arange(12).reshape(3, 4) * 2)


def test_python_custom_op_sees_device_arrays():
    cupy = pytest.importorskip("cupy")

    class Double(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            assert in_data[0].context == GPU
            cupy.multiply(cupy.asarray(in_data[0]), 2, out=cupy.asarray(out_data[0]))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            cupy.multiply(cupy.asarray(out_grad[0]), 2, out=cupy.asarray(in_grad[0]))

    @mx.operator.register("test_gpu_double")
    class DoubleProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Double()

    x = RNG.standard_normal((5, 7)).astype(np.float32)
    a = mx.nd.array(x, ctx=GPU)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(a, op_type="test_gpu_double") * 3  # oxnet's kernel after CuPy's
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), 6 * x, rtol=1e-6)
    np.testing.assert_allclose(a.grad.asnumpy(), np.full_like(x, 6), rtol=1e-6)


def test_split_and_load_places_slices_on_the_gpu():
    from oxnet import gluon

    x = RNG.standard_normal((6, 3)).astype(np.float32)
    parts = gluon.utils.split_and_load(mx.nd.array(x), [GPU])
    assert len(parts) == 1 and parts[0].context == GPU
    np.testing.assert_array_equal(parts[0].asnumpy(), x)
    parts = gluon.utils.split_and_load(mx.nd.array(x), [GPU, mx.cpu()])
    assert [p.context for p in parts] == [GPU, mx.cpu()]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x)
