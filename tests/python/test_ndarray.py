"""oxnet.nd: the NDArray class, creation, indexing, arithmetic, numpy interop."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd


def test_properties_and_creation():
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    assert x.shape == (2, 3)
    assert x.dtype == np.float32
    assert x.size == 6 and x.ndim == 2
    assert x.context == mx.cpu() and x.ctx == mx.cpu(0)
    assert nd.zeros((2, 2)).asnumpy().tolist() == [[0, 0], [0, 0]]
    assert nd.ones(3, dtype="float64").dtype == np.float64
    assert nd.full((2,), 7).asnumpy().tolist() == [7, 7]
    assert nd.empty((1, 2)).shape == (1, 2)
    np.testing.assert_array_equal(nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(nd.arange(1, 7, 2, dtype=np.int32).asnumpy(), [1, 3, 5])
    np.testing.assert_array_equal(nd.arange(2, repeat=2).asnumpy(), [0, 0, 1, 1])
    assert nd.array(np.arange(3, dtype=np.float64)).dtype == np.float32  # the reference's default
    assert nd.array(np.arange(3), dtype=np.int64).dtype == np.int64


def test_asnumpy_is_a_copy_and_asarray_shares_memory():
    x = nd.array([1.0, 2.0, 3.0])
    copy = x.asnumpy()
    copy[0] = 100
    assert x.asnumpy()[0] == 1.0
    view = np.asarray(x)
    x[:] = 5
    assert view.tolist() == [5, 5, 5]  # no copy: numpy sees the engine's buffer
    strided = x[::2]
    assert np.asarray(strided).tolist() == [5, 5]
    dl = np.from_dlpack(x)
    x[1] = 9
    assert dl.tolist() == [5, 9, 5]


def test_asscalar_astype_copy_copyto_reshape_transpose():
    x = nd.array([[1.5, 2.5]])
    assert nd.array([3.0]).asscalar() == 3.0
    with pytest.raises(ValueError):
        x.asscalar()
    assert x.astype("int32").asnumpy().tolist() == [[1, 2]]
    assert x.astype(np.float64).dtype == np.float64
    y = x.copy()
    y[:] = 0
    assert x.asnumpy().tolist() == [[1.5, 2.5]]
    z = nd.zeros((1, 2))
    assert x.copyto(z) is z and z.asnumpy().tolist() == [[1.5, 2.5]]
    with pytest.raises(mx.MXNetError, match="shape"):
        x.copyto(nd.zeros((3,)))
    assert x.reshape((2, 1)).shape == (2, 1)
    assert x.reshape(2, -1).shape == (2, 1)
    assert x.reshape(shape=(-1,)).shape == (2,)
    assert x.T.shape == (2, 1)
    r = x.reshape((2,))
    r[0] = 7  # reshape shares memory, as in the reference
    assert x.asnumpy()[0, 0] == 7


def test_swapaxes_as_function_method_and_symbol():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(a)
    np.testing.assert_array_equal(x.swapaxes(0, 2).asnumpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(nd.SwapAxis(x, dim1=-1, dim2=1).asnumpy(), a.swapaxes(-1, 1))
    x.attach_grad()
    head = np.random.default_rng(1).uniform(size=(3, 2, 4)).astype(np.float32)
    with mx.autograd.record():
        y = nd.swapaxes(x, dim1=0, dim2=1)
    y.backward(nd.array(head))
    np.testing.assert_array_equal(x.grad.asnumpy(), head.swapaxes(0, 1))
    s = mx.sym.var("x").swapaxes(dim1=0, dim2=2)
    assert s.infer_shape(x=(2, 3, 4))[1] == [(4, 3, 2)]
    with pytest.raises(mx.MXNetError, match="dim2"):
        nd.swapaxes(x, dim1=0, dim2=3)


def test_indexing_and_slice_assignment():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(base)
    for key in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (0, slice(1, 3), slice(None, None, 2)),
                (slice(None, None, -1),), (None, 0), (1, None, Ellipsis), ()]:
        np.testing.assert_array_equal(x[key].asnumpy(), base[key], err_msg=str(key))
    np.testing.assert_array_equal(x[nd.array([1, 0], dtype="int64")].asnumpy(), base[[1, 0]])
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    x[:] = 1
    assert x.asnumpy().sum() == 24
    x[()] = 2
    assert x.asnumpy().sum() == 48
    x[0, 1] = nd.array([1, 2, 3, 4])
    x[1] = np.zeros((3, 4))
    x[0, 0, :2] = [7, 8]
    x[0, 2] = nd.array([5])  # broadcast
    want = np.full((2, 3, 4), 2, np.float32)
    want[0, 1] = [1, 2, 3, 4]
    want[1] = 0
    want[0, 0, :2] = [7, 8]
    want[0, 2] = 5
    np.testing.assert_array_equal(x.asnumpy(), want)
    with pytest.raises(mx.MXNetError, match="shape"):
        x[0] = nd.ones((2, 2))
    assert len(x) == 2 and [r.shape for r in x] == [(3, 4), (3, 4)]


def test_arithmetic_matches_numpy_with_broadcasting_and_scalars():
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, (3, 4)).astype(np.float32)
    b = rng.uniform(1, 2, (4,)).astype(np.float32)
    x, y = nd.array(a), nd.array(b)
    cases = [
        (x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x ** 2, a ** 2),
        (2 + x, 2 + a), (2 - x, 2 - a), (3 * x, 3 * a), (1 / x, 1 / a), (2 ** x, 2 ** a),
        (-x, -a), (abs(-x), a), (x > y, (a > b)), (x <= 1.5, a <= 1.5), (x == x, a == a),
        (x != y, a != b), (x + np.float32(1), a + 1),
    ]
    for got, want in cases:
        np.testing.assert_allclose(got.asnumpy(), want.astype(np.float32), rtol=1e-6)
    z = x.copy()
    z += 1
    z *= y
    z -= 2
    z /= 4
    np.testing.assert_allclose(z.asnumpy(), ((a + 1) * b - 2) / 4, rtol=1e-6)
    with pytest.raises(TypeError):
        x + "text"


def test_generated_operator_functions():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 3)).astype(np.float32)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    bias = rng.normal(size=(4,)).astype(np.float32)
    x = nd.array(a)
    np.testing.assert_allclose(nd.sigmoid(x).asnumpy(), 1 / (1 + np.exp(-a)), rtol=1e-5)
    fc = nd.FullyConnected(x, nd.array(w), nd.array(bias), num_hidden=4)
    np.testing.assert_allclose(fc.asnumpy(), a @ w.T + bias, rtol=1e-5)
    fc_kw = nd.FullyConnected(data=x, weight=nd.array(w), num_hidden=4, no_bias=True)
    np.testing.assert_allclose(fc_kw.asnumpy(), a @ w.T, rtol=1e-5)
    np.testing.assert_allclose(nd.sum(x, axis=1, keepdims=True).asnumpy(), a.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(x.sum(axis=0).asnumpy(), a.sum(0), rtol=1e-5)  # fluent method
    np.testing.assert_allclose(nd.broadcast_div(x, nd.array([[2.0]])).asnumpy(), a / 2, rtol=1e-6)
    np.testing.assert_allclose(nd.transpose(x, (1, 0)).asnumpy(), a.T)  # positional attribute
    np.testing.assert_allclose(nd.add_n(x, x, x).asnumpy(), 3 * a, rtol=1e-6)
    np.testing.assert_allclose(nd.concat(x, x, dim=0).asnumpy(), np.concatenate([a, a]))
    out = nd.zeros((2, 3))
    assert nd.relu(x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), np.maximum(a, 0))
    dropped = nd.Dropout(x, p=0.5)
    assert isinstance(dropped, nd.NDArray)  # the mask output stays hidden
    assert "Parameters" in nd.sum.__doc__ and "keepdims" in nd.sum.__doc__
    assert nd.broadcast_plus is not None and nd.elemwise_add is not None


def test_operator_errors_name_the_operator_and_problem():
    x = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match="operator `sum`.*axis"):
        nd.sum(x, axis="a")
    with pytest.raises(mx.MXNetError, match="broadcast_add.*broadcast"):
        x + nd.ones((4,))
    with pytest.raises(mx.MXNetError, match="FullyConnected.*num_hidden"):
        nd.FullyConnected(x, nd.ones((4, 3)), nd.ones((4,)))
    with pytest.raises(mx.MXNetError, match="no_such_attr"):
        nd.sum(x, no_such_attr=1)
    # as in MXNet, an operator without attributes keeps (and ignores) any
    assert nd.relu(x, no_such_attr=1).shape == x.shape
    with pytest.raises(mx.MXNetError, match="no argument `wieght`"):
        nd.FullyConnected(x, wieght=nd.ones((4, 3)), num_hidden=4, no_bias=True)
    with pytest.raises(AttributeError):
        nd.no_such_operator
    # a GPU context can be named, as in MXNet; on a machine without a GPU an
    # array cannot be made on it, and the error says why
    assert mx.gpu(1).device_type == "gpu"
    n_gpus = mx.context.num_gpus()
    with pytest.raises(mx.MXNetError, match="no CUDA driver|no GPU backend" if n_gpus == 0 else "gpu\\(99\\)"):
        nd.ones((2,), ctx=mx.gpu(0 if n_gpus == 0 else 99))
    with pytest.raises(mx.MXNetError, match="complex"):
        nd.array(np.ones(2), dtype=np.complex64)


def test_repr_random_and_waitall():
    x = nd.array([[1, 2], [3, 4]])
    assert "NDArray 2x2 @cpu(0)" in repr(x)
    mx.random.seed(42)
    a = nd.random.uniform(0, 1, shape=(3,)).asnumpy()
    b = nd.random.normal(shape=(2, 2))
    mx.random.seed(42)
    np.testing.assert_array_equal(a, nd.random.uniform(0, 1, shape=(3,)).asnumpy())
    np.testing.assert_array_equal(b.asnumpy(), nd.random.normal(shape=(2, 2)).asnumpy())
    assert ((a >= 0) & (a < 1)).all()
    assert nd.uniform(shape=(4, 3)).shape == (4, 3)
    assert nd.random_uniform(low=-10, high=10, shape=(5, 2)).shape == (5, 2)
    nd.waitall()
    x.wait_to_read()


def test_binary_functions_take_numbers_on_either_side():
    a = np.array([1.0, 5.0], dtype=np.float32)
    x = nd.array(a)
    np.testing.assert_allclose(nd.maximum(x, 2.0).asnumpy(), np.maximum(a, 2))
    np.testing.assert_allclose(nd.minimum(3.0, x).asnumpy(), np.minimum(3, a))
    np.testing.assert_allclose(nd.subtract(3.0, x).asnumpy(), 3 - a)
    np.testing.assert_allclose(nd.divide(3.0, x).asnumpy(), 3 / a, rtol=1e-6)
    np.testing.assert_allclose(nd.power(x, 2).asnumpy(), a ** 2)
    np.testing.assert_allclose(nd.greater(3.0, x).asnumpy(), (3 > a).astype(np.float32))
    np.testing.assert_allclose(nd.lesser_equal(x, nd.array([[2.0], [5.0]])).asnumpy(),
                               (a <= np.array([[2.0], [5.0]])).astype(np.float32))
    assert nd.add(1, 2) == 3
