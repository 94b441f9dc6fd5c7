"""mx.mod.SequentialModule: a two-module chain trains to MXNet 1.9.1's
parameters (gradients flow back through the first module's input)."""

import numpy as np
import pytest

import oxnet as mx


def _chain():
    net1 = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc1"), act_type="tanh")
    fc2 = mx.sym.FullyConnected(mx.sym.var("h"), num_hidden=1, name="fc2")
    loss = mx.sym.mean(mx.sym.square(fc2 - mx.sym.var("label")))
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(net1, label_names=None))
    seq.add(mx.mod.Module(loss, data_names=("h",), label_names=("label",)), take_labels=True, auto_wiring=True)
    return seq


def test_sequential_fit_reproduces_mxnet():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (12, 3)).astype("float32")
    y = rng.uniform(-1, 1, (12, 1)).astype("float32")
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="label")
    args = {"fc1_weight": mx.nd.array(np.arange(12).reshape(4, 3) / 20.0 - 0.3), "fc1_bias": mx.nd.zeros((4,)),
            "fc2_weight": mx.nd.array([[0.1, -0.2, 0.3, 0.4]]), "fc2_bias": mx.nd.zeros((1,))}
    seq = _chain()
    seq.fit(it, num_epoch=4, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.5},
            eval_metric=mx.metric.Loss(), arg_params=args)
    arg, _ = seq.get_params()
    # MXNet 1.9.1, the same chain with make_loss around the loss
    expected = {
        "fc1_bias": [0.00306, 0.018694, -0.028704, -0.057339],
        "fc1_weight": [[-0.313633, -0.216154, -0.191415], [-0.097869, -0.196326, -0.063207],
                       [-0.078558, 0.195952, 0.117682], [0.048903, 0.378543, 0.261358]],
        "fc2_bias": [-0.06919],
        "fc2_weight": [[0.044637, -0.221238, 0.341548, 0.482227]],
    }
    assert sorted(arg) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(arg[name].asnumpy(), value, atol=2e-6)
    assert seq.score(it, mx.metric.Loss())[0][1] == pytest.approx(0.20481488605340323, rel=1e-5)
    # MXNet 1.9.1 reports the batch size on axis 0 of every output without a
    # __layout__, even of a scalar loss: (4,), not (1,)
    assert seq.output_shapes == [(seq.output_names[0], (4,))] and seq.data_names == ["data"]


def test_sequential_errors():
    seq = mx.mod.SequentialModule()
    with pytest.raises(mx.MXNetError, match="empty SequentialModule"):
        seq.bind([("data", (2, 3))])
    with pytest.raises(ValueError, match='Unknown meta "take_label"'):
        seq.add(mx.mod.Module(mx.sym.var("data") * 2, label_names=None), take_label=True)
    same = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    seq.add(mx.mod.Module(same, label_names=None)).add(mx.mod.Module(same, label_names=None), auto_wiring=True)
    seq.bind([("data", (2, 3))])
    with pytest.raises(mx.MXNetError, match='Duplicated parameter names: name "fc_weight" in layer 1'):
        seq.init_params()
