"""Ordering, rounding and slice-assignment operators, FTML and SGLD, through
the Python face: values from MXNet 1.9.1."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd


def test_topk_sort_argsort_and_their_fluent_methods():
    x = nd.array([[3, 1, 2], [0, 5, 4]])
    val, idx = x.topk(k=2, ret_typ="both")
    assert val.asnumpy().tolist() == [[3, 2], [5, 4]]
    assert idx.asnumpy().tolist() == [[0, 2], [1, 2]] and idx.dtype == np.float32
    assert x.sort(axis=0, is_ascend=False).asnumpy().tolist() == [[3, 5, 4], [0, 1, 2]]
    assert x.argsort(axis=None).asnumpy().tolist() == [3, 1, 2, 0, 5, 4]
    assert nd.topk(x, k=1, dtype="int32").dtype == np.int32
    out = nd.zeros((2, 3))
    nd.sort(x, out=out)
    assert out.asnumpy().tolist() == [[1, 2, 3], [0, 4, 5]]


def test_topk_value_gradient_scatters_back():
    a = nd.arange(0, 20, dtype="int32")
    a.attach_grad()
    with autograd.record():
        b = nd.topk(a, k=3, ret_typ="value")
    b.backward(nd.array([7, 8, 9], dtype="int32"))
    g = a.grad.asnumpy()
    assert g[-3:].tolist() == [9, 8, 7] and not g[:-3].any()


def test_rounding_as_mxnet():
    x = nd.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7])
    assert x.round().asnumpy().tolist() == [-3, -2, -1, 1, 2, 3, -2]
    assert x.rint().asnumpy().tolist() == [-3, -2, -1, 0, 1, 2, -2]
    assert x.fix().asnumpy().tolist() == [-2, -1, 0, 0, 1, 2, -1]
    assert nd.floor(x).asnumpy().tolist() == [-3, -2, -1, 0, 1, 2, -2]
    big = nd.array([50000001], dtype="int32")
    assert big.ceil().asnumpy().tolist() == [50000001] and big.trunc().dtype == np.int32


def test_crop_assign_in_place_and_fill_element_0index():
    x = nd.ones((2, 3, 4))
    nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3), out=x)
    want = np.ones((2, 3, 4))
    want[:, 0:1, 0:3] = 0
    assert (x.asnumpy() == want).all()
    nd._internal._crop_assign_scalar(x, scalar=5, begin=(0, 1, 0), end=(1, 2, 4), out=x)
    want[0, 1, :] = 5
    assert (x.asnumpy() == want).all()
    m = nd.fill_element_0index(nd.zeros((3, 4)), nd.array([7, 8, 9]), nd.array([1, 3, 0]))
    assert m.asnumpy().tolist() == [[0, 7, 0, 0], [0, 0, 0, 8], [9, 0, 0, 0]]


def test_shape_ops_used_by_fluent_methods():
    x = nd.arange(6).reshape((2, 3))
    assert x.flip(axis=1).asnumpy().tolist() == [[2, 1, 0], [5, 4, 3]]
    assert x.shape_array().asnumpy().tolist() == [2, 3] and x.size_array().asnumpy().tolist() == [6]
    assert x.argmax_channel().asnumpy().tolist() == [2, 2]
    assert [p.shape for p in x.split_v2(indices_or_sections=(1,), axis=1)] == [(2, 1), (2, 2)]
    assert [p.asnumpy().tolist() for p in nd.split_v2(nd.arange(6), indices_or_sections=3)] == [[0, 1], [2, 3], [4, 5]]
    assert nd.array([[1], [2]]).broadcast_axes(axis=1, size=3).asnumpy().tolist() == [[1, 1, 1], [2, 2, 2]]
    assert x.slice_like(nd.zeros((1, 2))).asnumpy().tolist() == [[0, 1]]
    n = nd.array([[1, np.nan, 3]])
    assert n.nansum().asnumpy().tolist() == [4] and n.nanprod().asnumpy().tolist() == [3]
    p = nd.ones((1, 1, 2, 2)).pad(mode="constant", pad_width=(0, 0, 0, 0, 1, 0, 0, 1), constant_value=2)
    assert p.asnumpy()[0, 0].tolist() == [[2, 2, 2], [1, 1, 2], [1, 1, 2]]


def test_ftml_matches_mxnet():
    opt = mx.optimizer.FTML(learning_rate=0.1, wd=0.01, clip_gradient=0.5, rescale_grad=2.0)
    w = nd.array([0.5, -1.5, 2.0])
    g = nd.array([0.2, -3.0, 0.05])
    state = opt.create_state(0, w)
    assert isinstance(state, tuple) and len(state) == 3
    for _ in range(3):
        opt.update(0, w, g, state)
    np.testing.assert_allclose(w.asnumpy(), [0.28665155, -1.28647983, 1.78706264], rtol=1e-5)
    np.testing.assert_allclose(state[2].asnumpy(), [-0.9082073, 5.042985, -1.6690352], rtol=1e-5)
    assert isinstance(mx.optimizer.create("ftml"), mx.optimizer.FTML)


def test_sgld_adds_noise_of_variance_lr():
    mx.random.seed(7)
    opt = mx.optimizer.SGLD(learning_rate=0.04)
    w = nd.zeros((20000,))
    assert opt.create_state(0, w) is None
    opt.update(0, w, nd.ones((20000,)), None)
    vals = w.asnumpy()
    assert abs(vals.mean() + 0.02) < 0.01 and abs(vals.std() - 0.2) < 0.01
    with pytest.raises(TypeError):
        opt.update(0, w.asnumpy(), nd.ones((20000,)), None)
