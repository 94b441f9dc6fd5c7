"""mx.model.FeedForward, MXNet's deprecated trainer: it trains to the same
parameters as Module.fit from the same start, predicts what a numpy
forward pass gives, scores, saves and loads."""

import numpy as np
import pytest

import oxnet as mx


def net():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1"), act_type="tanh")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def start():
    rng = np.random.RandomState(5)
    shapes = {"fc1_weight": (6, 4), "fc1_bias": (6,), "fc2_weight": (3, 6), "fc2_bias": (3,)}
    return {k: mx.nd.array(rng.normal(0, 0.5, s)) for k, s in shapes.items()}


def data():
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (30, 4)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.2)).astype(np.float32)
    return x, y


def forward(params, x):
    p = {k: v.asnumpy() for k, v in params.items()}
    h = np.tanh(x @ p["fc1_weight"].T + p["fc1_bias"])
    z = h @ p["fc2_weight"].T + p["fc2_bias"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_fit_matches_module_and_predict_matches_numpy(tmp_path):
    x, y = data()
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward(net(), num_epoch=3, learning_rate=0.3, momentum=0.9, arg_params=start())
    model.fit(mx.io.NDArrayIter(x, y, batch_size=10))
    mod = mx.mod.Module(net())
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=10), num_epoch=3, arg_params=start(),
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9, "rescale_grad": 0.1})
    expected = mod.get_params()[0]
    for k, v in expected.items():
        np.testing.assert_allclose(model.arg_params[k].asnumpy(), v.asnumpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    # predict on arrays: batches of numpy_batch_size, padding removed
    model.numpy_batch_size = 8
    probs = model.predict(x)
    assert probs.shape == (30, 3)
    np.testing.assert_allclose(probs, forward(model.arg_params, x), rtol=1e-5, atol=1e-6)
    out, inputs, labels = model.predict(mx.io.NDArrayIter(x, y, batch_size=7), return_data=True)
    np.testing.assert_allclose(inputs, x)
    np.testing.assert_allclose(labels, y)
    acc = model.score(mx.io.NDArrayIter(x, y, batch_size=10))
    assert acc == pytest.approx(np.mean(forward(model.arg_params, x).argmax(axis=1) == y))
    # save and load
    model.save(str(tmp_path / "ff"))
    with pytest.warns(DeprecationWarning):
        again = mx.model.FeedForward.load(str(tmp_path / "ff"), 3)
    assert again.begin_epoch == 3
    np.testing.assert_allclose(again.predict(x), probs, rtol=1e-6)


def test_create_trains_on_numpy_arrays():
    x, y = data()
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward.create(net(), x, y, num_epoch=20, numpy_batch_size=10, learning_rate=0.5,
                                            initializer=mx.init.Xavier())
    acc = np.mean(model.predict(x).argmax(axis=1) == y)
    assert acc > 0.7
    assert model.score(mx.io.NDArrayIter(x, y, batch_size=10)) == pytest.approx(acc)
    # arrays without labels score against zeros, as in MXNet
    assert model.score(x) == pytest.approx(np.mean(model.predict(x).argmax(axis=1) == 0))


def test_errors():
    x, y = data()
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward(net(), num_epoch=1)
    with pytest.raises(ValueError, match="y must be given"):
        model.fit(x)
    with pytest.raises(ValueError, match="30 samples but 29 labels"):
        model.fit(x, y[:29])
    with pytest.raises(mx.MXNetError, match="no parameters yet"):
        model.predict(x)
    with pytest.raises(TypeError, match="Symbol or a callable"), pytest.warns(DeprecationWarning):
        mx.model.FeedForward(3)
