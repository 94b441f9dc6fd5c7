"""mx.gluon.contrib.cnn (DeformableConvolution, ModulatedDeformableConvolution)
and the operator _contrib_ModulatedDeformableConvolution, against values
computed by MXNet 1.9.1 (tests/fixtures/deformable/reference.npz, written by
scripts/make_deformable_fixtures.py), plain convolutions and central
differences."""

import json
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "deformable", "reference.npz")


@pytest.fixture(scope="module")
def ref():
    with np.load(FIXTURE) as f:
        return {k: f[k] for k in f.files}


def nd(a, dtype=None):
    return mx.nd.array(a, dtype=dtype or a.dtype)


# -- the operators --------------------------------------------------------

def test_deformable_op_matches_mxnet(ref):
    attrs = json.loads(str(ref["dcn_op/attrs"]))
    names = ("data", "offset", "weight", "bias")
    arrs = [nd(ref[f"dcn_op/{n}"]) for n in names]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.DeformableConvolution(*arrs, **attrs)
    y.backward(nd(ref["dcn_op/head"]))
    np.testing.assert_allclose(y.asnumpy(), ref["dcn_op/out"], rtol=1e-4, atol=1e-5)
    for n, a in zip(names, arrs):
        np.testing.assert_allclose(a.grad.asnumpy(), ref[f"dcn_op/grad_{n}"], rtol=1e-4, atol=1e-4, err_msg=n)


@pytest.mark.parametrize("k", [0, 1])
def test_modulated_op_matches_mxnet(ref, k):
    attrs = json.loads(str(ref[f"mdcn_op{k}/attrs"]))
    names = ("data", "offset", "mask", "weight") + (() if attrs.get("no_bias") else ("bias",))
    y = mx.nd.contrib.ModulatedDeformableConvolution(*[nd(ref[f"mdcn_op{k}/{n}"]) for n in names], **attrs)
    assert y.shape == ref[f"mdcn_op{k}/out"].shape
    np.testing.assert_allclose(y.asnumpy(), ref[f"mdcn_op{k}/out"], rtol=1e-4, atol=1e-5)
    # the same call by keywords and through a symbol
    kw = {n: nd(ref[f"mdcn_op{k}/{n}"]) for n in names}
    np.testing.assert_allclose(mx.nd.contrib.ModulatedDeformableConvolution(**kw, **attrs).asnumpy(),
                               ref[f"mdcn_op{k}/out"], rtol=1e-4, atol=1e-5)
    sym = mx.sym.contrib.ModulatedDeformableConvolution(*[mx.sym.var(n) for n in names], **attrs)
    assert sym.list_arguments() == list(names)
    exe = sym.bind(mx.cpu(), kw)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), ref[f"mdcn_op{k}/out"], rtol=1e-4, atol=1e-5)


def test_modulated_op_is_convolution_at_zero_offsets_and_unit_mask():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 4, 6, 5))
    w = rng.uniform(-1, 1, (6, 2, 3, 3))
    b = rng.uniform(-1, 1, (6,))
    attrs = dict(kernel=(3, 3), pad=(1, 2), stride=(2, 1), dilate=(1, 2), num_filter=6, num_group=2)
    conv = mx.nd.Convolution(nd(x), nd(w), nd(b), **attrs)
    ho, wo = conv.shape[2:]
    off = np.zeros((2, 18, ho, wo))
    mask = np.ones((2, 9, ho, wo))
    y = mx.nd.contrib.ModulatedDeformableConvolution(nd(x), nd(off), nd(mask), nd(w), nd(b), **attrs)
    np.testing.assert_allclose(y.asnumpy(), conv.asnumpy(), rtol=1e-10, atol=1e-12)
    # a mask of 0.5 halves everything but the bias
    y2 = mx.nd.contrib.ModulatedDeformableConvolution(nd(x), nd(off), nd(mask * 0.5), nd(w), nd(b), **attrs)
    np.testing.assert_allclose(y2.asnumpy() - b[:, None, None], 0.5 * (conv.asnumpy() - b[:, None, None]),
                               rtol=1e-10, atol=1e-12)
    # a whole-pixel shift down equals convolving the image moved up (zeros come in at the
    # bottom; no padding at the top, where the shifted taps would read row 0 instead)
    attrs["pad"] = (0, 2)
    shifted = np.zeros_like(x)
    shifted[:, :, :-1, :] = x[:, :, 1:, :]
    conv3 = mx.nd.Convolution(nd(shifted), nd(w), nd(b), **attrs)
    ho, wo = conv3.shape[2:]
    off1 = np.zeros((2, 18, ho, wo))
    off1[:, 0::2] = 1.0
    y3 = mx.nd.contrib.ModulatedDeformableConvolution(nd(x), nd(off1), nd(np.ones((2, 9, ho, wo))), nd(w), nd(b),
                                                      **attrs)
    np.testing.assert_allclose(y3.asnumpy(), conv3.asnumpy(), rtol=1e-10, atol=1e-12)


def _frac_offsets(rng, shape, spread=2):
    """Offsets whose fractional parts stay in [0.2, 0.8] (the read is
    smooth there; central differences across a whole pixel are not)."""
    return np.floor(rng.uniform(-spread, spread + 1, shape)) + rng.uniform(0.2, 0.8, shape)


@pytest.mark.parametrize("no_bias", [False, True])
def test_modulated_op_gradients_match_central_differences(no_bias):
    rng = np.random.RandomState(1 + no_bias)
    attrs = dict(kernel=(2, 2), pad=(1, 0), stride=(1, 2), num_filter=4, num_group=2, num_deformable_group=2,
                 no_bias=no_bias)
    x = rng.uniform(-1, 1, (2, 4, 4, 5))
    ho, wo = 5, 2
    ins = [x, _frac_offsets(rng, (2, 16, ho, wo)), rng.uniform(0.1, 1.9, (2, 8, ho, wo)),
           rng.uniform(-1, 1, (4, 2, 2, 2))]
    if not no_bias:
        ins.append(rng.uniform(-1, 1, (4,)))
    worst = mx.test_utils.check_numeric_gradient(
        lambda *xs: mx.nd.contrib.ModulatedDeformableConvolution(*xs, **attrs), [nd(a) for a in ins],
        numeric_eps=1e-6, rtol=1e-5, atol=1e-7)
    assert worst < 1e-5
    # the engine's checker: inferred shapes, requests write and add, gradients, malformed calls
    str_attrs = {k: str(v) for k, v in attrs.items()}
    assert mx.test_utils.check_op("_contrib_ModulatedDeformableConvolution", [nd(a) for a in ins], str_attrs) < 1e-5


def test_modulated_op_gradients_exact_values():
    """One tap, one position, by hand: data 1x1x2x2, kernel 1x1, the tap at
    (0.25, 0.5) with mask m: out = w·m·bilinear + b."""
    x = np.array([[[[1.0, 2.0], [3.0, 5.0]]]])
    off = np.array([[[[0.25]], [[0.5]]]])
    mask = np.array([[[[1.5]]]])
    w = np.array([[[[2.0]]]])
    b = np.array([0.5])
    # output extents are the data's (1x1 kernel, no padding): 2x2; only position (0, 0) matters to us
    off_full = np.zeros((1, 2, 2, 2))
    off_full[:, :, 0, 0] = off[:, :, 0, 0]
    mask_full = np.zeros((1, 1, 2, 2))
    mask_full[0, 0, 0, 0] = 1.5
    arrs = [nd(a) for a in (x, off_full, mask_full, w, b)]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.ModulatedDeformableConvolution(*arrs, kernel=(1, 1), num_filter=1)
    head = np.zeros((1, 1, 2, 2))
    head[0, 0, 0, 0] = 1.0
    y.backward(nd(head))
    v = 0.75 * 0.5 * 1 + 0.75 * 0.5 * 2 + 0.25 * 0.5 * 3 + 0.25 * 0.5 * 5  # bilinear at (0.25, 0.5) = 2.125
    assert y.asnumpy()[0, 0, 0, 0] == pytest.approx(2.0 * 1.5 * v + 0.5)
    assert arrs[2].grad.asnumpy()[0, 0, 0, 0] == pytest.approx(2.0 * v)
    dvdh = 0.5 * (3 - 1) + 0.5 * (5 - 2)
    dvdw = 0.75 * (2 - 1) + 0.25 * (5 - 3)
    np.testing.assert_allclose(arrs[1].grad.asnumpy()[0, :, 0, 0], [3.0 * dvdh, 3.0 * dvdw])
    np.testing.assert_allclose(arrs[0].grad.asnumpy()[0, 0], 3.0 * np.array([[0.375, 0.375], [0.125, 0.125]]))
    assert arrs[3].grad.asnumpy().item() == pytest.approx(1.5 * v)
    assert arrs[4].grad.asnumpy().item() == pytest.approx(1.0)


def test_modulated_op_shapes_and_errors():
    sym = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var("data"), mx.sym.var("offset"), mx.sym.var("mask"), mx.sym.var("weight"), no_bias=True,
        kernel=(3, 3), pad=(1, 1), stride=(2, 2), num_filter=5, num_deformable_group=2)
    assert sym.list_arguments() == ["data", "offset", "mask", "weight"]
    args, outs, _ = sym.infer_shape(data=(2, 4, 7, 8))
    assert args == [(2, 4, 7, 8), (2, 36, 4, 4), (2, 18, 4, 4), (5, 4, 3, 3)]
    assert outs == [(2, 5, 4, 4)]
    x = mx.nd.ones((1, 2, 4, 4))
    w = mx.nd.ones((2, 2, 3, 3))
    with pytest.raises(MXNetError, match="mask"):
        mx.nd.contrib.ModulatedDeformableConvolution(x, mx.nd.zeros((1, 18, 2, 2)), mx.nd.ones((1, 8, 2, 2)), w,
                                                     kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(MXNetError, match="kernel"):
        mx.nd.contrib.ModulatedDeformableConvolution(x, mx.nd.zeros((1, 18, 2, 2)), mx.nd.ones((1, 9, 2, 2)), w,
                                                     kernel=(3, 3, 3), num_filter=2, no_bias=True)
    with pytest.raises(MXNetError, match="im2col_step"):
        mx.nd.contrib.ModulatedDeformableConvolution(
            mx.nd.ones((3, 2, 4, 4)), mx.nd.zeros((3, 18, 2, 2)), mx.nd.ones((3, 9, 2, 2)), w, kernel=(3, 3),
            num_filter=2, no_bias=True, im2col_step=2)
    with pytest.raises(MXNetError, match="layout"):
        mx.nd.contrib.ModulatedDeformableConvolution(x, mx.nd.zeros((1, 18, 2, 2)), mx.nd.ones((1, 9, 2, 2)), w,
                                                     kernel=(3, 3), num_filter=2, no_bias=True, layout="NHWC")


# -- the Gluon layers -----------------------------------------------------

def _params(block):
    return [(name[len(block.prefix):], tuple(p.shape), p.init) for name, p in block.collect_params().items()]


def test_layer_parameters_as_mxnet():
    b = DeformableConvolution(4, kernel_size=3)
    assert b.prefix.startswith("deformable_conv")
    assert _params(b) == [("offset_weight", (18, 0, 3, 3), "zeros"), ("offset_bias", (18,), "zeros"),
                          ("deformable_conv_weight", (4, 0, 3, 3), None), ("deformable_conv_bias", (4,), "zeros")]
    b = DeformableConvolution(4, kernel_size=(3, 2), in_channels=6, groups=2, num_deformable_group=3,
                              offset_use_bias=False, use_bias=False)
    assert _params(b) == [("offset_weight", (36, 3, 3, 2), "zeros"), ("deformable_conv_weight", (4, 0, 3, 2), None)]
    assert b.offset_bias is None and b.deformable_conv_bias is None and b.act is None
    b = ModulatedDeformableConvolution(4, kernel_size=3, layout="NHWC", in_channels=2, activation="relu",
                                       offset_weight_initializer="ones", offset_bias_initializer="one")
    assert b.prefix.startswith("modulated_deformable_conv")
    assert _params(b) == [("deformable_conv_weight", (4, 0, 3, 3), None), ("deformable_conv_bias", (4,), "zeros"),
                          ("offset_weight", (27, 3, 3, 2), "ones"), ("offset_bias", (27,), "one")]
    assert b.offset_split_index == 18
    assert repr(b.act) == "Activation(relu)"
    assert repr(DeformableConvolution(4, 3, in_channels=2, padding=1, activation="relu", use_bias=False)) == \
        "DeformableConvolution(None -> 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False, " \
        "Activation(relu))"


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="layout"):
        DeformableConvolution(4, 3, layout="NCW")
    with pytest.raises(MXNetError, match="num_group"):  # 27 offset channels in 2 groups: MXNet fails here too
        ModulatedDeformableConvolution(4, 3, in_channels=2, groups=2)
    with pytest.raises(ValueError, match="kernel_size"):
        ModulatedDeformableConvolution(4, (3, 3, 3))


@pytest.mark.parametrize("key,cls", [("dcn_block", DeformableConvolution),
                                     ("mdcn_block", ModulatedDeformableConvolution)])
@pytest.mark.parametrize("hybridize", [False, True])
def test_layers_match_mxnet(ref, key, cls, hybridize):
    if cls is DeformableConvolution:
        block = cls(4, kernel_size=3, padding=1, in_channels=3, activation="relu")
    else:
        block = cls(4, kernel_size=(3, 2), strides=(1, 2), padding=1, in_channels=3)
    block.initialize()
    if hybridize:
        block.hybridize()
    x = nd(ref[f"{key}/x"])
    block(x)  # deferred shapes
    for name, p in block.collect_params().items():
        p.set_data(nd(ref[f"{key}/{name[len(block.prefix):]}"]))
    x.attach_grad()
    with mx.autograd.record():
        y = block(x)
    np.testing.assert_allclose(y.asnumpy(), ref[f"{key}/out"], rtol=1e-4, atol=1e-5)
    if f"{key}/grad_x" in ref:
        y.backward(nd(ref[f"{key}/head"]))
        np.testing.assert_allclose(x.grad.asnumpy(), ref[f"{key}/grad_x"], rtol=1e-4, atol=1e-4)


def test_modulated_layer_starts_as_convolution_and_trains():
    """Zero offset weights: offsets 0 and masks 2·sigmoid(0) = 1, so the
    layer starts as a plain convolution; a training step moves every
    parameter (the offset weights get gradients through offsets and mask)."""
    block = ModulatedDeformableConvolution(3, kernel_size=3, padding=1, num_deformable_group=2)
    block.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.uniform(-1, 1, shape=(2, 4, 5, 5))
    y = block(x)
    conv = mx.nd.Convolution(x, block.deformable_conv_weight.data(), block.deformable_conv_bias.data(),
                             kernel=(3, 3), pad=(1, 1), num_filter=3)
    np.testing.assert_allclose(y.asnumpy(), conv.asnumpy(), rtol=1e-5, atol=1e-6)
    assert block.deformable_conv_weight.shape == (3, 4, 3, 3)
    assert block.offset_weight.shape == (54, 4, 3, 3)
    trainer = mx.gluon.Trainer(block.collect_params(), "sgd", {"learning_rate": 0.1})
    before = {k: p.data().asnumpy().copy() for k, p in block.collect_params().items()}
    with mx.autograd.record():
        loss = (block(x) ** 2).sum()
    loss.backward()
    grads = {k[len(block.prefix):]: np.abs(p.grad().asnumpy()).sum() for k, p in block.collect_params().items()}
    assert all(g > 0 for g in grads.values()), grads
    trainer.step(2)
    assert all(not np.array_equal(before[k], p.data().asnumpy()) for k, p in block.collect_params().items())


def test_contrib_package_exports():
    assert mx.gluon.contrib.cnn.DeformableConvolution is DeformableConvolution
    assert mx.gluon.contrib.cnn.__all__ == ["DeformableConvolution", "ModulatedDeformableConvolution"]
    assert DeformableConvolution.__doc__ and ModulatedDeformableConvolution.__doc__
