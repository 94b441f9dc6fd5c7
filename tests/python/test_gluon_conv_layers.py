"""Gluon's convolution, pooling, padding and normalization layers and
``gluon.contrib.nn``: outputs against numpy references and values MXNet
1.9.1 computed for the same inputs and parameters, MXNet's parameter names
and shapes, deferred shape inference, BatchNorm's running statistics,
hybridize/export/imports, training a small CNN, and clear errors."""

import itertools

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn
from oxnet.gluon.contrib import nn as cnn


def _arr(seed, shape, lo=-1.0, hi=1.0):
    """The seeded array both engines were given (MXNet's numbers below
    came from the same numpy calls)."""
    return np.random.RandomState(seed).uniform(lo, hi, shape).astype(np.float32)


def _run(layer, x, seed=1):
    """Initializes ``layer`` on ``x`` (deferred shapes), sets each parameter,
    in name order, to ``_arr(seed + i, shape)`` (a variance to values in
    [0.5, 1.5]) and returns the output."""
    layer.initialize()
    layer(nd.array(x))
    for i, (name, p) in enumerate(sorted(layer.collect_params().items())):
        lo, hi = (0.5, 1.5) if name.endswith("_var") else (-1.0, 1.0)
        p.set_data(nd.array(_arr(seed + i, p.shape, lo, hi)))
    out = layer(nd.array(x)).asnumpy()
    assert np.isfinite(out).all()
    return out


def _params(layer):
    return {name.split("_", 1)[1]: p.data().asnumpy() for name, p in layer.collect_params().items()}


# -- numpy references --------------------------------------------------------


def _np_conv(x, w, b, stride, pad, dilate, groups):
    """N-d cross-correlation (MXNet's Convolution), channel-first."""
    n, c = x.shape[:2]
    dims = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    o, kernel = w.shape[0], w.shape[2:]
    size = [(xp.shape[2 + i] - dilate[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(dims)]
    out = np.zeros((n, o) + tuple(size))
    cin, cout = c // groups, o // groups
    for offset in np.ndindex(*kernel):
        window = tuple(slice(offset[i] * dilate[i], offset[i] * dilate[i] + stride[i] * (size[i] - 1) + 1, stride[i])
                       for i in range(dims))
        patch = xp[(slice(None), slice(None)) + window]
        for g in range(groups):
            taps = w[(slice(g * cout, (g + 1) * cout), slice(None)) + offset]
            out[:, g * cout:(g + 1) * cout] += np.einsum("nc...,oc->no...", patch[:, g * cin:(g + 1) * cin], taps)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * dims)
    return out


def _np_deconv(x, w, b, stride, pad, dilate, groups, adj):
    """N-d transposed convolution (MXNet's Deconvolution): every input
    position scatters its kernel into the output."""
    n, c = x.shape[:2]
    dims = x.ndim - 2
    kernel = w.shape[2:]
    cin, cout = c // groups, w.shape[1]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilate[i] * (kernel[i] - 1) + 1 + adj[i] for i in range(dims)]
    out = np.zeros((n, cout * groups) + tuple(full))
    for offset in np.ndindex(*kernel):
        window = tuple(slice(offset[i] * dilate[i], offset[i] * dilate[i] + stride[i] * (x.shape[2 + i] - 1) + 1,
                             stride[i]) for i in range(dims))
        for g in range(groups):
            taps = w[(slice(g * cin, (g + 1) * cin), slice(None)) + offset]
            out[(slice(None), slice(g * cout, (g + 1) * cout)) + window] += np.einsum(
                "nc...,co->no...", x[:, g * cin:(g + 1) * cin].astype(np.float64), taps)
    size = [full[i] - 2 * pad[i] for i in range(dims)]
    out = out[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + size[i]) for i in range(dims))]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * dims)
    return out


def _np_pool(x, kernel, stride, pad, pool_type, ceil_mode=False, count_include_pad=True):
    """MXNet's Pooling: windows may run past the padding with ``ceil_mode``;
    an average divides by the window clipped to the padded data (or to the
    data, without ``count_include_pad``)."""
    dims = x.ndim - 2
    spatial = x.shape[2:]
    rnd = np.ceil if ceil_mode else np.floor
    size = [int(rnd((spatial[i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1 for i in range(dims)]
    out = np.zeros(x.shape[:2] + tuple(size))
    for pos in np.ndindex(*size):
        start = [pos[i] * stride[i] - pad[i] for i in range(dims)]
        end = [min(start[i] + kernel[i], spatial[i] + pad[i]) for i in range(dims)]
        padded_count = np.prod([end[i] - start[i] for i in range(dims)])
        lo = [max(s, 0) for s in start]
        hi = [min(e, spatial[i]) for i, e in enumerate(end)]
        window = x[(slice(None), slice(None)) + tuple(slice(lo[i], hi[i]) for i in range(dims))]
        axes = tuple(range(2, 2 + dims))
        if pool_type == "max":
            value = window.max(axis=axes)
        else:
            count = padded_count if count_include_pad else np.prod([hi[i] - lo[i] for i in range(dims)])
            value = window.sum(axis=axes) / count
        out[(slice(None), slice(None)) + pos] = value
    return out


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


# -- convolutions ------------------------------------------------------------

CONV_CASES = [
    # (class, dims, constructor kwargs, input shape)
    (nn.Conv1D, 1, dict(channels=4, kernel_size=3), (2, 3, 9)),
    (nn.Conv1D, 1, dict(channels=4, kernel_size=2, strides=2, padding=1, groups=2, activation="relu"), (2, 4, 7)),
    (nn.Conv2D, 2, dict(channels=3, kernel_size=(3, 2), strides=(2, 1), padding=(1, 0), dilation=(1, 2)),
     (2, 2, 7, 6)),
    (nn.Conv2D, 2, dict(channels=6, kernel_size=3, padding=1, groups=3, use_bias=False), (1, 3, 5, 5)),
    (nn.Conv3D, 3, dict(channels=2, kernel_size=(2, 3, 2), strides=(1, 2, 1), padding=(1, 0, 1),
                        dilation=(1, 1, 2), activation="tanh"), (1, 2, 3, 5, 4)),
]


@pytest.mark.parametrize("cls,dims,kwargs,shape", CONV_CASES)
def test_convolution_matches_numpy(cls, dims, kwargs, shape):
    layer = cls(**kwargs)
    x = _arr(100, shape)
    out = _run(layer, x)
    p = _params(layer)
    ref = _np_conv(x, p["weight"], p.get("bias"), _tup(kwargs.get("strides", 1), dims),
                   _tup(kwargs.get("padding", 0), dims), _tup(kwargs.get("dilation", 1), dims), kwargs.get("groups", 1))
    act = kwargs.get("activation")
    ref = np.maximum(ref, 0) if act == "relu" else np.tanh(ref) if act == "tanh" else ref
    assert p["weight"].shape == (kwargs["channels"], shape[1] // kwargs.get("groups", 1)) + _tup(kwargs["kernel_size"],
                                                                                                 dims)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


DECONV_CASES = [
    (nn.Conv1DTranspose, 1, dict(channels=2, kernel_size=3, strides=2, padding=2, dilation=2, output_padding=1),
     (2, 3, 4)),
    (nn.Conv2DTranspose, 2, dict(channels=4, kernel_size=3, strides=2, padding=1, output_padding=1, groups=2,
                                 in_channels=4), (1, 4, 3, 3)),
    (nn.Conv2DTranspose, 2, dict(channels=3, kernel_size=(2, 3), strides=(1, 2), activation="relu"), (2, 2, 3, 4)),
    (nn.Conv3DTranspose, 3, dict(channels=2, kernel_size=2, strides=2, use_bias=False), (1, 2, 2, 2, 2)),
]


@pytest.mark.parametrize("cls,dims,kwargs,shape", DECONV_CASES)
def test_transposed_convolution_matches_numpy(cls, dims, kwargs, shape):
    layer = cls(**kwargs)
    x = _arr(100, shape)
    out = _run(layer, x)
    p = _params(layer)
    groups = kwargs.get("groups", 1)
    ref = _np_deconv(x, p["weight"], p.get("bias"), _tup(kwargs.get("strides", 1), dims),
                     _tup(kwargs.get("padding", 0), dims), _tup(kwargs.get("dilation", 1), dims), groups,
                     _tup(kwargs.get("output_padding", 0), dims))
    if kwargs.get("activation") == "relu":
        ref = np.maximum(ref, 0)
    assert p["weight"].shape == (shape[1], kwargs["channels"] // groups) + _tup(kwargs["kernel_size"], dims)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# Conv1DTranspose(2, 3, strides=2, padding=2, dilation=2, output_padding=1) on _arr(100, (2, 3, 4)) with
# weight _arr(2, ...) and bias _arr(1, ...), as MXNet 1.9.1 computed it.
MXNET_CONV1DT = [
    [[-0.110227, -0.165956, 0.187565, -0.165956, 0.19617, -0.165956, -1.32586, -0.165956],
     [0.168459, 0.440649, 0.662293, 0.440649, 0.481051, 0.440649, 0.139084, 0.440649]],
    [[0.420396, -0.165956, -0.548145, -0.165956, 0.547304, -0.165956, -1.900303, -0.165956],
     [1.504721, 0.440649, 1.42106, 0.440649, 1.250152, 0.440649, 0.166444, 0.440649]]]


def test_transposed_convolution_matches_mxnet_values():
    layer = nn.Conv1DTranspose(2, 3, strides=2, padding=2, dilation=2, output_padding=1)
    out = _run(layer, _arr(100, (2, 3, 4)))
    np.testing.assert_allclose(out, MXNET_CONV1DT, rtol=1e-5, atol=1e-5)
    assert layer.outpad == (1,)


# -- pooling -----------------------------------------------------------------

POOL_CASES = [
    (nn.MaxPool1D, dict(), (1, 2, 8)),
    (nn.MaxPool1D, dict(pool_size=3, strides=2, ceil_mode=True), (1, 2, 8)),
    (nn.AvgPool1D, dict(pool_size=2, strides=1, padding=1), (1, 2, 4)),
    (nn.MaxPool2D, dict(pool_size=3, strides=2, padding=1), (2, 3, 7, 6)),
    (nn.AvgPool2D, dict(pool_size=(2, 3)), (1, 2, 6, 7)),
    (nn.AvgPool2D, dict(pool_size=3, strides=2, padding=1, ceil_mode=True), (1, 2, 6, 5)),
    (nn.AvgPool2D, dict(pool_size=3, strides=2, padding=1, ceil_mode=True, count_include_pad=False), (1, 2, 6, 5)),
    (nn.MaxPool3D, dict(pool_size=2, strides=(1, 2, 2), padding=(1, 0, 0)), (1, 1, 3, 4, 4)),
    (nn.AvgPool3D, dict(pool_size=2, padding=1, count_include_pad=False), (1, 1, 2, 3, 3)),
]


@pytest.mark.parametrize("cls,kwargs,shape", POOL_CASES)
def test_pooling_matches_numpy(cls, kwargs, shape):
    dims = len(shape) - 2
    x = _arr(100, shape)
    out = cls(**kwargs)(nd.array(x)).asnumpy()
    kernel = _tup(kwargs.get("pool_size", 2), dims)
    stride = _tup(kwargs.get("strides", kernel), dims)
    ref = _np_pool(x, kernel, stride, _tup(kwargs.get("padding", 0), dims), "max" if "Max" in cls.__name__ else "avg",
                   kwargs.get("ceil_mode", False), kwargs.get("count_include_pad", True))
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


# AvgPool2D(3, 2, 1, ceil_mode=True[, count_include_pad=False]) on _arr(100, (1, 2, 6, 5)), by MXNet 1.9.1.
MXNET_AVGPOOL_CEIL = [
    [[-0.085757, 0.040216, -0.09749], [0.151811, -0.125319, -0.193295], [0.120125, 0.099426, -0.130503],
     [-0.20716, -0.148741, -0.063028]],
    [[0.238662, 0.004957, -0.025363], [0.346177, -0.00676, -0.036399], [0.153762, -0.197875, -0.079502],
     [-0.160576, -0.346454, -0.149902]]]
MXNET_AVGPOOL_CEIL_NOPAD = [
    [[-0.192954, 0.060324, -0.219353], [0.227716, -0.125319, -0.289942], [0.180187, 0.099426, -0.195754],
     [-0.621479, -0.297482, -0.189082]],
    [[0.53699, 0.007435, -0.057067], [0.519265, -0.00676, -0.054599], [0.230644, -0.197875, -0.119254],
     [-0.481729, -0.692908, -0.449706]]]
# MaxPool1D(3, 2, ceil_mode=True) on _arr(100, (1, 2, 8)).
MXNET_MAXPOOL1D_CEIL = [[0.08681, 0.689552, 0.341498, 0.651706], [0.782644, 0.782644, -0.560605, 0.957248]]


def test_pooling_matches_mxnet_values():
    x = nd.array(_arr(100, (1, 2, 6, 5)))
    np.testing.assert_allclose(nn.AvgPool2D(3, 2, 1, ceil_mode=True)(x).asnumpy()[0], MXNET_AVGPOOL_CEIL, atol=1e-6)
    out = nn.AvgPool2D(3, 2, 1, ceil_mode=True, count_include_pad=False)(x).asnumpy()[0]
    np.testing.assert_allclose(out, MXNET_AVGPOOL_CEIL_NOPAD, atol=1e-6)
    out = nn.MaxPool1D(3, 2, ceil_mode=True)(nd.array(_arr(100, (1, 2, 8)))).asnumpy()[0]
    np.testing.assert_allclose(out, MXNET_MAXPOOL1D_CEIL, atol=1e-6)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_global_pooling(dims):
    x = _arr(5, (2, 3) + (4, 3, 2)[:dims])
    axes = tuple(range(2, 2 + dims))
    gmax = getattr(nn, f"GlobalMaxPool{dims}D")()
    gavg = getattr(nn, f"GlobalAvgPool{dims}D")()
    np.testing.assert_allclose(gmax(nd.array(x)).asnumpy(), x.max(axis=axes, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(gavg(nd.array(x)).asnumpy(), x.mean(axis=axes, keepdims=True), rtol=1e-5)


def test_pooling_strides_default_to_pool_size():
    pool = nn.MaxPool2D((2, 3))
    assert pool._kwargs["stride"] == (2, 3)
    assert pool(nd.ones((1, 1, 6, 9))).shape == (1, 1, 3, 3)
    assert nn.AvgPool1D(3, strides=1)(nd.ones((1, 1, 5))).shape == (1, 1, 3)


def test_reflection_pad():
    x = _arr(3, (2, 3, 4, 5))
    out = nn.ReflectionPad2D(2)(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)], mode="reflect"))
    out = nn.ReflectionPad2D((0, 0, 0, 0, 1, 0, 2, 1))(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (0, 0), (1, 0), (2, 1)], mode="reflect"))


# -- names, shapes, repr -----------------------------------------------------


def _mxnet_cnn():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(),
                nn.Conv2D(4, 3, use_bias=False), nn.BatchNorm(scale=False, center=False), nn.GlobalAvgPool2D(),
                nn.Conv2DTranspose(2, 2, strides=2), nn.Flatten(), nn.Dense(10))
    return net


# What MXNet 1.9.1 reports for _mxnet_cnn() before and after a (2, 3, 8, 8) input.
MXNET_CNN_REPR = """HybridSequential(
  (0): Conv2D(None -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, in_channels=None)
  (2): Activation(relu)
  (3): MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, pool_type=max, \
layout=NCHW)
  (4): Conv2D(None -> 4, kernel_size=(3, 3), stride=(1, 1), bias=False)
  (5): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=True, use_global_stats=False, in_channels=None)
  (6): GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), ceil_mode=True, global_pool=True, pool_type=avg, \
layout=NCHW)
  (7): Conv2DTranspose(2 -> 0, kernel_size=(2, 2), stride=(2, 2))
  (8): Flatten
  (9): Dense(None -> 10, linear)
)"""
MXNET_CNN_PARAMS_BEFORE = [
    ("net_conv0_weight", (8, 0, 3, 3)), ("net_conv0_bias", (8,)), ("net_batchnorm0_gamma", (0,)),
    ("net_batchnorm0_beta", (0,)), ("net_batchnorm0_running_mean", (0,)), ("net_batchnorm0_running_var", (0,)),
    ("net_conv1_weight", (4, 0, 3, 3)), ("net_batchnorm1_gamma", (0,)), ("net_batchnorm1_beta", (0,)),
    ("net_batchnorm1_running_mean", (0,)), ("net_batchnorm1_running_var", (0,)), ("net_conv2_weight", (0, 2, 2, 2)),
    ("net_conv2_bias", (2,)), ("net_dense0_weight", (10, 0)), ("net_dense0_bias", (10,))]
MXNET_CNN_PARAMS = [
    ("net_conv0_weight", (8, 3, 3, 3), "write"), ("net_conv0_bias", (8,), "write"),
    ("net_batchnorm0_gamma", (8,), "write"), ("net_batchnorm0_beta", (8,), "write"),
    ("net_batchnorm0_running_mean", (8,), "null"), ("net_batchnorm0_running_var", (8,), "null"),
    ("net_conv1_weight", (4, 8, 3, 3), "write"), ("net_batchnorm1_gamma", (4,), "null"),
    ("net_batchnorm1_beta", (4,), "null"), ("net_batchnorm1_running_mean", (4,), "null"),
    ("net_batchnorm1_running_var", (4,), "null"), ("net_conv2_weight", (4, 2, 2, 2), "write"),
    ("net_conv2_bias", (2,), "write"), ("net_dense0_weight", (10, 8), "write"), ("net_dense0_bias", (10,), "write")]
# The keys and shapes of MXNet's save_parameters file for it.
MXNET_CNN_SAVED = [
    ("0.bias", (8,)), ("0.weight", (8, 3, 3, 3)), ("1.beta", (8,)), ("1.gamma", (8,)), ("1.running_mean", (8,)),
    ("1.running_var", (8,)), ("4.weight", (4, 8, 3, 3)), ("5.beta", (4,)), ("5.gamma", (4,)),
    ("5.running_mean", (4,)), ("5.running_var", (4,)), ("7.bias", (2,)), ("7.weight", (4, 2, 2, 2)),
    ("9.bias", (10,)), ("9.weight", (10, 8))]


def test_cnn_names_shapes_and_repr_match_mxnet(tmp_path):
    net = _mxnet_cnn()
    assert repr(net) == MXNET_CNN_REPR
    assert [(k, p.shape) for k, p in net.collect_params().items()] == MXNET_CNN_PARAMS_BEFORE
    net.initialize()
    assert net(nd.ones((2, 3, 8, 8))).shape == (2, 10)
    assert [(k, p.shape, p.grad_req) for k, p in net.collect_params().items()] == MXNET_CNN_PARAMS
    path = str(tmp_path / "cnn.params")
    net.save_parameters(path)
    assert sorted((k, v.shape) for k, v in nd.load(path).items()) == MXNET_CNN_SAVED
    other = _mxnet_cnn()
    other.load_parameters(path)
    x = nd.array(_arr(0, (2, 3, 8, 8)))
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)


def test_repr_matches_mxnet():
    # strings MXNet 1.9.1 prints for the same constructions
    cases = [
        (nn.Conv2DTranspose(6, 3, strides=2, output_padding=1, in_channels=3, groups=3, activation="relu",
                            use_bias=False),
         "Conv2DTranspose(2 -> 3, kernel_size=(3, 3), stride=(2, 2), groups=3, bias=False, Activation(relu))"),
        (nn.Conv3D(6, (1, 2, 3), padding=1, dilation=2),
         "Conv3D(None -> 6, kernel_size=(1, 2, 3), stride=(1, 1, 1), padding=(1, 1, 1), dilation=(2, 2, 2))"),
        (nn.Conv2D(4, 3, layout="NHWC", in_channels=2), "Conv2D(3 -> 4, kernel_size=(3, 3), stride=(1, 1))"),
        (nn.MaxPool2D(3, 2, 1, ceil_mode=True),
         "MaxPool2D(size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, global_pool=False, pool_type=max, "
         "layout=NCHW)"),
        (nn.AvgPool1D(), "AvgPool1D(size=(2,), stride=(2,), padding=(0,), ceil_mode=False, global_pool=False, "
                         "pool_type=avg, layout=NCW)"),
        (nn.AvgPool3D(strides=[1, 2, 1]), "AvgPool3D(size=(2, 2, 2), stride=[1, 2, 1], padding=(0, 0, 0), "
                                          "ceil_mode=False, global_pool=False, pool_type=avg, layout=NCDHW)"),
        (nn.GlobalMaxPool1D(), "GlobalMaxPool1D(size=(1,), stride=(1,), padding=(0,), ceil_mode=True, "
                               "global_pool=True, pool_type=max, layout=NCW)"),
        (nn.BatchNorm(in_channels=3, scale=False),
         "BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=True, use_global_stats=False, in_channels=3)"),
        (cnn.PixelShuffle2D((2, 3)), "PixelShuffle2D((2, 3))"),
        (cnn.PixelShuffle1D(2), "PixelShuffle1D(2)"),
    ]
    for layer, text in cases:
        assert repr(layer) == text


def test_prefixes_and_exports():
    with nn.HybridSequential(prefix="p_").name_scope():
        layers = [nn.Conv1D(2, 1), nn.Conv2DTranspose(2, 1), nn.MaxPool2D(), nn.GlobalAvgPool3D(), nn.BatchNorm(),
                  nn.BatchNormReLU(), nn.ReflectionPad2D()]
    assert [b.prefix for b in layers] == ["p_conv0_", "p_conv1_", "p_pool0_", "p_pool1_", "p_batchnorm0_",
                                          "p_batchnormrelu0_", "p_reflectionpad2d0_"]
    for name in ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "MaxPool1D",
                 "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
                 "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D",
                 "BatchNorm", "BatchNormReLU"]:
        assert name in nn.__all__ and hasattr(nn, name)
    from oxnet.gluon.nn import basic_layers, conv_layers

    assert conv_layers.MaxPool2D is nn.MaxPool2D and basic_layers.BatchNorm is nn.BatchNorm
    assert mx.gluon.contrib.nn.HybridConcurrent is cnn.HybridConcurrent


# -- deferred initialization -------------------------------------------------


def test_deferred_in_channels_are_inferred():
    conv = nn.Conv2D(4, 3)
    deconv = nn.Conv2DTranspose(5, 2, groups=1)
    bn = nn.BatchNorm()
    for layer in (conv, deconv, bn):
        layer.initialize()
        with pytest.raises(gluon.DeferredInitializationError):
            next(iter(layer.collect_params().values())).data()
    x = nd.ones((2, 3, 6, 6))
    assert conv(x).shape == (2, 4, 4, 4) and conv.weight.shape == (4, 3, 3, 3)
    assert deconv(x).shape == (2, 5, 7, 7) and deconv.weight.shape == (3, 5, 2, 2)
    assert bn(x).shape == x.shape and all(p.shape == (3,) for p in bn.collect_params().values())
    assert repr(conv).startswith("Conv2D(3 -> 4") and repr(bn).endswith("in_channels=3)")
    # given in_channels: known up front, and the parameters are ready after initialize
    conv = nn.Conv1D(4, 3, in_channels=6, groups=2)
    conv.initialize()
    assert conv.weight.data().shape == (4, 3, 3)


def test_deferred_inference_in_a_hybridized_network():
    net = _mxnet_cnn()
    net.initialize()
    net.hybridize()
    assert net(nd.ones((2, 3, 8, 8))).shape == (2, 10)
    assert [(k, p.shape) for k, p in net.collect_params().items()] == [(k, s) for k, s, _ in MXNET_CNN_PARAMS]


# -- BatchNorm ---------------------------------------------------------------

# After three SGD steps (lr 0.5, momentum=0.8, the loop below), as MXNet 1.9.1 computed them.
MXNET_BN_PARAMS = {
    "gamma": [0.779319, 0.743521, 0.758872], "beta": [0.002331, -0.005389, 0.00583],
    "running_mean": [0.747289, 0.678342, 0.757869], "running_var": [0.870927, 0.84135, 0.892581]}
# Then bn(_arr(30, (2, 3, 2, 2))) in inference mode.
MXNET_BN_INFER = [
    [[[-0.38097, -0.82087], [-0.34939, -1.18346]], [[0.19473, -0.80384], [0.24197, -0.98477]],
     [[-0.46525, -0.75282], [-1.1873, -0.53201]]],
    [[[-0.59135, -0.17602], [0.10288, -1.30696]], [[-1.04846, 0.24593], [-0.98457, -0.9784]],
     [[-0.39552, -0.22547], [-0.30035, -1.35614]]]]


@pytest.mark.parametrize("hybridize", [False, True])
def test_batchnorm_running_stats_match_mxnet(hybridize):
    bn = nn.BatchNorm(momentum=0.8, prefix="bn_")
    bn.initialize()
    if hybridize:
        bn.hybridize()
    trainer = gluon.Trainer(bn.collect_params(), "sgd", {"learning_rate": 0.5})
    for step in range(3):
        x = nd.array(_arr(10 + step, (4, 3, 2, 2), 0.0, 3.0))
        t = nd.array(_arr(20 + step, (4, 3, 2, 2)))
        with autograd.record():
            loss = ((bn(x) - t) ** 2).mean()
        loss.backward()
        trainer.step(4)
    for name, values in MXNET_BN_PARAMS.items():
        np.testing.assert_allclose(getattr(bn, name).data().asnumpy(), values, rtol=1e-5, atol=1e-6)
    x = _arr(30, (2, 3, 2, 2))
    out = bn(nd.array(x)).asnumpy()
    np.testing.assert_allclose(out, MXNET_BN_INFER, rtol=1e-4, atol=1e-5)
    # inference mode normalizes with the running statistics
    p = _params(bn)
    ref = ((x - p["running_mean"][:, None, None]) / np.sqrt(p["running_var"][:, None, None] + 1e-5)
           * p["gamma"][:, None, None] + p["beta"][:, None, None])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# BatchNorm(axis=-1, use_global_stats=True) with the statistics below, on _arr(40, (2, 3, 4)) while recording.
MXNET_BN_GLOBAL = [
    [[-0.34231, -0.67853, -0.22292, 0.6008], [-0.29965, 0.31565, -0.74718, 0.1249],
     [0.02678, 1.84496, 0.16188, 0.15742]],
    [[0.06397, 1.93457, -1.74489, -0.27172], [-0.30009, -0.4243, -0.12939, 0.72108],
     [-0.5758, 0.89658, -0.4604, -0.34686]]]


def test_batchnorm_last_axis_with_global_stats_matches_mxnet():
    bn = nn.BatchNorm(axis=-1, use_global_stats=True, in_channels=4)
    bn.initialize()
    bn.running_mean.set_data(nd.array([0.5, -0.5, 1.0, 0.0]))
    bn.running_var.set_data(nd.array([4.0, 1.0, 0.25, 2.0]))
    bn.gamma.set_data(nd.array([1.0, 2.0, 0.5, -1.0]))
    bn.beta.set_data(nd.array([0.0, 0.1, 0.2, 0.3]))
    with autograd.record():
        out = bn(nd.array(_arr(40, (2, 3, 4))))
    np.testing.assert_allclose(out.asnumpy(), MXNET_BN_GLOBAL, rtol=1e-4, atol=1e-5)


def test_batchnorm_training_uses_batch_statistics_and_fixed_gamma():
    x = _arr(7, (5, 2, 3), 0.0, 4.0)
    bn = nn.BatchNorm(scale=False, center=False, in_channels=2, gamma_initializer=mx.init.Constant(3.0))
    bn.initialize()
    assert bn.gamma.grad_req == "null" and bn.beta.grad_req == "null" and bn.running_mean.grad_req == "null"
    with autograd.record(train_mode=True):
        out = bn(nd.array(x))
    mean, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    # fix_gamma: gamma is taken as 1 whatever its value
    np.testing.assert_allclose(out.asnumpy(), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    relu = nn.BatchNormReLU(in_channels=2)
    relu.initialize()
    with autograd.record():
        out = relu(nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), np.maximum((x - mean) / np.sqrt(var + 1e-5), 0), rtol=1e-4,
                               atol=1e-5)


def test_batchnorm_keeps_float32_when_cast_to_float16():
    bn = nn.BatchNorm(in_channels=2)
    bn.initialize()
    bn.cast("float16")
    assert all(np.dtype(p.dtype) == np.float32 for p in bn.collect_params().values())


# -- hybridize, export, imports -----------------------------------------------

LAYERS = [
    (lambda: nn.Conv1D(3, 2, groups=1, activation="sigmoid"), (2, 2, 6)),
    (lambda: nn.Conv2D(4, 3, strides=2, padding=1, use_bias=False), (2, 3, 7, 7)),
    (lambda: nn.Conv3D(2, 2, dilation=(1, 2, 1)), (1, 2, 3, 5, 3)),
    (lambda: nn.Conv1DTranspose(2, 3, strides=2, output_padding=1), (2, 3, 4)),
    (lambda: nn.Conv2DTranspose(4, 2, groups=2, in_channels=2), (1, 2, 3, 3)),
    (lambda: nn.Conv3DTranspose(2, 2, padding=1), (1, 1, 3, 3, 3)),
    (lambda: nn.MaxPool1D(3, 1, 1), (2, 3, 5)),
    (lambda: nn.MaxPool2D(ceil_mode=True), (2, 3, 5, 5)),
    (lambda: nn.MaxPool3D(), (1, 2, 4, 4, 4)),
    (lambda: nn.AvgPool1D(), (2, 3, 6)),
    (lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False), (2, 3, 5, 5)),
    (lambda: nn.AvgPool3D(ceil_mode=True), (1, 2, 3, 3, 3)),
    (lambda: nn.GlobalMaxPool1D(), (2, 3, 5)),
    (lambda: nn.GlobalMaxPool2D(), (2, 3, 5, 4)),
    (lambda: nn.GlobalMaxPool3D(), (1, 2, 3, 4, 2)),
    (lambda: nn.GlobalAvgPool1D(), (2, 3, 5)),
    (lambda: nn.GlobalAvgPool2D(), (2, 3, 5, 4)),
    (lambda: nn.GlobalAvgPool3D(), (1, 2, 3, 4, 2)),
    (lambda: nn.ReflectionPad2D(1), (2, 3, 4, 4)),
    (lambda: nn.BatchNorm(), (4, 3, 2, 2)),
    (lambda: nn.BatchNorm(axis=2, center=False), (4, 2, 3)),
    (lambda: nn.BatchNormReLU(), (4, 3, 2)),
    (lambda: cnn.PixelShuffle1D(3), (2, 6, 4)),
    (lambda: cnn.PixelShuffle2D((2, 3)), (1, 12, 2, 3)),
    (lambda: cnn.PixelShuffle3D(2), (1, 16, 2, 1, 3)),
    (lambda: cnn.Identity(), (2, 3)),
]


@pytest.mark.parametrize("make,shape", LAYERS)
def test_hybridized_and_exported_layers_give_the_imperative_output(make, shape, tmp_path):
    layer = make()
    x = _arr(100, shape)
    expected = _run(layer, x)
    with autograd.record():  # training mode too (BatchNorm's batch statistics)
        expected_train = layer(nd.array(x)).asnumpy()
    layer.hybridize()
    np.testing.assert_allclose(layer(nd.array(x)).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    with autograd.record():
        np.testing.assert_allclose(layer(nd.array(x)).asnumpy(), expected_train, rtol=1e-5, atol=1e-6)
    sym_file, params_file = layer.export(str(tmp_path / "layer"))
    loaded = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(loaded(nd.array(x)).asnumpy(), expected, rtol=1e-5, atol=1e-6)


# -- contrib.nn --------------------------------------------------------------


def test_concurrent_blocks_concatenate_their_children():
    x = nd.array(_arr(1, (2, 3, 4, 4)))
    for cls in (cnn.HybridConcurrent, cnn.Concurrent):
        block = cls(axis=1, prefix="cc_")
        with block.name_scope():
            block.add(nn.Conv2D(2, 1), cnn.Identity(), nn.MaxPool2D(1))
        block.initialize()
        out = block(x)
        assert out.shape == (2, 8, 4, 4)
        np.testing.assert_array_equal(out[:, 2:5].asnumpy(), x.asnumpy())
        np.testing.assert_array_equal(out[:, 5:].asnumpy(), x.asnumpy())
        assert list(block.collect_params().keys()) == ["cc_conv0_weight", "cc_conv0_bias"]
    hybrid = cnn.HybridConcurrent()
    hybrid.add(nn.Dense(3, in_units=4), nn.Dense(2, in_units=4))
    hybrid.initialize()
    y = nd.array(_arr(2, (5, 4)))
    expected = hybrid(y).asnumpy()
    assert expected.shape == (5, 5) and hybrid.axis == -1
    hybrid.hybridize()
    np.testing.assert_allclose(hybrid(y).asnumpy(), expected, rtol=1e-6)


def test_pixel_shuffles_match_numpy():
    x = _arr(3, (2, 12, 5))
    out = cnn.PixelShuffle1D(4)(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(out, x.reshape(2, 3, 4, 5).transpose(0, 1, 3, 2).reshape(2, 3, 20))
    x = _arr(3, (2, 12, 2, 3))
    out = cnn.PixelShuffle2D((2, 3))(nd.array(x)).asnumpy()
    ref = x.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 9)
    np.testing.assert_array_equal(out, ref)
    x = _arr(3, (1, 2 * 24, 2, 1, 3))
    out = cnn.PixelShuffle3D((2, 3, 4))(nd.array(x)).asnumpy()
    ref = x.reshape(1, 2, 2, 3, 4, 2, 1, 3).transpose(0, 1, 5, 2, 6, 3, 7, 4).reshape(1, 2, 4, 3, 12)
    np.testing.assert_array_equal(out, ref)
    assert repr(cnn.PixelShuffle3D(2)) == "PixelShuffle3D((2, 2, 2))"
    with pytest.raises(ValueError, match="factor"):
        cnn.PixelShuffle2D((1, 2, 3))


# -- training ----------------------------------------------------------------


@pytest.mark.parametrize("hybridize", [False, True])
def test_small_cnn_trains(hybridize):
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    # two classes: a bright blob in the top-left or the bottom-right quarter
    labels = rng.randint(0, 2, 32)
    images = rng.uniform(0, 0.3, (32, 1, 8, 8)).astype(np.float32)
    for i, c in enumerate(labels):
        images[i, 0, 4 * c:4 * c + 4, 4 * c:4 * c + 4] += 1.0
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(), nn.Flatten(),
                nn.Dense(2))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = nd.array(images), nd.array(labels)
    losses = []
    for _ in range(8):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(len(labels))
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(b < a for a, b in zip(losses, losses[1:4])), losses
    # the running statistics moved away from their initial values
    bn = net[1]
    assert not np.allclose(bn.running_mean.data().asnumpy(), 0)
    accuracy = (net(x).argmax(axis=1).asnumpy() == labels).mean()
    assert accuracy > 0.9


# -- errors ------------------------------------------------------------------


def test_wrong_in_channels_is_a_clear_error():
    conv = nn.Conv2D(6, 3, in_channels=3)
    conv.initialize()
    with pytest.raises(mx.MXNetError, match=r"conv\d+: .*Convolution.*\(6, 4, 3, 3\)"):
        conv(nd.ones((1, 4, 5, 5)))
    bn = nn.BatchNorm(in_channels=3)
    bn.initialize()
    with pytest.raises(mx.MXNetError, match="batchnorm"):
        bn(nd.ones((2, 4, 3)))
    with pytest.raises(mx.MXNetError, match="in_channels .3. must be a multiple of groups .2."):
        nn.Conv2D(4, 3, groups=2, in_channels=3)
    with pytest.raises(mx.MXNetError, match="channels .6. must be a multiple of groups .4."):
        nn.Conv2D(6, 3, groups=4)


def test_wrong_input_rank_is_a_clear_error():
    conv = nn.Conv2D(2, 3)
    conv.initialize()
    with pytest.raises(mx.MXNetError, match="conv"):
        conv(nd.ones((1, 3, 5)))
    with pytest.raises(mx.MXNetError, match="pool"):
        nn.MaxPool3D()(nd.ones((1, 3, 5, 5)))


def test_bad_layouts_and_sizes_are_clear_errors():
    for make in (lambda: nn.Conv1D(2, 3, layout="NWC"), lambda: nn.Conv2D(2, 3, layout="NCW"),
                 lambda: nn.Conv3DTranspose(2, 3, layout="NCHW"), lambda: nn.MaxPool2D(layout="NCDHW"),
                 lambda: nn.GlobalAvgPool1D(layout="NHWC"), lambda: nn.AvgPool3D(layout="CNDHW")):
        with pytest.raises(ValueError, match="layout"):
            make()
    with pytest.raises(ValueError, match="kernel_size must be a number or a list of 2 ints"):
        nn.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        nn.Conv2DTranspose(2, 3, output_padding=(1, 1, 1))
    with pytest.raises(ValueError, match="pool_size"):
        nn.MaxPool1D((2, 2))
    with pytest.raises(ValueError, match="padding"):
        nn.ReflectionPad2D((1, 1))
    # channel-last layouts take MXNet's weight shapes and run (tests/python/test_channel_last.py checks values)
    conv = nn.Conv2D(4, 3, layout="NHWC", in_channels=2)
    assert conv.weight.shape == (4, 3, 3, 2)
    conv.initialize()
    assert conv(nd.ones((1, 5, 5, 2))).shape == (1, 3, 3, 4)
    assert nn.MaxPool2D(layout="NHWC")(nd.ones((1, 4, 4, 2))).shape == (1, 2, 2, 2)


def test_parameter_combinations_build():
    # every constructor takes MXNet's keywords by name
    for dims, transpose in itertools.product((1, 2, 3), (False, True)):
        cls = getattr(nn, f"Conv{dims}D{'Transpose' if transpose else ''}")
        kwargs = dict(channels=2, kernel_size=1, strides=1, padding=0, dilation=1, groups=1, activation=None,
                      use_bias=True, weight_initializer="ones", bias_initializer="zeros", in_channels=2,
                      prefix="c_", params=None)
        if transpose:
            kwargs["output_padding"] = 0
        layer = cls(**kwargs)
        layer.initialize()
        x = nd.ones((1, 2) + (3,) * dims)
        np.testing.assert_array_equal(layer(x).asnumpy(), np.full((1, 2) + (3,) * dims, 2.0))


def test_sparse_embedding_is_a_dense_embedding_with_mxnets_interface():
    from oxnet.gluon.contrib.nn import SparseEmbedding
    layer = SparseEmbedding(10, 4, weight_initializer=mx.init.Uniform(1.0))
    layer.initialize()
    x = mx.nd.array([3, 4, 2, 0, 1, 3])
    with mx.autograd.record():
        y = layer(x)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), layer.weight.data().asnumpy()[[3, 4, 2, 0, 1, 3]])
    grad = layer.weight.grad().asnumpy()
    np.testing.assert_array_equal(grad[:5, 0], [1, 1, 1, 2, 1])  # row 3 looked up twice
    assert (grad[5:] == 0).all()
    assert repr(layer) == "SparseEmbedding(10 -> 4, float32)"
