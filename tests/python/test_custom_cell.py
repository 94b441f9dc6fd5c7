"""A user's own recurrent cell with a numpy custom operator inside
(examples/python/custom_cell.py) unrolls, hybridizes and learns."""

import json

import numpy as np
import oxnet as mx

import custom_cell


def test_custom_cell_learns_the_running_mean_hybridized():
    losses, gap = custom_cell.main(epochs=15, quiet=True)
    assert losses[-1] < losses[0] / 20
    assert gap < 1e-6


def test_the_unrolled_custom_cell_is_one_graph_with_the_custom_operator():
    net = custom_cell.RunningMean(steps=4)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (3, 4, 1)))
    hybrid = net(x).asnumpy()
    nodes = json.loads(net._cached_graph[1].tojson())["nodes"]
    customs = [n for n in nodes if n["op"] == "Custom"]
    assert len(customs) == 4  # one gate per step
    assert all(n["attrs"]["op_type"] == "sigmoid" for n in customs)
    # the same numbers step by step in numpy
    w, u, b = (q.data().asnumpy() for q in (net.cell.i2h_weight, net.cell.h2h_weight, net.cell.bias))
    h = np.zeros((3, w.shape[0] // 2))
    xs = x.asnumpy()
    outs = []
    for t in range(4):
        pre = xs[:, t] @ w.T + b + h @ u.T
        g, c = np.split(pre, 2, axis=1)
        z = 1 / (1 + np.exp(-g))
        h = z * h + (1 - z) * np.tanh(c)
        outs.append(h)
    dw, db = net.out.weight.data().asnumpy(), net.out.bias.data().asnumpy()
    expected = np.stack(outs, axis=1) @ dw.T + db
    np.testing.assert_allclose(hybrid, expected, rtol=1e-4, atol=1e-5)
