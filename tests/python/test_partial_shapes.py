"""Partial shape inference from Python, with MXNet 1.9.1's reporting:
unknown shapes as () and unknown extents as 0, or under ``mx.np_shape()``
as None and -1 (expected values are what MXNet 1.9.1 returned)."""

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
