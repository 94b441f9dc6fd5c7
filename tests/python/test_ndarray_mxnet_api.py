"""NDArray behaviours MXNet 1.x code relies on: pickling, ``tostype``,
``inplace`` views, reshape's ``reverse`` and errors, numpy values as
attributes, assignment with leading unit axes, and the Python-level
functions of ``mx.nd`` (``eye``, ``linspace``, ``concatenate``,
``moveaxis``, ``onehot_encode``, ``from_numpy``, ``contrib.isnan``...)."""

import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd


def test_pickle_round_trips_every_shape_and_dtype():
    for value in [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(2.5), np.zeros((0, 3)),
                  np.arange(4, dtype=np.int64)]:
        a = nd.array(value, dtype=value.dtype)
        b = pickle.loads(pickle.dumps(a))
        assert b.shape == a.shape and b.dtype == a.dtype
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_getstate_is_mxnets_record_and_setstate_loads_it():
    a = nd.array([1.5, -2.0])
    state = a.__getstate__()
    raw = bytes(state["handle"])
    assert raw[:4] == bytes.fromhex("c9fa93f9")  # MXNet's V2 array record
    b = nd.zeros((2,))
    b.__setstate__(state)
    np.testing.assert_array_equal(b.asnumpy(), [1.5, -2.0])
    # a record MXNet wrote for an array on gpu(0) loads onto the CPU
    gpu_state = {"handle": bytearray(bytes.fromhex(
        "c9fa93f9" "00000000" "01000000" "0100000000000000" "02000000" "00000000" "00000000" "0000c03f"))}
    c = nd.zeros((1,))
    c.__setstate__(gpu_state)
    assert c.asnumpy().tolist() == [1.5]
    with pytest.raises(mx.MXNetError, match="keep their shape"):
        nd.zeros((3,)).__setstate__(gpu_state)


def test_tostype_copies_dense_and_names_missing_sparse_types():
    a = nd.array([1.0, 2.0])
    b = a.tostype("default")
    b[0] = 5.0
    assert a.asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.MXNetError, match="no sparse storage"):
        a.tostype("csr")


def test_inplace_shape_methods_are_views():
    a = nd.zeros((2, 3))
    v = a.expand_dims(axis=1, inplace=True)
    assert v.shape == (2, 1, 3)
    v[:] = 1.0
    assert a.asnumpy().sum() == 6
    assert a.expand_dims(axis=-1).shape == (2, 3, 1)
    assert nd.zeros((2, 1, 3)).squeeze(inplace=True).shape == (2, 3)
    assert nd.zeros((2, 3, 4)).flatten(inplace=True).shape == (2, 12)


def test_reshape_reverse_and_bad_sizes():
    t = nd.arange(30).reshape(2, 3, 5)
    assert t.reshape(-1, 0).shape == (10, 3)
    assert t.reshape(-1, 0, reverse=True).shape == (6, 5)
    with pytest.raises(ValueError):
        t.reshape((2, 3))


def test_numpy_values_are_attributes():
    x = nd.arange(24).reshape(2, 3, 4)
    assert nd.transpose(x, axes=(np.int64(2), np.int64(0), np.int64(1))).shape == (4, 2, 3)
    assert nd.broadcast_to(nd.ones((1, 4)), shape=np.array([3, 4])).shape == (3, 4)


def test_assignment_drops_leading_unit_axes():
    b = nd.zeros(1)
    b[0] = np.array([47.5], dtype=np.float32)
    assert b.asnumpy().tolist() == [47.5]
    c = nd.zeros((2, 3))
    c[:] = np.ones((1, 1, 3))
    assert c.asnumpy().sum() == 6
    assert nd.array(np.ones([])).shape == ()


def test_python_level_functions():
    np.testing.assert_array_equal(nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(nd.linspace(0, 1, 4, endpoint=False).asnumpy(), [0, 0.25, 0.5, 0.75])
    cat = nd.concatenate([nd.ones((1, 2)), nd.zeros((2, 2))])
    assert cat.shape == (3, 2) and cat.asnumpy().sum() == 2
    with pytest.raises(ValueError, match="cannot join"):
        nd.concatenate([nd.ones((1, 2)), nd.zeros((2, 3))])
    assert nd.moveaxis(nd.zeros((2, 3, 4)), 0, -1).shape == (3, 4, 2)
    out = nd.zeros((3, 4))
    nd.onehot_encode(nd.array([0, 3, 1]), out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[0, 3, 1]])
    assert nd.from_numpy(np.arange(3, dtype=np.int32)).dtype == np.int32
    with pytest.raises(ValueError, match="c-contiguous"):
        nd.from_numpy(np.zeros((3, 4))[:, ::2])
    full = nd.zeros((2, 2))
    assert nd.ones((2, 2), out=full) is full and full.asnumpy().sum() == 4


def test_contrib_float_class_checks():
    x = nd.array([1.0, np.nan, np.inf, -np.inf])
    assert nd.contrib.isnan(x).asnumpy().tolist() == [0, 1, 0, 0]
    assert nd.contrib.isinf(x).asnumpy().tolist() == [0, 0, 1, 1]
    assert nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0, 0]
    assert nd.crop(nd.arange(5), begin=(1,), end=(3,)).asnumpy().tolist() == [1, 2]
    assert nd.choose_element_0index(nd.array([[1, 2], [3, 4]]), nd.array([1, 0])).asnumpy().tolist() == [2, 3]


def test_legacy_shape_semantics_refuse_scalars_and_zero_extents():
    # outside mx.np_shape(), MXNet 1.x reads () and 0 as unknown
    for make in (nd.zeros, nd.ones):
        with pytest.raises(mx.MXNetError, match="np_shape"):
            make(shape=())
        with pytest.raises(mx.MXNetError, match="np_shape"):
            make(shape=(0, 1, 3, 0))
    with pytest.raises(mx.MXNetError, match="reps"):
        nd.tile(nd.ones((2, 2)), (1, 0, 3))
    with mx.np_shape():
        assert nd.ones(shape=()).asnumpy() == 1.0
        assert nd.zeros((0, 1, 0, 4)).shape == (0, 1, 0, 4)
        assert nd.tile(nd.ones((2, 2)), (1, 0, 3)).shape == (1, 0, 6)
    np.testing.assert_array_equal(nd.tile(nd.array([1, 2]), (2,)).asnumpy(), [1, 2, 1, 2])


def test_integer_ranges_and_casts_follow_mxnet_and_numpy():
    # an integer range takes start and step cast to the dtype (MXNet 1.9.1)
    np.testing.assert_array_equal(nd.arange(1.3, 456.6, 1.3, dtype="int32").asnumpy()[-3:], [349, 350, 351])
    np.testing.assert_array_equal(nd.arange(50, -50, -2, dtype="uint8").asnumpy(),
                                  np.arange(50, -50, -2, dtype=np.uint8))
    sym_range = mx.sym.arange(1.3, 10, 1.3, dtype="int32").bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(sym_range.asnumpy(), np.arange(1, 8))
    # integer casts wrap, as numpy's astype and C's casts
    wide = nd.array([-48, 300, 2 ** 31], dtype="int64")
    np.testing.assert_array_equal(wide.astype("uint8").asnumpy(), np.array([-48, 300, 2 ** 31]).astype(np.uint8))
    np.testing.assert_array_equal(wide.astype("int32").asnumpy(), np.array([-48, 300, 2 ** 31]).astype(np.int32))


def test_numpy_values_as_attributes_read_as_their_python_values():
    # a tuple of numpy floats and a numpy bool were read as dtypes before
    x = nd.zeros((1, 1, 2, 3))
    plain = nd.contrib.MultiBoxPrior(x, sizes=(0.5, 0.25), ratios=(1.0, 2.0), clip=True)
    from_numpy = nd.contrib.MultiBoxPrior(x, sizes=tuple(np.array([0.5, 0.25])), ratios=list(np.array([1.0, 2.0])),
                                          clip=np.bool_(True))
    np.testing.assert_array_equal(plain.asnumpy(), from_numpy.asnumpy())
    assert nd.sum(nd.ones((2, 3)), axis=(np.int64(1),)).shape == (2,)
    assert nd.ones((2, 3), dtype=np.float16).dtype == np.float16
