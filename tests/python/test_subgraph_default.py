"""The `default` / `default_v2` subgraph backends and the C API functions
that drive them (`mx.base._LIB`), `MXNET_SUBGRAPH_BACKEND` in binding,
`optimize_for` and `hybridize(backend=...)`: partitioned graphs keep their
inputs and compute what the original computes. Expected partitions are
those MXNet 1.9.1 makes."""

import ctypes
import json

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import SymbolHandle, _LIB, c_str, c_str_array, check_call, mx_uint
from oxnet.gluon import nn


def diamond():
    """exp -> (cos, sin) -> add, then two BatchNorms."""
    data = mx.sym.var("data", shape=(2, 3, 4, 4))
    e = mx.sym.exp(data, name="e")
    s = mx.sym.cos(e, name="c") + mx.sym.sin(e, name="s")
    s = mx.sym.BatchNorm(s, name="bn0")
    return mx.sym.BatchNorm(s, name="bn1")


def build(sym, names, backend="default"):
    out = SymbolHandle()
    check_call(_LIB.MXBuildSubgraphByOpNames(sym.handle, c_str(backend), mx_uint(len(names)),
                                              c_str_array(names), ctypes.byref(out)))
    return mx.sym.Symbol(out)


def subgraphs(sym):
    """[(node name, [operators of its subgraph], number of inputs)] and the other operators."""
    nodes = json.loads(sym.tojson())["nodes"]
    groups, others = [], []
    for n in nodes:
        if n["op"] == "_CachedOp":
            inner = json.loads(n["attrs"]["subgraph_sym_json"])["nodes"]
            groups.append((n["name"], [m["op"] for m in inner if m["op"] != "null"], len(n["inputs"])))
        elif n["op"] != "null":
            others.append(n["op"])
    return groups, others


def forward(sym, values):
    exe = sym.simple_bind(mx.cpu(), grad_req="null")
    for name, v in values.items():
        (exe.arg_dict if name in exe.arg_dict else exe.aux_dict)[name][:] = v
    return [o.asnumpy() for o in exe.forward()]


def random_inputs(sym):
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape()
    names = sym.list_arguments() + sym.list_auxiliary_states()
    return {n: rng.uniform(0.1, 1.0, s).astype(np.float32) for n, s in zip(names, arg_shapes + aux_shapes)}


def test_build_by_op_names_breaks_the_cycle_as_mxnet_and_keeps_inputs_and_outputs():
    sym = diamond()
    part = build(sym, ["exp", "cos", "elemwise_add", "BatchNorm"])
    groups, others = subgraphs(part)
    # add would close a cycle through sin: {exp, cos}, then {add, bn0, bn1}
    assert groups == [("_CachedOp0", ["exp", "cos"], 1),
                      ("_CachedOp1", ["elemwise_add", "BatchNorm", "BatchNorm"], 10)]
    assert others == ["sin"]
    assert part.list_inputs() == sym.list_inputs()
    assert part.list_arguments() == sym.list_arguments()
    assert part.list_auxiliary_states() == ["bn0_moving_mean", "bn0_moving_var", "bn1_moving_mean",
                                            "bn1_moving_var"]
    values = random_inputs(sym)
    for a, b in zip(forward(part, values), forward(sym, values)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_an_empty_name_list_copies_and_unknown_backends_are_errors():
    sym = diamond()
    assert build(sym, []).tojson() == sym.tojson()
    with pytest.raises(mx.MXNetError, match="no subgraph backend `nope`"):
        build(sym, ["exp"], backend="nope")
    with pytest.raises(mx.MXNetError, match="MXNotAFunction"):
        _LIB.MXNotAFunction()
    with pytest.raises(mx.MXNetError, match="op_names must be an array of C strings"):
        _LIB.MXSetSubgraphPropertyOpNames(c_str("default"), mx_uint(1), 5)


def test_handles_turn_back_into_symbols_and_owned_handles_are_taken_once():
    sym = diamond()
    borrowed = sym.handle
    assert isinstance(borrowed, ctypes.c_void_p)
    assert mx.sym.Symbol(borrowed).tojson() == sym.tojson()
    out = SymbolHandle()
    check_call(_LIB.MXBuildSubgraphByOpNames(sym.handle, c_str("default"), mx_uint(1), c_str_array(["exp"]),
                                              ctypes.byref(out)))
    assert subgraphs(mx.sym.Symbol(out))[0] == [("_CachedOp0", ["exp"], 1)]
    with pytest.raises(mx.MXNetError, match="not a live symbol handle"):
        mx.sym.Symbol(out)


def test_the_environment_variable_partitions_bind_and_simple_bind(monkeypatch):
    sym = diamond()
    values = random_inputs(sym)
    want = forward(sym, values)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    check_call(_LIB.MXSetSubgraphPropertyOpNames(c_str("default"), mx_uint(3),
                                                 c_str_array(["exp", "sin", "BatchNorm"])))
    try:
        np.testing.assert_allclose(forward(sym, values)[0], want[0], rtol=1e-6)
        args = [mx.nd.array(values[n]) for n in sym.list_arguments()]
        aux = [mx.nd.array(values[n]) for n in sym.list_auxiliary_states()]
        exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
        assert list(exe.arg_dict) == sym.list_arguments()
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), want[0], rtol=1e-6)
    finally:
        check_call(_LIB.MXRemoveSubgraphPropertyOpNames(c_str("default")))
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "no_such_backend")
    with pytest.raises(mx.MXNetError, match="MXNET_SUBGRAPH_BACKEND='no_such_backend'"):
        sym.simple_bind(mx.cpu(), grad_req="null")
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")
    np.testing.assert_allclose(forward(sym, values)[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("backend", ["default", "default_v2"])
def test_optimize_for_dedups_inputs_and_outputs_when_asked(backend):
    data = mx.sym.var("data", shape=(3,))
    e = mx.sym.exp(data + data)
    sym = mx.sym.Group([e, e])
    check_call(_LIB.MXSetSubgraphPropertyOpNamesV2(c_str(backend), mx_uint(2),
                                                   c_str_array(["exp", "elemwise_add"])))
    try:
        plain = sym.optimize_for(backend)
        dedup = sym.optimize_for(backend, dedup_subgraph=True)
    finally:
        check_call(_LIB.MXRemoveSubgraphPropertyOpNamesV2(c_str(backend)))
    (name, ops, n_in), = subgraphs(plain)[0]
    assert (name, ops, n_in) == ("_CachedOp0", ["elemwise_add", "exp"], 2)
    assert subgraphs(dedup)[0] == [("_CachedOp0", ["elemwise_add", "exp"], 1)]
    # the two uses of exp's output are two outputs of the node, or one when deduplicated
    for part, n_out in ((plain, 2), (dedup, 1)):
        outs = [o for o in part.get_internals().list_outputs() if o.startswith("_CachedOp0_")]
        assert len(outs) == n_out, outs
    x = {"data": np.array([0.5, -1.0, 2.0], np.float32)}
    want = np.exp(2 * x["data"])
    for part in (plain, dedup):
        assert part.list_inputs() == ["data"]
        for out in forward(part, x):
            np.testing.assert_allclose(out, want, rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="MXSetSubgraphPropertyOpNamesV2"):
        sym.optimize_for(backend)


def test_hybridize_with_a_backend_gives_the_same_outputs():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    net.initialize()
    x = mx.nd.array(np.random.default_rng(1).normal(size=(2, 5)))
    want = net(x).asnumpy()
    check_call(_LIB.MXSetSubgraphPropertyOpNamesV2(c_str("default"), mx_uint(1),
                                                   c_str_array(["FullyConnected"])))
    try:
        net.hybridize(backend="default")
        got = net(x).asnumpy()
    finally:
        check_call(_LIB.MXRemoveSubgraphPropertyOpNamesV2(c_str("default")))
    np.testing.assert_allclose(got, want, rtol=1e-5)
