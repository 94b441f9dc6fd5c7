"""mx.mod.PythonModule and PythonLossModule: a loss written in Python,
chained after a symbolic Module in a SequentialModule, trains the network
to the same parameters as the same loss as a built-in (SoftmaxOutput)."""

import numpy as np
import pytest

import oxnet as mx


def softmax_ce_grad(scores, labels):
    """d(cross-entropy of softmax(scores))/d(scores), as numpy."""
    s = scores.asnumpy()
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p


def logits():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1"), act_type="tanh")
    return mx.sym.FullyConnected(h, num_hidden=3, name="fc2")


def data():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (24, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.3)
    return mx.io.NDArrayIter(x, y, batch_size=6)


def init_params():
    rng = np.random.RandomState(4)
    shapes = {"fc1_weight": (6, 5), "fc1_bias": (6,), "fc2_weight": (3, 6), "fc2_bias": (3,)}
    return {k: mx.nd.array(rng.normal(0, 0.5, s)) for k, s in shapes.items()}


def train(mod):
    metric = mx.metric.Accuracy()
    mod.fit(data(), eval_metric=metric, num_epoch=4, optimizer="sgd",
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9}, arg_params=init_params())
    return mod.get_params()[0], metric.get()[1]


def test_python_loss_trains_like_the_builtin_loss():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(logits(), label_names=None))
    seq.add(mx.mod.PythonLossModule(grad_func=softmax_ce_grad), take_labels=True, auto_wiring=True)
    ours, acc = train(seq)
    builtin, acc_builtin = train(mx.mod.Module(mx.sym.SoftmaxOutput(logits(), name="softmax")))
    assert sorted(ours) == sorted(builtin)
    for k in ours:
        np.testing.assert_allclose(ours[k].asnumpy(), builtin[k].asnumpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert acc == pytest.approx(acc_builtin)
    # the loss module's output is its input: predict gives the logits
    out = seq.predict(data())
    assert out.shape == (24, 3)


def test_python_loss_module_shapes_and_grads():
    mod = mx.mod.PythonLossModule(name="loss", grad_func=lambda s, l: s.asnumpy() * 2)
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    assert mod.output_shapes == [("loss_output", (2, 3))]
    assert mod.output_names == ["loss_output"] and mod.get_params() == ({}, {})
    scores = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    mod.forward(mx.io.DataBatch([scores], [mx.nd.array([0, 1])]), is_train=True)
    assert mod.get_outputs()[0] is scores
    mod.backward()
    np.testing.assert_array_equal(mod.get_input_grads()[0].asnumpy(), scores.asnumpy() * 2)


def test_errors_name_the_problem():
    with pytest.raises(mx.MXNetError, match="one data input and one label"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(mx.MXNetError, match="grad_func must be callable"):
        mx.mod.PythonLossModule(grad_func=3)
    mod = mx.mod.PythonLossModule(grad_func=lambda s, l: np.zeros((5, 5)))
    with pytest.raises(mx.MXNetError, match="grad_req must be 'write'"):
        mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))], grad_req="add")
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(mx.MXNetError, match="needs a training forward"):
        mod.backward()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]))
    with pytest.raises(mx.MXNetError, match=r"returned shape \(5, 5\)"):
        mod.backward()
    with pytest.raises(NotImplementedError, match="grad_func or override"):
        bare = mx.mod.PythonLossModule()
        bare.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
        bare.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]))
        bare.backward()
