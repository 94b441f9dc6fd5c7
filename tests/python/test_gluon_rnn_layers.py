"""Recurrent layers ``gluon.rnn.RNN``, ``LSTM`` and ``GRU`` (the fused
``RNN`` operator behind a HybridBlock).

Checked against the same network built from cells (``_unfuse`` stacks and
``contrib.rnn.LSTMPCell`` for projections), against each sequence run on
its own for ``use_sequence_length``, and against MXNet 1.9.1
(tests/fixtures/rnn/fused.json and the MXNet-exported/saved layers next to
it, written by scripts/make_rnn_fixtures.py). Also hybridized against
imperative runs, gradients, export and re-import, deferred shapes, states,
parameter names and dropout.
"""

import json
import pathlib
import zlib

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.base import MXNetError
from oxnet.gluon import rnn
from oxnet.gluon.contrib import rnn as contrib_rnn

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXDIR = ROOT / "tests" / "fixtures" / "rnn"
FIXTURE = json.loads((FIXDIR / "fused.json").read_text())
RTOL, ATOL = 1e-4, 1e-5
BATCH, STEPS, INPUT = 3, 5, 4


def _arr(entry):
    return np.array(entry["data"], dtype=entry.get("dtype", "float32")).reshape(entry["shape"])


def _close(got, want, what, rtol=RTOL, atol=ATOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _make(mode, hidden, **kwargs):
    if mode == "lstm":
        return rnn.LSTM(hidden, **kwargs)
    if mode == "gru":
        return rnn.GRU(hidden, **kwargs)
    return rnn.RNN(hidden, activation=mode[4:], **kwargs)


def _seed_params(block, rng, scale=0.5):
    for _, p in sorted(block.collect_params().items()):
        p.set_data(nd.array(rng.uniform(-scale, scale, p.shape).astype(np.float32)))


def _x(layout, rng, batch=BATCH, steps=STEPS, inp=INPUT):
    shape = (batch, steps, inp) if layout == "NTC" else (steps, batch, inp)
    return rng.uniform(-1, 1, shape).astype(np.float32)


def _layer_states(layer, rng, batch=BATCH):
    return [rng.uniform(-1, 1, info["shape"]).astype(np.float32) for info in layer.state_info(batch)]


def _to_cell_states(states, mode):
    """The layer's (layers*dirs, N, C) states as the per-cell list of a
    stack of cells: for each layer and direction, h (and c)."""
    per = []
    for k in range(states[0].shape[0]):
        per.append(states[0][k])
        if mode == "lstm":
            per.append(states[1][k])
    return per


def _from_cell_states(cell_states, mode):
    step = 2 if mode == "lstm" else 1
    hs = nd.stack(*cell_states[0::step], axis=0)
    if mode == "lstm":
        return [hs, nd.stack(*cell_states[1::step], axis=0)]
    return [hs]


def _grads(block):
    return {k: p.grad().asnumpy().copy() for k, p in block.collect_params().items()}


# ----- (i) the layers against a stack of cells ---------------------------------------------------

@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (2, True), (3, True)])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_layer_matches_unfused_cells(mode, layers, bidirectional, layout):
    rng = np.random.RandomState(zlib.crc32(f"{mode}{layers}{bidirectional}{layout}".encode()))
    layer = _make(mode, 4, num_layers=layers, bidirectional=bidirectional, layout=layout, input_size=INPUT)
    layer.initialize()
    _seed_params(layer, rng)
    x = _x(layout, rng)
    states = _layer_states(layer, rng)
    heads = None

    # the fused layer
    xa = nd.array(x)
    xa.attach_grad()
    sa = [nd.array(s) for s in states]
    for s in sa:
        s.attach_grad()
    with autograd.record():
        out, new_states = layer(xa, sa)
        heads = [rng.uniform(0.5, 1.5, out.shape).astype(np.float32)] + \
                [rng.uniform(0.5, 1.5, s.shape).astype(np.float32) for s in new_states]
        loss = (out * nd.array(heads[0])).sum()
        for s, h in zip(new_states, heads[1:]):
            loss = loss + (s * nd.array(h)).sum()
    loss.backward()
    fused = {"out": out.asnumpy(), "states": [s.asnumpy() for s in new_states], "x_grad": xa.grad.asnumpy(),
             "state_grads": [s.grad.asnumpy() for s in sa], "params": _grads(layer)}

    # the same parameters as a stack of cells
    stack = layer._unfuse()
    stack_params = stack.collect_params()
    assert sorted(stack_params.keys()) == sorted(layer.collect_params().keys())
    for k, p in stack_params.items():
        assert p is layer.collect_params()[k]
    xb = nd.array(x)
    xb.attach_grad()
    sb = [nd.array(s) for s in states]
    for s in sb:
        s.attach_grad()
    with autograd.record():
        out2, cell_states = stack.unroll(STEPS, xb, begin_state=_to_cell_states(sb, mode), layout=layout,
                                         merge_outputs=True)
        new_states2 = _from_cell_states(cell_states, mode)
        loss = (out2 * nd.array(heads[0])).sum()
        for s, h in zip(new_states2, heads[1:]):
            loss = loss + (s * nd.array(h)).sum()
    loss.backward()

    _close(fused["out"], out2.asnumpy(), "output")
    for i, (a, b) in enumerate(zip(fused["states"], new_states2)):
        _close(a, b.asnumpy(), f"state {i}")
    _close(fused["x_grad"], xb.grad.asnumpy(), "input grad")
    for i, (a, b) in enumerate(zip(fused["state_grads"], sb)):
        _close(a, b.grad.asnumpy(), f"state grad {i}")
    cells = _grads(layer)
    for k, g in fused["params"].items():
        assert np.abs(g).sum() > 0, k
        _close(g, cells[k], f"grad {k}")


# ----- (ii) projection against LSTMPCell ---------------------------------------------------------

@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (2, True)])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_lstm_projection_matches_lstmp_cells(layers, bidirectional, layout):
    rng = np.random.RandomState(40 + layers + 2 * bidirectional)
    hidden, proj = 5, 3
    layer = rnn.LSTM(hidden, num_layers=layers, bidirectional=bidirectional, layout=layout, input_size=INPUT,
                     projection_size=proj)
    layer.initialize()
    _seed_params(layer, rng)
    dirs = 2 if bidirectional else 1
    assert [i["shape"] for i in layer.state_info(BATCH)] == [(layers * dirs, BATCH, proj),
                                                             (layers * dirs, BATCH, hidden)]
    lp = layer.collect_params()
    assert lp[layer.prefix + "l0_h2r_weight"].shape == (proj, hidden)
    assert lp[layer.prefix + "l0_h2h_weight"].shape == (4 * hidden, proj)

    stack = rnn.HybridSequentialRNNCell(prefix="ref_")
    with stack.name_scope():
        ni = INPUT
        for i in range(layers):
            cells = []
            for d in ["l", "r"][:dirs]:
                cell = contrib_rnn.LSTMPCell(hidden, proj, input_size=ni, prefix=f"{d}{i}_")
                cells.append(cell)
            stack.add(rnn.BidirectionalCell(*cells) if bidirectional else cells[0])
            ni = proj * dirs
    stack.initialize()
    for k, p in stack.collect_params().items():
        p.set_data(lp[layer.prefix + k[len("ref_"):]].data())

    x = _x(layout, rng)
    states = _layer_states(layer, rng)
    head = rng.uniform(0.5, 1.5, (BATCH, STEPS, dirs * proj) if layout == "NTC" else (STEPS, BATCH, dirs * proj))
    head = head.astype(np.float32)

    xa = nd.array(x)
    xa.attach_grad()
    with autograd.record():
        out, new_states = layer(xa, [nd.array(s) for s in states])
        loss = (out * nd.array(head)).sum() + new_states[0].sum() + new_states[1].sum()
    loss.backward()
    xb = nd.array(x)
    xb.attach_grad()
    with autograd.record():
        out2, cell_states = stack.unroll(STEPS, xb, begin_state=_to_cell_states([nd.array(s) for s in states],
                                                                                 "lstm"),
                                         layout=layout, merge_outputs=True)
        new2 = _from_cell_states(cell_states, "lstm")
        loss2 = (out2 * nd.array(head)).sum() + new2[0].sum() + new2[1].sum()
    loss2.backward()
    _close(out.asnumpy(), out2.asnumpy(), "output")
    _close(new_states[0].asnumpy(), new2[0].asnumpy(), "h")
    _close(new_states[1].asnumpy(), new2[1].asnumpy(), "c")
    _close(xa.grad.asnumpy(), xb.grad.asnumpy(), "input grad")
    cell_grads = {k[len("ref_"):]: p.grad().asnumpy() for k, p in stack.collect_params().items()}
    for k, p in lp.items():
        g = p.grad().asnumpy()
        assert np.abs(g).sum() > 0, k
        _close(g, cell_grads[k[len(layer.prefix):]], f"grad {k}")


def test_projection_parameter_names_as_mxnet():
    for entry in FIXTURE["param_names"]:
        cfg = dict(entry["config"])
        kind = cfg.pop("type")
        layer = getattr(rnn, kind)(**cfg)
        params = layer.collect_params()
        assert list(params.keys()) == entry["keys"], cfg
        assert {k: list(p.shape) for k, p in params.items()} == entry["shapes"], cfg
        assert [{"shape": list(s["shape"]), "__layout__": s["__layout__"]} for s in layer.state_info(3)] \
            == entry["state_info"]
        assert repr(layer) == entry["repr"]


# ----- (iii) use_sequence_length against each sequence on its own -------------------------------

@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru", "lstmp"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_use_sequence_length_matches_truncated_sequences(mode, layers, bidirectional, layout, hybridize):
    """Each sequence of a batch with lengths [5, 2, 3, 1] against the same
    layer run on that sequence alone, cut to its length: outputs (zero past
    the length), final states, and the gradients of outputs and final
    states with respect to input, begin states and parameters."""
    rng = np.random.RandomState(7 + layers)
    lengths = [5, 2, 3, 1]
    batch = len(lengths)
    kw = dict(num_layers=layers, bidirectional=bidirectional, layout=layout, input_size=INPUT, prefix="seq_")
    if mode == "lstmp":
        mode, kw["projection_size"] = "lstm", 3
    width = kw.get("projection_size", 4) * (2 if bidirectional else 1)
    layer = _make(mode, 4, use_sequence_length=True, **kw)
    plain = _make(mode, 4, params=layer.collect_params(), **kw)
    layer.initialize()
    _seed_params(layer, rng)
    if hybridize:
        layer.hybridize()
    x = _x(layout, rng, batch=batch)
    states = _layer_states(layer, rng, batch=batch)
    t_axis = 1 if layout == "NTC" else 0
    head = rng.uniform(0.5, 1.5, x.shape[:2] + (width,)).astype(np.float32)
    state_heads = [rng.uniform(0.5, 1.5, s.shape).astype(np.float32) for s in states]

    xa = nd.array(x)
    xa.attach_grad()
    sa = [nd.array(s) for s in states]
    for s in sa:
        s.attach_grad()
    with autograd.record():
        out, new_states = layer(xa, sa, nd.array(lengths))
        loss = (out * nd.array(head)).sum()
        for s, h in zip(new_states, state_heads):
            loss = loss + (s * nd.array(h)).sum()
    loss.backward()
    out = out.asnumpy()
    x_grad = xa.grad.asnumpy()
    param_grads = _grads(layer)
    summed = {k: np.zeros_like(g) for k, g in param_grads.items()}
    for n, length in enumerate(lengths):
        xn = np.take(x, [n], axis=1 - t_axis).take(range(length), axis=t_axis)
        sn = [nd.array(s[:, n:n + 1]) for s in states]
        for s in sn:
            s.attach_grad()
        xs = nd.array(xn)
        xs.attach_grad()
        hn = np.take(head, [n], axis=1 - t_axis).take(range(length), axis=t_axis)
        with autograd.record():
            on, new_n = plain(xs, sn)
            loss_n = (on * nd.array(hn)).sum()
            for s, h in zip(new_n, state_heads):
                loss_n = loss_n + (s * nd.array(h[:, n:n + 1])).sum()
        loss_n.backward()
        for k, g in _grads(plain).items():
            summed[k] += g
        got = np.take(out, [n], axis=1 - t_axis)
        _close(got.take(range(length), axis=t_axis), on.asnumpy(), f"output of sequence {n}")
        rest = got.take(range(length, STEPS), axis=t_axis)
        assert np.all(rest == 0), f"outputs past the length of sequence {n}"
        for i, (a, b) in enumerate(zip(new_states, new_n)):
            _close(a.asnumpy()[:, n:n + 1], b.asnumpy(), f"state {i} of sequence {n}")
        g = np.take(x_grad, [n], axis=1 - t_axis)
        _close(g.take(range(length), axis=t_axis), xs.grad.asnumpy(), f"input grad of sequence {n}")
        assert np.all(g.take(range(length, STEPS), axis=t_axis) == 0)
        for i, (a, b) in enumerate(zip(sa, sn)):
            _close(a.grad.asnumpy()[:, n:n + 1], b.grad.asnumpy(), f"begin state {i} grad of sequence {n}")
    for k, g in param_grads.items():
        assert np.abs(g).sum() > 0, k
        _close(g, summed[k], f"grad {k}")


def test_use_sequence_length_requires_the_lengths():
    layer = rnn.LSTM(4, use_sequence_length=True, input_size=INPUT)
    layer.initialize()
    with pytest.raises(MXNetError, match="sequence_length"):
        layer(nd.ones((STEPS, BATCH, INPUT)))


# ----- (iv) MXNet's exported and saved layers ----------------------------------------------------

LAYER_RECORDS = {r["name"]: r for r in FIXTURE["layers"]}


def _fixture_build(rec):
    cfg = dict(rec["config"])
    kind = cfg.pop("type")
    return getattr(rnn, kind)(**cfg)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_symbolblock_imports_mxnet_export(name):
    rec = LAYER_RECORDS[name]
    prefix = FIXDIR / f"mxnet_{name}"
    inputs = [n for n in rec["symbol_inputs"] if n.startswith("data")]
    block = gluon.SymbolBlock.imports(str(prefix) + "-symbol.json", inputs, str(prefix) + "-0000.params")
    assert sorted(block.collect_params().keys()) == rec["param_names"]
    x = nd.array(_arr(rec["input"]))
    if "begin_state" in rec:
        states = [nd.array(_arr(s)) for s in rec["begin_state"]]
    else:
        layer = _fixture_build(rec)
        states = layer.begin_state(x.shape[0])
    res = block(x, *states)
    if "states" in rec:
        out, *new_states = res
        for i, (s, want) in enumerate(zip(new_states, rec["states"])):
            _close(s.asnumpy(), _arr(want), f"state {i}")
    else:
        out = res
    _close(out.asnumpy(), _arr(rec["output"]), "output")


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_load_parameters_saved_by_mxnet(name):
    rec = LAYER_RECORDS[name]
    layer = _fixture_build(rec)
    assert sorted(layer.collect_params().keys()) == rec["param_names"]
    assert sorted(layer._collect_params_with_prefix().keys()) == rec["saved_keys"]
    layer.load_parameters(str(FIXDIR / f"mxnet_{name}.params"))
    x = nd.array(_arr(rec["input"]))
    for hybrid in [False, True]:
        if hybrid:
            layer.hybridize()
        if "begin_state" in rec:
            out, new_states = layer(x, [nd.array(_arr(s)) for s in rec["begin_state"]])
            for i, (s, want) in enumerate(zip(new_states, rec["states"])):
                _close(s.asnumpy(), _arr(want), f"state {i} (hybridized={hybrid})")
        else:
            out = layer(x)
        _close(out.asnumpy(), _arr(rec["output"]), f"output (hybridized={hybrid})")


def test_save_parameters_round_trip_with_mxnet_keys(tmp_path):
    rec = LAYER_RECORDS["lstm"]
    layer = _fixture_build(rec)
    layer.load_parameters(str(FIXDIR / "mxnet_lstm.params"))
    path = tmp_path / "lstm.params"
    layer.save_parameters(str(path))
    assert sorted(nd.load(str(path)).keys()) == rec["saved_keys"]
    mxnet_saved = nd.load(str(FIXDIR / "mxnet_lstm.params"))
    ours = nd.load(str(path))
    for k in rec["saved_keys"]:
        np.testing.assert_array_equal(ours[k].asnumpy(), mxnet_saved[k].asnumpy())


# ----- (v) hybridized, gradients, export -----------------------------------------------------------

def _run_with_grads(layer, x, states, head):
    xa = nd.array(x)
    xa.attach_grad()
    with autograd.record():
        out, new_states = layer(xa, [nd.array(s) for s in states])
        loss = (out * nd.array(head)).sum() + nd.add_n(*[s.sum() for s in new_states])
    loss.backward()
    return out.asnumpy(), [s.asnumpy() for s in new_states], xa.grad.asnumpy(), _grads(layer)


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_hybridized_equals_imperative_and_export_round_trip(mode, bidirectional, tmp_path):
    rng = np.random.RandomState(99)
    layer = _make(mode, 4, num_layers=2, bidirectional=bidirectional, layout="NTC", input_size=INPUT,
                  prefix=f"{mode}_")
    layer.initialize()
    _seed_params(layer, rng)
    x = _x("NTC", rng)
    states = _layer_states(layer, rng)
    head = rng.uniform(0.5, 1.5, (BATCH, STEPS, 4 * (2 if bidirectional else 1))).astype(np.float32)
    out, st, xg, pg = _run_with_grads(layer, x, states, head)
    for k, g in pg.items():
        assert np.abs(g).sum() > 0, f"zero gradient for {k}"
    assert np.abs(xg).sum() > 0
    layer.hybridize()
    out_h, st_h, xg_h, pg_h = _run_with_grads(layer, x, states, head)
    _close(out_h, out, "hybridized output", 1e-5, 1e-6)
    for a, b in zip(st_h, st):
        _close(a, b, "hybridized state", 1e-5, 1e-6)
    _close(xg_h, xg, "hybridized input grad", 1e-5, 1e-6)
    for k in pg:
        _close(pg_h[k], pg[k], f"hybridized grad {k}", 1e-5, 1e-6)

    # the exported graph has MXNet's shape: the flattened parameters joined by
    # `<prefix>_rnn_param_concat0` feeding RNN's `parameters` input (oxnet writes
    # the joining node's op under its canonical name `concat`, which MXNet loads)
    prefix = str(tmp_path / "layer")
    layer.export(prefix)
    graph = json.loads(pathlib.Path(prefix + "-symbol.json").read_text())
    nodes = graph["nodes"]
    rnn_nodes = [n for n in nodes if n["op"] == "RNN"]
    assert len(rnn_nodes) == 1
    rnn_node = rnn_nodes[0]
    assert rnn_node["name"] == f"{mode}_rnn0"
    assert rnn_node["attrs"]["mode"] == mode and rnn_node["attrs"]["state_outputs"] == "True"
    joined = nodes[rnn_node["inputs"][1][0]]
    assert joined["name"] == f"{mode}__rnn_param_concat0"
    assert joined["op"] in ("_rnn_param_concat", "concat", "Concat")
    assert joined["attrs"]["dim"] == "0"
    assert int(joined["attrs"]["num_args"]) == len(layer.collect_params())
    n_states = 2 if mode == "lstm" else 1
    inputs = ["data0"] + [f"data{i + 1}" for i in range(n_states)]
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", inputs, prefix + "-0000.params")
    res = block(nd.array(x), *[nd.array(s) for s in states])
    _close(res[0].asnumpy(), out, "re-imported output", 1e-5, 1e-6)
    for a, b in zip(res[1:], st):
        _close(a.asnumpy(), b, "re-imported state", 1e-5, 1e-6)


def test_hybridized_without_states_returns_output_only():
    rng = np.random.RandomState(2)
    layer = rnn.GRU(3, num_layers=2, input_size=INPUT)
    layer.initialize()
    _seed_params(layer, rng)
    x = nd.array(_x("TNC", rng))
    out = layer(x)
    assert isinstance(out, nd.NDArray) and out.shape == (STEPS, BATCH, 3)
    with_states, _ = layer(x, layer.begin_state(BATCH))
    _close(out.asnumpy(), with_states.asnumpy(), "zeros begin state")
    layer.hybridize()
    out_h = layer(x)
    assert isinstance(out_h, nd.NDArray)
    _close(out_h.asnumpy(), out.asnumpy(), "hybridized, no states", 1e-5, 1e-6)


def test_training_with_trainer_decreases_loss():
    rng = np.random.RandomState(8)
    layer = rnn.LSTM(6, num_layers=2, layout="NTC", bidirectional=True)
    layer.initialize()
    layer.hybridize()
    x = nd.array(_x("NTC", rng, inp=5))
    layer(x)
    _seed_params(layer, rng, 0.3)
    trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.05})
    target = nd.full((BATCH, STEPS, 12), 0.3)
    losses = []
    for _ in range(20):
        with autograd.record():
            loss = ((layer(x) - target) ** 2).sum()
        loss.backward()
        trainer.step(BATCH)
        losses.append(float(loss.asscalar()))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.5 * losses[0], losses


# ----- (vi) shapes, states, names, dropout ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["rnn_relu", "lstm", "gru"])
def test_deferred_input_size(mode):
    layer = _make(mode, 4, num_layers=2, bidirectional=True, layout="NTC")
    gates = {"lstm": 4, "gru": 3}.get(mode, 1)
    assert layer.l0_i2h_weight.shape == (gates * 4, 0)
    assert layer.l1_i2h_weight.shape == (gates * 4, 8)
    layer.initialize()
    out = layer(nd.ones((BATCH, STEPS, 7)))
    assert out.shape == (BATCH, STEPS, 8)
    assert layer.l0_i2h_weight.shape == (gates * 4, 7)
    assert layer.r0_i2h_weight.shape == (gates * 4, 7)
    assert layer.l0_i2h_weight.data().shape == (gates * 4, 7)
    assert repr(layer).startswith(f"{type(layer).__name__}(7 -> 4, NTC")
    # hybridized deferred inference too
    layer2 = _make(mode, 4, layout="TNC")
    layer2.initialize()
    layer2.hybridize()
    assert layer2(nd.ones((STEPS, BATCH, 6))).shape == (STEPS, BATCH, 4)
    assert layer2.l0_i2h_weight.shape == (gates * 4, 6)


def test_state_shape_errors():
    layer = rnn.LSTM(4, num_layers=2, input_size=INPUT)
    layer.initialize()
    x = nd.ones((STEPS, BATCH, INPUT))
    good = layer.begin_state(BATCH)
    out, _ = layer(x, good)
    assert out.shape == (STEPS, BATCH, 4)
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(x, [nd.zeros((2, BATCH + 1, 4)), good[1]])
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(x, [good[0], nd.zeros((1, BATCH, 4))])
    with pytest.raises(MXNetError):
        layer(x, [good[0]])
    gru = rnn.GRU(4, input_size=INPUT)
    gru.initialize()
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        gru(x, nd.zeros((1, BATCH, 5)))
    # a single state may be passed bare
    out, states = gru(x, nd.zeros((1, BATCH, 4)))
    assert len(states) == 1 and states[0].shape == (1, BATCH, 4)


def test_begin_state():
    layer = rnn.LSTM(4, num_layers=3, bidirectional=True, projection_size=2, prefix="bs_")
    states = layer.begin_state(5)
    assert [s.shape for s in states] == [(6, 5, 2), (6, 5, 4)]
    assert all(float(s.abs().sum().asscalar()) == 0 for s in states)
    ones = layer.begin_state(2, func=nd.ones, dtype="float64")
    assert [s.shape for s in ones] == [(6, 2, 2), (6, 2, 4)]
    assert all(s.dtype == np.float64 for s in ones)
    assert float(ones[1].sum().asscalar()) == 6 * 2 * 4
    syms = layer.begin_state(func=mx.sym.var)
    assert [s.name for s in syms] == ["bs_h0_0", "bs_h0_1"]
    gru = rnn.GRU(3, num_layers=2)
    assert [s.shape for s in gru.begin_state(4)] == [(2, 4, 3)]
    assert gru.state_info(4) == [{"shape": (2, 4, 3), "__layout__": "LNC", "dtype": "float32"}]


def test_parameter_names_as_mxnet():
    for rec in FIXTURE["layers"]:
        layer = _fixture_build(rec)
        assert sorted(layer.collect_params().keys()) == rec["param_names"]
    entry = FIXTURE["param_names"][0]
    layer = rnn.LSTM(4, num_layers=2, bidirectional=True, prefix="lstm9_")
    assert list(layer.collect_params().keys()) == entry["keys"]
    assert layer.l0_i2h_weight.name == "lstm9_l0_i2h_weight"
    assert layer.r1_h2h_bias.name == "lstm9_r1_h2h_bias"


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_dropout_only_in_training(mode):
    rng = np.random.RandomState(4)
    layer = _make(mode, 8, num_layers=3, dropout=0.5, input_size=INPUT, prefix="drop_")
    ref = _make(mode, 8, num_layers=3, input_size=INPUT, prefix="drop_", params=layer.collect_params())
    layer.initialize()
    _seed_params(layer, rng)
    x = nd.array(_x("TNC", rng))
    want = ref(x).asnumpy()
    # inference: no dropout, recorded or not
    _close(layer(x).asnumpy(), want, "predict mode")
    with autograd.record(train_mode=False):
        _close(layer(x).asnumpy(), want, "recorded, predict mode")
    # training: dropout between layers changes the output, differently each call
    with autograd.record():
        a = layer(x)
        b = layer(x)
    assert not np.allclose(a.asnumpy(), want, atol=1e-4)
    assert not np.allclose(a.asnumpy(), b.asnumpy(), atol=1e-4)
    with autograd.train_mode():
        assert not np.allclose(layer(x).asnumpy(), want, atol=1e-4)
    # a single layer has no dropout (it acts between layers only)
    one = _make(mode, 8, num_layers=1, dropout=0.5, input_size=INPUT, prefix="one_")
    one_ref = _make(mode, 8, num_layers=1, input_size=INPUT, prefix="one_", params=one.collect_params())
    one.initialize()
    with autograd.record():
        _close(one(x).asnumpy(), one_ref(x).asnumpy(), "one layer in training")
    # hybridized too
    layer.hybridize()
    _close(layer(x).asnumpy(), want, "hybridized predict mode")
    with autograd.record():
        assert not np.allclose(layer(x).asnumpy(), want, atol=1e-4)


def test_layout_errors_and_float64():
    with pytest.raises(MXNetError, match="layout"):
        rnn.LSTM(4, layout="NCT")
    rng = np.random.RandomState(6)
    layer = rnn.GRU(3, num_layers=2, bidirectional=True, input_size=INPUT, dtype="float64")
    layer.initialize()
    assert layer.l0_i2h_weight.data().dtype == np.float64
    x = rng.uniform(-1, 1, (STEPS, BATCH, INPUT))
    out = layer(nd.array(x, dtype="float64"))
    assert out.dtype == np.float64 and out.shape == (STEPS, BATCH, 6)
    # cast to float32 gives the same result to float32 precision
    layer.cast("float32")
    out32 = layer(nd.array(x, dtype="float32"))
    assert out32.dtype == np.float32
    _close(out32.asnumpy(), out.asnumpy(), "float32 after cast", 1e-5, 1e-6)


def test_state_clipping():
    rng = np.random.RandomState(12)
    kw = dict(num_layers=2, bidirectional=True, input_size=INPUT, prefix="clip_")
    clipped = rnn.LSTM(4, state_clip_min=-0.2, state_clip_max=0.15, **kw)
    free = rnn.LSTM(4, params=clipped.collect_params(), **kw)
    clipped.initialize()
    _seed_params(clipped, rng, 1.0)
    x = nd.array(_x("TNC", rng) * 3)
    states = [nd.array(s) for s in _layer_states(clipped, rng)]
    out_c, (h_c, c_c) = clipped(x, states)
    out_f, (h_f, c_f) = free(x, states)
    c = c_c.asnumpy()
    assert c.min() >= -0.2 and c.max() <= 0.15
    assert np.abs(c_f.asnumpy()).max() > 0.3
    assert np.any(np.isclose(c, -0.2)) and np.any(np.isclose(c, 0.15))
    assert not np.allclose(out_c.asnumpy(), out_f.asnumpy(), atol=1e-3)
    # |h| <= tanh(clip bound) for every step of every layer's output
    assert np.abs(out_c.asnumpy()).max() <= np.tanh(0.2) + 1e-6
    clipped.hybridize()
    out_h, (_, c_h) = clipped(x, states)
    _close(out_h.asnumpy(), out_c.asnumpy(), "hybridized clipped output", 1e-5, 1e-6)
    _close(c_h.asnumpy(), c, "hybridized clipped cell", 1e-5, 1e-6)
    with pytest.raises(MXNetError, match="clip"):
        rnn.LSTM(4, state_clip_min=-1, state_clip_max=1, input_size=INPUT)._unfuse()
    with pytest.raises(MXNetError, match="projection"):
        rnn.LSTM(4, projection_size=2, input_size=INPUT)._unfuse()


def test_layer_inside_hybrid_sequential():
    rng = np.random.RandomState(13)
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(rnn.GRU(5, num_layers=2, layout="NTC", bidirectional=True))
        net.add(gluon.nn.Dense(3, flatten=False))
    net.initialize()
    x = nd.array(_x("NTC", rng))
    net(x)
    _seed_params(net, rng)
    assert sorted(net.collect_params().keys()) == sorted(
        [f"net_gru0_{d}{i}_{g}_{t}" for d in "lr" for i in range(2) for g in ["i2h", "h2h"]
         for t in ["weight", "bias"]] + ["net_dense0_weight", "net_dense0_bias"])

    def run():
        xa = nd.array(x.asnumpy())
        xa.attach_grad()
        with autograd.record():
            y = net(xa)
            (y * y).sum().backward()
        return y.asnumpy(), xa.grad.asnumpy(), _grads(net)

    y, xg, pg = run()
    assert y.shape == (BATCH, STEPS, 3)
    net.hybridize()
    y_h, xg_h, pg_h = run()
    _close(y_h, y, "hybridized output", 1e-5, 1e-6)
    _close(xg_h, xg, "hybridized input grad", 1e-5, 1e-6)
    for k in pg:
        assert np.abs(pg[k]).sum() > 0, k
        _close(pg_h[k], pg[k], f"hybridized grad {k}", 1e-5, 1e-6)
