"""numpy's advanced indexing on NDArrays: keys that mix integer arrays with
integers, slices, `...` and None, read (with gradients) and assigned,
compared with numpy itself; and MXNet's private contiguity helper."""

import itertools

import numpy as np
import pytest

import oxnet as mx

SHAPE = (4, 5, 3, 6)

KEYS = [
    (1, [2, 3]),
    (1, [2, 3], np.array([[1], [0]])),
    ([0, 3], slice(1, 4), [2, 0]),  # arrays apart: their axes go first
    (slice(None), [[1], [4]], slice(0, 2), [5, 1]),
    (Ellipsis, [1, 0, 1]),
    ([1, 2], None, slice(None, None, -1)),
    (None, slice(1, 3), [0, 2], None, [1, 2]),
    (2, slice(None), [2, 1]),  # an integer apart from the array counts as one
    ((1, 2), slice(3, 0, -2)),  # a tuple inside the key is an index array
    (mx.nd.array([[3], [1]], dtype="int64"), [-1, 0]),
    (np.array([[1, 2], [3, 0]]), slice(1, None, 2), 0, [-6, 5]),
]


def _np_key(key):
    return tuple(k.asnumpy() if isinstance(k, mx.nd.NDArray) else k for k in key)


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_reading_matches_numpy_and_differentiates_like_a_gather(key):
    x_np = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    x = mx.nd.array(x_np)
    want = x_np[_np_key(key)]
    got = x[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)

    x.attach_grad()
    w_np = np.random.RandomState(0).uniform(size=want.shape).astype("float32")
    with mx.autograd.record():
        y = (x[key] * mx.nd.array(w_np)).sum()
    y.backward()
    grad = np.zeros(SHAPE, dtype="float32")
    np.add.at(grad, _np_key(key), w_np)
    np.testing.assert_allclose(x.grad.asnumpy(), grad, rtol=1e-6)


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_assigning_matches_numpy(key):
    rs = np.random.RandomState(1)
    target = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)
    region = target[_np_key(key)].shape
    values = [
        7,
        rs.randint(-100, 0, size=region),
        mx.nd.array(rs.randint(-100, 0, size=region[-1:]), dtype="int32"),
        list(rs.randint(-100, 0, size=region[-1:])),
    ]
    for v in values:
        x = mx.nd.array(target, dtype="int32")
        want = target.copy()
        want[_np_key(key)] = v.asnumpy() if isinstance(v, mx.nd.NDArray) else v
        x[key] = v
        np.testing.assert_array_equal(x.asnumpy(), want)


def test_assignment_through_a_strided_view_writes_the_base_array():
    base = mx.nd.zeros((4, 6))
    view = base[1:4, ::2]
    view[[0, 2], [1, 2]] = mx.nd.array([5, 6])
    want = np.zeros((4, 6), dtype="float32")
    want[1:4, ::2][[0, 2], [1, 2]] = [5, 6]
    np.testing.assert_array_equal(base.asnumpy(), want)


def test_bad_advanced_keys_raise_index_errors():
    x = mx.nd.zeros((3, 4))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        x[1, [0, 4]]
    with pytest.raises(IndexError, match="could not be broadcast together"):
        x[[0, 1], [1, 2, 0]]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, [1], 2]
    with pytest.raises(IndexError, match="boolean"):
        x[np.array([True, False, True])] = 1
    with pytest.raises(mx.base.MXNetError, match="cannot assign an array of shape"):
        x[1, [0, 2]] = mx.nd.ones((3,))


def test_assignment_is_refused_while_recording_a_tracked_value():
    x = mx.nd.zeros((3, 4))
    y = mx.nd.ones((2,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
            x[1, [0, 2]] = y


def test_the_contiguity_helper_agrees_with_numpy():
    is_contiguous = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    shape = (3, 4, 5)
    x = np.zeros(shape)
    slices = [slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(2, 3), 1]
    for key in itertools.product(slices, repeat=3):
        assert is_contiguous(key, shape) == x[key].flags.contiguous, key


def test_one_element_and_new_axis_keys_have_mxnet_shapes():
    x = mx.nd.arange(12).reshape((3, 4))
    # MXNet 1.x has no 0-d arrays: one element comes back with shape (1,)
    assert x[1, 2].shape == (1,) and x[1, 2].asscalar() == 6
    assert [v.shape for v in mx.nd.array([1, 2])] == [(1,), (1,)]
    with mx.util.np_shape(True):
        assert x[1, 2].shape == ()
    x.attach_grad()
    with mx.autograd.record():
        y = x[None]
        z = x[2, 3]
    assert y.shape == (1, 3, 4) and z.shape == (1,)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones((3, 4)))
