"""oxnet.autograd: recording scopes, backward, grad (higher order), grad_req."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd


def test_scopes_set_and_restore_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
        assert autograd.is_recording()
    with autograd.record(train_mode=False):
        assert not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()


def test_backward_matches_analytic_gradient():
    a = np.array([[0.5, -1.0], [2.0, 0.1]], dtype=np.float32)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = nd.sum(nd.exp(x) * x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(a) * (a + 1), rtol=1e-5)
    # head gradient
    with autograd.record():
        z = x * 3
    z.backward(nd.array([[1, 2], [3, 4]]))
    np.testing.assert_allclose(x.grad.asnumpy(), [[3, 6], [9, 12]])


def test_grad_req_add_accumulates_and_null_skips():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = x * x
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * 2 * np.array([1.0, 2.0]))
    with pytest.raises(mx.MXNetError, match="grad_req"):
        x.attach_grad(grad_req="sometimes")


def test_second_backward_without_retain_graph_is_an_error():
    x = nd.array([1.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(mx.MXNetError):
        y.backward()


def test_grad_with_create_graph_gives_second_derivative():
    a = np.array([0.3, 1.2, -0.7])
    x = nd.array(a, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.sin(x)
        grads = autograd.grad(y, x, create_graph=True)
    assert isinstance(grads, list) and len(grads) == 1  # a list even for one variable, as in MXNet
    dy = grads[0]
    np.testing.assert_allclose(dy.asnumpy(), np.cos(a))
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), -np.sin(a))
    with autograd.record():
        both = autograd.grad([nd.sum(x * x)], [x])
    assert isinstance(both, list)
    np.testing.assert_allclose(both[0].asnumpy(), 2 * a)


def test_autograd_backward_function_and_mark_variables():
    x = nd.array([1.0, 2.0, 3.0])
    g = nd.zeros((3,))
    autograd.mark_variables([x], [g])
    with autograd.record():
        y = x * x
    autograd.backward([y])
    np.testing.assert_allclose(g.asnumpy(), [2, 4, 6])
    assert x.grad is not None


def test_detach_stops_gradients_and_slicing_is_recorded():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = (x * 2).detach() * x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])
    with autograd.record():
        z = x[1:].sum() + x[0] * 5
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [5, 1, 1])


def test_numeric_gradient_helpers_on_builtin_operators():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4))
    w = rng.normal(size=(5, 4))
    b = rng.normal(size=(5,))
    assert mx.test_utils.check_numeric_gradient("tanh", [x]) < 1e-6
    assert mx.test_utils.check_numeric_gradient("FullyConnected", [x, w, b], kwargs={"num_hidden": 5}) < 1e-6
    assert mx.test_utils.check_op("sigmoid", [x]) < 1e-6
    mx.test_utils.assert_almost_equal(nd.array(x, dtype="float64"), x)
    with pytest.raises(AssertionError):
        mx.test_utils.assert_almost_equal(nd.array(x) * 2, x)


class _Sigmoid(mx.autograd.Function):
    def forward(self, x):
        y = 1 / (1 + mx.nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


class _SplitMul(mx.autograd.Function):
    """Two inputs, two outputs: (a * b, a + b)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b, a + b

    def backward(self, d_prod, d_sum):
        a, b = self.saved_tensors
        return d_prod * b + d_sum, d_prod * a + d_sum


def test_autograd_function_forward_and_backward():
    a = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    x = mx.nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = _Sigmoid()(x)
        z = (y * 3).sum()
    z.backward()
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(y.asnumpy(), s, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * s * (1 - s), rtol=1e-5)


def test_autograd_function_with_several_inputs_and_outputs():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 5.0])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        prod, total = _SplitMul()(a, b)
        loss = (prod * 2 + total).sum()
    loss.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [2 * 3 + 1, 2 * 5 + 1])
    np.testing.assert_allclose(b.grad.asnumpy(), [2 * 1 + 1, 2 * 2 + 1])


def test_autograd_function_instance_is_called_once():
    f = _Sigmoid()
    f(mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="only be called once"):
        f(mx.nd.ones((2,)))


def test_get_symbol_rebuilds_the_recorded_computation():
    x, w = mx.nd.array([[1.0, -2.0, 3.0]]), mx.nd.array([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]])
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(mx.nd.FullyConnected(x, w, num_hidden=2, no_bias=True)) * 3
    sym = mx.autograd.get_symbol(y)
    assert sym.list_arguments() == ["var0", "var1"]
    out = sym.eval(var0=x, var1=w)[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy())
    with pytest.raises(mx.MXNetError, match="not recorded"):
        mx.autograd.get_symbol(mx.nd.ones((2,)))
