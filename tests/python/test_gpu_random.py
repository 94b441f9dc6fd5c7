"""Random numbers drawn on the GPU (Philox4x32-10, keyed from oxnet's
global generator): samplers and Dropout, checked statistically, for
reproducibility under mx.random.seed, and against Dropout's contract
(mask values, output = data * mask, gradient = head gradient * mask).
Skipped, saying why, without a GPU."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU on this machine (mx.context.num_gpus() is 0)")

GPU = mx.gpu(0)
N = 1 << 20


def on_device(name):
    assert name not in mx.context.gpu_host_fallbacks(), f"{name} ran on the host"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_and_normal_have_their_moments(dtype):
    u = mx.nd.random.uniform(-1, 3, shape=(N,), dtype=dtype, ctx=GPU)
    assert u.context == GPU and u.dtype == np.dtype(dtype)
    v = u.asnumpy()
    assert v.min() >= -1 and v.max() < 3
    assert abs(v.mean() - 1) < 0.01 and abs(v.std() - 4 / np.sqrt(12)) < 0.01
    z = mx.nd.random.normal(2, 0.5, shape=(N,), dtype=dtype, ctx=GPU).asnumpy()
    assert abs(z.mean() - 2) < 0.005 and abs(z.std() - 0.5) < 0.005
    # tails as a normal's: about 4.55% beyond two standard deviations
    assert abs(np.mean(np.abs(z - 2) > 1.0) - 0.0455) < 0.003
    on_device("_random_uniform")
    on_device("_random_normal")


def test_draws_repeat_after_seeding_and_differ_otherwise():
    mx.random.seed(7)
    a = mx.nd.random.uniform(shape=(1000,), ctx=GPU).asnumpy()
    b = mx.nd.random.uniform(shape=(1000,), ctx=GPU).asnumpy()
    mx.random.seed(7)
    c = mx.nd.random.uniform(shape=(1000,), ctx=GPU).asnumpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    like = mx.nd.random.normal_like(mx.nd.zeros((3, 4), ctx=GPU))
    assert like.shape == (3, 4) and like.context == GPU


def test_dropout_masks_scale_and_differentiate():
    x = mx.nd.array(np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32), ctx=GPU)
    x.attach_grad()
    head = mx.nd.ones_like(x) * 2
    with autograd.record():
        y = mx.nd.Dropout(x, p=0.3)
    y.backward(head)
    xv, yv, gv = x.asnumpy(), y.asnumpy(), x.grad.asnumpy()
    mask = gv / 2
    kept = mask != 0
    assert abs(kept.mean() - 0.7) < 0.005
    np.testing.assert_allclose(mask[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_allclose(yv, xv * mask, rtol=1e-6)
    on_device("Dropout")
    # outside training: the identity
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.3).asnumpy(), xv)
    # mode='always' drops in predict mode too
    assert (mx.nd.Dropout(x, p=0.3, mode="always").asnumpy() == 0).mean() > 0.25


def test_dropout_along_axes_shares_one_draw():
    x = mx.nd.ones((512, 64), ctx=GPU)
    with autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5, axes=(1,)).asnumpy()
    assert np.all(y == y[:, :1]), "rows must be dropped or kept whole"
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y[:, 0] == 0).mean() < 0.6


def test_dropout_repeats_after_seeding():
    x = mx.nd.ones((64, 64), ctx=GPU)
    outs = []
    for _ in range(2):
        mx.random.seed(11)
        with autograd.train_mode():
            outs.append(mx.nd.Dropout(x, p=0.5).asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
