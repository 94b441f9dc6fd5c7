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


def test_simple_bind_ignores_keywords_that_are_not_shapes():
    # MXNet 1.9.1 does (test_operator's test_take passes axis= and mode=)
    exe = mx.sym.sin(mx.sym.var("a")).simple_bind(mx.cpu(), a=(2, 3), axis=1, mode="clip")
    assert exe.arg_dict["a"].shape == (2, 3)


def test_contrib_image_and_amp_namespaces():
    assert mx.contrib.ndarray.CTCLoss is mx.nd.contrib.CTCLoss and mx.contrib.sym is mx.sym.contrib
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    y = mx.sym.image.normalize(mx.sym.var("data"), mean=(0, 1, 2), std=(3, 2, 1))
    want = (x - np.array([0, 1, 2]).reshape(1, 3, 1, 1)) / np.array([3, 2, 1]).reshape(1, 3, 1, 1)
    mx.test_utils.check_symbolic_forward(y, [x], [want], rtol=1e-6)
    np.testing.assert_allclose(mx.nd.image.normalize(mx.nd.array(x[0]), mean=1.0, std=2.0).asnumpy(), (x[0] - 1) / 2)
    half = mx.nd.amp_cast(mx.nd.array([1.5, 1e6]), dtype="float16")
    assert half.dtype == np.float16 and np.isinf(half.asnumpy()[1])
    outs = mx.nd.amp_multicast(mx.nd.ones(2, dtype="float16"), mx.nd.ones(2), num_outputs=2)
    assert [o.dtype for o in outs] == [np.float32, np.float32]
