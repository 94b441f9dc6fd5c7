"""Control flow inside graphs: ``mx.sym.contrib.foreach``, ``while_loop``
and ``cond`` (the ``_foreach``, ``_while_loop`` and ``_cond`` nodes), in
hybridized blocks and bound symbols.

They are checked against the imperative forms (plain Python loops, whose
own tests compare them with MXNet 1.9.1) and numpy loops, with gradients;
models with loops and branches exported by MXNet 1.9.1 load and give
MXNet's outputs (tests/fixtures/control_flow, written by
scripts/make_control_flow_fixtures.py), and oxnet's exports load back.
"""

import json
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import MXNetError
from oxnet.gluon.contrib.rnn import rnn_cell as contrib_rnn_cell

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "control_flow" / "values.json"


@pytest.fixture(scope="module")
def fixtures():
    with open(FIXTURES) as f:
        return json.load(f)


def nd(values):
    return mx.nd.array(np.asarray(values, dtype=np.float32))


def close(actual, expected, rtol=1e-5, atol=1e-6):
    actual = actual.asnumpy() if isinstance(actual, mx.nd.NDArray) else np.asarray(actual)
    np.testing.assert_allclose(actual, np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)


# -- symbolic foreach: a loop inside a graph -----------------------------------

class _Recurrence(gluon.HybridBlock):
    """h_t = tanh(x_t * w + h_{t-1}); outputs 2 h_t, and the last h."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,), init=mx.init.Constant(0.5))

    def hybrid_forward(self, F, x, h, w):
        def step(xt, states):
            nh = F.tanh(F.broadcast_mul(xt, w) + states[0])
            return nh * 2, [nh]
        out, states = F.contrib.foreach(step, x, [h])
        return out, states[0]


def _run_recurrence(hybridize, x_np, h_np):
    net = _Recurrence(prefix="rec_")
    net.initialize()
    if hybridize:
        net.hybridize()
    x, h = nd(x_np), nd(h_np)
    x.attach_grad()
    h.attach_grad()
    with autograd.record():
        out, last = net(x, h)
        loss = (out ** 2).sum() + (last * 3).sum()
    loss.backward()
    return net, [out.asnumpy(), last.asnumpy(), x.grad.asnumpy(), h.grad.asnumpy(), net.w.grad().asnumpy()]


def test_symbolic_foreach_in_a_hybridized_block_matches_the_python_loop():
    rng = np.random.default_rng(3)
    x_np, h_np = rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 3))
    _, imperative = _run_recurrence(False, x_np, h_np)
    net, hybrid = _run_recurrence(True, x_np, h_np)
    for a, b in zip(hybrid, imperative):
        close(a, b, atol=1e-5)
    # the same graph runs sequences of another length
    out, last = net(nd(rng.standard_normal((9, 2, 3))), nd(h_np))
    assert out.shape == (9, 2, 3) and last.shape == (2, 3)
    # hand-computed: a plain numpy loop
    h, outs = h_np.copy(), []
    for t in range(5):
        h = np.tanh(x_np[t] * 0.5 + h)
        outs.append(2 * h)
    close(hybrid[0], np.stack(outs), atol=1e-5)


def test_a_model_with_a_loop_exports_and_reimports(tmp_path):
    rng = np.random.default_rng(4)
    x_np, h_np = rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 3))
    net, hybrid = _run_recurrence(True, x_np, h_np)
    net.export(str(tmp_path / "rec"))
    graph = json.loads((tmp_path / "rec-symbol.json").read_text())
    assert any(n["op"] == "_foreach" for n in graph["nodes"])
    block = gluon.SymbolBlock.imports(str(tmp_path / "rec-symbol.json"), ["data0", "data1"],
                                      str(tmp_path / "rec-0000.params"))
    out, last = block(nd(x_np), nd(h_np))
    close(out.asnumpy(), hybrid[0], atol=1e-5)
    close(last.asnumpy(), hybrid[1], atol=1e-5)


def test_a_loop_exported_by_mxnet_loads_and_gives_mxnets_outputs(fixtures):
    case = fixtures["foreach_model"]
    folder = FIXTURES.parent
    block = gluon.SymbolBlock.imports(str(folder / "foreach_model-symbol.json"), ["data0", "data1"],
                                      str(folder / "foreach_model-0000.params"))
    out, last = block(nd(case["x"]), nd(case["h"]))
    close(out, case["out"], atol=1e-5)
    close(last, case["last"], atol=1e-5)


def test_oxnet_writes_a_loop_as_mxnet_does(tmp_path):
    # the body in the node's `subgraphs` list, MXNet's attributes (num_args counts the subgraph)
    x, h, w = mx.sym.var("x"), mx.sym.var("h"), mx.sym.var("w")
    out, states = mx.sym.contrib.foreach(lambda a, ss: (a * w + ss[0], [ss[0] * 2]), x, [h])
    node = [n for n in json.loads(mx.sym.Group([out, states[0]]).tojson())["nodes"] if n["op"] == "_foreach"][0]
    assert "subgraph_sym_json" not in node["attrs"] and len(node["subgraphs"]) == 1
    assert node["attrs"]["num_args"] == "4" and node["attrs"]["num_out_data"] == "1"
    body_inputs = [node["subgraphs"][0]["nodes"][i]["name"] for i in node["subgraphs"][0]["arg_nodes"]]
    assert len(node["inputs"]) == len(body_inputs) == 3


def test_symbolic_foreach_infers_shapes_and_names_its_inputs():
    x, h, w = mx.sym.var("x"), mx.sym.var("h"), mx.sym.var("w")
    out, states = mx.sym.contrib.foreach(lambda a, ss: (a * w + ss[0], [ss[0] * 2]), x, [h])
    group = mx.sym.Group([out, states[0]])
    assert sorted(group.list_arguments()) == ["h", "w", "x"]
    _, out_shapes, _ = group.infer_shape(x=(7, 4), h=(4,), w=(4,))
    assert out_shapes == [(7, 4), (4,)]


def test_a_body_whose_state_changes_shape_is_an_error():
    x, h = mx.sym.var("x"), mx.sym.var("h")
    out, states = mx.sym.contrib.foreach(lambda a, ss: (a, [mx.sym.concat(ss[0], ss[0], dim=0)]), x, [h])
    with pytest.raises(MXNetError, match=r"state 0 has shape \[2\] and the body makes it \[4\]"):
        mx.sym.Group([out, states[0]]).bind(mx.cpu(), {"x": nd(np.ones((3, 2))), "h": nd(np.ones((2,)))})


def test_dynamic_unroll_hybridized_matches_imperative():
    class Layer(gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix="layer_")
            with self.name_scope():
                self.cell = gluon.rnn.LSTMCell(4, input_size=5)

        def hybrid_forward(self, F, x, h, c):
            return contrib_rnn_cell.dynamic_unroll(self.cell, x, [h, c])

    rng = np.random.default_rng(5)
    x_np = rng.uniform(-1, 1, (3, 2, 5))
    runs = []
    for hybridize in (False, True):
        layer = Layer()
        layer.initialize(mx.init.Uniform(0.5))
        mx.random.seed(1)
        for p in layer.collect_params().values():
            p.set_data(nd(np.random.default_rng(6).uniform(-0.5, 0.5, p.shape)))
        if hybridize:
            layer.hybridize()
        x = nd(x_np)
        x.attach_grad()
        with autograd.record():
            out, (h, c) = layer(x, nd(np.zeros((2, 4))), nd(np.zeros((2, 4))))
            loss = (out ** 2).sum() + h.sum()
        loss.backward()
        runs.append([out.asnumpy(), h.asnumpy(), c.asnumpy(), x.grad.asnumpy(),
                     layer.cell.i2h_weight.grad().asnumpy()])
    for a, b in zip(runs[1], runs[0]):
        close(a, b, atol=1e-5)


# -- while_loop and cond in graphs -------------------------------------------

class _BranchLoop(gluon.HybridBlock):
    """A while_loop and a cond whose bodies read an earlier layer's output
    (the model of scripts/make_control_flow_fixtures.py)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = gluon.nn.Dense(3, in_units=4)
            self.w = self.params.get("w", shape=(3,))

    def hybrid_forward(self, F, x, i, s, w):
        y = self.dense(x)

        def step(i, s):
            new = F.tanh(F.broadcast_mul(s, w) + y)
            return new * 2, [i + 1, new]
        outs, (i, s) = F.contrib.while_loop(lambda i, s: i < 3, step, [i, s], max_iterations=5)
        picked = F.contrib.cond(s.sum() > 0, lambda: s * 2 + y, lambda: s - y)
        return outs, s, picked


def _branch_loop(hybridize, seed=7):
    rng = np.random.default_rng(seed)
    net = _BranchLoop(prefix="bl_")
    net.initialize()
    for p in net.collect_params().values():
        p.set_data(nd(rng.uniform(-1, 1, p.shape)))
    if hybridize:
        net.hybridize()
    return net, nd(rng.uniform(-1, 1, (2, 4))), nd(rng.uniform(-1, 1, (2, 3)))


def _numpy_branch_loop(net, x, s):
    wd, bd, w = (net.dense.weight.data().asnumpy(), net.dense.bias.data().asnumpy(), net.w.data().asnumpy())
    y = x.asnumpy() @ wd.T + bd
    s, rows = s.asnumpy(), []
    for _ in range(3):
        s = np.tanh(s * w + y)
        rows.append(2 * s)
    rows += [np.zeros_like(s)] * 2
    picked = s * 2 + y if s.sum() > 0 else s - y
    return np.stack(rows), s, picked


@pytest.mark.parametrize("seed", [7, 8])
def test_while_loop_and_cond_in_a_hybridized_block_match_numpy_and_the_imperative_block(seed):
    runs = []
    for hybridize in (False, True):
        net, x, s = _branch_loop(hybridize, seed)
        x.attach_grad()
        s.attach_grad()
        with autograd.record():
            outs, last, picked = net(x, nd([0.0]), s)
            loss = (outs ** 2).sum() + last.sum() + (picked * picked).sum()
        loss.backward()
        runs.append([outs, last, picked, x.grad, s.grad] + [p.grad() for p in net.collect_params().values()])
        for got, want in zip((outs, last, picked), _numpy_branch_loop(net, x, s)):
            close(got, want, atol=1e-5)
    for a, b in zip(*runs):
        close(a, b.asnumpy(), atol=1e-5)


def test_while_loop_and_cond_exported_by_mxnet_load_and_give_mxnets_outputs(fixtures):
    case = fixtures["branch_loop_model"]
    folder = FIXTURES.parent
    block = gluon.SymbolBlock.imports(str(folder / "branch_loop_model-symbol.json"), ["data0", "data1", "data2"],
                                      str(folder / "branch_loop_model-0000.params"))
    outs, last, picked = block(nd(case["x"]), nd([0.0]), nd(case["s"]))
    close(outs.asnumpy()[:3], case["outs"], atol=1e-6)
    close(outs.asnumpy()[3:], np.zeros((2, 2, 3)))  # oxnet pads with zeros; MXNet leaves memory as it was
    close(last, case["last"], atol=1e-6)
    close(picked, case["picked"], atol=1e-6)


def test_while_loop_and_cond_export_and_reimport(tmp_path):
    net, x, s = _branch_loop(True)
    expected = [r.asnumpy() for r in net(x, nd([0.0]), s)]
    net.export(str(tmp_path / "bl"))
    graph = json.loads((tmp_path / "bl-symbol.json").read_text())
    nodes = {n["op"]: n for n in graph["nodes"]}
    assert len(nodes["_while_loop"]["subgraphs"]) == 2 and len(nodes["_cond"]["subgraphs"]) == 3
    assert nodes["_while_loop"]["attrs"]["num_args"] == str(len(nodes["_while_loop"]["inputs"]) + 2)
    assert nodes["_cond"]["attrs"]["num_args"] == str(len(nodes["_cond"]["inputs"]) + 3)
    block = gluon.SymbolBlock.imports(str(tmp_path / "bl-symbol.json"), ["data0", "data1", "data2"],
                                      str(tmp_path / "bl-0000.params"))
    for got, want in zip(block(x, nd([0.0]), s), expected):
        close(got, want)


def test_symbolic_while_loop_infers_shapes_and_stops_at_max_iterations():
    i, s = mx.sym.var("i"), mx.sym.var("s")
    outs, (fi, fs) = mx.sym.contrib.while_loop(lambda i, s: i < 10, lambda i, s: ([s * 2, i], [i + 1, s + 1]),
                                               [i, s], max_iterations=4)
    group = mx.sym.Group(outs + [fi, fs])
    _, out_shapes, _ = group.infer_shape(i=(1,), s=(2, 3))
    assert out_shapes == [(4, 2, 3), (4, 1), (1,), (2, 3)]
    ex = group.bind(mx.cpu(), {"i": nd([0]), "s": nd(np.zeros((2, 3)))})
    doubled, counters, last_i, last_s = ex.forward()
    close(counters, [[0], [1], [2], [3]])
    close(doubled, np.arange(4)[:, None, None] * 2 * np.ones((4, 2, 3)))
    close(last_i, [4])
    close(last_s, np.full((2, 3), 4.0))


def test_symbolic_while_loop_that_never_runs_gives_zeros_and_the_loop_vars():
    i, s = mx.sym.var("i"), mx.sym.var("s")
    outs, (fi, fs) = mx.sym.contrib.while_loop(lambda i, s: i > 5, lambda i, s: (s * 2, [i + 1, s + 1]),
                                               [i, s], max_iterations=3)
    args = {"i": nd([0]), "s": nd([[1, 2]])}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = mx.sym.Group([outs, fi, fs]).bind(mx.cpu(), args, args_grad=grads)
    out, last_i, last_s = ex.forward(is_train=True)
    close(out, np.zeros((3, 1, 2)))
    close(last_i, [0])
    close(last_s, [[1, 2]])
    ex.backward([mx.nd.ones((3, 1, 2)), mx.nd.ones((1,)), nd([[3, 4]])])
    close(grads["s"], [[3, 4]])  # the final loop vars are the initial ones


def test_symbolic_cond_runs_one_branch_and_differentiates_it():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.contrib.cond(a.sum() > b.sum(), lambda: a * b, lambda: mx.sym.exp(b))
    for a_np, b_np in (([3.0, 4.0], [1.0, 2.0]), ([0.0, 1.0], [1.0, 2.0])):
        args = {"a": nd(a_np), "b": nd(b_np)}
        grads = {k: mx.nd.zeros((2,)) for k in args}
        ex = out.bind(mx.cpu(), args, args_grad=grads)
        (value,) = ex.forward(is_train=True)
        ex.backward([mx.nd.ones((2,))])
        a_, b_ = np.array(a_np), np.array(b_np)
        if a_.sum() > b_.sum():
            close(value, a_ * b_)
            close(grads["a"], b_)
            close(grads["b"], a_)
        else:
            close(value, np.exp(b_), rtol=1e-6)
            close(grads["a"], [0, 0])
            close(grads["b"], np.exp(b_), rtol=1e-6)


def test_loops_nest_in_graphs():
    # a foreach whose body runs a while_loop and a cond on its slice and an outer layer's output
    data, h = mx.sym.var("data"), mx.sym.var("h")
    scaled = mx.sym.exp(h * 0.1, name="scaled")

    def body(x, states):
        _, (k, acc) = mx.sym.contrib.while_loop(lambda k, acc: k < 3, lambda k, acc: (None, [k + 1, acc * 0.5 + x]),
                                                [mx.sym.zeros_like(mx.sym.slice_axis(x, axis=0, begin=0, end=1)),
                                                 states[0]], max_iterations=4)
        chosen = mx.sym.contrib.cond(acc.sum() > 0, lambda: acc + scaled, lambda: acc - scaled)
        return chosen, [acc]

    outs, (last,) = mx.sym.contrib.foreach(body, data, [h])
    rng = np.random.default_rng(9)
    data_np, h_np = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (2,))
    args = {"data": nd(data_np), "h": nd(h_np)}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = mx.sym.Group([outs, last]).bind(mx.cpu(), args, args_grad=grads)
    got_outs, got_last = ex.forward(is_train=True)
    ex.backward([mx.nd.ones((3, 2)), mx.nd.ones((2,))])
    # the same with NDArrays and Python control flow under autograd
    arrays = {k: nd(v) for k, v in (("data", data_np), ("h", h_np))}
    for arr in arrays.values():
        arr.attach_grad()
    with autograd.record():
        sc = mx.nd.exp(arrays["h"] * 0.1)
        state, rows = arrays["h"], []
        for t in range(3):
            acc = state
            for _ in range(3):
                acc = acc * 0.5 + arrays["data"][t]
            rows.append(acc + sc if acc.sum().asscalar() > 0 else acc - sc)
            state = acc
        loss = mx.nd.stack(*rows).sum() + state.sum()
    loss.backward()
    close(got_outs, mx.nd.stack(*rows).asnumpy(), atol=1e-6)
    close(got_last, state.asnumpy(), atol=1e-6)
    close(grads["data"], arrays["data"].grad.asnumpy(), atol=1e-5)
    close(grads["h"], arrays["h"].grad.asnumpy(), atol=1e-5)


def test_foreach_body_reads_an_outer_layers_output():
    x, h = mx.sym.var("x"), mx.sym.var("h")
    bias = mx.sym.tanh(h, name="bias")  # not a variable: the cut makes it a node input
    outs, states = mx.sym.contrib.foreach(lambda a, ss: (a + bias, [ss[0] + a]), x, [h])
    assert sorted(mx.sym.Group([outs, states[0]]).list_arguments()) == ["h", "x"]
    ex = mx.sym.Group([outs, states[0]]).bind(mx.cpu(), {"x": nd([[1, 2], [3, 4]]), "h": nd([0.5, -0.5])})
    outs_v, state_v = ex.forward()
    close(outs_v, np.array([[1, 2], [3, 4]]) + np.tanh([0.5, -0.5]))
    close(state_v, [4.5, 5.5])


def test_control_flow_errors_in_graphs():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    # the branches disagree on the output's shape
    out = mx.sym.contrib.cond(a.sum() > 0, lambda: a, lambda: mx.sym.concat(a, a, dim=0))
    with pytest.raises(MXNetError, match=r"`_cond`: output 0 has shape .* in one branch and .* in the other"):
        out.infer_shape(a=(2,))
    # a condition of more than one element
    out = mx.sym.contrib.cond(a > 0, lambda: a, lambda: b)
    with pytest.raises(MXNetError, match=r"`_cond`: the condition gave shape \[2\]; it must give one element"):
        out.bind(mx.cpu(), {"a": nd([1, 2]), "b": nd([1, 2])}).forward()
    # a loop variable that changes shape
    outs, (fa,) = mx.sym.contrib.while_loop(lambda v: v.sum() < 10, lambda v: (None, [mx.sym.concat(v, v, dim=0)]),
                                            [a], max_iterations=3)
    with pytest.raises(MXNetError, match=r"loop variable 0 has shape \[2\] and func makes it \[4\]"):
        fa.infer_shape(a=(2,))
    with pytest.raises(ValueError, match="max_iterations should be specified"):
        mx.sym.contrib.while_loop(lambda v: v < 1, lambda v: (None, [v]), [a])
    with pytest.raises(ValueError, match="Number of outputs differs"):
        mx.sym.contrib.cond(a.sum() > 0, lambda: [a, b], lambda: a)
    with pytest.raises(ValueError, match="The number of loop_vars should be consistent"):
        mx.sym.contrib.while_loop(lambda v: v < 1, lambda v: (None, [v, v]), [a], max_iterations=2)


_SUBGRAPH_ATTRS = {"_foreach": ["subgraph_sym_json"], "_while_loop": ["cond_sym_json", "func_sym_json"],
                   "_cond": ["cond_sym_json", "then_sym_json", "else_sym_json"]}


def _node_call(sym, op):
    """The attributes of ``sym``'s ``op`` node as an operator call takes
    them (the bodies from MXNet's ``subgraphs`` list back in attributes)."""
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == op][0]
    attrs = dict(node["attrs"])
    for key, body in zip(_SUBGRAPH_ATTRS[op], node["subgraphs"]):
        attrs[key] = json.dumps(body)
    return attrs


def test_the_op_checker_passes_the_control_flow_operators():
    rng = np.random.default_rng(10)
    f64 = lambda shape: mx.nd.array(rng.uniform(-1, 1, shape), dtype="float64")  # noqa: E731
    i, s, w = mx.sym.var("i"), mx.sym.var("s"), mx.sym.var("w")
    outs, loop_vars = mx.sym.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: (s * w, [i + 1, mx.sym.tanh(s * w + 0.5)]), [i, s], max_iterations=5)
    attrs = _node_call(mx.sym.Group([outs] + loop_vars), "_while_loop")
    # the counter steps onto the bound (0 - eps runs a fourth step): no differences for it
    mx.test_utils.check_op("_while_loop", [mx.nd.array([0.0], dtype="float64"), f64((2,)), f64((2,))], attrs,
                           no_grad=[0])
    a, b = mx.sym.var("a"), mx.sym.var("b")
    picked = mx.sym.contrib.cond(a.sum() > 0, lambda: a * mx.sym.sin(b), lambda: mx.sym.exp(b) - a)
    attrs = _node_call(picked, "_cond")
    # the node's inputs: the predicate's value (cut from the outer graph), a, b
    for pred in (1.0, 0.0):
        mx.test_utils.check_op("_cond", [mx.nd.array([pred], dtype="float64"), f64((2,)), f64((2,))], attrs,
                               no_grad=[0])
