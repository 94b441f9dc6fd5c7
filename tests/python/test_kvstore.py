"""mx.kv / mx.kvstore: the single-process KVStore. Pushes sum the values of
several devices, updaters and optimizers update the stored values (the
optimizer numbers are MXNet 1.9.1's), optimizer states round-trip, 2-bit
compression keeps residuals as MXNet does, and bad calls raise errors that
name the key and the problem."""

import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

SHAPE = (2, 3)


def _value(kv, key, shape=SHAPE, dtype="float32"):
    out = mx.nd.zeros(shape, dtype=dtype)
    kv.pull(key, out=out)
    return out.asnumpy()


# ----------------------------------------------------------------------------
# create and the store's description


@pytest.mark.parametrize("name", ["local", "device", "local_allreduce_cpu", "local_allreduce_device",
                                  "local_update_cpu"])
def test_create_single_process_types(name):
    kv = mx.kv.create(name)
    assert isinstance(kv, mx.kvstore.KVStore) and isinstance(kv, mx.kv.KVStoreBase)
    assert kv.type == name
    assert (kv.rank, kv.num_workers) == (0, 1)
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER) and kv.is_capable("OPTIMIZER")
    kv._barrier()  # one process: returns at once


def test_create_names_as_mxnet():
    assert mx.kv is mx.kvstore
    assert mx.kv.create().type == "local"
    assert mx.kv.create("Device").type == "device"
    # MXNet makes any other name a local store of that type
    assert mx.kv.create("my_store").type == "my_store"
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    with pytest.raises(ValueError, match="Unknown capability: sparse"):
        mx.kv.create().is_capable("sparse")


@pytest.mark.parametrize("name", ["dist_sync", "dist_device_sync", "dist", "horovod"])
def test_distributed_types_make_a_store_over_the_workers(name):
    kv = mx.kv.create(name)  # no launcher: a world of one
    assert isinstance(kv, mx.kv.DistKVStore) and (kv.type, kv.rank, kv.num_workers) == (name, 0, 1)
    with pytest.raises(MXNetError, match="asynchronous training is not offered"):
        mx.kv.create(name.replace("sync", "async") if "sync" in name else "dist_async")


def test_nccl_is_not_built():
    with pytest.raises(MXNetError, match="NCCL"):
        mx.kv.create("nccl")


def test_register_a_store_written_in_python():
    class MyPythonStore(mx.kv.KVStoreBase):
        """A store that counts what it is asked."""

        calls = 0

        def pushpull(self, key, value, out=None, priority=0):
            MyPythonStore.calls += 1

    try:
        assert mx.kv.KVStoreBase.register(MyPythonStore) is MyPythonStore
        kv = mx.kv.create("MyPythonStore")
        assert type(kv) is MyPythonStore
        kv.pushpull(0, mx.nd.ones(SHAPE))
        assert MyPythonStore.calls == 1
        with pytest.raises(NotImplementedError):
            kv.set_optimizer(mx.optimizer.SGD())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mx.kv.KVStoreBase.register(MyPythonStore)
        assert any("overriding" in str(w.message) for w in caught)
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("mypythonstore", None)


def test_teststore_sums_and_broadcasts():
    kv = mx.kv.create("teststore")
    assert kv.type == "teststore" and not kv.is_capable("optimizer")
    vals = [mx.nd.ones(SHAPE) * i for i in (1, 2, 3)]
    kv.pushpull("x", vals)
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 6.0))
    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.broadcast("y", mx.nd.ones(SHAPE) * 4, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 4.0))


# ----------------------------------------------------------------------------
# init, push, pull


def test_init_copies_and_keeps_dtype():
    kv = mx.kv.create()
    src = mx.nd.array(np.arange(6).reshape(SHAPE))
    kv.init(3, src)
    src[:] = 0  # the store holds its own copy
    np.testing.assert_array_equal(_value(kv, 3), np.arange(6).reshape(SHAPE))
    for key, dtype in ((4, "int32"), (5, "float16"), (6, "float64")):
        kv.init(key, mx.nd.ones(SHAPE, dtype=dtype) * 7)
        out = mx.nd.zeros(SHAPE, dtype=dtype)
        kv.pull(key, out=out)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 7, dtype=dtype))
    # an out array of another dtype receives the value converted
    out = mx.nd.zeros(SHAPE, dtype="float32")
    kv.pull(4, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 7.0))


@pytest.mark.parametrize("name", ["local", "device"])
def test_push_sums_the_values_of_several_devices(name):
    kv = mx.kv.create(name)
    kv.init("w", mx.nd.zeros(SHAPE))
    devs = [mx.cpu(i) for i in range(4)]
    kv.push("w", [mx.nd.ones(SHAPE, ctx=d) * (i + 1) for i, d in enumerate(devs)])
    outs = [mx.nd.zeros(SHAPE, ctx=d) for d in devs]
    kv.pull("w", out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 10.0))
    # without an updater a push replaces the value (it does not accumulate)
    kv.push("w", mx.nd.ones(SHAPE) * 2)
    np.testing.assert_array_equal(_value(kv, "w"), np.full(SHAPE, 2.0))


def test_push_and_pull_lists_of_keys():
    kv = mx.kv.create()
    keys = [5, 7, 11]
    kv.init(keys, [mx.nd.zeros(SHAPE)] * 3)
    kv.push(keys, [[mx.nd.ones(SHAPE) * k] * 2 for k in keys])  # two devices per key
    outs = [[mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)], mx.nd.zeros(SHAPE), [mx.nd.zeros(SHAPE)]]
    kv.pull(keys, out=outs)
    np.testing.assert_array_equal(outs[0][0].asnumpy(), np.full(SHAPE, 10.0))
    np.testing.assert_array_equal(outs[0][1].asnumpy(), np.full(SHAPE, 10.0))
    np.testing.assert_array_equal(outs[1].asnumpy(), np.full(SHAPE, 14.0))
    np.testing.assert_array_equal(outs[2][0].asnumpy(), np.full(SHAPE, 22.0))
    # the same key twice in one push: the values are summed
    kv.push([5, 5], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 3])
    np.testing.assert_array_equal(_value(kv, 5), np.full(SHAPE, 4.0))


def test_push_sums_in_the_stored_dtype():
    kv = mx.kv.create()
    kv.init(0, mx.nd.zeros(SHAPE, dtype="int32"))
    kv.push(0, [mx.nd.ones(SHAPE, dtype="int32") * 3] * 3)
    out = mx.nd.zeros(SHAPE, dtype="int32")
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 9, dtype="int32"))


def test_pushpull_and_broadcast():
    kv = mx.kv.create("device")
    kv.init(1, mx.nd.zeros(SHAPE))
    vals = [mx.nd.ones(SHAPE) * i for i in (1, 2, 3)]
    kv.pushpull(1, vals)  # no out: the sum is written back into the values
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 6.0))
    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.pushpull(1, [mx.nd.ones(SHAPE)] * 2, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 2.0))

    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.broadcast(5, mx.nd.ones(SHAPE) * 3, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 3.0))
    np.testing.assert_array_equal(_value(kv, 5), np.full(SHAPE, 3.0))
    with pytest.raises(MXNetError, match="duplicate init of key 5"):
        kv.broadcast(5, mx.nd.ones(SHAPE), out=mx.nd.zeros(SHAPE))
    kv.broadcast([6, 7], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 2], out=[[mx.nd.zeros(SHAPE)], mx.nd.zeros(SHAPE)])
    np.testing.assert_array_equal(_value(kv, 7), np.full(SHAPE, 2.0))


# ----------------------------------------------------------------------------
# updaters and optimizers


def test_updater_gets_key_sum_and_stored_value():
    seen = []

    def updater(key, merged, stored):
        seen.append((key, merged.asnumpy().copy(), stored.asnumpy().copy()))
        stored[:] = stored * 10 + merged

    kv = mx.kv.create()
    kv.init(3, mx.nd.ones(SHAPE))
    kv._set_updater(updater)
    kv.push(3, [mx.nd.ones(SHAPE) * 2, mx.nd.ones(SHAPE) * 3])
    assert len(seen) == 1 and seen[0][0] == 3 and isinstance(seen[0][0], int)
    np.testing.assert_array_equal(seen[0][1], np.full(SHAPE, 5.0))
    np.testing.assert_array_equal(seen[0][2], np.full(SHAPE, 1.0))
    np.testing.assert_array_equal(_value(kv, 3), np.full(SHAPE, 15.0))
    # pushpull goes through the updater too
    out = mx.nd.zeros(SHAPE)
    kv.pushpull(3, mx.nd.ones(SHAPE), out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 151.0))


def test_updater_with_str_keys_gets_bytes_as_in_mxnet():
    keys = []

    def updater(key, merged, stored):
        keys.append(key)
        stored += merged

    kv = mx.kv.create()
    kv.init("a", mx.nd.zeros(SHAPE))
    kv._set_updater(updater)
    for _ in range(4):
        kv.push("a", [mx.nd.ones(SHAPE)] * 4)
    assert keys == [b"a"] * 4
    np.testing.assert_array_equal(_value(kv, "a"), np.full(SHAPE, 16.0))
    with pytest.raises(TypeError, match="must be callable"):
        kv._set_updater(3)


@pytest.mark.parametrize("key", [3, "w"])
def test_set_optimizer_updates_as_mxnet(key):
    kv = mx.kv.create()
    kv.init(key, mx.nd.ones(SHAPE))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    got = []
    for _ in range(3):
        kv.push(key, mx.nd.ones(SHAPE))
        got.append(_value(kv, key)[0, 0])
    # MXNet 1.9.1: 0.9, 0.71, 0.439
    np.testing.assert_allclose(got, [0.9, 0.71, 0.439], rtol=1e-6)
    with pytest.raises(TypeError, match="mx.optimizer.Optimizer"):
        kv.set_optimizer("sgd")


def test_optimizer_gets_the_sum_of_the_devices():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.ones(SHAPE))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.push(0, [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) for i in range(3)])
    np.testing.assert_allclose(_value(kv, 0), np.full(SHAPE, 0.7), rtol=1e-6)


@pytest.mark.parametrize("dump_optimizer", [False, True])
def test_saved_optimizer_states_give_the_same_next_update(tmp_path, dump_optimizer):
    fname = str(tmp_path / "kv.states")
    kv = mx.kv.create()
    kv.init(["w", "b"], [mx.nd.ones(SHAPE), mx.nd.zeros(SHAPE)])
    kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    grads = [mx.nd.array(np.arange(6).reshape(SHAPE)), mx.nd.ones(SHAPE)]
    for scale in (4.0, -2.0):
        kv.push(["w", "b"], [g * scale for g in grads])
    kv.save_optimizer_states(fname, dump_optimizer=dump_optimizer)
    before = [_value(kv, "w"), _value(kv, "b")]
    kv.push(["w", "b"], grads)
    after = [_value(kv, "w"), _value(kv, "b")]
    assert not np.allclose(after[0], before[0])

    # a fresh store at the saved weights, with the saved states, makes the same update
    kv2 = mx.kv.create()
    kv2.init(["w", "b"], [mx.nd.array(v) for v in before])
    kv2.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    kv2.load_optimizer_states(fname)
    kv2.push(["w", "b"], grads)
    np.testing.assert_allclose(_value(kv2, "w"), after[0], rtol=1e-6)
    np.testing.assert_allclose(_value(kv2, "b"), after[1], rtol=1e-6)

    # without the states, Adam's first step is a different update
    kv3 = mx.kv.create()
    kv3.init(["w", "b"], [mx.nd.array(v) for v in before])
    kv3.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    kv3.push(["w", "b"], grads)
    assert not np.allclose(_value(kv3, "b"), after[1], rtol=1e-3)


def test_optimizer_states_need_an_optimizer(tmp_path):
    kv = mx.kv.create()
    with pytest.raises(MXNetError, match="no optimizer; call set_optimizer"):
        kv.save_optimizer_states(str(tmp_path / "s"))
    kv._set_updater(lambda key, merged, stored: None)
    with pytest.raises(MXNetError, match="without optimizer states"):
        kv.load_optimizer_states(str(tmp_path / "s"))


# ----------------------------------------------------------------------------
# gradient compression


def test_two_bit_compression_keeps_residuals_as_mxnet():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit"})  # threshold 0.5
    kv.init(0, mx.nd.zeros((1, 4)))
    grads = [mx.nd.array([[0.3, -0.3, 0.6, -0.1]]), mx.nd.array([[0.1, 0.2, 0.3, 0.4]])]
    got = []
    for _ in range(3):
        kv.push(0, grads)
        got.append(_value(kv, 0, shape=(1, 4))[0])
    # MXNet 1.9.1's values for the same pushes
    np.testing.assert_allclose(got, [[0, 0, 0.5, 0], [0.5, -0.5, 1, 0.5], [0, 0.5, 0.5, 0.5]], atol=1e-7)

    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 2.0})
    kv.init(0, mx.nd.zeros((1, 2)))
    kv.push(0, mx.nd.array([[3.0, -1.0]]))
    np.testing.assert_array_equal(_value(kv, 0, shape=(1, 2)), [[2.0, 0.0]])


def test_gradient_compression_errors():
    with pytest.raises(MXNetError, match="not supported for this type of kvstore"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    kv = mx.kv.create("device")
    with pytest.raises(MXNetError, match="Unknown type for gradient compression none"):
        kv.set_gradient_compression({"type": "none"})
    with pytest.raises(MXNetError, match="Required parameter type"):
        kv.set_gradient_compression({"threshold": 0.5})
    with pytest.raises(MXNetError, match="threshold must be greater than 0"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0})
    with pytest.raises(MXNetError, match="threshold expect float"):
        kv.set_gradient_compression({"type": "2bit", "threshold": "abc"})
    with pytest.raises(TypeError, match="must be a dict"):
        kv.set_gradient_compression("2bit")
    kv.set_gradient_compression({"type": "2bit"})
    kv.init(0, mx.nd.zeros(SHAPE, dtype="float64"))
    with pytest.raises(MXNetError, match="float32 values; key 0 holds float64"):
        kv.push(0, mx.nd.ones(SHAPE, dtype="float64"))


# ----------------------------------------------------------------------------
# errors


def test_key_errors():
    kv = mx.kv.create()
    kv.init(3, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="duplicate init of key 3"):
        kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="duplicate init of key 4"):
        kv.init(4, [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    with pytest.raises(MXNetError, match="key 9 has not been inited"):
        kv.pull(9, out=mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="key 9 has not been inited"):
        kv.push(9, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="key 9 has not been inited"):
        kv.pushpull(9, mx.nd.zeros(SHAPE))
    # one store takes int keys or str keys
    for call in (lambda: kv.init("a", mx.nd.zeros(SHAPE)), lambda: kv.push("a", mx.nd.zeros(SHAPE)),
                 lambda: kv.pull("a", out=mx.nd.zeros(SHAPE))):
        with pytest.raises(MXNetError, match="key 'a' is a str but this kvstore holds int keys"):
            call()
    str_kv = mx.kv.create()
    str_kv.init("a", mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="key 3 is an int but this kvstore holds str keys"):
        str_kv.pull(3, out=mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="inconsistent types of keys"):
        mx.kv.create().init([1, "b"], [mx.nd.zeros(SHAPE)] * 2)
    with pytest.raises(TypeError, match="a key must be an int or a str, got float"):
        kv.init(1.5, mx.nd.zeros(SHAPE))


def test_value_errors():
    kv = mx.kv.create()
    kv.init(3, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="out is required"):
        kv.pull(3)
    with pytest.raises(MXNetError, match=r"key 3 holds shape \(2, 3\), but out has an array of shape \(3, 3\)"):
        kv.pull(3, out=mx.nd.zeros((3, 3)))
    with pytest.raises(MXNetError, match=r"key 3 holds shape \(2, 3\), but the value pushed .* \(3, 3\)"):
        kv.push(3, [mx.nd.ones(SHAPE), mx.nd.ones((3, 3))])
    np.testing.assert_array_equal(_value(kv, 3), np.zeros(SHAPE))  # a failed push changes nothing
    with pytest.raises(MXNetError, match="2 keys but 1 entries in value"):
        kv.init([5, 6], [mx.nd.zeros(SHAPE)])
    with pytest.raises(TypeError, match="value for key 8 must be an NDArray"):
        kv.init(8, np.zeros(SHAPE))
    with pytest.raises(TypeError, match="must be NDArrays, got list"):
        kv.push(3, [[mx.nd.ones(SHAPE)]])


def test_row_sparse_pull_says_there_is_no_sparse_storage():
    kv = mx.kv.create()
    kv.init("e", mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="no sparse storage") as info:
        kv.row_sparse_pull("e", out=mx.nd.zeros(SHAPE), row_ids=mx.nd.array([0]))
    assert isinstance(info.value, NotImplementedError)


# ----------------------------------------------------------------------------
# users of a kvstore


def test_trainer_takes_a_kvstore():
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    for kv in ("device", "local", None, mx.kv.create("device")):
        mx.gluon.Trainer(net.collect_params(), "sgd", kvstore=kv)
    # a distributed store is made at once: every worker starts from rank 0's values
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync")
    assert trainer._distributed and trainer._kvstore.type == "dist_sync"
    with pytest.raises(TypeError, match="kvstore must be KVStore, str or None"):
        mx.gluon.Trainer(net.collect_params(), "sgd", kvstore=3)


def test_module_updates_on_a_kvstore_as_without_one():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (30, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 1.0]) > 0).astype("float32").reshape(30, 1)
    w0 = rng.uniform(-0.1, 0.1, (1, 4)).astype("float32")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    loss = mx.sym.mean(mx.sym.square(mx.sym.sigmoid(fc) - mx.sym.var("label")))
    weights = []
    for kv in (None, mx.kv.create("local")):
        mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",))
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=10, label_name="label"), num_epoch=3, kvstore=kv,
                optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
                eval_metric=mx.metric.Loss(), arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.zeros((1,))})
        assert mod._update_on_kvstore is (kv is not None)
        weights.append(mod.get_params()[0]["fc_weight"].asnumpy())
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-6)
    assert not np.allclose(weights[0], w0)
