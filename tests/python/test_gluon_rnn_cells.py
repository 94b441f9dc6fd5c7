"""Recurrent cells of ``gluon.rnn`` and ``gluon.contrib.rnn``.

The cells are checked against MXNet 1.9.1 (tests/fixtures/rnn/cells.json,
written by scripts/make_rnn_cell_fixtures.py): outputs, final states and
gradients of every unroll case, run imperatively, hybridized, and unrolled
on Symbols inside a hybridized HybridBlock. The random cells (dropout,
zoneout, variational dropout) are checked for their deterministic
properties; the rest covers naming, begin states, user-written cells and
errors.
"""

import json
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import rnn
from oxnet.gluon.contrib import rnn as contrib_rnn

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "rnn" / "cells.json").read_text())
RTOL, ATOL = 1e-5, 1e-6


def _arr(entry):
    return np.array(entry["data"], dtype=np.float32).reshape(entry["shape"])


def _build(spec):
    """The oxnet cell a fixture spec describes."""
    kind = spec["type"]
    args = {k: v for k, v in spec.items() if k not in ("type", "cells", "base", "l_cell", "r_cell")}
    cls = getattr(contrib_rnn, kind[len("contrib."):]) if kind.startswith("contrib.") else getattr(rnn, kind)
    if "cells" in spec:
        cell = cls(**args)
        with cell.name_scope():
            for child in spec["cells"]:
                cell.add(_build(child))
        return cell
    if "base" in spec:
        return cls(_build(spec["base"]), **args)
    if "l_cell" in spec:
        return cls(_build(spec["l_cell"]), _build(spec["r_cell"]), **args)
    return cls(**args)


class _Unroller(gluon.HybridBlock):
    """Unrolls ``cell`` inside hybrid_forward (on Symbols once hybridized)."""

    def __init__(self, cell, length, layout, merge_outputs):
        super().__init__(prefix="unroller_")
        self.cell = cell
        self._length, self._layout, self._merge = length, layout, merge_outputs

    def hybrid_forward(self, F, x, states=None, valid_length=None):
        return self.cell.unroll(self._length, x, begin_state=states, layout=self._layout,
                                merge_outputs=self._merge, valid_length=valid_length)


def _run_case(case, mode):
    """Unrolls the case's cell in oxnet; returns what the fixture records."""
    cell = _build(FIXTURE["cells"][case["cell"]])
    cell.initialize()
    params = cell.collect_params()
    assert sorted(params.keys()) == sorted(case["params"].keys())
    for name, p in params.items():
        p.set_data(nd.array(_arr(case["params"][name])))
    x = _arr(case["inputs"])
    length, layout = case["length"], case["layout"]
    if case["form"] == "tensor":
        inputs = nd.array(x)
        leaves = [inputs]
    else:
        inputs = [nd.array(x[:, t] if layout == "NTC" else x[t]) for t in range(length)]
        leaves = inputs
    for leaf in leaves:
        leaf.attach_grad()
    begin = None
    if case["begin_state"] is not None:
        begin = [nd.array(_arr(b)) for b in case["begin_state"]]
        for b in begin:
            b.attach_grad()
    vl = None if case["valid_length"] is None else nd.array(case["valid_length"])
    head = _arr(case["head"])
    if mode == "in_block":
        runner = _Unroller(cell, length, layout, case["merge_outputs"])
        runner.hybridize()
    elif mode == "hybridized":
        cell.hybridize()
    with autograd.record():
        if mode == "in_block":
            outputs, states = runner(inputs, begin, vl)
        else:
            outputs, states = cell.unroll(length, inputs, begin_state=begin, layout=layout,
                                          merge_outputs=case["merge_outputs"], valid_length=vl)
        merged = isinstance(outputs, nd.NDArray)
        if merged:
            loss = (outputs * nd.array(head)).sum()
        else:
            loss = nd.add_n(*[(o * nd.array(h)).sum() for o, h in zip(outputs, head)])
        for s, h in zip(states, case["state_heads"]):
            loss = loss + (s * nd.array(_arr(h))).sum()
    loss.backward()
    out = outputs.asnumpy() if merged else np.stack([o.asnumpy() for o in outputs])
    if case["form"] == "tensor":
        input_grad = inputs.grad.asnumpy()
    else:
        input_grad = np.stack([s.grad.asnumpy() for s in inputs])
    return {
        "merged": merged, "outputs": out, "states": [s.asnumpy() for s in states], "input_grad": input_grad,
        "begin_state_grad": None if begin is None else [b.grad.asnumpy() for b in begin],
        "param_grads": {k: p.grad().asnumpy() for k, p in params.items()},
    }


def _close(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def _cases():
    for case in FIXTURE["cases"]:
        for mode in ("imperative", "hybridized", "in_block"):
            if mode == "in_block" and case["cell"] == "sequential":
                continue  # SequentialRNNCell is a plain Block: it cannot live in a HybridBlock
            yield pytest.param(case, mode, id=f"{case['name']}-{mode}")


@pytest.mark.parametrize("case,mode", list(_cases()))
def test_unroll_matches_mxnet(case, mode):
    got = _run_case(case, mode)
    assert got["merged"] == case["outputs_merged"]
    _close(got["outputs"], _arr(case["outputs"]), "outputs")
    assert len(got["states"]) == len(case["states"])
    for i, (s, want) in enumerate(zip(got["states"], case["states"])):
        _close(s, _arr(want), f"state {i}")
    _close(got["input_grad"], _arr(case["input_grad"]), "input gradient")
    if case["begin_state_grad"] is not None:
        for i, (g, want) in enumerate(zip(got["begin_state_grad"], case["begin_state_grad"])):
            _close(g, _arr(want), f"begin state {i} gradient")
    for name, want in case["param_grads"].items():
        _close(got["param_grads"][name], _arr(want), f"gradient of {name}")


def test_fixture_covers_every_cell_and_variant():
    cells = {c["cell"] for c in FIXTURE["cases"]}
    assert cells == set(FIXTURE["cells"])
    assert FIXTURE["mxnet"] == "1.9.1"
    assert {c["layout"] for c in FIXTURE["cases"]} == {"NTC", "TNC"}
    assert {c["merge_outputs"] for c in FIXTURE["cases"]} == {True, False, None}


# -- naming, states, repr -----------------------------------------------------

def test_parameter_names_follow_mxnet():
    seq = rnn.HybridSequentialRNNCell(prefix="net_")
    with seq.name_scope():
        seq.add(rnn.LSTMCell(4))
        seq.add(rnn.GRUCell(3))
        seq.add(rnn.RNNCell(2))
        seq.add(rnn.LSTMCell(2))
    names = list(seq.collect_params().keys())
    expected = []
    for p in ("net_lstm0_", "net_gru0_", "net_rnn0_", "net_lstm1_"):
        expected += [p + n for n in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]
    assert names == expected
    assert seq[0].i2h_weight.shape == (16, 0) and seq[1].h2h_weight.shape == (9, 3)
    assert seq[2].i2h_bias.shape == (2,) and len(seq) == 4
    lstmp = contrib_rnn.LSTMPCell(5, 3, input_size=2, prefix="p_")
    assert list(lstmp.collect_params().keys()) == ["p_i2h_weight", "p_h2h_weight", "p_h2r_weight", "p_i2h_bias",
                                                   "p_h2h_bias"]
    assert lstmp.h2h_weight.shape == (20, 3) and lstmp.h2r_weight.shape == (3, 5)


def test_modifier_prefixes_and_params():
    base = rnn.GRUCell(3, prefix="g_")
    zone = rnn.ZoneoutCell(base, zoneout_outputs=0.2)
    assert zone.prefix == "g_zoneout" and zone.params is base.params
    assert list(zone.collect_params().keys()) == ["g_i2h_weight", "g_h2h_weight", "g_i2h_bias", "g_h2h_bias"]
    assert rnn.ResidualCell(rnn.RNNCell(2, prefix="r_")).prefix == "r_residualcell"
    assert contrib_rnn.VariationalDropoutCell(rnn.LSTMCell(2, prefix="v_")).prefix == "v_vardrop"
    drop = rnn.DropoutCell(0.5, prefix=None)
    assert drop.prefix.startswith("dropout")
    bi = rnn.BidirectionalCell(rnn.LSTMCell(2, prefix="a_"), rnn.LSTMCell(2, prefix="b_"))
    assert bi.prefix == "" and len(bi.collect_params()) == 8


def test_state_info_and_begin_state():
    cell = rnn.LSTMCell(5, prefix="lstm_")
    assert cell.state_info(3) == [{"shape": (3, 5), "__layout__": "NC"}] * 2
    zeros = cell.begin_state(batch_size=3)
    assert [z.shape for z in zeros] == [(3, 5), (3, 5)] and float(zeros[0].abs().sum().asscalar()) == 0
    ones = cell.begin_state(batch_size=2, func=nd.ones, dtype="float64")
    assert ones[1].dtype == np.float64 and float(ones[1].sum().asscalar()) == 10
    cell.reset()
    syms = cell.begin_state(func=mx.sym.var)
    assert [s.name for s in syms] == ["lstm_begin_state_0", "lstm_begin_state_1"]
    assert syms[0].list_attr()["__layout__"] == "NC"
    # a Symbol constant keeps the layout as a node attribute
    z = cell.begin_state(func=mx.sym.zeros, batch_size=4)
    assert z[0].name == "lstm_begin_state_2" and z[0].list_attr()["__layout__"] == "NC"
    uniform = cell.begin_state(batch_size=2, func=nd.random.uniform, low=2, high=3)
    assert float(uniform[0].min().asscalar()) >= 2
    lstmp = contrib_rnn.LSTMPCell(6, 2)
    assert [i["shape"] for i in lstmp.state_info(4)] == [(4, 2), (4, 6)]
    seq = rnn.SequentialRNNCell()
    seq.add(rnn.GRUCell(3))
    seq.add(rnn.DropoutCell(0.1))
    seq.add(rnn.LSTMCell(2))
    assert [i["shape"] for i in seq.state_info(7)] == [(7, 3), (7, 2), (7, 2)]
    assert [s.shape for s in seq.begin_state(batch_size=7)] == [(7, 3), (7, 2), (7, 2)]


def test_reprs():
    assert repr(rnn.LSTMCell(4, input_size=3)) == "LSTMCell(3 -> 16)"
    assert repr(rnn.RNNCell(4)) == "RNNCell(None -> 4, tanh)"
    assert repr(rnn.GRUCell(2)) == "GRUCell(None -> 6)"
    assert repr(contrib_rnn.LSTMPCell(4, 2, input_size=3)) == "LSTMPCell(3 -> 16 -> 2)"
    assert repr(rnn.DropoutCell(0.5)) == "DropoutCell(rate=0.5, axes=())"
    seq = rnn.HybridSequentialRNNCell()
    seq.add(rnn.GRUCell(2))
    assert repr(seq) == "HybridSequentialRNNCell(\n(0): GRUCell(None -> 6)\n)"
    assert repr(rnn.ZoneoutCell(rnn.GRUCell(2), 0.5)).startswith("ZoneoutCell(p_out=0.5, p_state=0.0, GRUCell")


# -- stepping, deferred initialization, hybridization --------------------------

def _np_lstm_step(x, h, c, w):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    gates = x @ w["i2h_weight"].T + w["i2h_bias"] + h @ w["h2h_weight"].T + w["h2h_bias"]
    i, f, g, o = np.split(gates, 4, axis=1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c2), c2


def test_step_deferred_init_and_numpy_reference():
    cell = rnn.LSTMCell(3, prefix="s_")
    cell.initialize(mx.init.Uniform(0.5))
    rng = np.random.RandomState(3)
    x = rng.randn(2, 4).astype(np.float32)
    h0, c0 = rng.randn(2, 3).astype(np.float32), rng.randn(2, 3).astype(np.float32)
    out, (h1, c1) = cell(nd.array(x), [nd.array(h0), nd.array(c0)])
    assert cell.i2h_weight.shape == (12, 4)
    w = {k[len("s_"):]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    want_h, want_c = _np_lstm_step(x, h0, c0, w)
    np.testing.assert_allclose(out.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1.asnumpy(), want_c, rtol=1e-5, atol=1e-6)
    assert out is h1 or np.array_equal(out.asnumpy(), h1.asnumpy())


def test_hybridized_cell_defers_init_and_matches_imperative():
    rng = np.random.RandomState(4)
    x = nd.array(rng.randn(2, 5, 3).astype(np.float32))
    for cls in (rnn.RNNCell, rnn.LSTMCell, rnn.GRUCell):
        cell = cls(4)
        cell.initialize(mx.init.Xavier())
        want, want_states = cell.unroll(5, x, merge_outputs=True)
        cell.hybridize()
        got, got_states = cell.unroll(5, x, merge_outputs=True)
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
        for g, w in zip(got_states, want_states):
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
        fresh = cls(4)
        fresh.hybridize()
        fresh.initialize()
        out, _ = fresh.unroll(5, x, layout="NTC", merge_outputs=False)
        assert len(out) == 5 and out[0].shape == (2, 4) and fresh.i2h_weight.shape[1] == 3


class _Tagger(gluon.HybridBlock):
    """A model around a cell: Dense → unrolled GRU → Dense."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.proj = gluon.nn.Dense(6, flatten=False)
            self.cell = rnn.GRUCell(5)
            self.out = gluon.nn.Dense(2, flatten=False)

    def hybrid_forward(self, F, x, valid_length):
        outputs, states = self.cell.unroll(4, self.proj(x), layout="NTC", merge_outputs=True,
                                           valid_length=valid_length)
        return self.out(outputs), states[0]


def test_unroll_inside_a_hybridized_block_trains():
    net = _Tagger(prefix="tagger_")
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(5).randn(3, 4, 7).astype(np.float32))
    vl = nd.array([4, 2, 3])
    want, want_h = net(x, vl)
    net.hybridize()
    got, got_h = net(x, vl)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h.asnumpy(), want_h.asnumpy(), rtol=1e-5, atol=1e-6)
    assert "tagger_gru0_i2h_weight" in net.collect_params()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    target = nd.zeros((3, 4, 2))
    losses = []
    for _ in range(5):
        with autograd.record():
            out, _ = net(x, vl)
            loss = ((out - target) ** 2).mean()
        loss.backward()
        trainer.step(3)
        losses.append(float(loss.asscalar()))
    assert losses[-1] < losses[0]


def test_exported_unrolled_model_loads_back(tmp_path):
    net = _Tagger(prefix="exp_")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = nd.array(np.random.RandomState(6).randn(2, 4, 7).astype(np.float32))
    vl = nd.array([3, 4])
    want, want_h = net(x, vl)
    sym_file, params_file = net.export(str(tmp_path / "tagger"))
    loaded = gluon.SymbolBlock.imports(sym_file, ["data0", "data1"], params_file)
    got, got_h = loaded(x, vl)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(got_h.asnumpy(), want_h.asnumpy(), rtol=1e-6)


def test_symbolic_unroll_builds_a_graph():
    cell = rnn.LSTMCell(3, prefix="sl_")
    data = mx.sym.var("data")
    outputs, states = cell.unroll(4, data, layout="TNC", merge_outputs=True)
    args = outputs.list_arguments()
    assert args[0] == "data" and "sl_i2h_weight" in args and "sl_h2h_bias" in args
    arg_shapes, out_shapes, _ = outputs.infer_shape(data=(4, 2, 5))
    assert out_shapes == [(4, 2, 3)]
    assert dict(zip(args, arg_shapes))["sl_i2h_weight"] == (12, 5)
    assert len(states) == 2
    steps, _ = cell.unroll(4, data, layout="TNC", merge_outputs=False)
    assert isinstance(steps, list) and len(steps) == 4
    # begin states as graph inputs
    cell.reset()
    begin = cell.begin_state(func=mx.sym.var)
    outputs, _ = cell.unroll(2, data, begin_state=begin, layout="NTC", merge_outputs=True)
    assert "sl_begin_state_0" in outputs.list_arguments() and "sl_begin_state_1" in outputs.list_arguments()
    _, out_shapes, _ = outputs.infer_shape(data=(5, 2, 4), sl_begin_state_0=(5, 3), sl_begin_state_1=(5, 3))
    assert out_shapes == [(5, 2, 3)]


def test_cell_shares_parameters():
    first = rnn.GRUCell(3, input_size=2, prefix="shared_")
    second = rnn.GRUCell(3, input_size=2, params=first.params)
    first.initialize()
    x = nd.ones((1, 2))
    a, _ = first(x, first.begin_state(batch_size=1))
    b, _ = second(x, second.begin_state(batch_size=1))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert second.i2h_weight is first.i2h_weight


def test_unroll_counts_steps_and_resets():
    cell = rnn.RNNCell(2, input_size=2)
    cell.initialize()
    cell.unroll(3, nd.ones((1, 3, 2)))
    assert cell._counter == 2
    cell.unroll(2, nd.ones((1, 2, 2)))
    assert cell._counter == 1


# -- a user's own cell ---------------------------------------------------------

class LeakyCell(rnn.HybridRecurrentCell):
    """h' = decay * h + (1 - decay) * tanh(W x); output 2 * h'."""

    def __init__(self, hidden_size, decay=0.5, **kwargs):
        super().__init__(**kwargs)
        self._hidden = hidden_size
        self._decay = decay
        self.weight = self.params.get("weight", shape=(hidden_size, 0), allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden), "__layout__": "NC"}]

    def hybrid_forward(self, F, x, states, weight):
        drive = F.tanh(F.FullyConnected(x, weight, num_hidden=self._hidden, no_bias=True))
        h = self._decay * states[0] + (1 - self._decay) * drive
        return 2 * h, [h]


@pytest.mark.parametrize("hybrid", [False, True])
def test_user_hybrid_recurrent_cell(hybrid):
    cell = LeakyCell(3, decay=0.25, prefix="leaky_")
    cell.initialize(mx.init.Uniform(0.5))
    if hybrid:
        cell.hybridize()
    rng = np.random.RandomState(9)
    x = rng.randn(2, 4, 5).astype(np.float32)
    xs = nd.array(x)
    xs.attach_grad()
    with autograd.record():
        out, states = cell.unroll(4, xs, layout="NTC", merge_outputs=True, valid_length=nd.array([4, 2]))
        out.sum().backward()
    w = cell.weight.data().asnumpy()
    assert w.shape == (3, 5) and list(cell.collect_params().keys()) == ["leaky_weight"]
    h = np.zeros((2, 3), np.float32)
    want = []
    last = []
    for t in range(4):
        h = 0.25 * h + 0.75 * np.tanh(x[:, t] @ w.T)
        want.append(2 * h)
        last.append(h)
    want = np.stack(want, axis=1)
    want[1, 2:] = 0
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), np.stack([last[3][0], last[1][1]]), rtol=1e-5, atol=1e-6)
    assert float(np.abs(xs.grad.asnumpy()[1, 2:]).sum()) == 0  # padded steps get no gradient
    assert float(np.abs(xs.grad.asnumpy()[0]).sum()) > 0


def test_user_cell_in_stack_with_builtin_cells():
    seq = rnn.HybridSequentialRNNCell()
    seq.add(LeakyCell(4))
    seq.add(rnn.LSTMCell(2))
    seq.initialize()
    x = nd.ones((3, 5, 2))
    out, states = seq.unroll(5, x, merge_outputs=True)
    assert out.shape == (3, 5, 2) and [s.shape for s in states] == [(3, 4), (3, 2), (3, 2)]
    step_out, step_states = seq(nd.ones((3, 2)), seq.begin_state(batch_size=3))
    assert step_out.shape == (3, 2) and len(step_states) == 3


# -- errors --------------------------------------------------------------------

def test_wrong_state_shapes_give_clear_errors():
    cell = rnn.LSTMCell(4, input_size=3, prefix="bad_")
    cell.initialize()
    x = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match=r"bad.*state 1 has shape \(2, 5\).*expects \(2, 4\)"):
        cell(x, [nd.zeros((2, 4)), nd.zeros((2, 5))])
    with pytest.raises(mx.MXNetError, match=r"bad.*expected 2 state\(s\).*got 1"):
        cell(x, [nd.zeros((2, 4))])
    with pytest.raises(mx.MXNetError, match=r"state 0 has shape \(3, 4\).*batch of 2"):
        cell.unroll(2, nd.ones((2, 2, 3)), begin_state=cell.begin_state(batch_size=3))
    cell.hybridize()
    with pytest.raises(mx.MXNetError, match=r"state 0 has shape \(2, 6\)"):
        cell(x, [nd.zeros((2, 6)), nd.zeros((2, 4))])
    with pytest.raises(mx.MXNetError, match="length is 3 but the inputs have 2 steps"):
        cell.unroll(3, nd.ones((2, 2, 3)))
    with pytest.raises(mx.MXNetError, match="length is 2 but 3 input steps"):
        cell.unroll(2, [nd.ones((2, 3))] * 3)


def test_misuse_errors():
    bi = rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2))
    with pytest.raises(NotImplementedError, match="unroll"):
        bi(nd.ones((1, 2)), [])
    base = rnn.GRUCell(2)
    rnn.ZoneoutCell(base, 0.1)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state(batch_size=1)
    with pytest.raises(AssertionError, match="modified twice"):
        rnn.ResidualCell(base)
    with pytest.raises(AssertionError, match="doesn't support zoneout"):
        rnn.ZoneoutCell(rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2)))
    with pytest.raises(AssertionError, match="rate must be a number"):
        rnn.DropoutCell("half")
    with pytest.raises(mx.MXNetError, match="needs inputs"):
        rnn.GRUCell(2).unroll(3, None)
    with pytest.raises(NotImplementedError):
        rnn.RecurrentCell().state_info()
    seq = rnn.SequentialRNNCell()
    seq.add(bi)
    with pytest.raises(mx.MXNetError, match="cannot be stepped"):
        seq(nd.ones((1, 2)), [])


# -- bidirectional -----------------------------------------------------------

def test_bidirectional_ntc_valid_length_merges_outputs():
    """MXNet 1.9.1 fails here (it stacks the backward outputs twice); oxnet
    returns what merge_outputs=True returns."""
    bi = rnn.BidirectionalCell(rnn.LSTMCell(3, prefix="f_"), rnn.GRUCell(2, prefix="b_"))
    bi.initialize()
    x = nd.array(np.random.RandomState(1).randn(2, 4, 3).astype(np.float32))
    vl = nd.array([4, 2])
    merged, states = bi.unroll(4, x, layout="NTC", merge_outputs=True, valid_length=vl)
    auto, auto_states = bi.unroll(4, x, layout="NTC", merge_outputs=None, valid_length=vl)
    assert auto.shape == (2, 4, 5)
    np.testing.assert_allclose(auto.asnumpy(), merged.asnumpy(), rtol=1e-6)
    assert len(states) == 3
    for a, b in zip(states, auto_states):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(merged.asnumpy()[1, 2:], 0)


def test_bidirectional_backward_half_sees_reversed_sequence():
    fwd, bwd = rnn.RNNCell(2, input_size=2, prefix="fw_"), rnn.RNNCell(2, input_size=2, prefix="bw_")
    bi = rnn.BidirectionalCell(fwd, bwd)
    bi.initialize()
    bwd.i2h_weight.set_data(fwd.i2h_weight.data())
    bwd.h2h_weight.set_data(fwd.h2h_weight.data())
    x = nd.array(np.random.RandomState(2).randn(1, 3, 2).astype(np.float32))
    out, _ = bi.unroll(3, x, merge_outputs=True)
    rev, _ = fwd.unroll(3, nd.flip(x, axis=1), merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy()[:, :, 2:], rev.asnumpy()[:, ::-1], rtol=1e-5, atol=1e-6)


# -- random cells: deterministic properties --------------------------------------

class _Echo(rnn.HybridRecurrentCell):
    """Outputs its input; one state that counts steps."""

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, 1), "__layout__": "NC"}]

    def hybrid_forward(self, F, x, states):
        return x * 1, [states[0] + 1]


def test_dropout_cell():
    cell = rnn.DropoutCell(0.5)
    x = nd.ones((4, 6, 8))
    out, states = cell.unroll(6, x, merge_outputs=True)
    assert states == [] and np.array_equal(out.asnumpy(), x.asnumpy())  # predict mode: identity
    with autograd.train_mode():
        out, _ = cell.unroll(6, x, merge_outputs=True)
        values = set(np.unique(out.asnumpy()).tolist())
        assert values <= {0.0, 2.0} and values == {0.0, 2.0}
        steps, _ = cell.unroll(6, x, merge_outputs=False)
        assert len(steps) == 6 and steps[0].shape == (4, 8)
        shared = rnn.DropoutCell(0.5, axes=(1,))
        out, _ = shared.unroll(6, x, merge_outputs=True)
        a = out.asnumpy()
        assert (a == a[:, :1]).all()  # one mask along the time axis
    h = [nd.ones((4, 3))]
    out, same = cell(nd.ones((4, 8)), h)
    assert same is h
    zero = rnn.DropoutCell(0.0)
    with autograd.train_mode():
        np.testing.assert_array_equal(zero.unroll(6, x, merge_outputs=True)[0].asnumpy(), x.asnumpy())


def _lstm_with_values(prefix):
    cell = rnn.LSTMCell(4, input_size=3, prefix=prefix)
    cell.initialize(mx.init.Uniform(0.8))
    return cell


def test_zoneout_predict_mode_is_the_base_cell():
    x = nd.array(np.random.RandomState(6).randn(2, 5, 3).astype(np.float32))
    base = _lstm_with_values("zb_")
    want, want_states = base.unroll(5, x, merge_outputs=True)
    zone = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    got, got_states = zone.unroll(5, x, merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-6)
    with autograd.train_mode():
        got, _ = zone.unroll(5, x, merge_outputs=True)
        assert not np.allclose(got.asnumpy(), want.asnumpy())


def test_zoneout_keeps_previous_values_in_training():
    x = nd.array(np.random.RandomState(7).randn(8, 3).astype(np.float32))
    base = _lstm_with_values("zk_")
    old = [nd.ones((8, 4)) * 7, nd.ones((8, 4)) * 9]
    fresh_out, fresh_states = base(x, old)
    zone = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    with autograd.train_mode():
        out, states = zone(x, old)
    out_np, fresh = out.asnumpy(), fresh_out.asnumpy()
    kept = out_np == 0  # the first step's previous output is zero
    assert kept.any() and (~kept).any()
    np.testing.assert_allclose(out_np[~kept], fresh[~kept], rtol=1e-6)
    for got, fresh_state, previous in zip(states, fresh_states, (7, 9)):
        g = got.asnumpy()
        kept = g == previous
        assert kept.any() and (~kept).any()
        np.testing.assert_allclose(g[~kept], fresh_state.asnumpy()[~kept], rtol=1e-6)


def test_variational_dropout_predict_mode_is_the_base_cell():
    x = nd.array(np.random.RandomState(8).randn(2, 5, 3).astype(np.float32))
    base = _lstm_with_values("vb_")
    want, _ = base.unroll(5, x, merge_outputs=True)
    for rates in ((0.5, 0.0, 0.5), (0.3, 0.4, 0.5)):
        base._modified = False
        var = contrib_rnn.VariationalDropoutCell(base, *rates)
        got, _ = var.unroll(5, x, merge_outputs=True)
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize("drop_states", [0.0, 0.5])
def test_variational_dropout_shares_masks_across_steps(drop_states):
    var = contrib_rnn.VariationalDropoutCell(_Echo(), drop_inputs=0.5, drop_states=drop_states, drop_outputs=0.5)
    x = nd.ones((6, 10, 8))
    with autograd.train_mode():
        out, states = var.unroll(10, x, layout="NTC", merge_outputs=True)
    a = out.asnumpy()
    assert set(np.unique(a).tolist()) <= {0.0, 4.0} and (a == 0).any() and (a != 0).any()
    assert (a == a[:, :1]).all()  # the same masks at every step
    assert states[0].shape == (6, 1)
    # stepping by hand keeps the masks until reset()
    var.reset()
    with autograd.train_mode():
        first, _ = var(nd.ones((6, 8)), [nd.zeros((6, 1))])
        second, _ = var(nd.ones((6, 8)), [nd.zeros((6, 1))])
        np.testing.assert_array_equal(first.asnumpy(), second.asnumpy())
        masks = var.drop_inputs_mask, var.drop_outputs_mask
        var.reset()
        assert var.drop_inputs_mask is None and var.drop_outputs_mask is None
        var(nd.ones((6, 8)), [nd.zeros((6, 1))])
        assert var.drop_inputs_mask is not masks[0]


def test_variational_state_dropout_masks_the_first_state_only():
    var = contrib_rnn.VariationalDropoutCell(_Echo(), drop_states=0.5)
    h = nd.ones((50, 1))
    with autograd.train_mode():
        _, (counted,) = var(nd.ones((50, 2)), [h])
    values = set(np.unique(counted.asnumpy()).tolist())
    assert values == {1.0, 3.0}  # h * mask + 1 with mask in {0, 2}


def test_residual_cell_adds_inputs():
    base = rnn.GRUCell(3, input_size=3, prefix="res_")
    base.initialize()
    x = nd.array(np.random.RandomState(3).randn(2, 4, 3).astype(np.float32))
    want, _ = base.unroll(4, x, merge_outputs=True)
    res = rnn.ResidualCell(base)
    got, _ = res.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy() + x.asnumpy(), rtol=1e-5, atol=1e-6)
    step, _ = res(x[:, 0], res.begin_state(func=nd.zeros, batch_size=2))
    np.testing.assert_allclose(step.asnumpy(), got.asnumpy()[:, 0], rtol=1e-5, atol=1e-6)
