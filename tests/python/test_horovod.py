"""``oxnet.horovod``: Horovod's MXNet API, on 2 and 3 MPI ranks (through
``mpirun``) and in a world of one process (no launcher).

Each multi-rank script computes the expected values with numpy on every
rank (rank ``r`` contributes ``base * (r + 1)``), asserts, and prints a
marker the test counts once per rank.
"""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, distributed, gluon
from oxnet.base import MXNetError

from mpi_ranks import run_ranks

hvd = pytest.importorskip("oxnet.horovod")


def _check_markers(output, marker, n):
    assert output.count(marker) == n, output
    for r in range(n):
        assert f"{marker} rank {r}" in output, output


COLLECTIVES = r'''
import threading
import numpy as np
import oxnet as mx
import oxnet.horovod as hvd
from oxnet import gluon
from oxnet.base import MXNetError

try:
    hvd.rank()
    raise AssertionError("hvd.rank() before hvd.init() did not raise")
except ValueError as e:
    assert str(e) == "Horovod has not been initialized; use hvd.init().", e

hvd.init()
hvd.init()                                   # a second init is harmless
r, n = hvd.rank(), hvd.size()
assert hvd.is_initialized() and hvd.mpi_enabled() and hvd.mpi_built() and not hvd.gloo_enabled()
assert hvd.local_size() == n and hvd.local_rank() == r and hvd.cross_size() == 1 and hvd.cross_rank() == 0
assert hvd.nccl_built() == 0 and isinstance(hvd.mpi_threads_supported(), bool)

base = np.arange(12, dtype=np.float32).reshape(3, 4)
mine = base * (r + 1)
total = sum(base * (k + 1) for k in range(n))

# allreduce: Horovod's default is the average; the input is not modified
x = mx.nd.array(mine)
np.testing.assert_allclose(hvd.allreduce(x).asnumpy(), total / n, rtol=1e-6)
np.testing.assert_array_equal(x.asnumpy(), mine)
np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Sum).asnumpy(), total, rtol=1e-6)
np.testing.assert_allclose(hvd.allreduce(x, average=False).asnumpy(), total, rtol=1e-6)
np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0).asnumpy(),
                           total * 1.5, rtol=1e-6)
np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Average, prescale_factor=2.0, postscale_factor=0.25).asnumpy(),
                           total / n * 0.5, rtol=1e-6)
np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Max).asnumpy(), base * n, rtol=1e-6)
np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Min).asnumpy(), base, rtol=1e-6)
y = mx.nd.array(mine)
assert hvd.allreduce_(y, op=hvd.Sum) is y
np.testing.assert_allclose(y.asnumpy(), total, rtol=1e-6)
got = hvd.allreduce(mx.nd.array(mine, dtype="int32"), op=hvd.Sum)
assert got.dtype == np.int32
np.testing.assert_array_equal(got.asnumpy(), total.astype(np.int32))
np.testing.assert_allclose(hvd.allreduce(mx.nd.array(mine, dtype="float16"), op=hvd.Sum).asnumpy(), total,
                           rtol=1e-3)

# grouped: one transfer, matched by position
group = [mx.nd.array(mine), mx.nd.array(mine[0] * 2), mx.nd.array(mine, dtype="float64")]
outs = hvd.grouped_allreduce(group, op=hvd.Sum)
for o, e in zip(outs, [total, total[0] * 2, total]):
    np.testing.assert_allclose(o.asnumpy(), e, rtol=1e-6)
assert outs[2].dtype == np.float64
np.testing.assert_array_equal(group[0].asnumpy(), mine)
assert hvd.grouped_allreduce_(group) is group
np.testing.assert_allclose(group[1].asnumpy(), total[0] * 2 / n, rtol=1e-6)

# allgather: the first dimensions differ
g = hvd.allgather(mx.nd.array(np.full((r + 1, 2), r, dtype=np.float32)))
np.testing.assert_array_equal(g.asnumpy(), np.concatenate([np.full((k + 1, 2), k) for k in range(n)]))
gs = hvd.grouped_allgather([mx.nd.array([r]), mx.nd.array([[r, r]])])
np.testing.assert_array_equal(gs[0].asnumpy(), np.arange(n))
assert gs[1].shape == (n, 2)

# broadcast from the last rank and in place from rank 0
b = mx.nd.array(mine)
np.testing.assert_array_equal(hvd.broadcast(b, root_rank=n - 1).asnumpy(), base * n)
np.testing.assert_array_equal(b.asnumpy(), mine)
assert hvd.broadcast_(b, root_rank=0) is b
np.testing.assert_array_equal(b.asnumpy(), base)

# broadcast_parameters: a dict of NDArrays (Module's arg_params) and an initialized ParameterDict
arg_params = {"w": mx.nd.array(mine), "b": mx.nd.array([r, r])}
hvd.broadcast_parameters(arg_params, root_rank=1)
np.testing.assert_array_equal(arg_params["w"].asnumpy(), base * 2)
np.testing.assert_array_equal(arg_params["b"].asnumpy(), [1, 1])
mx.random.seed(100 + r)
dense = gluon.nn.Dense(3, in_units=4)
dense.initialize()
hvd.broadcast_parameters(dense.collect_params(), root_rank=0, prefix="dense.")
w = dense.weight.data().asnumpy()
np.testing.assert_array_equal(hvd.allgather(mx.nd.array(w[None])).asnumpy(), np.stack([w] * n))

# alltoall and reducescatter
t = mx.nd.array(np.repeat(np.arange(n, dtype=np.float32)[:, None] + 10 * r, 2, axis=1))  # row k goes to rank k
np.testing.assert_array_equal(hvd.alltoall(t).asnumpy()[:, 0], np.arange(n) * 10 + r)
splits = [k + 1 for k in range(n)]
out2, received = hvd.alltoall(mx.nd.array(np.full((sum(splits), 1), r, dtype=np.float32)), splits=splits)
np.testing.assert_array_equal(received.asnumpy(), [r + 1] * n)
np.testing.assert_array_equal(out2.asnumpy()[:, 0], np.repeat(np.arange(n), r + 1))
rs = hvd.reducescatter(mx.nd.array(np.ones((5, 2), dtype=np.float32) * (r + 1)), op=hvd.Sum)
assert rs.shape == (5 // n + (1 if r < 5 % n else 0), 2), rs.shape
np.testing.assert_allclose(rs.asnumpy(), n * (n + 1) / 2)

# objects
obj = hvd.broadcast_object({"rank": r, "list": [r] * 3} if r == 1 else None, root_rank=1)
assert obj == {"rank": 1, "list": [1, 1, 1]}, obj
assert hvd.allgather_object(("r", r)) == [("r", k) for k in range(n)]

# errors: every rank gets the same error (naming the problem) and no rank hangs
def expect_error(fn, *words):
    try:
        fn()
    except (MXNetError, ValueError) as e:
        for w in words:
            assert w in str(e), (w, str(e))
        return
    raise AssertionError(f"no error from {fn}")

expect_error(lambda: hvd.allreduce(mx.nd.ones((3 + r, 2))), "hvd.allreduce", "differs between ranks", "rank 0",
             "rank 1")
expect_error(lambda: hvd.allreduce(mx.nd.ones((6,) if r == 0 else (2, 3))), "differs between ranks")
expect_error(lambda: hvd.grouped_allreduce([mx.nd.ones((2,))] * (1 + (r > 0))), "differs between ranks")
expect_error(lambda: hvd.allreduce(mx.nd.ones((2,), dtype="float64" if r else "float32")), "differs")
expect_error(lambda: hvd.broadcast(mx.nd.ones((2,)), root_rank=r), "root rank", "differs")
expect_error(lambda: hvd.broadcast_(mx.nd.ones((2,)), root_rank=n), f"root_rank={n}", "not a rank")
expect_error(lambda: hvd.broadcast_(mx.nd.ones((2 + r,)), root_rank=0), "differs between ranks")
expect_error(lambda: hvd.broadcast_parameters({"w": mx.nd.ones((2 + r,))}), "broadcast_parameters", "differs")
expect_error(lambda: hvd.allgather(mx.nd.ones((2, 2 + r))), "allgather")
expect_error(lambda: hvd.broadcast_object(1, root_rank=-1), "not a rank")
expect_error(lambda: hvd.allgather_object(threading.Lock() if r == 1 else 1), "rank 1", "pickle")
expect_error(lambda: hvd.alltoall(mx.nd.ones((n + 1, 1))), "does not split evenly")
expect_error(lambda: hvd.allreduce(x, process_set=hvd.ProcessSet([0])), "process_set")
expect_error(lambda: hvd.allreduce(x, op=hvd.Adasum), "Adasum")
assert hvd.allreduce(x, process_set=hvd.ProcessSet(range(n))).shape == x.shape   # every rank: the global set
# still in step after the errors
np.testing.assert_allclose(hvd.allreduce(mx.nd.array([1.0]), op=hvd.Sum).asnumpy(), [n])
hvd.shutdown()
assert not hvd.is_initialized()
print(f"COLLECTIVES OK rank {r}", flush=True)
'''


@pytest.mark.parametrize("n", [2, 3])
def test_collectives(tmp_path, n):
    _, output = run_ranks(n, COLLECTIVES, tmp_path, timeout=120)
    _check_markers(output, "COLLECTIVES OK", n)


TRAINING = r'''
import numpy as np
import oxnet as mx
import oxnet.horovod as hvd
from oxnet import autograd, gluon

hvd.init()
r, n = hvd.rank(), hvd.size()
PER, STEPS = 4, 5                         # samples per rank and step
rng = np.random.RandomState(7)            # the same data everywhere: each rank takes its slice
X = rng.randn(STEPS, PER * n, 6).astype(np.float32)
Y = rng.randn(STEPS, PER * n, 3).astype(np.float32)
OPT = ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3})


def make_net(seed, tag, finish=True):
    # explicit prefixes: rank 0 builds one net more (the reference), and broadcast_parameters matches by name
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential(prefix=tag + "_")
    net.add(gluon.nn.Dense(5, activation="tanh", prefix=tag + "_a_"),
            gluon.nn.Dense(3, prefix=tag + "_b_"))              # no in_units: deferred initialization
    net.initialize(mx.init.Xavier())
    if finish:
        net(mx.nd.array(X[0, :1]))
    return net


def weights(net):
    return [p.data().asnumpy() for _, p in sorted(net.collect_params().items())]


def train(net, trainer, whole_batch=False):
    loss_fn = gluon.loss.L2Loss()
    for s in range(STEPS):
        lo, hi = (0, PER * n) if whole_batch else (r * PER, (r + 1) * PER)
        x, y = mx.nd.array(X[s, lo:hi]), mx.nd.array(Y[s, lo:hi])
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(hi - lo)
    return weights(net)


def same_on_every_rank(ws, what):
    for k, w in enumerate(ws):
        for other in hvd.allgather(mx.nd.array(w[None])).asnumpy():
            np.testing.assert_array_equal(other, w, err_msg=f"{what}: parameter {k} differs between ranks")


def close(got, expected, what, tol=1e-5):
    for k, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"{what}: parameter {k}")


# one process on the global batch, from rank 0's initial weights (seed 1000)
if r == 0:
    ref_net = make_net(1000, "ref")
    reference = train(ref_net, gluon.Trainer(ref_net.collect_params(), OPT[0], dict(OPT[1]), kvstore=None),
                      whole_batch=True)
else:
    reference = None
reference = hvd.broadcast_object(reference, root_rank=0)

# broadcast_parameters before the deferred initialization: each rank draws its own weights, rank 0's win
net = make_net(1000 if r == 0 else 1000 + 17 * r, "bcast", finish=False)
net.hybridize()
params = net.collect_params()
hvd.broadcast_parameters(params, root_rank=0)
net(mx.nd.array(X[0, :1]))                # the deferred initialization, then its broadcast
same_on_every_rank(weights(net), "after broadcast_parameters")
trainer = hvd.DistributedTrainer(params, OPT[0], dict(OPT[1]))
got = train(net, trainer)
if OVERLAP:  # gradients were summed while backward ran, from the second step on
    assert trainer._overlap is not None and trainer._overlap[1].early > 0
same_on_every_rank(got, "DistributedTrainer")
close(got, reference, "DistributedTrainer")
print(f"TRAINER OK rank {r}", flush=True)

net = make_net(1000, "predivide")
trainer = hvd.DistributedTrainer(net.collect_params(), mx.optimizer.create(OPT[0], **OPT[1]),
                                 gradient_predivide_factor=2.0, num_groups=2, prefix="net.")
got = train(net, trainer)
assert (trainer._overlap is not None) == OVERLAP
close(got, reference, "gradient_predivide_factor=2, num_groups=2")
print(f"PREDIVIDE OK rank {r}", flush=True)

net = make_net(1000, "opt")
opt = hvd.DistributedOptimizer(mx.optimizer.create(OPT[0], **OPT[1]))
assert opt.learning_rate == 0.1 and opt.momentum == 0.9
got = train(net, gluon.Trainer(net.collect_params(), opt, kvstore=None))
same_on_every_rank(got, "DistributedOptimizer")
close(got, reference, "DistributedOptimizer")
print(f"OPTIMIZER OK rank {r}", flush=True)

net = make_net(1000, "fp16")
got = train(net, hvd.DistributedTrainer(net.collect_params(), OPT[0], dict(OPT[1]),
                                        compression=hvd.Compression.fp16))
same_on_every_rank(got, "fp16 compression")
close(got, reference, "fp16 compression", tol=1e-2)
print(f"FP16 OK rank {r}", flush=True)
'''


@pytest.mark.parametrize("overlap", ["0", "1"])
def test_training_matches_one_process_on_the_global_batch(tmp_path, overlap, monkeypatch):
    # with the overlap, one bucket per parameter: summed while backward runs
    monkeypatch.setenv("OXNET_OVERLAP", overlap)
    monkeypatch.setenv("OXNET_BUCKET_BYTES", "8")
    _, output = run_ranks(2, f"OVERLAP = {overlap == '1'}\n" + TRAINING, tmp_path, timeout=120)
    for marker in ("TRAINER OK", "PREDIVIDE OK", "OPTIMIZER OK", "FP16 OK"):
        _check_markers(output, marker, 2)


FAILING = r'''
import oxnet as mx
import oxnet.horovod as hvd

hvd.init()
if hvd.rank() == 1:
    raise RuntimeError("deliberate failure")
hvd.allreduce(mx.nd.ones((4,)))           # rank 0 waits here until the abort ends it
print("UNREACHABLE", flush=True)
'''


def test_failing_rank_ends_the_job(tmp_path):
    code, output = run_ranks(2, FAILING, tmp_path, timeout=60, expect_ok=False)
    assert code != 0, output
    assert "rank 1 of 2 failed" in output, output
    assert "deliberate failure" in output, output
    assert "UNREACHABLE" not in output, output


# ----------------------------------------------------------------------
# a world of one process (no launcher)


@pytest.fixture
def single():
    if distributed.world().kind != "single":
        pytest.skip("this process runs under an MPI launcher")
    hvd.shutdown()
    yield
    hvd.shutdown()


def test_single_process(single):
    del single
    with pytest.raises(ValueError, match=r"Horovod has not been initialized; use hvd\.init\(\)\."):
        hvd.size()
    with pytest.raises(ValueError, match="hvd.init"):
        hvd.allreduce(mx.nd.ones((2,)))
    hvd.init()
    assert (hvd.size(), hvd.rank(), hvd.local_size(), hvd.local_rank(), hvd.cross_size(), hvd.cross_rank()) == (
        1, 0, 1, 0, 1, 0)
    assert not hvd.mpi_enabled() and not hvd.gloo_built() and hvd.nccl_built() == 0
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(hvd.allreduce(x).asnumpy(), x.asnumpy())
    np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Sum, prescale_factor=2, postscale_factor=0.5).asnumpy(),
                               x.asnumpy())
    np.testing.assert_allclose(hvd.allreduce_(x.copy(), op=hvd.Sum, postscale_factor=3).asnumpy(), 3 * x.asnumpy())
    assert [o.shape for o in hvd.grouped_allreduce([x, x[0]])] == [(2, 2), (2,)]
    np.testing.assert_array_equal(hvd.allgather(x).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(hvd.broadcast(x, root_rank=0).asnumpy(), x.asnumpy())
    assert hvd.broadcast_object({"a": 1}) == {"a": 1}
    assert hvd.allgather_object(5) == [5]
    with pytest.raises(MXNetError, match="not a rank"):
        hvd.broadcast_(x, root_rank=1)
    with pytest.raises(ValueError, match="process_set"):
        hvd.allreduce(x, process_set=hvd.ProcessSet([0, 1]))
    with pytest.raises(ValueError, match="invalid params"):
        hvd.broadcast_parameters([x])

    # training: the Horovod classes equal a plain Trainer on this process's batch
    def run(make_trainer):
        mx.random.seed(3)
        net = gluon.nn.Dense(2)
        net.initialize()
        hvd.broadcast_parameters(net.collect_params())
        trainer = make_trainer(net.collect_params())
        rng = np.random.RandomState(0)
        for _ in range(3):
            data, label = mx.nd.array(rng.randn(4, 3)), mx.nd.array(rng.randn(4, 2))
            with autograd.record():
                loss = gluon.loss.L2Loss()(net(data), label)
            loss.backward()
            trainer.step(4)
        return net.weight.data().asnumpy()

    plain = run(lambda p: gluon.Trainer(p, "sgd", {"learning_rate": 0.1}, kvstore=None))
    np.testing.assert_allclose(run(lambda p: hvd.DistributedTrainer(p, "sgd", {"learning_rate": 0.1})), plain,
                               rtol=1e-6)
    np.testing.assert_allclose(
        run(lambda p: gluon.Trainer(p, hvd.DistributedOptimizer(mx.optimizer.create("sgd", learning_rate=0.1)))),
        plain, rtol=1e-6)
    with pytest.warns(UserWarning, match="unwrapped"):
        trained = run(lambda p: hvd.DistributedTrainer(
            p, hvd.DistributedOptimizer(mx.optimizer.create("sgd", learning_rate=0.1), gradient_predivide_factor=4)))
    np.testing.assert_allclose(trained, plain, rtol=1e-6)
    hvd.shutdown()
    assert not hvd.is_initialized()


def test_compression():
    for dtype in ("float16", "float32", "float64"):
        t = mx.nd.ones((3, 2), dtype=dtype)
        c, ctx = hvd.Compression.fp16.compress(t)
        assert c.dtype == np.float16
        d = hvd.Compression.fp16.decompress(c, ctx)
        assert d.dtype == t.dtype
        np.testing.assert_array_equal(d.asnumpy(), np.ones((3, 2)))
    for dtype in ("int32", "uint8"):
        t = mx.nd.ones((3,), dtype=dtype)
        c, ctx = hvd.Compression.fp16.compress(t)
        assert c.dtype == t.dtype and hvd.Compression.fp16.decompress(c, ctx).dtype == t.dtype
    t = mx.nd.ones((2,))
    assert hvd.Compression.none.compress(t)[0] is t
    assert hvd.Compression.none.decompress(t, None) is t
