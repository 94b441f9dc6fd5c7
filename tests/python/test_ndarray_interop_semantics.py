"""NDArray semantics MXNet 1.9.1 defines: advanced indexing with a tuple of
integer arrays, in-place writes refused under autograd recording, memory
shared with numpy and through DLPack, NaN through relu, numpy scalars from
asscalar, moveaxis over several axes, carried state across backward passes."""

import gc

import numpy as np
import pytest

import oxnet as mx


def test_a_tuple_of_integer_arrays_picks_elements_and_differentiates():
    a = mx.nd.array([[0, 1], [2, 3]])
    assert a[[1, 1, 0], [0, 1, 0]].asnumpy().tolist() == [2, 3, 0]
    assert a[mx.nd.array([1, 1, 0]), mx.nd.array([0, 1, 0])].asnumpy().tolist() == [2, 3, 0]
    x = mx.nd.arange(24).reshape((2, 3, 4))
    np.testing.assert_array_equal(x[[0, 1], [2, -1]].asnumpy(), x.asnumpy()[[0, 1], [2, -1]])
    x.attach_grad()
    with mx.autograd.record():
        y = x[[0, 1, 1], [2, 0, 2]]
    y.backward()
    want = np.zeros((2, 3, 4))
    np.add.at(want, ([0, 1, 1], [2, 0, 2]), 1.0)
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
    with pytest.raises(IndexError, match="out of bounds"):
        a[[0, 2], [0, 0]]


def test_in_place_writes_are_refused_while_recording_tracked_arrays():
    x = mx.nd.zeros((2, 3))
    y = mx.nd.ones((3,))
    y.attach_grad()
    with pytest.raises(mx.MXNetError, match="Inplace operations"):
        with mx.autograd.record():
            x[0] = y
    with mx.autograd.record():
        x[1] = 5.0  # nothing tracked: allowed
    assert x.asnumpy()[1].tolist() == [5.0, 5.0, 5.0]


def test_from_numpy_shares_memory_and_locks_the_numpy_array():
    n = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    m = mx.nd.from_numpy(n)
    with pytest.raises(ValueError):
        n[2, 1] = 0
    m[2, 1] = 100
    assert n[2, 1] == 100
    with pytest.raises(ValueError, match="c-contiguous"):
        mx.nd.from_numpy(np.ones((2, 3)).T)
    c = np.ones(3)
    mx.nd.from_numpy(c, zero_copy=False)[0] = 7
    assert c[0] == 1 and c.flags.writeable


def test_dlpack_round_trip_shares_memory_and_consumes_the_capsule():
    a = mx.nd.array([[1, 2, 3]], dtype="int32")
    cap = a.to_dlpack_for_write()
    b = mx.nd.from_dlpack(cap)
    b[0, 0] = 9
    assert a.asnumpy().tolist() == [[9, 2, 3]] and b.dtype == np.int32
    with pytest.raises(ValueError, match="consumed only once"):
        mx.nd.from_dlpack(cap)
    del a, cap
    gc.collect()
    assert b.asnumpy().tolist() == [[9, 2, 3]]
    n = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(mx.nd.from_dlpack(n).asnumpy(), n)
    assert np.from_dlpack(mx.nd.ones((2,))).tolist() == [1, 1]


def test_relu_passes_nan_through_forward_and_backward():
    x = mx.nd.array([np.nan, -1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(x)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [np.nan, 0.0, 2.0])
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 0.0, 1.0])


def test_asscalar_is_a_numpy_scalar_and_item_a_python_number():
    s = mx.nd.array([2.5]).asscalar()
    assert isinstance(s, np.float32) and s.shape == ()
    assert type(mx.nd.array([2.5]).item()) is float


def test_moveaxis_moves_several_axes():
    x = mx.nd.zeros((4, 1, 2, 3))
    assert mx.nd.moveaxis(x, [3, 0], [1, 0]).shape == (4, 3, 1, 2)
    assert mx.nd.moveaxis(x, [0, 1, 2], [2, 3, 0]).shape == (2, 3, 4, 1)
    for src, dst in [([0, 0], [0, 1]), ([0, 1], [1, 1]), (0, [0, 1]), (4, 0)]:
        with pytest.raises(ValueError):
            mx.nd.moveaxis(x, src, dst)


def test_state_carried_across_backward_passes_is_a_constant():
    w = mx.nd.array([3.0])
    w.attach_grad()
    h = mx.nd.array([0.5])
    for _ in range(2):
        with mx.autograd.record():
            h = h * w
        h.backward()
    # second pass: h = 1.5 (from the freed first graph) times w
    assert w.grad.asnumpy().tolist() == [1.5]
