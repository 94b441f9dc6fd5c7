"""Partial shape inference from Python, with MXNet 1.9.1's reporting:
unknown shapes as () and unknown extents as 0, or under ``mx.np_shape()``
as None and -1 (expected values are what MXNet 1.9.1 returned)."""

import numpy as np
import pytest

import oxnet as mx


def test_unknown_shapes_and_extents_are_reported_as_mxnet_does():
    y = mx.sym.sin(mx.sym.var("data"))
    arg, out, _ = y.infer_shape_partial()
    assert arg == [()] and out == [()]
    with mx.np_shape():
        arg, out, _ = y.infer_shape_partial()
        assert arg == [None] and out == [None]
    z = mx.sym.dot(mx.sym.var("x"), mx.sym.var("y"))
    assert z.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape(True):
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
    # complete inference says None when something stays unknown
    assert z.infer_shape(x=(0, 3, 4), y=(4, 5)) == (None, None, None)


def test_a_batch_learnt_backward_through_fully_connected():
    a = mx.sym.Variable("a", shape=(0, 10))
    d = mx.sym.FullyConnected(data=a, num_hidden=21, name="fc") + mx.sym.Variable("c", shape=(5, 0))
    arg, out, _ = d.infer_shape()
    shapes = dict(zip(d.list_arguments(), arg))
    assert shapes == {"a": (5, 10), "fc_weight": (21, 10), "fc_bias": (21,), "c": (5, 21)}
    assert out == [(5, 21)]


def test_a_conflict_is_an_error_even_while_other_inputs_are_unknown():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1000, name="fc1")
    with pytest.raises(mx.MXNetError, match="fc1"):
        fc.infer_shape(data=(100, 100), fc1_weight=(1, 100))


def test_internal_holds_the_underscore_operators():
    w = mx.sym.var("w")
    y = mx.sym._internal._identity_with_attr_like_rhs(mx.sym.var("x"), w)
    arg, out, _ = y.infer_shape(w=(2, 3))
    assert arg == [(2, 3), (2, 3)] and out == [(2, 3)]
    x = mx.nd.array([[1.0, 2.0]])
    assert mx.nd._internal._plus(x, x).asnumpy().tolist() == [[2.0, 4.0]]


def test_slice_keeps_unknown_extents_unknown():
    # MXNet 1.9.1's answers (test_operator's test_slice_partial_infer)
    data = mx.sym.var("data", shape=(0, 20))
    assert mx.sym.slice(data, begin=(None, 3), end=(5, 10)).infer_shape_partial()[1] == [(0, 7)]
    assert mx.sym.slice(data, begin=(2, 3), end=(None, 10), step=(3, 3)).infer_shape_partial()[1] == [(0, 3)]
    data = mx.sym.var("data", shape=(10, 0))
    assert mx.sym.slice_axis(data, axis=0, begin=0, end=5).infer_shape_partial()[1] == [(5, 0)]
    with mx.np_shape():
        data = mx.sym.var("data", shape=(-1, 20))
        assert mx.sym.slice(data, begin=(None, None), end=(None, 10), step=(None, 2)).infer_shape_partial()[1] \
            == [(-1, 5)]


def test_reshape_learns_a_held_out_extent_from_its_consumer():
    data = mx.sym.var("data")
    net = mx.sym.elemwise_add(data.reshape((0, -1)), mx.sym.ones(shape=(2, 75)))
    arg, out, _ = net.infer_shape(data=(0, 3, 5, 5))
    assert arg == [(2, 3, 5, 5)] and out == [(2, 75)]
    # the deprecated target_shape: one 0 extent is inferred
    old = mx.sym.load_json(mx.sym.Reshape(data, target_shape=(2, 0)).tojson())
    assert old.infer_shape(data=(2, 3, 5, 5))[1] == [(2, 75)]
    assert mx.sym.Reshape(data, target_shape=(7, 0), keep_highest=True).infer_shape(data=(2, 3, 5))[1] == [(2, 15)]


def test_constant_of_unknown_extents_takes_them_from_its_consumers():
    # MXNet 1.9.1: test_transpose_infer_shape_back / _mixed
    t = mx.sym.transpose(mx.sym.ones(shape=[-1, -1]))
    y = (mx.sym.ones(shape=[2, 3]) + t).bind(mx.cpu(), args={}).forward()[0]
    assert y.shape == (2, 3) and (y.asnumpy() == 2).all()
    t = mx.sym.transpose(mx.sym.ones(shape=[3, -1]))
    assert (mx.sym.ones(shape=[2, -1]) + t).bind(mx.cpu(), args={}).forward()[0].shape == (2, 3)
    # alone, nothing can say what the extent is
    with pytest.raises(mx.MXNetError, match="incomplete|unknown"):
        mx.sym.ones(shape=[-1, 2]).bind(mx.cpu(), args={})


def test_arange_with_infer_range_takes_its_length_from_a_consumer():
    # MXNet 1.9.1's deprecated range inference (test_operator's test_init)
    s = mx.sym.arange(start=2, stop=None, step=0.5, repeat=2, infer_range=True)
    y = mx.sym.elemwise_add(s, mx.sym.zeros(shape=[5])).bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(y.asnumpy(), [2.0, 2.0, 2.5, 2.5, 3.0])
    # imperatively it is ignored, with a warning
    with pytest.warns(DeprecationWarning, match="infer_range"):
        np.testing.assert_array_equal(mx.nd.arange(3, None, infer_range=True).asnumpy(), [0, 1, 2])


def test_bound_zero_size_arrays_are_real_shapes():
    # a bound array's 0 extent is a zero-size axis, and so is what operators
    # infer from it (MXNet 1.9.1: test_operator's test_index_array)
    with mx.np_shape():
        y = mx.sym.contrib.index_array(mx.sym.var("data")).bind(mx.cpu(), args=[mx.nd.ones(())]).forward()[0]
        assert y.shape == (0,)
        z = mx.sym.contrib.index_array(mx.sym.var("data"), axes=(2, 1))
        assert z.bind(mx.cpu(), args=[mx.nd.ones((0, 0, 0, 0))]).forward()[0].shape == (0, 0, 0, 0, 2)
    x = mx.sym.var("x")
    empty = mx.nd.array(np.zeros((0, 3), dtype=np.float32))
    grad = mx.nd.array(np.zeros((0, 3), dtype=np.float32))
    exe = (mx.sym.sum(x * 2, axis=1) + 1).bind(mx.cpu(), args={"x": empty}, args_grad={"x": grad})
    assert exe.forward(is_train=True)[0].shape == (0,)
    exe.backward([mx.nd.array(np.zeros((0,), dtype=np.float32))])
    assert grad.shape == (0, 3)
    # a declared 0 is still an unknown extent
    assert mx.sym.sin(mx.sym.var("w", shape=(0, 3))).infer_shape_partial()[1] == [(0, 3)]
