"""The communication layer and the distributed kvstore on 2 and 3 MPI ranks
(shared memory, every job under a timeout), and a world of one without a
launcher."""

import textwrap

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from mpi_ranks import run_ranks


def test_without_a_launcher_the_world_is_one_process():
    world = mx.distributed.world()
    assert (world.kind, world.rank, world.size, world.local_rank, world.local_size) == ("single", 0, 1, 0, 1)
    a = nd.array([1.0, 2.0])
    world.allreduce_([a], average=True, prescale=2.0, postscale=0.5)
    assert a.asnumpy().tolist() == [1.0, 2.0]
    assert world.allgather(a).asnumpy().tolist() == [1.0, 2.0]
    assert world.broadcast_object({"k": 1}) == {"k": 1}
    with pytest.raises(mx.MXNetError, match="root rank"):
        world.broadcast_([a], root=1)
    kv = mx.kv.create("dist_sync")
    assert (kv.type, kv.rank, kv.num_workers) == ("dist_sync", 0, 1)
    kv.init("w", nd.ones((2,)))
    kv.push("w", [nd.ones((2,)), nd.ones((2,)) * 2])
    out = nd.zeros((2,))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == [3.0, 3.0]


@pytest.mark.parametrize("hybrid", [False, True])
def test_backward_announces_each_gradient_as_it_completes(hybrid):
    # the signals the distributed store's communication thread reads
    from oxnet import _oxnet, autograd, gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, in_units=3), gluon.nn.Dense(2, in_units=4))
    net.initialize()
    if hybrid:
        net.hybridize()
    params = list(net.collect_params().values())  # weight, bias of each layer
    signals = _oxnet.GradSignals()
    assert signals.watch([p.data() for p in params], [p.grad() for p in params]) == [True] * 4
    other = nd.zeros((3,))
    other.attach_grad(grad_req="add")
    assert signals.watch([other, params[0].data()], [other.grad, params[1].grad()]) == [False, False]
    for _ in range(2):
        with autograd.record():
            loss = net(nd.ones((5, 3))).sum()
        loss.backward()
        got = [signals.get(timeout=5) for _ in range(4)]
        assert sorted(got[:2]) == [2, 3] and sorted(got[2:]) == [0, 1], got  # the last layer first
        assert signals.get(timeout=0) is None
    signals.unwatch([p.data() for p in params])
    with autograd.record():
        loss = net(nd.ones((5, 3))).sum()
    loss.backward()
    assert signals.get(timeout=0) is None
    signals.post(-1)
    assert signals.get() == -1


def test_dist_async_says_why_it_is_not_offered():
    with pytest.raises(mx.MXNetError, match="asynchronous training is not offered"):
        mx.kv.create("dist_async")


COLLECTIVES = """
    import numpy as np
    import oxnet as mx
    from oxnet import nd
    w = mx.distributed.world()
    r, n = w.rank, w.size
    assert w.kind == "mpi" and w.local_size == n and w.local_rank == r
    # many small arrays and dtypes in one call (fused), a strided one, float16
    base = [np.arange(k + 1, dtype="float32") for k in range(5)]
    arrays = [nd.array(b * (r + 1)) for b in base]
    ints = nd.array(np.arange(4) * (r + 1), dtype="int32")
    half = nd.array(np.arange(3) * (r + 1), dtype="float16")
    strided = nd.array(np.arange(6, dtype="float32").reshape(2, 3) * (r + 1)).T
    w.allreduce_(arrays + [ints, half])
    total = n * (n + 1) / 2
    for a, b in zip(arrays, base):
        np.testing.assert_array_equal(a.asnumpy(), b * total)
    np.testing.assert_array_equal(ints.asnumpy(), np.arange(4) * int(total))
    np.testing.assert_array_equal(half.asnumpy(), np.arange(3) * total)
    # one dtype, contiguous: packed and unpacked by the engine in one call each (within the threshold)
    same = [nd.array(b * (r + 1)) for b in base]
    w.allreduce_(same, average=True, prescale=2.0, postscale=0.5)
    for a, b in zip(same, base):
        np.testing.assert_allclose(a.asnumpy(), b * total / n, rtol=1e-6)
    avg = nd.array([float(r)])
    w.allreduce_([avg], average=True, prescale=2.0, postscale=3.0)
    np.testing.assert_allclose(avg.asnumpy(), [6.0 * sum(range(n)) / n], rtol=1e-6)
    b = nd.array([r + 10.0, r + 20.0])
    w.broadcast_([b], root=n - 1)
    assert b.asnumpy().tolist() == [n + 9.0, n + 19.0]
    g = w.allgather(nd.ones((r + 1, 2)) * r)
    assert g.shape == (n * (n + 1) // 2, 2)
    np.testing.assert_array_equal(g.asnumpy()[:, 0], np.concatenate([[k] * (k + 1) for k in range(n)]))
    assert w.allgather_object(r * r) == [k * k for k in range(n)]
    assert w.broadcast_object({"from": r}, root=1) == {"from": 1}
    try:
        w.check_same("the model", ("dense", r))
    except mx.MXNetError as e:
        assert "the model differs between ranks" in str(e) and "rank 1" in str(e)
    else:
        raise AssertionError("check_same passed different values")
    w.barrier()
    print("collectives ok", r)
"""


@pytest.mark.parametrize("n,threshold", [(2, "16"), (3, "16"), (2, None)])
def test_collectives_on_ranks(tmp_path, n, threshold, monkeypatch):
    # 16 bytes: several fused buffers and single ones; the default: everything in one packed buffer
    if threshold is None:
        monkeypatch.delenv("OXNET_FUSION_THRESHOLD", raising=False)
    else:
        monkeypatch.setenv("OXNET_FUSION_THRESHOLD", threshold)
    _, out = run_ranks(n, COLLECTIVES, tmp_path)
    assert out.count("collectives ok") == n, out


KVSTORE = """
    import numpy as np
    import oxnet as mx
    from oxnet import nd
    kv = mx.kv.create("dist_sync")
    r, n = kv.rank, kv.num_workers
    # init takes rank 0's value; push sums over devices and workers and overwrites
    kv.init(["a", "b"], [nd.ones((2, 3)) * (r + 5), nd.zeros((4,))])
    out = nd.zeros((2, 3))
    kv.pull("a", out=out)
    assert (out.asnumpy() == 5).all()
    kv.push("a", [nd.ones((2, 3)) * (r + 1), nd.ones((2, 3))])
    kv.pull("a", out=out)
    assert (out.asnumpy() == sum(k + 2 for k in range(n))).all(), out
    outs = [nd.zeros((2, 3)), nd.zeros((2, 3))]
    kv.pushpull("a", nd.ones((2, 3)) * r, out=outs)
    assert all((o.asnumpy() == sum(range(n))).all() for o in outs)
    # every worker applies the same update
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.push("b", nd.ones((4,)) * (r + 1))
    b = nd.zeros((4,))
    kv.pull("b", out=b)
    np.testing.assert_allclose(b.asnumpy(), -0.5 * n * (n + 1) / 2)
    bc = nd.zeros((3,))
    kv.broadcast("c", nd.ones((3,)) * r, out=bc)
    assert (bc.asnumpy() == 0).all()
    kv._barrier()
    # keys pushed differently on different workers: an error, not a hang
    try:
            kv.push("a" if r == 0 else "b", nd.ones((2, 3)) if r == 0 else nd.ones((4,)))
    except mx.MXNetError as e:
        assert "differs between ranks" in str(e), e
    else:
        raise AssertionError("mismatched pushes passed")
    print("kvstore ok", r)
"""


def test_dist_sync_kvstore_on_two_ranks(tmp_path):
    _, out = run_ranks(2, KVSTORE, tmp_path)
    assert out.count("kvstore ok") == 2, out


TRAINER = """
    import numpy as np
    import oxnet as mx
    from oxnet import autograd, gluon, nd
    w = mx.distributed.world()
    r, n = w.rank, w.size
    rng = np.random.RandomState(0)
    data = rng.uniform(-1, 1, (12, 5)).astype("float32")
    label = rng.uniform(-1, 1, (12, 2)).astype("float32")

    def train(kvstore, rows, ctxs, seed):
        mx.random.seed(seed)
        net = gluon.nn.Dense(2)  # in_units inferred: deferred initialisation
        net.initialize(mx.init.Xavier(), ctx=ctxs)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                                kvstore=kvstore)
        loss_fn = gluon.loss.L2Loss()
        for _ in range(4):
            xs = gluon.utils.split_and_load(nd.array(data[rows]), ctxs)
            ys = gluon.utils.split_and_load(nd.array(label[rows]), ctxs)
            with autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(len(data))
        return net.weight.data().asnumpy(), trainer

    # each worker: its own third/half of the batch on two cpu contexts, its own initial weights
    rows = np.arange(len(data))[r::n]
    weights, trainer = train("dist_sync", rows, [mx.cpu(0), mx.cpu(1)], seed=r + 1)
    assert trainer._distributed and trainer._update_on_kvstore
    everyone = w.allgather_object(weights)
    for other in everyone[1:]:
        np.testing.assert_array_equal(other, everyone[0])
    # one context per worker: the store's steady path (one plan, reused from the second step)
    weights1, trainer1 = train("dist_sync", rows, [mx.cpu(0)], seed=r + 1)
    assert trainer1._kvstore._plan is not None
    everyone = w.allgather_object(weights1)
    for other in everyone[1:]:
        np.testing.assert_array_equal(other, everyone[0])
    if r == 0:
        single, _ = train(None, np.arange(len(data)), [mx.cpu(0)], seed=1)
        np.testing.assert_allclose(weights, single, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weights1, single, rtol=1e-5, atol=1e-6)
    print("trainer ok", r)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_trainer_with_dist_sync_equals_one_process_on_the_global_batch(tmp_path, n):
    _, out = run_ranks(n, TRAINER, tmp_path)
    assert out.count("trainer ok") == n, out


INTO = """
    import numpy as np
    import oxnet as mx
    from oxnet import nd
    w = mx.distributed.world()
    r, n = w.rank, w.size
    # a large array (one MPI call from source to output), small ones (packed), float64 alone
    shapes = [(300, 250), (3,), (4, 5), (70000,)]
    sources = [nd.array(np.full(s, r + 1.0) + np.arange(int(np.prod(s))).reshape(s)) for s in shapes]
    sources.append(nd.array(np.full((2, 2), r + 1.0), dtype="float64"))
    before = [a.asnumpy().copy() for a in sources]
    outs = [nd.zeros(a.shape, dtype=a.dtype) for a in sources]
    w.allreduce_into(sources, outs)
    total = n * (n + 1) / 2
    for a, o, b in zip(sources, outs, before):
        np.testing.assert_array_equal(a.asnumpy(), b)  # the sources are left as they were
        idx = np.arange(b.size).reshape(b.shape) if b.dtype == np.float32 else 0
        np.testing.assert_allclose(o.asnumpy(), total + n * idx)
    print("into ok", r)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_allreduce_into_leaves_sources_and_sums_into_outputs(tmp_path, n):
    _, out = run_ranks(n, INTO, tmp_path)
    assert out.count("into ok") == n, out


FAILING = """
    import time
    import oxnet as mx
    from oxnet import nd
    w = mx.distributed.world()
    if w.rank == 1:
        raise ValueError("rank one gives up")
    w.allreduce_([nd.ones((3,))])  # rank 0 would wait for ever without the abort
    time.sleep(60)
"""


def test_a_rank_that_raises_ends_the_job(tmp_path):
    code, out = run_ranks(2, FAILING, tmp_path, timeout=60, expect_ok=False)
    assert code != 0
    assert "rank 1 of 2 failed" in out and "rank one gives up" in out, out


THREADS = """
    import os
    import oxnet as mx
    w = mx.distributed.world()
    cores = len(os.sched_getaffinity(0))
    assert os.environ["OXNET_NUM_THREADS"] == str(max(1, cores // w.local_size)), os.environ["OXNET_NUM_THREADS"]
    print("threads ok", w.rank)
"""


def test_ranks_on_one_machine_share_its_cores(tmp_path, monkeypatch):
    monkeypatch.delenv("OXNET_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    _, out = run_ranks(2, THREADS, tmp_path)
    assert out.count("threads ok") == 2, out


MODULE = """
    import numpy as np
    import oxnet as mx
    w = mx.distributed.world()
    r, n = w.rank, w.size
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (40, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 1.0]) > 0).astype("float32").reshape(40, 1)
    w0 = rng.uniform(-0.1, 0.1, (1, 4)).astype("float32")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(mx.sym.sigmoid(fc) - mx.sym.var("label"))))

    def fit(kvstore, rows, batch, start):
        mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",))
        mod.fit(mx.io.NDArrayIter(x[rows], y[rows], batch_size=batch, label_name="label"), num_epoch=3,
                kvstore=kvstore, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
                eval_metric=mx.metric.Loss(), arg_params={"fc_weight": mx.nd.array(start),
                                                          "fc_bias": mx.nd.zeros((1,))})
        return mod.get_params()[0]["fc_weight"].asnumpy()

    # each rank: its share of every global batch of 10, and its own start (rank 0's is broadcast)
    rows = np.concatenate([np.arange(b, b + 10)[r::n] for b in range(0, 40, 10)])
    mine = fit("dist_sync", rows, 10 // n, w0 * (r + 1))
    everyone = w.allgather_object(mine)
    assert all(np.array_equal(everyone[0], v) for v in everyone)
    if r == 0:
        np.testing.assert_allclose(mine, fit(None, np.arange(40), 10, w0), rtol=1e-5, atol=1e-6)
    print("module ok", r)
"""


def test_module_fit_with_dist_sync_equals_one_process_on_the_global_batch(tmp_path):
    _, out = run_ranks(2, MODULE, tmp_path)
    assert out.count("module ok") == 2, out


OVERLAP = """
    import numpy as np
    import oxnet as mx
    from oxnet import autograd, gluon, nd
    w = mx.distributed.world()
    r, n = w.rank, w.size
    rng = np.random.RandomState(0)
    data, label = rng.randn(12, 6).astype("float32"), rng.randn(12, 2).astype("float32")

    def train(kvstore, rows, hybrid, twice=False, steps=4):
        mx.random.seed(7)
        net = gluon.nn.HybridSequential(prefix="net_")  # the same names on every rank (the Trainer sorts them)
        with net.name_scope():
            net.add(gluon.nn.Dense(8, activation="tanh"), gluon.nn.Dense(5, activation="relu"), gluon.nn.Dense(2))
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kvstore)
        x, y = nd.array(data[rows]), nd.array(label[rows])
        for _ in range(steps):
            if twice:  # a pass whose gradients the step must not use (grad_req write: the next overwrites)
                with autograd.record():
                    gluon.loss.L2Loss()(net(x * 3), y).backward()
            with autograd.record():
                loss = gluon.loss.L2Loss()(net(x), y)
            loss.backward()
            trainer.step(len(data))
        return [p.data().asnumpy() for p in net.collect_params().values()], trainer

    rows = np.arange(len(data))[r::n]
    for hybrid in (False, True):
        for twice in (False, True):
            weights, trainer = train("dist_sync", rows, hybrid, twice)
            overlap = trainer._kvstore._plan.overlap
            if OVERLAP_ON:
                # one bucket per parameter (OXNET_BUCKET_BYTES): five of six summed during backward
                assert len(overlap.buckets) == 6 and all(overlap.watched), overlap.buckets
                assert overlap.early == 5 * 3, (hybrid, twice, overlap.early)  # steps 2-4 (the plan is made at 1)
                assert overlap.redone == (3 if twice else 0), (hybrid, twice, overlap.redone)
                # cut along backward's order after step 2: the last layer's parameters first, the first's last
                names = sorted(trainer._param2idx)
                layers = [names[b[0]][len("net_"):len("net_dense0")] for b in overlap.buckets]
                assert layers == ["dense2"] * 2 + ["dense1"] * 2 + ["dense0"] * 2, layers
            else:
                assert overlap is None
            everyone = w.allgather_object(weights)
            for other in everyone[1:]:
                for a, b in zip(other, everyone[0]):
                    np.testing.assert_array_equal(a, b)
            if r == 0:
                single, _ = train(None, np.arange(len(data)), hybrid, twice)
                for a, b in zip(weights, single):
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    print("overlap ok", r)
"""


@pytest.mark.parametrize("n,overlap", [(2, "1"), (3, "1"), (2, "0")])
def test_gradients_are_summed_while_backward_runs(tmp_path, n, overlap, monkeypatch):
    # one bucket per parameter: the buckets of the later layers are summed
    # during backward; a second backward pass before the step is noticed
    # and its gradients summed again; the weights equal one process's
    monkeypatch.setenv("OXNET_OVERLAP", overlap)
    monkeypatch.setenv("OXNET_BUCKET_BYTES", "8")
    _, out = run_ranks(n, f"OVERLAP_ON = {overlap == '1'}\n" + textwrap.dedent(OVERLAP), tmp_path)
    assert out.count("overlap ok") == n, out
