"""MXNet's host contexts: cpu(i), cpu_pinned(i), cpu_shared(i) are one
memory under different labels. The expected contexts below are what MXNet
1.9.1 printed for the same expressions."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.context import Context


def test_operators_put_results_on_their_first_inputs_context():
    a, b = nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(0))
    assert [(a + b).context, (b + a).context, nd.dot(a, b).context] == [mx.cpu(1), mx.cpu(0), mx.cpu(1)]
    assert ((a + b).asnumpy() == 2).all()
    pinned, shared = nd.ones((2,), ctx=mx.cpu_pinned(2)), nd.ones((2,), ctx=Context("cpu_shared", 0))
    assert (pinned.context, shared.context) == (mx.cpu_pinned(2), Context("cpu_shared", 0))
    # pinned and shared memory give cpu(id) results
    assert [(pinned + 1).context, (shared + 1).context, (pinned + b).context] == [mx.cpu(2), mx.cpu(0), mx.cpu(2)]
    # an operator that sizes its own outputs
    mask = nd.contrib.boolean_mask(a, nd.array([1, 0], ctx=mx.cpu(1)))
    assert mask.context == mx.cpu(1) and mask.asnumpy().tolist() == [1.0]


def test_creation_copies_and_views_keep_the_context():
    assert nd.zeros((2,), ctx=mx.cpu(4)).context == mx.cpu(4)
    assert nd.random.uniform(shape=(2,), ctx=mx.cpu(4)).context == mx.cpu(4)
    assert nd.array([1, 2], ctx=mx.cpu(5)).context == mx.cpu(5)
    assert nd.arange(3, ctx=mx.cpu(5)).context == mx.cpu(5)
    x = nd.array([[1, 2, 3], [4, 5, 6]], ctx=mx.cpu(1))
    assert [x[0].context, x.reshape((3, 2)).context, x.T.context, nd.split(x, 3, axis=1)[1].context] == [mx.cpu(1)] * 4
    assert x.as_in_context(mx.cpu(1)) is x
    moved = x.as_in_context(mx.cpu(0))
    assert moved.context == mx.cpu(0) and moved.asnumpy().tolist() == x.asnumpy().tolist()
    moved[:] = 0  # a copy, not a view: the source keeps its values
    assert x.asnumpy()[1, 2] == 6
    z = nd.zeros((2, 3), ctx=mx.cpu(2))
    x.copyto(z)
    assert z.context == mx.cpu(2) and z.asnumpy()[1, 2] == 6
    assert x.copyto(mx.cpu(7)).context == mx.cpu(7)


def test_gradients_and_graphs_stay_on_the_context():
    x = nd.ones((2,), ctx=mx.cpu(3))
    x.attach_grad()
    with autograd.record():
        y = (x * 2).sum()
    y.backward()
    assert (x.grad.context, y.context) == (mx.cpu(3), mx.cpu(3))
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]
    exe = (mx.sym.var("x") * 2).simple_bind(mx.cpu(2), x=(2,))
    exe.forward(x=nd.array([1, 2]))
    assert exe.outputs[0].context == mx.cpu(2) and exe.arg_dict["x"].context == mx.cpu(2)
    assert exe.outputs[0].asnumpy().tolist() == [2.0, 4.0]
    net = gluon.nn.Dense(2)
    net.initialize(ctx=mx.cpu(1))
    net.hybridize()
    assert net(nd.ones((1, 3), ctx=mx.cpu(1))).context == mx.cpu(1)


def test_a_gpu_array_does_not_mix_with_host_ones():
    if mx.context.num_gpus() == 0:
        pytest.skip("no GPU: host arrays only")
    with pytest.raises(mx.MXNetError, match="different devices"):
        nd.ones((2,), ctx=mx.cpu(1)) + nd.ones((2,), ctx=mx.gpu(0))


def test_training_over_two_cpu_contexts_equals_one_context_on_the_whole_batch():
    data = np.random.RandomState(0).uniform(-1, 1, (8, 5)).astype("float32")
    label = np.random.RandomState(1).uniform(-1, 1, (8, 2)).astype("float32")

    def train(ctxs):
        mx.random.seed(7)
        net = gluon.nn.Dense(2, in_units=5)
        net.initialize(mx.init.Xavier(), ctx=ctxs)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        loss_fn = gluon.loss.L2Loss()
        for _ in range(3):
            xs = gluon.utils.split_and_load(nd.array(data), ctxs)
            ys = gluon.utils.split_and_load(nd.array(label), ctxs)
            assert [x.context for x in xs] == ctxs
            with autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(8)
        copies = net.weight.list_data()
        assert [w.context for w in copies] == ctxs
        for w in copies[1:]:
            np.testing.assert_array_equal(w.asnumpy(), copies[0].asnumpy())
        return copies[0].asnumpy()

    np.testing.assert_allclose(train([mx.cpu(0), mx.cpu(1)]), train([mx.cpu(0)]), rtol=1e-5, atol=1e-6)
