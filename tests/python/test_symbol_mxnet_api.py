"""Symbol behaviours MXNet 1.x code relies on: pickling, ``bool`` and
``abs``, ``get_children`` of multi-output nodes, shapes given at inference
overriding declared ones, and ``is_np_shape`` in the JSON."""

import json
import pickle

import numpy as np
import pytest

import oxnet as mx


def test_pickle_round_trips_the_graph_and_its_attributes():
    x = mx.sym.var("x", shape=(2, 3), lr_mult=2.0)
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    z = pickle.loads(pickle.dumps(y))
    assert z.tojson() == y.tojson()
    assert z.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert z.attr_dict()["x"]["__lr_mult__"] == "2.0"


def test_truth_value_and_abs():
    x = mx.sym.var("x")
    with pytest.raises(mx.base.NotImplementedForSymbol, match="bool"):
        bool(x)
    out = abs(x).eval(x=mx.nd.array([-1.5, 2.0]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [1.5, 2.0])


def test_children_of_a_multi_output_node_are_its_inputs_once():
    data = mx.sym.var("data")
    sliced = mx.sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]
    concat = mx.sym.Concat(*list(sliced))
    assert concat.get_children().list_outputs() == ["slice_output0", "slice_output1", "slice_output2"]


def test_a_given_shape_overrides_the_declared_one():
    a = mx.sym.var("a", shape=(2, 3))
    c = mx.sym.elemwise_add(a, mx.sym.var("b"))
    assert c.infer_shape()[0] == [(2, 3), (2, 3)]
    assert c.infer_shape(a=(5, 6))[0] == [(5, 6), (5, 6)]


def test_json_says_is_np_shape_under_numpy_shape_semantics():
    x = mx.sym.var("x")
    assert "is_np_shape" not in json.loads(x.tojson())["attrs"]
    with mx.np_shape(True):
        assert json.loads(x.tojson())["attrs"]["is_np_shape"] == ["int", 1]
