"""mx.sym.zeros / ones / full: constant nodes (_zeros, _ones, _full) in graphs."""

import numpy as np

import oxnet as mx


def test_constant_nodes_evaluate_and_infer():
    x = mx.sym.var("x")
    y = mx.sym.ones((2, 3)) * 2 + mx.sym.zeros((2, 3), dtype="float32") + mx.sym.full((2, 3), 0.5) + x
    out = y.eval(ctx=mx.cpu(), x=mx.nd.ones((2, 3)))[0]
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 3), 3.5))
    assert mx.sym.ones((4,), dtype="int64").infer_type()[1] == [np.int64]
    assert "_zeros" in mx.sym.zeros((1,)).tojson()
