"""MXNet's loss-output heads (MakeLoss, make_loss, SoftmaxOutput, the
regression outputs, SVMOutput) through `import oxnet as mx`: imperative
calls, autograd, executors, hybridized Gluon blocks and Module training,
against values MXNet 1.9.1 computed (embedded below)."""

import numpy as np
import pytest

import oxnet as mx

X = [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]
SOFTMAX = [[0.09003057, 0.24472848, 0.66524094], [0.17529039, 0.03911257, 0.78559703]]
# SoftmaxOutput's gradient for labels [2, 0] (grad_scale 1, normalization null)
SOFTMAX_GRAD = [[0.09003057, 0.24472848, -0.33475906], [-0.8247096, 0.03911257, 0.78559703]]


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def autograd_grads(op, inputs, head=5.0, **kwargs):
    """Output and every input's gradient after backward with a head gradient
    the operator ignores."""
    arrays = [mx.nd.array(v) for v in inputs]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(*arrays, **kwargs)
    y.backward(mx.nd.ones(y.shape) * head)
    return y.asnumpy(), [a.grad.asnumpy() for a in arrays]


def executor_grads(sym, values):
    """Gradients from simple_bind + backward() without a head gradient."""
    exe = sym.simple_bind(mx.cpu(), **{k: np.shape(v) for k, v in values.items()})
    for k, v in values.items():
        exe.arg_dict[k][:] = mx.nd.array(v)
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return out, {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None}


def test_softmax_output_imperative_and_autograd():
    close(mx.nd.SoftmaxOutput(mx.nd.array(X), mx.nd.array([2, 0])).asnumpy(), SOFTMAX)
    y, (gx, gl) = autograd_grads("SoftmaxOutput", [X, [2, 0]], grad_scale=2.0)
    close(y, SOFTMAX)
    close(gx, np.array(SOFTMAX_GRAD) * 2)
    close(gl, [0, 0])
    # the alias, normalization by batch
    _, (gx, _) = autograd_grads("Softmax", [X, [2, 0]], grad_scale=3.0, normalization="batch")
    close(gx, np.array(SOFTMAX_GRAD) * 1.5)
    # ignored instances; 'valid' counts the rest
    _, (gx, _) = autograd_grads("SoftmaxOutput", [X, [2, 1]], use_ignore=True, ignore_label=1,
                                normalization="valid")
    close(gx, [SOFTMAX_GRAD[0], [0, 0, 0]])
    _, (gx, _) = autograd_grads("SoftmaxOutput", [X, [2, 1]], smooth_alpha=0.3)
    close(gx, [[-0.05996943, 0.09472847, -0.03475904], [0.02529038, -0.66088742, 0.63559699]])
    # probabilities as labels
    _, (gx, _) = autograd_grads("SoftmaxOutput", [X, [[0.2, 0.3, 0.5], [1, 0, 0]]], grad_scale=2.0)
    close(gx, [[-0.21993886, -0.11054307, 0.33048189], [-1.64941919, 0.07822514, 1.57119405]])


def test_softmax_output_multi_output():
    x3 = np.arange(12.0).reshape(2, 3, 2) / 5
    _, (gx, _) = autograd_grads("SoftmaxOutput", [x3, [[2, 1], [0, 0]]], multi_output=True)
    close(gx, [[[0.10599136, 0.10599136], [0.15812053, -0.34187949], [-0.26411188, 0.23588812]],
               [[-0.39400864, -0.39400864], [0.15812053, 0.15812051], [0.23588812, 0.23588812]]])
    s = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="sm", multi_output=True)
    assert s.infer_shape(data=(4, 5, 2, 3)) == ([(4, 5, 2, 3), (4, 6)], [(4, 5, 2, 3)], [])
    # the label shapes MXNet accepts are named
    with pytest.raises(mx.base.MXNetError, match=r"\[4, ?6\]"):
        s.infer_shape(data=(4, 5, 2, 3), sm_label=(4, 5))


def test_symbol_inference():
    s = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="sm")
    assert s.list_arguments() == ["data", "sm_label"]
    assert s.list_outputs() == ["sm_output"]
    assert s.infer_shape(data=(4, 5)) == ([(4, 5), (4,)], [(4, 5)], [])
    assert s.infer_type(data="float64")[0] == [np.float64, np.float64]
    # an unknown batch size stays unknown in the label (MXNet's partial inference)
    assert s.infer_shape_partial(data=(0, 10)) == ([(0, 10), (0,)], [(0, 10)], [])
    assert '"SoftmaxOutput"' in mx.sym.Softmax(mx.sym.var("data")).tojson()
    r = mx.sym.LinearRegressionOutput(mx.sym.var("data"), name="lr")
    assert r.infer_shape(data=(4, 1))[0] == [(4, 1), (4,)]
    assert r.infer_shape(data=(4, 3))[0] == [(4, 3), (4, 3)]
    assert mx.sym.SVMOutput(mx.sym.var("data"), name="sv").infer_shape(data=(4, 3))[0] == [(4, 3), (4,)]
    assert mx.sym.MakeLoss(mx.sym.var("data"), name="ml").list_outputs() == ["ml_output"]
    assert mx.sym.make_loss(mx.sym.var("data"), name="ml").list_outputs() == ["ml_loss"]
    with pytest.raises(mx.base.MXNetError, match="label"):
        mx.nd.SoftmaxOutput(mx.nd.array(X), mx.nd.array([2, 0], dtype="int32"))


def test_executor_backward_without_head_gradient():
    s = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="sm")
    out, grads = executor_grads(s, {"data": X, "sm_label": [2, 0]})
    close(out, SOFTMAX)
    close(grads["data"], SOFTMAX_GRAD)
    close(grads["sm_label"], [0, 0])
    loss = mx.sym.MakeLoss(mx.sym.var("data") * 2, grad_scale=2.0, normalization="valid", valid_thresh=1.0)
    _, grads = executor_grads(loss, {"data": X})
    # MXNet: the 4 elements of 2 * X above 1.0 share grad_scale, times d(2x)/dx
    close(grads["data"], np.full((2, 3), 2 * 2.0 / 4))
    _, grads = executor_grads(mx.sym.make_loss(mx.sym.square(mx.sym.var("data"))), {"data": X})
    close(grads["data"], 2 * np.array(X))


def test_regression_and_svm_outputs():
    label = [[0, 1, 2], [3, 4, 5]]
    y, (gx, gl) = autograd_grads("LinearRegressionOutput", [X, label], grad_scale=2.0)
    close(y, X)
    close(gx, [[0.66666669, 0.66666669, 0.66666669], [-1.66666675, -3.33333349, -2.0]])
    close(gl, np.zeros((2, 3)))
    y, (gx, _) = autograd_grads("LogisticRegressionOutput", [X, [[0, 1, 1], [1, 0, 0]]])
    close(y, [[0.7310586, 0.88079703, 0.95257413], [0.62245935, 0.26894143, 0.88079703]])
    close(gx, [[0.2436862, -0.03973433, -0.01580862], [-0.12584689, 0.08964714, 0.29359901]])
    _, (gx, _) = autograd_grads("MAERegressionOutput", [X, [[1, 1, 2], [3, -1, 5]]], grad_scale=2.0)
    t = 2 / 3
    close(gx, [[-t, t, t], [-t, -t, -t]])
    _, (gx, _) = autograd_grads("SVMOutput", [X, [2, 0]])
    close(gx, [[4, 6, 0], [-1, 0, 6]])
    _, (gx, _) = autograd_grads("SVMOutput", [X, [2, 0]], use_linear=True, margin=2.0,
                                regularization_coefficient=0.5)
    close(gx, [[0.5, 0.5, 0], [-0.5, 0.5, 0.5]])


class _Head(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x, label):
        return F.SoftmaxOutput(x * 1, label, normalization="batch")


def test_hybridized_gluon_block():
    net = _Head()
    net.hybridize()
    x = mx.nd.array(X)
    x.attach_grad()
    for _ in range(2):
        with mx.autograd.record():
            out = net(x, mx.nd.array([2, 0]))
        out.backward()
        close(out.asnumpy(), SOFTMAX)
        close(x.grad.asnumpy(), np.array(SOFTMAX_GRAD) / 2)


def test_module_trains_a_softmax_output_head():
    rng = np.random.RandomState(0)
    data = rng.uniform(-1, 1, size=(60, 4)).astype("float32")
    label = (data[:, 0] + data[:, 1] > 0).astype("float32")
    it = mx.io.NDArrayIter(data, label, batch_size=20, label_name="softmax_label")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    net = mx.sym.SoftmaxOutput(fc, name="softmax")
    mod = mx.mod.Module(net, data_names=("data",), label_names=("softmax_label",))
    mod.fit(it, num_epoch=30, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Xavier())
    assert mod.score(it, "acc")[0][1] > 0.9
