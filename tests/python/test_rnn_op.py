"""The fused ``RNN`` operator (``mx.nd.RNN``, ``mx.sym.RNN``).

Checked against MXNet 1.9.1 (tests/fixtures/rnn/fused.json, written by
scripts/make_rnn_fixtures.py): outputs, final states and the gradients with
respect to data, parameters and the initial states, for every mode, one and
two layers, uni- and bidirectional, float32 and float64; imperatively
(``autograd``) and through a bound symbol (``simple_bind``/``bind``,
``forward``/``backward``). Also the symbol's argument and output names,
shape inference, and the operator's errors.
"""

import json
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "rnn" / "fused.json").read_text())
CASES = FIXTURE["op_cases"]
T, N, I, H = FIXTURE["T"], FIXTURE["N"], FIXTURE["I"], FIXTURE["H"]


def _arr(entry):
    return np.array(entry["data"], dtype=entry.get("dtype", "float32")).reshape(entry["shape"])


def _tol(dtype):
    return (1e-4, 1e-5) if dtype == "float32" else (1e-9, 1e-11)


def _close(got, want, what, dtype="float32"):
    rtol, atol = _tol(dtype)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _kwargs(case):
    return dict(state_size=case["state_size"], num_layers=case["num_layers"],
                bidirectional=case["bidirectional"], mode=case["mode"], state_outputs=True)


def _input_names(case):
    return list(case["inputs"].keys())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_nd_rnn_matches_mxnet(case):
    dtype = case["dtype"]
    names = _input_names(case)
    ins = [nd.array(_arr(case["inputs"][n]), dtype=dtype) for n in names]
    for a in ins:
        a.attach_grad()
    heads = [_arr(h) for h in case["heads"]]
    with autograd.record():
        res = nd.RNN(*ins, **_kwargs(case))
        assert isinstance(res, (list, tuple))
        assert len(res) == (3 if case["mode"] == "lstm" else 2)
        loss = None
        for r, h in zip(res, heads):
            term = (r * nd.array(h, dtype=dtype)).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    for i, (r, want) in enumerate(zip(res, case["outputs"])):
        _close(r.asnumpy(), _arr(want), f"{case['name']} output {i}", dtype)
    for n, a in zip(names, ins):
        _close(a.grad.asnumpy(), _arr(case["grads"][n]), f"{case['name']} grad {n}", dtype)


@pytest.mark.parametrize("case", CASES[:6:2] + CASES[6:], ids=[c["name"] for c in CASES[:6:2] + CASES[6:]])
def test_nd_rnn_keywords_without_state_outputs_and_out(case):
    """Inputs by keyword; with state_outputs=False one NDArray comes back;
    ``out=`` receives the visible outputs."""
    dtype = case["dtype"]
    arrays = {n: nd.array(_arr(v), dtype=dtype) for n, v in case["inputs"].items()}
    kw = _kwargs(case)
    kw["state_outputs"] = False
    out = nd.RNN(**arrays, **kw)
    assert isinstance(out, nd.NDArray)
    _close(out.asnumpy(), _arr(case["outputs"][0]), "output without state_outputs", dtype)
    targets = [nd.zeros(tuple(o["shape"]), dtype=dtype) for o in case["outputs"]]
    nd.RNN(**arrays, **_kwargs(case), out=targets)
    for i, (t, want) in enumerate(zip(targets, case["outputs"])):
        _close(t.asnumpy(), _arr(want), f"out= target {i}", dtype)


def _symbol(case, name="rnn0", **extra):
    names = _input_names(case)
    kw = _kwargs(case)
    kw.update(extra)
    return mx.sym.RNN(*[mx.sym.var(n) for n in names], name=name, **kw)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.parametrize("how", ["simple_bind", "bind"])
def test_symbol_forward_backward_matches_mxnet(case, how):
    dtype = case["dtype"]
    names = _input_names(case)
    sym = _symbol(case)
    assert sym.list_arguments() == names
    outs = ["rnn0_output", "rnn0_state_output"] + (["rnn0_statecell_output"] if case["mode"] == "lstm" else [])
    assert sym.list_outputs() == outs
    values = {n: _arr(case["inputs"][n]) for n in names}
    if how == "simple_bind":
        exe = sym.simple_bind(mx.cpu(), grad_req="write", type_dict={n: dtype for n in names},
                              **{n: v.shape for n, v in values.items()})
        outputs = exe.forward(is_train=True, **{n: nd.array(v, dtype=dtype) for n, v in values.items()})
    else:
        args = {n: nd.array(v, dtype=dtype) for n, v in values.items()}
        grads = {n: nd.zeros(v.shape, dtype=dtype) for n, v in values.items()}
        exe = sym.bind(mx.cpu(), args, args_grad=grads)
        outputs = exe.forward(is_train=True)
    assert len(outputs) == len(case["outputs"])
    for i, (o, want) in enumerate(zip(outputs, case["outputs"])):
        _close(o.asnumpy(), _arr(want), f"{how} output {i}", dtype)
    for i, (name, want) in enumerate(zip(outs, case["outputs"])):
        _close(exe.output_dict[name].asnumpy(), _arr(want), f"{how} output_dict {name}", dtype)
    exe.backward([nd.array(_arr(h), dtype=dtype) for h in case["heads"]])
    for n in names:
        _close(exe.grad_dict[n].asnumpy(), _arr(case["grads"][n]), f"{how} grad {n}", dtype)


def _symbol_id(kw):
    return (f"{kw['mode']}_l{kw['num_layers']}{'_bi' if kw['bidirectional'] else ''}_so{int(kw['state_outputs'])}"
            f"{'_proj' if kw.get('projection_size') else ''}{'_seqlen' if kw.get('use_sequence_length') else ''}")


@pytest.mark.parametrize("entry", FIXTURE["symbols"], ids=[_symbol_id(e["kwargs"]) for e in FIXTURE["symbols"]])
def test_symbol_names_and_infer_shape_as_mxnet(entry):
    kw = entry["kwargs"]
    names = ["data", "parameters", "state"] + (["state_cell"] if kw["mode"] == "lstm" else []) + \
        (["sequence_length"] if kw.get("use_sequence_length") else [])
    explicit = mx.sym.RNN(name="rnn0", **{n: mx.sym.var(n) for n in names}, **kw)
    assert explicit.list_arguments() == entry["explicit"]["arguments"]
    assert explicit.list_outputs() == entry["explicit"]["outputs"]
    auto = mx.sym.RNN(name="rnn1", **kw)
    assert auto.list_arguments() == entry["auto"]["arguments"]
    assert auto.list_outputs() == entry["auto"]["outputs"]
    args, outs, aux = auto.infer_shape(rnn1_data=(T, N, I))
    assert [list(s) for s in args] == entry["auto"]["arg_shapes"]
    assert [list(s) for s in outs] == entry["auto"]["out_shapes"]
    assert aux == []
    # the same through the explicit variables: the parameter length is filled in
    args, outs, _ = explicit.infer_shape(data=(T, N, I))
    assert [list(s) for s in args] == entry["auto"]["arg_shapes"]
    assert [list(s) for s in outs] == entry["auto"]["out_shapes"]


def test_infer_shape_parameter_length_and_simple_bind_from_data_only():
    case = next(c for c in CASES if c["name"] == "lstm_l2_bi_float32")
    sym = _symbol(case)
    args, outs, _ = sym.infer_shape(data=(T, N, I))
    assert args[1] == (case["param_len"],)
    assert outs == [(T, N, 2 * H), (4, N, H), (4, N, H)]
    # only the data's shape given: everything else is inferred
    exe = sym.simple_bind(mx.cpu(), data=(T, N, I))
    assert exe.arg_dict["parameters"].shape == (case["param_len"],)
    assert exe.arg_dict["state_cell"].shape == (4, N, H)
    for n in _input_names(case):
        exe.arg_dict[n][:] = _arr(case["inputs"][n])
    outputs = exe.forward()
    _close(outputs[0].asnumpy(), _arr(case["outputs"][0]), "simple_bind from data only")
    # a wrong parameter length is refused at inference (every shape given)
    with pytest.raises(MXNetError, match=f"expected \\({case['param_len']},\\)"):
        sym.infer_shape(data=(T, N, I), parameters=(case["param_len"] + 1,), state=(4, N, H),
                        state_cell=(4, N, H))


def test_infer_shape_wrong_parameter_length_from_data_alone():
    """MXNet 1.9.1 raises ``Shape inconsistent, Provided = [801], inferred
    shape=(800,)`` when only data and a wrong parameter length are given."""
    case = next(c for c in CASES if c["name"] == "lstm_l2_bi_float32")
    sym = _symbol(case)
    with pytest.raises(MXNetError, match=str(case["param_len"])):
        sym.infer_shape(data=(T, N, I), parameters=(case["param_len"] + 1,))


def _lstm_inputs(layers=1, dirs=1, batch=N, steps=T):
    plen = 0
    ni = I
    for _ in range(layers):
        plen += dirs * (4 * H * ni + 4 * H * H + 8 * H)
        ni = H * dirs
    rng = np.random.RandomState(3)
    return (nd.array(rng.uniform(-1, 1, (steps, batch, I))), nd.array(rng.uniform(-0.5, 0.5, (plen,))),
            nd.zeros((layers * dirs, batch, H)), nd.zeros((layers * dirs, batch, H)), plen)


def test_error_wrong_parameter_length_names_the_expected_length():
    x, p, h, c, plen = _lstm_inputs(layers=2, dirs=2)
    bad = nd.zeros((plen - 3,))
    with pytest.raises(MXNetError) as err:
        nd.RNN(x, bad, h, c, state_size=H, num_layers=2, bidirectional=True, mode="lstm")
    assert str(plen) in str(err.value)
    assert str(plen - 3) in str(err.value)
    # the correct length runs
    out = nd.RNN(x, p, h, c, state_size=H, num_layers=2, bidirectional=True, mode="lstm")
    assert out.shape == (T, N, 2 * H)


def test_error_wrong_state_shape():
    x, p, h, c, _ = _lstm_inputs()
    with pytest.raises(MXNetError, match="state"):
        nd.RNN(x, p, nd.zeros((1, N + 1, H)), c, state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="state_cell"):
        nd.RNN(x, p, h, nd.zeros((2, N, H)), state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="state"):
        nd.RNN(x, p, nd.zeros((1, N, H + 1)), c, state_size=H, num_layers=1, mode="lstm")


def test_error_bad_mode():
    x, p, h, c, _ = _lstm_inputs()
    with pytest.raises(MXNetError, match="mode"):
        nd.RNN(x, p, h, c, state_size=H, num_layers=1, mode="lstmx")
    with pytest.raises(MXNetError, match="mode"):
        mx.sym.RNN(mx.sym.var("data"), mx.sym.var("parameters"), mx.sym.var("state"), state_size=H, num_layers=1,
                   mode="elman")


def test_error_sequence_length_beyond_steps():
    x, p, h, c, _ = _lstm_inputs()
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.RNN(x, p, h, c, nd.array([T, T + 1, 1]), state_size=H, num_layers=1, mode="lstm",
               use_sequence_length=True).asnumpy()
    with pytest.raises(MXNetError, match="sequence_length"):
        nd.RNN(x, p, h, c, nd.array([-1, 2, 1]), state_size=H, num_layers=1, mode="lstm",
               use_sequence_length=True).asnumpy()
    # lengths within [0, T] run; a full-length sequence_length gives the plain result
    full = nd.RNN(x, p, h, c, nd.array([T, T, T]), state_size=H, num_layers=1, mode="lstm",
                  use_sequence_length=True)
    plain = nd.RNN(x, p, h, c, state_size=H, num_layers=1, mode="lstm")
    np.testing.assert_allclose(full.asnumpy(), plain.asnumpy(), rtol=1e-6, atol=1e-7)


def test_error_projection_on_gru_and_clip_on_non_lstm():
    rng = np.random.RandomState(0)
    x = nd.array(rng.uniform(-1, 1, (T, N, I)))
    plen = 3 * H * I + 3 * H * H + 6 * H
    p = nd.array(rng.uniform(-0.5, 0.5, (plen,)))
    h = nd.zeros((1, N, H))
    # the plain GRU runs
    assert nd.RNN(x, p, h, state_size=H, num_layers=1, mode="gru").shape == (T, N, H)
    with pytest.raises(MXNetError, match="projection"):
        nd.RNN(x, p, nd.zeros((1, N, 2)), state_size=H, num_layers=1, mode="gru", projection_size=2)
    with pytest.raises(MXNetError, match="clip"):
        nd.RNN(x, p, h, state_size=H, num_layers=1, mode="gru", lstm_state_clip_min=-1, lstm_state_clip_max=1)


def test_error_data_rank_and_dtype():
    x, p, h, c, _ = _lstm_inputs()
    with pytest.raises(MXNetError, match="data"):
        nd.RNN(x.reshape((T * N, I)), p, h, c, state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError):
        nd.RNN(x.astype("int32"), p.astype("int32"), h.astype("int32"), c.astype("int32"), state_size=H,
               num_layers=1, mode="lstm").asnumpy()


# ----- a NumPy LSTM for what MXNet 1.9.1 runs on cuDNN only -----------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _np_lstm_layer(x, wx, wh, bx, bh, h, c, proj=None, clip=None, lens=None, reverse=False):
    """One direction of one LSTM layer in float64; x (T, N, C)."""
    steps, batch = x.shape[:2]
    lens = np.full(batch, steps) if lens is None else np.asarray(lens)
    out = np.zeros((steps, batch, h.shape[1]))
    h, c = h.copy(), c.copy()
    for n in range(batch):
        hn, cn = h[n], c[n]
        order = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
        for t in order:
            g = wx @ x[t, n] + bx + wh @ hn + bh
            i, f, gg, o = np.split(g, 4)
            cn = _sigmoid(f) * cn + _sigmoid(i) * np.tanh(gg)
            if clip is not None:
                cn = np.clip(cn, clip[0], clip[1])
            hn = _sigmoid(o) * np.tanh(cn)
            if proj is not None:
                hn = proj @ hn
            out[t, n] = hn
        h[n], c[n] = hn, cn
    return out, h, c


def _np_lstm(x, params, h0, c0, layers, dirs, hidden, proj_size=None, clip=None, lens=None):
    """MXNet's parameter layout: all weights (layer, direction: i2h, h2h[, h2r]), then all biases."""
    pos = 0

    def take(shape):
        nonlocal pos
        size = int(np.prod(shape))
        v = params[pos:pos + size].reshape(shape)
        pos += size
        return v

    out_size = proj_size or hidden
    weights = []
    ni = x.shape[2]
    for _ in range(layers):
        for _ in range(dirs):
            wx, wh = take((4 * hidden, ni)), take((4 * hidden, out_size))
            pr = take((proj_size, hidden)) if proj_size else None
            weights.append((wx, wh, pr))
        ni = out_size * dirs
    biases = [(take((4 * hidden,)), take((4 * hidden,))) for _ in range(layers * dirs)]
    assert pos == params.size
    hy, cy = np.zeros_like(h0), np.zeros_like(c0)
    inp = x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            wx, wh, pr = weights[k]
            o, hy[k], cy[k] = _np_lstm_layer(inp, wx, wh, *biases[k], h0[k], c0[k], pr, clip, lens, d == 1)
            outs.append(o)
        inp = np.concatenate(outs, axis=2)
    return inp, hy, cy


@pytest.mark.parametrize("layers,dirs", [(1, 1), (2, 2)])
@pytest.mark.parametrize("proj,clip,lens", [
    (None, (-0.2, 0.3), None),
    (3, None, None),
    (2, (-0.25, 0.25), [4, 2, 0]),
    (None, None, [1, 4, 3]),
])
def test_cudnn_only_features_against_numpy(layers, dirs, proj, clip, lens):
    """projection_size, state clipping and use_sequence_length (cuDNN-only in
    MXNet 1.9.1) against a NumPy LSTM with cuDNN's meaning."""
    rng = np.random.RandomState(11)
    out_size = proj or H
    plen = 0
    ni = I
    for _ in range(layers):
        plen += dirs * (4 * H * ni + 4 * H * out_size + (proj or 0) * H + 8 * H)
        ni = out_size * dirs
    x = rng.uniform(-1, 1, (T, N, I))
    params = rng.uniform(-0.6, 0.6, (plen,))
    h0 = rng.uniform(-1, 1, (layers * dirs, N, out_size))
    c0 = rng.uniform(-1, 1, (layers * dirs, N, H))
    want = _np_lstm(x, params, h0, c0, layers, dirs, H, proj, clip, lens)
    kw = dict(state_size=H, num_layers=layers, bidirectional=dirs == 2, mode="lstm", state_outputs=True,
              projection_size=proj)
    args = [nd.array(x, dtype="float64"), nd.array(params, dtype="float64"), nd.array(h0, dtype="float64"),
            nd.array(c0, dtype="float64")]
    if clip is not None:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    if lens is not None:
        args.append(nd.array(lens, dtype="int32"))
        kw["use_sequence_length"] = True
    got = nd.RNN(*args, **kw)
    for g, w, what in zip(got, want, ["output", "hy", "cy"]):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("proj,clip,lens", [(3, None, None), (2, None, [1, 3]), (None, (-0.3, 0.3), [2, 1])])
def test_cudnn_only_features_gradients_against_finite_differences(proj, clip, lens):
    """The gradient of a projected / clipped / length-masked two-layer
    bidirectional LSTM (float64) against central differences."""
    rng = np.random.RandomState(5)
    layers, dirs, steps, batch, inp = 2, 2, 3, 2, 3
    out_size = proj or H
    plen = 0
    ni = inp
    for _ in range(layers):
        plen += dirs * (4 * H * ni + 4 * H * out_size + (proj or 0) * H + 8 * H)
        ni = out_size * dirs
    values = {"data": rng.uniform(-1, 1, (steps, batch, inp)), "parameters": rng.uniform(-0.6, 0.6, (plen,)),
              "state": rng.uniform(-1, 1, (layers * dirs, batch, out_size)),
              "state_cell": rng.uniform(-1, 1, (layers * dirs, batch, H))}
    heads = [rng.uniform(0.5, 1.5, s) for s in [(steps, batch, dirs * out_size), (layers * dirs, batch, out_size),
                                                 (layers * dirs, batch, H)]]
    kw = dict(state_size=H, num_layers=layers, bidirectional=True, mode="lstm", state_outputs=True,
              projection_size=proj)
    if clip is not None:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    extra = []
    if lens is not None:
        kw["use_sequence_length"] = True
        extra = [nd.array(lens, dtype="int32")]

    def loss_of(vals):
        res = nd.RNN(*[nd.array(vals[k], dtype="float64") for k in values], *extra, **kw)
        return sum(float((r.asnumpy() * h).sum()) for r, h in zip(res, heads))

    arrays = [nd.array(v, dtype="float64") for v in values.values()]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        res = nd.RNN(*arrays, *extra, **kw)
        loss = nd.add_n(*[(r * nd.array(h, dtype="float64")).sum() for r, h in zip(res, heads)])
    loss.backward()
    eps = 1e-6
    for (name, v), a in zip(values.items(), arrays):
        grad = a.grad.asnumpy()
        assert np.abs(grad).sum() > 0, name
        flat = v.reshape(-1)
        for idx in rng.choice(flat.size, size=min(12, flat.size), replace=False):
            plus, minus = dict(values), dict(values)
            p, m = flat.copy(), flat.copy()
            p[idx] += eps
            m[idx] -= eps
            plus[name], minus[name] = p.reshape(v.shape), m.reshape(v.shape)
            numeric = (loss_of(plus) - loss_of(minus)) / (2 * eps)
            np.testing.assert_allclose(grad.reshape(-1)[idx], numeric, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name}[{idx}]")
