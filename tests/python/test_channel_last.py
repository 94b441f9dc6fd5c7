"""Channel-last layouts: Convolution and Deconvolution in NHWC/NDHWC,
Pooling in NWC/NHWC/NDHWC, and the Gluon layers that use them.

MXNet 1.9.1's CPU build infers channel-last convolution shapes but
computes none (oneDNN refuses the primitive), so convolution values are
checked against the channel-first call on permuted arrays; pooling values
and gradients are MXNet 1.9.1's own.
"""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd
from oxnet.gluon import nn


def to_last(a):
    """Moves axis 1 (channels) last."""
    return np.moveaxis(a, 1, -1)


def to_first(a):
    return np.moveaxis(a, -1, 1)


def run(op, arrays, head, **attrs):
    """Output and input gradients of ``op`` on ``arrays`` with head gradient
    ``head`` (numpy in, numpy out)."""
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = op(*xs, **attrs)
    y.backward(nd.array(head, dtype="float64"))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def check_against_channel_first(op, data, weight, bias, layout, **attrs):
    rng = np.random.RandomState(3)
    first = [data, weight] + ([bias] if bias is not None else [])
    y = op(*[nd.array(a, dtype="float64") for a in first], **attrs).asnumpy()
    head = rng.uniform(-1, 1, y.shape)
    y_ref, g_ref = run(op, first, head, **attrs)
    last = [to_last(data), to_last(weight)] + ([bias] if bias is not None else [])
    y_last, g_last = run(op, last, to_last(head), layout=layout, **attrs)
    assert y_last.shape == to_last(y_ref).shape
    np.testing.assert_allclose(y_last, to_last(y_ref), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_last[0], to_last(g_ref[0]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_last[1], to_last(g_ref[1]), rtol=1e-12, atol=1e-12)
    if bias is not None:
        np.testing.assert_allclose(g_last[2], g_ref[2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["NHWC", "NDHWC"])
def test_convolution_matches_channel_first(layout):
    rng = np.random.RandomState(0)
    nsp = len(layout) - 2
    data = rng.uniform(-1, 1, (2, 4) + (5,) * nsp)
    weight = rng.uniform(-1, 1, (6, 2) + (3,) * nsp)
    bias = rng.uniform(-1, 1, (6,))
    check_against_channel_first(nd.Convolution, data, weight, bias, layout, kernel=(3,) * nsp, num_filter=6,
                                num_group=2, stride=(2,) * nsp, pad=(1,) * nsp)
    check_against_channel_first(nd.Convolution, data, weight[:, :, ::-1].copy(), None, layout,
                                kernel=(3,) * nsp, num_filter=6, num_group=2, dilate=(2,) * nsp, pad=(1,) * nsp,
                                no_bias=True)


@pytest.mark.parametrize("layout", ["NHWC", "NDHWC"])
def test_deconvolution_matches_channel_first(layout):
    rng = np.random.RandomState(1)
    nsp = len(layout) - 2
    data = rng.uniform(-1, 1, (2, 4) + (3,) * nsp)
    weight = rng.uniform(-1, 1, (4, 3) + (2,) * nsp)
    bias = rng.uniform(-1, 1, (6,))
    check_against_channel_first(nd.Deconvolution, data, weight, bias, layout, kernel=(2,) * nsp, num_filter=6,
                                num_group=2, stride=(2,) * nsp, pad=(1,) * nsp, adj=(1,) * nsp, no_bias=False)


def test_convolution_hand_computed_nhwc():
    # 3x3 image, channel 0 = 1..9, channel 1 its negation; filter 0 sums
    # channel 0 over 2x2, filter 1 sums channel 1
    x = np.stack([np.arange(1, 10), -np.arange(1, 10)], axis=-1).reshape(1, 3, 3, 2).astype("float32")
    w = np.zeros((2, 2, 2, 2), "float32")
    w[0, :, :, 0] = 1
    w[1, :, :, 1] = 1
    y = nd.Convolution(nd.array(x), nd.array(w), nd.array([0.5, 0.0]), kernel=(2, 2), num_filter=2,
                       layout="NHWC")
    assert y.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(y.asnumpy().ravel(), [12.5, -12, 16.5, -16, 24.5, -24, 28.5, -28])


X_NHWC = np.array([3, -1, 0.5, 2, -2, 4, 1, 0, 5, -3, 2.5, 1.5, -0.5, 6, 2, -4, 0, 3], "float32").reshape(1, 3, 3, 2)


def test_pooling_values_and_gradients_from_mxnet():
    head = lambda shape: np.arange(1, int(np.prod(shape)) + 1).reshape(shape)  # noqa: E731
    x = nd.array(X_NHWC)
    x.attach_grad()
    with autograd.record():
        y = nd.Pooling(x, kernel=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad=False, layout="NHWC")
    y.backward(nd.array(head(y.shape)))
    assert y.shape == (1, 4, 4, 2)
    np.testing.assert_allclose(y.asnumpy().ravel(), [
        3.0, -1.0, 1.75, 0.5, -0.75, 3.0, -2.0, 4.0, 2.0, -0.5, 2.375, -0.5, 1.5, 1.125, 0.25, 2.75,
        0.25, 3.0, 1.875, -0.25, 2.375, -0.625, 1.25, 2.25, -0.5, 6.0, 0.75, 1.0, 1.0, -0.5, 0.0, 3.0])
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), [
        9.75, 12.0, 10.0, 11.5, 20.25, 22.5, 20.5, 22.0, 16.0, 17.0, 27.5, 29.0, 51.75, 54.0, 38.0, 39.5,
        62.25, 64.5])
    y = nd.Pooling(nd.array(X_NHWC), global_pool=True, kernel=(1, 1), pool_type="sum", layout="NHWC")
    assert y.shape == (1, 1, 1, 2)
    np.testing.assert_allclose(y.asnumpy().ravel(), [11.5, 8.5])
    x1 = nd.array([1, 2, 3, -1, 0.5, 4, 2, 1]).reshape((1, 4, 2))
    y = nd.Pooling(x1, kernel=(2,), stride=(2,), pool_type="lp", p_value=2, layout="NWC")
    np.testing.assert_allclose(y.asnumpy().ravel(), [3.1622777, 2.2360680, 2.0615528, 4.1231055], rtol=1e-6)


@pytest.mark.parametrize("layout", ["NWC", "NHWC", "NDHWC"])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp"])
def test_pooling_matches_channel_first(layout, pool_type):
    rng = np.random.RandomState(2)
    nsp = len(layout) - 2
    x = rng.uniform(0.1, 1, (2, 3) + (6,) * nsp)
    for convention in ("valid", "full"):
        attrs = dict(kernel=(3,) * nsp, stride=(2,) * nsp, pad=(1,) * nsp, pool_type=pool_type, p_value=3,
                     pooling_convention=convention)
        y_ref = nd.Pooling(nd.array(x, dtype="float64"), **attrs).asnumpy()
        head = rng.uniform(-1, 1, y_ref.shape)
        y_ref, (g_ref,) = run(nd.Pooling, [x], head, **attrs)
        y, (g,) = run(nd.Pooling, [to_last(x)], to_last(head), layout=layout, **attrs)
        np.testing.assert_allclose(y, to_last(y_ref), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, to_last(g_ref), rtol=1e-12, atol=1e-12)


def test_symbol_shape_inference_matches_mxnet():
    data = mx.sym.var("data")
    # MXNet 1.9.1's answers
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, layout="NHWC", name="c")
    assert conv.infer_shape(data=(1, 5, 5, 2)) == ([(1, 5, 5, 2), (4, 3, 3, 2), (4,)], [(1, 3, 3, 4)], [])
    conv3 = mx.sym.Convolution(data, kernel=(3, 3, 3), num_filter=4, layout="NDHWC", name="c")
    assert conv3.infer_shape(data=(1, 5, 5, 5, 2)) == (
        [(1, 5, 5, 5, 2), (4, 3, 3, 3, 2), (4,)], [(1, 3, 3, 3, 4)], [])
    deconv = mx.sym.Deconvolution(data, kernel=(3, 3), num_filter=4, layout="NHWC", name="d")
    assert deconv.infer_shape(data=(1, 5, 5, 2)) == ([(1, 5, 5, 2), (2, 3, 3, 4)], [(1, 7, 7, 4)], [])
    deconv3 = mx.sym.Deconvolution(data, kernel=(3, 3, 3), num_filter=4, layout="NDHWC", name="d")
    assert deconv3.infer_shape(data=(1, 5, 5, 5, 2)) == ([(1, 5, 5, 5, 2), (2, 3, 3, 3, 4)], [(1, 7, 7, 7, 4)], [])
    for layout, shape, out in [("NWC", (1, 5, 2), (1, 3, 2)), ("NHWC", (1, 5, 5, 2), (1, 3, 3, 2)),
                               ("NDHWC", (1, 5, 5, 5, 2), (1, 3, 3, 3, 2))]:
        pool = mx.sym.Pooling(data, kernel=(3,) * (len(shape) - 2), layout=layout, name="p")
        assert pool.infer_shape(data=shape) == ([shape], [out], [])
    # the data's channels from the weight, batch and extents from the output
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, no_bias=True, layout="NHWC", name="c")
    args, outs, _ = conv.infer_shape_partial(data=(0, 0, 0, 0), c_weight=(4, 3, 3, 2))
    assert args == [(0, 0, 0, 2), (4, 3, 3, 2)]
    assert outs == [(0, 0, 0, 4)]


def test_errors_name_the_operator_and_layout():
    x1, w1 = nd.ones((1, 5, 2)), nd.ones((4, 3, 2))
    for op in (nd.Convolution, nd.Deconvolution):
        name = op.__name__
        # MXNet 1.9.1 accepts no NWC convolution
        with pytest.raises(mx.MXNetError, match=f"{name}.*layout.*NWC"):
            op(x1, w1, kernel=(3,), num_filter=4, no_bias=True, layout="NWC")
        with pytest.raises(mx.MXNetError, match=f"{name}.*layout NHWC does not match"):
            op(x1, w1, kernel=(3,), num_filter=4, no_bias=True, layout="NHWC")
        with pytest.raises(mx.MXNetError, match="layout.*NHWCX"):
            op(x1, w1, kernel=(3,), num_filter=4, no_bias=True, layout="NHWCX")
    with pytest.raises(mx.MXNetError, match="Pooling.*layout NDHWC does not match"):
        nd.Pooling(nd.ones((1, 5, 5, 2)), kernel=(2, 2), layout="NDHWC")
    with pytest.raises(mx.MXNetError, match="Pooling.*layout.*HWCN"):
        nd.Pooling(nd.ones((1, 5, 5, 2)), kernel=(2, 2), layout="HWCN")
    # a channel-first weight in an NHWC call: the shapes as given
    with pytest.raises(mx.MXNetError, match=r"weight has shape \(4, 2, 3, 3\).*needs \(4, 3, 3, 2\)"):
        nd.Convolution(nd.ones((1, 5, 5, 2)), nd.ones((4, 2, 3, 3)), kernel=(3, 3), num_filter=4, no_bias=True,
                       layout="NHWC")


@pytest.mark.parametrize("hybridize", [False, True])
def test_gluon_conv2d_nhwc_end_to_end(hybridize):
    rng = np.random.RandomState(4)
    conv = nn.Conv2D(4, 3, padding=1, layout="NHWC")
    conv.initialize(mx.init.Uniform(0.5))
    if hybridize:
        conv.hybridize()
    x = nd.array(rng.uniform(-1, 1, (2, 5, 6, 3)))
    x.attach_grad()
    with autograd.record():
        y = conv(x)
        loss = (y * y).sum()
    loss.backward()
    # deferred initialization: MXNet's OHWI weight
    assert conv.weight.shape == (4, 3, 3, 3)
    assert conv.bias.shape == (4,)
    assert y.shape == (2, 5, 6, 4)
    w, b = conv.weight.data().asnumpy(), conv.bias.data().asnumpy()
    # the same layer channel-first, on the permuted data and weight
    xf = nd.array(to_first(x.asnumpy()))
    wf, bf = nd.array(to_first(w)), nd.array(b)
    for a in (xf, wf, bf):
        a.attach_grad()
    with autograd.record():
        yf = nd.Convolution(xf, wf, bf, kernel=(3, 3), pad=(1, 1), num_filter=4)
        (yf * yf).sum().backward()
    np.testing.assert_allclose(y.asnumpy(), to_last(yf.asnumpy()), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), to_last(xf.grad.asnumpy()), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(conv.weight.grad().asnumpy(), to_last(wf.grad.asnumpy()), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(conv.bias.grad().asnumpy(), bf.grad.asnumpy(), rtol=1e-5, atol=1e-4)


def test_gluon_pooling_layers_match_mxnet():
    x = nd.array(np.array([3, -1, 0.5, 2, -2, 4, 1, 0, 5, -3, 2.5, 1.5, -0.5, 6, 2, -4, 0, 3, 1, 1, -2, 2, 0.25,
                           -0.75, 4, 4.5, -1, 7, 0, 1.5, -3, 2], "float32").reshape(1, 4, 4, 2))
    x.attach_grad()
    with autograd.record():
        y = nn.MaxPool2D(layout="NHWC")(x)
    y.backward(nd.arange(1, 9).reshape((1, 2, 2, 2)))
    np.testing.assert_allclose(y.asnumpy().ravel(), [5, 2, 2, 6, 4, 7, 0.25, 2])
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), [0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 4, 3, 0, 0, 0, 0,
                                                          0, 0, 8, 7, 0, 5, 0, 0, 6, 0, 0, 0, 0])
    x1 = nd.array([1, 2, 3, -1, 0.5, 4, 2, 1, -2, 0.5]).reshape((1, 5, 2))
    x1.attach_grad()
    pool = nn.AvgPool1D(pool_size=2, strides=2, padding=1, layout="NWC", count_include_pad=False)
    pool.hybridize()
    with autograd.record():
        y = pool(x1)
    y.backward(nd.arange(1, 7).reshape((1, 3, 2)))
    np.testing.assert_allclose(y.asnumpy().ravel(), [1, 2, 1.75, 1.5, 0, 0.75])
    np.testing.assert_allclose(x1.grad.asnumpy().ravel(), [1, 2, 1.5, 2, 1.5, 2, 2.5, 3, 2.5, 3])
    np.testing.assert_allclose(nn.AvgPool1D(layout="NWC")(x1).asnumpy().ravel(), [2, 0.5, 1.25, 2.5])


def test_gluon_nhwc_network_trains():
    rng = np.random.RandomState(5)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, layout="NHWC", activation="relu"), nn.MaxPool2D(layout="NHWC"),
            nn.Flatten(), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = nd.array(rng.uniform(-1, 1, (8, 6, 6, 2)))
    label = nd.array(rng.randint(0, 2, 8))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(20):
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        trainer.step(8)
        losses.append(loss.mean().asscalar())
    assert net[0].weight.shape == (4, 3, 3, 2)
    assert losses[-1] < losses[0]
