"""gluon.contrib.nn.SyncBatchNorm: on every rank, forward, backward and the
running statistics equal one BatchNorm over the whole batch."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from mpi_ranks import run_ranks


def _bn_pair(scale=True):
    sync = gluon.contrib.nn.SyncBatchNorm(in_channels=3, scale=scale, momentum=0.8)
    plain = gluon.nn.BatchNorm(in_channels=3, scale=scale, momentum=0.8)
    for b in (sync, plain):
        b.initialize()
        b.gamma.set_data(nd.array([1.5, -0.5, 2.0]))
        b.beta.set_data(nd.array([0.1, 0.2, -0.3]))
    return sync, plain


@pytest.mark.parametrize("hybridize", [False, True])
def test_one_rank_is_batch_norm(hybridize):
    x = np.random.RandomState(0).normal(size=(4, 3, 5, 2)).astype("float32") * 3 + 1
    head = np.random.RandomState(1).normal(size=x.shape).astype("float32")
    sync, plain = _bn_pair()
    results = []
    for block in (sync, plain):
        if hybridize:
            block.hybridize()
        xs = nd.array(x)
        xs.attach_grad()
        with autograd.record():
            y = block(xs)
        y.backward(nd.array(head))
        results.append((y.asnumpy(), xs.grad.asnumpy(), block.gamma.grad().asnumpy(), block.beta.grad().asnumpy(),
                        block.running_mean.data().asnumpy(), block.running_var.data().asnumpy()))
        results[-1] += (block(nd.array(x)).asnumpy(),)  # inference: the running statistics
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


GLOBAL = """
    import numpy as np
    import oxnet as mx
    from oxnet import autograd, gluon, nd
    w = mx.distributed.world()
    r, n = w.rank, w.size
    x = np.random.RandomState(0).normal(size=(6 * n, 3, 4)).astype("float32") * 2 + 0.5
    head = np.random.RandomState(1).normal(size=x.shape).astype("float32")
    rows = slice(6 * r, 6 * (r + 1))

    def run(block, data, dy):
        block.initialize()
        block.gamma.set_data(nd.array([1.5, -0.5, 2.0]))
        xs = nd.array(data)
        xs.attach_grad()
        with autograd.record():
            y = block(xs)
        y.backward(nd.array(dy))
        return (y.asnumpy(), xs.grad.asnumpy(), block.gamma.grad().asnumpy(), block.beta.grad().asnumpy(),
                block.running_mean.data().asnumpy(), block.running_var.data().asnumpy())

    sync = gluon.contrib.nn.SyncBatchNorm(in_channels=3, momentum=0.7)
    sync.hybridize()
    y, dx, dgamma, dbeta, rmean, rvar = run(sync, x[rows], head[rows])
    ref = run(gluon.nn.BatchNorm(in_channels=3, momentum=0.7), x, head)
    np.testing.assert_allclose(y, ref[0][rows], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dx, ref[1][rows], rtol=1e-4, atol=1e-5)
    # parameter gradients: each rank's share; summed over ranks (as the trainer does) they are the whole batch's
    total = nd.array(np.stack([dgamma, dbeta]))
    w.allreduce_([total])
    np.testing.assert_allclose(total.asnumpy(), np.stack(ref[2:4]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rmean, ref[4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rvar, ref[5], rtol=1e-5, atol=1e-6)
    print("sync batch norm ok", r)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_ranks_normalize_with_the_global_batch(tmp_path, n):
    _, out = run_ranks(n, GLOBAL, tmp_path)
    assert out.count("sync batch norm ok") == n, out
