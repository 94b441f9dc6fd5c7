"""The legacy symbolic ``mx.rnn`` package: step-wise cells against numpy,
the fused cell against its unfused stack and numpy, the flat parameter
layout, weight packing, checkpoints, the sentence helpers and errors."""

import warnings

import numpy as np
import pytest

import oxnet as mx

RTOL, ATOL = 1e-4, 1e-5


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_step(mode, x, states, w):
    """One step of a cell in numpy; ``w``: i2h/h2h weight and bias."""
    h = states[0]
    i2h = x @ w["i2h_weight"].T + w["i2h_bias"]
    h2h = h @ w["h2h_weight"].T + w["h2h_bias"]
    if mode in ("rnn_tanh", "rnn_relu"):
        pre = i2h + h2h
        out = np.tanh(pre) if mode == "rnn_tanh" else np.maximum(pre, 0)
        return out, [out]
    if mode == "lstm":
        gi, gf, gc, go = np.split(i2h + h2h, 4, axis=1)
        c = _sigmoid(gf) * states[1] + _sigmoid(gi) * np.tanh(gc)
        out = _sigmoid(go) * np.tanh(c)
        return out, [out, c]
    ir, iz, i_n = np.split(i2h, 3, axis=1)
    hr, hz, h_n = np.split(h2h, 3, axis=1)
    r = _sigmoid(ir + hr)
    z = _sigmoid(iz + hz)
    n = np.tanh(i_n + r * h_n)
    out = (1 - z) * n + z * h
    return out, [out]


def _np_layer(mode, seq, w, hidden):
    """A layer over ``seq`` (T, N, C) from zero states: (T, N, hidden)."""
    n_states = 2 if mode == "lstm" else 1
    states = [np.zeros((seq.shape[1], hidden), np.float64) for _ in range(n_states)]
    outs = []
    for x in seq:
        out, states = _np_step(mode, x, states, w)
        outs.append(out)
    return np.stack(outs), states


def _gate_weights(args, prefix):
    return {k: args[prefix + k].asnumpy().astype(np.float64)
            for k in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")}


def _np_fused(mode, x_tnc, unpacked, hidden, num_layers, bidirectional, prefix=""):
    """The fused network in numpy from per-layer (packed per cell) weights."""
    seq = x_tnc.astype(np.float64)
    for layer in range(num_layers):
        fwd, _ = _np_layer(mode, seq, _gate_weights(unpacked, "%sl%d_" % (prefix, layer)), hidden)
        if bidirectional:
            bwd, _ = _np_layer(mode, seq[::-1], _gate_weights(unpacked, "%sr%d_" % (prefix, layer)), hidden)
            seq = np.concatenate([fwd, bwd[::-1]], axis=2)
        else:
            seq = fwd
    return seq


def _eval(sym, **arrays):
    return [o.asnumpy() for o in sym.eval(mx.cpu(), **{k: mx.nd.array(v) for k, v in arrays.items()})]


def _random_args(sym, rng, scale=0.5, **shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return {name: (rng.uniform(-scale, scale, size=shape).astype(np.float32))
            for name, shape in zip(sym.list_arguments(), arg_shapes) if name not in shapes}


CELLS = [
    ("rnn_tanh", lambda h: mx.rnn.RNNCell(h, activation="tanh", prefix="c_")),
    ("rnn_relu", lambda h: mx.rnn.RNNCell(h, activation="relu", prefix="c_")),
    ("lstm", lambda h: mx.rnn.LSTMCell(h, prefix="c_")),
    ("gru", lambda h: mx.rnn.GRUCell(h, prefix="c_")),
]


@pytest.mark.parametrize("mode,make", CELLS, ids=[c[0] for c in CELLS])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_cell_unroll_matches_numpy(mode, make, layout):
    rng = np.random.default_rng(0)
    T, N, I, H = 4, 3, 5, 6
    cell = make(H)
    outputs, states = cell.unroll(T, mx.sym.var("data"), layout=layout, merge_outputs=True)
    group = mx.sym.Group([outputs] + states)
    shape = (N, T, I) if layout == "NTC" else (T, N, I)
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    args = _random_args(group, rng, data=shape)
    got = _eval(group, data=x, **args)
    w = {k[len("c_"):]: v.astype(np.float64) for k, v in args.items()}
    x_tnc = x.transpose(1, 0, 2) if layout == "NTC" else x
    ref, ref_states = _np_layer(mode, x_tnc.astype(np.float64), w, H)
    if layout == "NTC":
        ref = ref.transpose(1, 0, 2)
    np.testing.assert_allclose(got[0], ref, rtol=RTOL, atol=ATOL)
    assert len(got) == 1 + len(ref_states)
    for g, r in zip(got[1:], ref_states):
        np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL)


def test_unroll_list_outputs_and_step_names():
    cell = mx.rnn.LSTMCell(3, prefix="lstm_")
    steps = [mx.sym.var("x%d" % t) for t in range(3)]
    outputs, states = cell.unroll(3, steps, merge_outputs=False)
    assert [o.name for o in outputs] == ["lstm_t0_out", "lstm_t1_out", "lstm_t2_out"]
    assert states[1].name == "lstm_t2_state"
    assert mx.sym.Group(outputs).list_arguments() == [
        "x0", "lstm_i2h_weight", "lstm_i2h_bias", "lstm_h2h_weight", "lstm_h2h_bias", "x1", "x2"]
    # values: stepping by hand gives the same as unroll
    rng = np.random.default_rng(1)
    xs = {"x%d" % t: rng.normal(size=(2, 4)).astype(np.float32) for t in range(3)}
    args = _random_args(outputs[-1], rng, **{k: v.shape for k, v in xs.items()})
    w = {k[len("lstm_"):]: v.astype(np.float64) for k, v in args.items()}
    ref, _ = _np_layer("lstm", np.stack([xs["x0"], xs["x1"], xs["x2"]]).astype(np.float64), w, 3)
    got = _eval(outputs[-1], **xs, **args)[0]
    np.testing.assert_allclose(got, ref[-1], rtol=RTOL, atol=ATOL)


def test_begin_state_and_state_info():
    cell = mx.rnn.LSTMCell(7, prefix="l_")
    assert cell.state_info == [{"shape": (0, 7), "__layout__": "NC"}] * 2
    assert cell.state_shape == [(0, 7), (0, 7)]
    states = cell.begin_state(func=mx.sym.Variable)
    assert [s.name for s in states] == ["l_begin_state_0", "l_begin_state_1"]
    assert states[0].attr("__layout__") == "NC"
    zeros = cell.begin_state()
    assert zeros[0].attr("__layout__") == "NC"
    assert [s.name for s in zeros] == ["l_begin_state_2", "l_begin_state_3"]
    fused = mx.rnn.FusedRNNCell(5, num_layers=3, mode="gru", bidirectional=True)
    assert fused.state_info == [{"shape": (6, 0, 5), "__layout__": "LNC"}]
    assert len(mx.rnn.FusedRNNCell(5, mode="lstm").begin_state()) == 2
    # states fed in as variables take the given values
    out, _ = cell.unroll(1, [mx.sym.var("x")], begin_state=states)
    rng = np.random.default_rng(2)
    h0, c0 = rng.normal(size=(2, 2, 7)).astype(np.float32)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    args = _random_args(out[0], rng, x=x.shape, l_begin_state_0=h0.shape, l_begin_state_1=c0.shape)
    w = {k[len("l_"):]: v.astype(np.float64) for k, v in args.items()}
    ref, _ = _np_step("lstm", x.astype(np.float64), [h0.astype(np.float64), c0.astype(np.float64)], w)
    got = _eval(out[0], x=x, l_begin_state_0=h0, l_begin_state_1=c0, **args)[0]
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, False), (2, True)])
def test_fused_matches_unfused_and_numpy(mode, num_layers, bidirectional):
    rng = np.random.default_rng(3)
    T, N, I, H = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(H, num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                                get_next_state=True, prefix="f_")
    stack = fused.unfuse()
    data = mx.sym.var("data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y_fused, states = fused.unroll(T, data, layout="NTC", merge_outputs=True)
    y_stack, _ = stack.unroll(T, data, layout="NTC", merge_outputs=True)
    assert len(states) == (2 if mode == "lstm" else 1)
    d = 2 if bidirectional else 1
    g = {"lstm": 4, "gru": 3}.get(mode, 1)
    size = d * g * H * (I + H + 2) + (num_layers - 1) * d * g * H * (d * H + H + 2)
    assert y_fused.infer_shape(data=(N, T, I))[0][1] == (size,)
    flat = rng.uniform(-0.5, 0.5, size=size).astype(np.float32)
    x = rng.uniform(-1, 1, size=(N, T, I)).astype(np.float32)
    got_fused = _eval(y_fused, data=x, f_parameters=flat)[0]
    unpacked = fused.unpack_weights({"f_parameters": mx.nd.array(flat)})
    packed = stack.pack_weights(unpacked)
    got_stack = _eval(y_stack, data=x, **{k: v.asnumpy() for k, v in packed.items()})[0]
    ref = _np_fused(mode, x.transpose(1, 0, 2), packed, H, num_layers, bidirectional, prefix="f_")
    ref = ref.transpose(1, 0, 2)
    assert got_fused.shape == (N, T, d * H)
    np.testing.assert_allclose(got_fused, ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got_stack, ref, rtol=RTOL, atol=ATOL)


def test_fused_layout_of_flat_vector():
    H, I = 2, 3
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True, prefix="")
    g, d = 4, 2
    size = d * g * H * (I + H + 2) + d * g * H * (d * H + H + 2)
    flat = np.arange(size, dtype=np.float32)
    args = cell.unpack_weights({"parameters": mx.nd.array(flat)})
    gates = ["_i", "_f", "_c", "_o"]
    expect_keys = {"%s%d_%s%s_%s" % (dr, layer, grp, gate, kind) for dr in "lr" for layer in (0, 1)
                   for grp in ("i2h", "h2h") for gate in gates for kind in ("weight", "bias")}
    assert set(args) == expect_keys
    # layer 0, left: i2h of the four gates, then h2h; then the right direction
    np.testing.assert_array_equal(args["l0_i2h_i_weight"].asnumpy(), flat[0:6].reshape(2, 3))
    np.testing.assert_array_equal(args["l0_i2h_f_weight"].asnumpy(), flat[6:12].reshape(2, 3))
    np.testing.assert_array_equal(args["l0_h2h_i_weight"].asnumpy(), flat[24:28].reshape(2, 2))
    np.testing.assert_array_equal(args["r0_i2h_i_weight"].asnumpy(), flat[40:46].reshape(2, 3))
    # layer 1 takes both directions' outputs: i2h weights are (H, 2H)
    np.testing.assert_array_equal(args["l1_i2h_i_weight"].asnumpy(), flat[80:88].reshape(2, 4))
    assert args["r1_h2h_o_weight"].shape == (2, 2)
    # all biases after all weights, in the same order
    n_weights = 2 * 40 + 2 * (g * H * (d * H) + g * H * H)
    np.testing.assert_array_equal(args["l0_i2h_i_bias"].asnumpy(), flat[n_weights:n_weights + 2])
    np.testing.assert_array_equal(args["l0_h2h_i_bias"].asnumpy(), flat[n_weights + 8:n_weights + 10])
    np.testing.assert_array_equal(args["r1_h2h_o_bias"].asnumpy(), flat[-2:])
    # unpacked arrays are copies
    args["l0_i2h_i_weight"][:] = -1
    assert float(mx.nd.array(flat)[0].asscalar()) == 0.0


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm", "gru"])
def test_pack_unpack_round_trip(mode):
    rng = np.random.default_rng(4)
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode=mode, bidirectional=True, prefix="x_")
    g = {"lstm": 4, "gru": 3}.get(mode, 1)
    size = 2 * g * 3 * (4 + 3 + 2) + 2 * g * 3 * (6 + 3 + 2)
    flat = rng.normal(size=size).astype(np.float32)
    extra = mx.nd.array([1.0, 2.0])
    unpacked = fused.unpack_weights({"x_parameters": mx.nd.array(flat), "other": extra})
    assert "x_parameters" not in unpacked and unpacked["other"] is extra
    repacked = fused.pack_weights(unpacked)
    assert set(repacked) == {"x_parameters", "other"}
    np.testing.assert_array_equal(repacked["x_parameters"].asnumpy(), flat)
    # through the unfused stack: per-gate -> per-cell -> per-gate
    stack = fused.unfuse()
    per_cell = stack.pack_weights(unpacked)
    assert "x_l0_i2h_weight" in per_cell and per_cell["x_l0_i2h_weight"].shape == (g * 3, 4)
    assert per_cell["x_r1_i2h_weight"].shape == (g * 3, 6)
    back = fused.pack_weights(stack.unpack_weights(per_cell))
    np.testing.assert_array_equal(back["x_parameters"].asnumpy(), flat)


def test_cell_unpack_weights_names():
    cell = mx.rnn.GRUCell(2, prefix="g_")
    w = np.arange(24, dtype=np.float32).reshape(6, 4)
    b = np.arange(6, dtype=np.float32)
    args = {"g_i2h_weight": mx.nd.array(w), "g_i2h_bias": mx.nd.array(b),
            "g_h2h_weight": mx.nd.array(w[:, :2]), "g_h2h_bias": mx.nd.array(b + 10)}
    out = cell.unpack_weights(args)
    assert sorted(out) == sorted("g_%s_%s_%s" % (grp, gate, kind) for grp in ("i2h", "h2h")
                                 for gate in "rzo" for kind in ("weight", "bias"))
    np.testing.assert_array_equal(out["g_i2h_z_weight"].asnumpy(), w[2:4])
    np.testing.assert_array_equal(out["g_h2h_o_bias"].asnumpy(), b[4:6] + 10)
    back = cell.pack_weights(out)
    for k, v in args.items():
        np.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())
    # an RNNCell has one "gate" named ''
    rnn = mx.rnn.RNNCell(2, prefix="r_")
    same = rnn.unpack_weights({"r_i2h_weight": mx.nd.ones((2, 3)), "r_i2h_bias": mx.nd.zeros((2,)),
                               "r_h2h_weight": mx.nd.ones((2, 2)), "r_h2h_bias": mx.nd.zeros((2,))})
    assert sorted(same) == ["r_h2h_bias", "r_h2h_weight", "r_i2h_bias", "r_i2h_weight"]


def test_fused_initializer_sets_forget_bias():
    mx.random.seed(5)
    H, I = 4, 3
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", forget_bias=2.5, prefix="")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = cell.unroll(2, mx.sym.var("data"), merge_outputs=True)
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (1, 2, I))], for_training=False)
    mod.init_params(mx.init.Uniform(0.1))
    args = cell.unpack_weights(mod.get_params()[0])
    for layer in (0, 1):
        np.testing.assert_array_equal(args["l%d_i2h_f_bias" % layer].asnumpy(), np.full(H, 2.5, np.float32))
        np.testing.assert_array_equal(args["l%d_h2h_f_bias" % layer].asnumpy(), np.full(H, 2.5, np.float32))
        np.testing.assert_array_equal(args["l%d_i2h_i_bias" % layer].asnumpy(), np.zeros(H, np.float32))
        w = args["l%d_h2h_c_weight" % layer].asnumpy()
        assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.01
    # LSTMCell's i2h bias starts with its forget bias too
    lcell = mx.rnn.LSTMCell(H, prefix="c_", forget_bias=3.0)
    out2, _ = lcell.unroll(2, mx.sym.var("data"), merge_outputs=True)
    mod2 = mx.mod.Module(out2, label_names=None)
    mod2.bind(data_shapes=[("data", (1, 2, I))], for_training=False)
    mod2.init_params(mx.init.Uniform(0.1))
    bias = mod2.get_params()[0]["c_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, np.r_[np.zeros(H), np.full(H, 3.0), np.zeros(2 * H)].astype(np.float32))


def test_module_fused_vs_stack_gradients():
    """The MXNet consistency check in small: same outputs and input
    gradients from the fused cell and its unfused stack through Module."""
    mx.random.seed(6)
    T, N, I, H = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode="gru", bidirectional=True, get_next_state=True, prefix="")
    stack = fused.unfuse()
    data = mx.sym.var("data")
    mods = []
    for cell in (fused, stack):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, _ = cell.unroll(T, data, layout="NTC", merge_outputs=True)
        mod = mx.mod.Module(y, label_names=None)
        mod.bind(data_shapes=[("data", (N, T, I))], inputs_need_grad=True,
                 grad_req={"data": "write", "parameters": "null"})
        mods.append(mod)
    mods[0].init_params()
    args, auxs = mods[0].get_params()
    mods[1].set_params(stack.pack_weights(fused.unpack_weights(args)), auxs)
    x = mx.nd.array(np.random.default_rng(6).uniform(size=(N, T, I)))
    dy = mx.nd.array(np.random.default_rng(7).uniform(size=(N, T, 2 * H)))
    res = []
    for mod in mods:
        mod.forward(mx.io.DataBatch(data=[x]), is_train=True)
        mod.backward(out_grads=[dy])
        res.append((mod.get_outputs()[0].asnumpy(), mod.get_input_grads()[0].asnumpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=RTOL, atol=ATOL)
    assert np.abs(res[0][1]).max() > 0
    # the fused module's parameters got no gradient array (grad_req null from the dict)
    assert mods[0]._exec_group.execs[0].grad_dict.get("parameters") is None


def test_module_input_grads_none_for_null_req():
    y = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(y, label_names=None)
    mod.bind(data_shapes=[("data", (1, 3))], inputs_need_grad=True, grad_req="null")
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((1, 3))]), is_train=True)
    mod.backward(out_grads=[mx.nd.ones((1, 2))])
    assert mod.get_input_grads() == [None]


def test_bidirectional_cell_values():
    rng = np.random.default_rng(8)
    T, N, I, H = 4, 2, 3, 3
    bi = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"),
                                  output_prefix="bi_")
    merged, states = bi.unroll(T, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    assert merged.name == "bi_out"
    assert len(states) == 2 and len(states[0]) == 1 and len(states[1]) == 1
    steps, _ = bi.unroll(T, mx.sym.var("data"), layout="TNC", merge_outputs=False)
    assert [s.name for s in steps] == ["bi_t%d" % t for t in range(T)]
    x = rng.normal(size=(T, N, I)).astype(np.float32)
    args = _random_args(merged, rng, data=x.shape)
    got = _eval(merged, data=x, **args)[0]
    got_steps = _eval(mx.sym.Group(steps), data=x, **args)
    lw = {k[2:]: v.astype(np.float64) for k, v in args.items() if k.startswith("l_")}
    rw = {k[2:]: v.astype(np.float64) for k, v in args.items() if k.startswith("r_")}
    fwd, _ = _np_layer("gru", x.astype(np.float64), lw, H)
    bwd, _ = _np_layer("gru", x[::-1].astype(np.float64), rw, H)
    ref = np.concatenate([fwd, bwd[::-1]], axis=2)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    for t in range(T):
        np.testing.assert_allclose(got_steps[t], ref[t], rtol=RTOL, atol=ATOL)


def test_sequential_dropout_residual_cells():
    rng = np.random.default_rng(9)
    T, N, H = 3, 2, 4
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.RNNCell(H, prefix="a_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="d_"))
    stack.add(mx.rnn.ResidualCell(mx.rnn.RNNCell(H, prefix="b_")))
    assert len(stack.state_info) == 2
    out, states = stack.unroll(T, mx.sym.var("data"), layout="NTC", merge_outputs=True)
    assert len(states) == 2
    x = rng.normal(size=(N, T, H)).astype(np.float32)
    args = _random_args(out, rng, data=x.shape)
    got = _eval(out, data=x, **args)[0]  # eval is inference: dropout is the identity
    aw = {k[2:]: v.astype(np.float64) for k, v in args.items() if k.startswith("a_")}
    bw = {k[2:]: v.astype(np.float64) for k, v in args.items() if k.startswith("b_")}
    h1, _ = _np_layer("rnn_tanh", x.transpose(1, 0, 2).astype(np.float64), aw, H)
    h2, _ = _np_layer("rnn_tanh", h1, bw, H)
    np.testing.assert_allclose(got, (h2 + h1).transpose(1, 0, 2), rtol=RTOL, atol=ATOL)
    # stepping the stack by hand gives the last step's output too
    stack.reset()
    st = stack.begin_state()
    for t in range(T):
        step_out, st = stack(mx.sym.var("x%d" % t), st)
    feeds = {"x%d" % t: x[:, t] for t in range(T)}
    got_step = _eval(step_out, **feeds, **args)[0]
    np.testing.assert_allclose(got_step, got[:, -1], rtol=RTOL, atol=ATOL)


def test_zoneout_cell_inference_is_base_cell():
    rng = np.random.default_rng(10)
    base = mx.rnn.RNNCell(3, prefix="z_")
    cell = mx.rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    out, _ = cell.unroll(3, mx.sym.var("data"), merge_outputs=True)
    x = rng.normal(size=(2, 3, 3)).astype(np.float32)
    args = _random_args(out, rng, data=x.shape)
    got = _eval(out, data=x, **args)[0]
    w = {k[2:]: v.astype(np.float64) for k, v in args.items()}
    ref, _ = _np_layer("rnn_tanh", x.transpose(1, 0, 2).astype(np.float64), w, 3)
    np.testing.assert_allclose(got, ref.transpose(1, 0, 2), rtol=RTOL, atol=ATOL)
    with pytest.raises(AssertionError):
        base.begin_state()  # the wrapped cell is used through the wrapper only
    assert len(cell.begin_state()) == 1


def test_params_sharing():
    params = mx.rnn.RNNParams("shared_")
    a = mx.rnn.LSTMCell(3, prefix="a_", params=params)
    b = mx.rnn.LSTMCell(3, prefix="b_", params=params)
    out_a, _ = a.unroll(2, mx.sym.var("data"))
    out_b, _ = b.unroll(2, mx.sym.var("data"))
    assert mx.sym.Group(out_a).list_arguments() == mx.sym.Group(out_b).list_arguments()
    assert "shared_i2h_weight" in mx.sym.Group(out_a).list_arguments()
    assert params.get("i2h_weight") is params.get("i2h_weight")
    seq = mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("s_"))
    seq.add(mx.rnn.GRUCell(2, prefix="g_"))
    assert sorted(seq.params._params) == ["g_h2h_bias", "g_h2h_weight", "g_i2h_bias", "g_i2h_weight"]
    cell = mx.rnn.GRUCell(2, prefix="h_")
    cell.params  # handed out: a parent with its own params may not take it over
    with pytest.raises(AssertionError):
        seq.add(cell)


def test_errors():
    fused = mx.rnn.FusedRNNCell(3, mode="gru")
    with pytest.raises(NotImplementedError):
        fused(mx.sym.var("x"), fused.begin_state())
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(2, prefix="l_"), mx.rnn.RNNCell(2, prefix="r_"))
    with pytest.raises(NotImplementedError):
        bi(mx.sym.var("x"), bi.begin_state())
    with pytest.raises(ValueError, match="does not fit"):
        fused.unpack_weights({"gru_parameters": mx.nd.zeros((10,))})
    with pytest.raises(ValueError, match="mode"):
        mx.rnn.FusedRNNCell(3, mode="elman")
    with pytest.raises(AssertionError):
        mx.rnn.ZoneoutCell(fused, 0.1, 0.1)
    with pytest.raises(AssertionError):
        mx.rnn.ZoneoutCell(bi, 0.1, 0.1)
    with pytest.raises(ValueError, match="3 steps"):
        mx.rnn.RNNCell(2).unroll(3, [mx.sym.var("a"), mx.sym.var("b")])
    with pytest.raises(ValueError):
        mx.rnn.RNNCell(2).unroll(3, None)
    with pytest.raises(AssertionError):
        mx.rnn.DropoutCell("0.5")


def test_fused_tnc_and_states():
    rng = np.random.default_rng(11)
    T, N, I, H = 3, 2, 3, 2
    fused = mx.rnn.FusedRNNCell(H, num_layers=1, mode="lstm", get_next_state=True, prefix="q_")
    outs, states = fused.unroll(T, mx.sym.var("data"), layout="TNC", merge_outputs=False)
    assert len(outs) == T and len(states) == 2
    assert states[0].attr("__layout__") == "LNC"
    flat = rng.uniform(-0.5, 0.5, size=4 * H * (I + H + 2)).astype(np.float32)
    x = rng.normal(size=(T, N, I)).astype(np.float32)
    got = _eval(mx.sym.Group(outs + states), data=x, q_parameters=flat)
    packed = fused.unfuse().pack_weights(fused.unpack_weights({"q_parameters": mx.nd.array(flat)}))
    ref, (h, c) = _np_layer("lstm", x.astype(np.float64), _gate_weights(packed, "q_l0_"), H)
    for t in range(T):
        np.testing.assert_allclose(got[t], ref[t], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got[T], h[None], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got[T + 1], c[None], rtol=RTOL, atol=ATOL)


def test_encode_sentences():
    sents = [["a", "b", "c"], ["b", "a", "d"]]
    coded, vocab = mx.rnn.encode_sentences(sents, invalid_label=-1, start_label=0)
    assert coded == [[0, 1, 2], [1, 0, 3]]
    assert vocab == {"\n": -1, "a": 0, "b": 1, "c": 2, "d": 3}
    coded, vocab = mx.rnn.encode_sentences(sents, invalid_label=1, start_label=0, invalid_key="<eos>")
    assert coded == [[0, 2, 3], [2, 0, 4]] and vocab["<eos>"] == 1
    with pytest.raises(AssertionError, match="Unknown token e"):
        mx.rnn.encode_sentences([["a", "e"]], vocab={"a": 0})
    vocab = {"a": 0, "b": 1}
    coded, vocab = mx.rnn.encode_sentences([["a", "x", "y", "b"]], vocab=vocab, unknown_token="<unk>")
    assert coded == [[0, 2, 2, 1]] and vocab["<unk>"] == 2


def test_bucket_sentence_iter():
    import random
    random.seed(0)
    np.random.seed(0)
    sentences = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [1, 2], [3, 4, 5], [6], [7, 8, 9, 1, 2, 3]]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 4], invalid_label=0)
    assert it.buckets == [2, 4] and it.default_bucket_key == 4
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (2, 4)
    assert it.provide_label[0].name == "softmax_label"
    batches = list(it)
    # bucket 2 holds [4,5], [1,2], [6] -> one full batch; bucket 4 holds 3 sentences -> one batch
    assert sorted(b.bucket_key for b in batches) == [2, 4]
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.shape == (2, b.bucket_key) and b.pad == 0
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        np.testing.assert_array_equal(label[:, -1], 0)
        assert b.provide_data[0].shape == data.shape
        rows = {tuple(int(v) for v in r if v != 0) for r in data}
        pool = {tuple(s) for s in sentences if len(s) <= b.bucket_key and (b.bucket_key == 2 or len(s) > 2)}
        assert rows <= pool
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert len(list(it)) == 2
    # time-major layout
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=3, buckets=[4], layout="TN")
    batches = list(it)  # six sentences fit in the bucket of 4: two batches of 3
    assert len(batches) == 2 and it.provide_data[0].shape == (4, 3)
    for batch in batches:
        assert batch.data[0].shape == (4, 3) and batch.bucket_key == 4
        np.testing.assert_array_equal(batch.label[0].asnumpy()[:-1], batch.data[0].asnumpy()[1:])
        np.testing.assert_array_equal(batch.label[0].asnumpy()[-1], -1)
    # default buckets: lengths that at least batch_size sentences have
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2)
    assert it.buckets == [2, 3]
    with pytest.raises(ValueError):
        mx.rnn.BucketSentenceIter(sentences, batch_size=2, layout="NC")
    with pytest.raises(ValueError):
        mx.rnn.BucketSentenceIter([[1, 2, 3]], batch_size=1, buckets=[2])


def test_rnn_checkpoint_round_trip(tmp_path):
    rng = np.random.default_rng(12)
    fused = mx.rnn.FusedRNNCell(3, num_layers=1, mode="gru", prefix="ck_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = fused.unroll(2, mx.sym.var("data"), merge_outputs=True)
    flat = rng.normal(size=3 * 3 * (4 + 3 + 2)).astype(np.float32)
    prefix = str(tmp_path / "model")
    mx.rnn.save_rnn_checkpoint(fused, prefix, 3, out, {"ck_parameters": mx.nd.array(flat)}, {})
    saved = mx.nd.load(prefix + "-0003.params")
    assert "arg:ck_l0_i2h_r_weight" in saved and "arg:ck_parameters" not in saved
    sym, args, auxs = mx.rnn.load_rnn_checkpoint([fused], prefix, 3)
    assert sym.list_arguments() == out.list_arguments() and auxs == {}
    np.testing.assert_array_equal(args["ck_parameters"].asnumpy(), flat)
    cb = mx.rnn.do_rnn_checkpoint(fused, prefix, period=2)
    cb(0, out, {"ck_parameters": mx.nd.array(flat)}, {})
    assert not (tmp_path / "model-0001.params").exists()
    cb(1, out, {"ck_parameters": mx.nd.array(flat)}, {})
    _, args2, _ = mx.rnn.load_rnn_checkpoint(fused, prefix, 2)
    np.testing.assert_array_equal(args2["ck_parameters"].asnumpy(), flat)


def test_op_keyword_double_underscore_is_attribute():
    z = mx.sym.zeros(shape=(0, 3), name="z", __layout__="NC")
    assert z.attr("__layout__") == "NC"
    y = mx.sym.FullyConnected(z, num_hidden=2, name="fc") + mx.sym.FullyConnected(
        mx.sym.var("x"), num_hidden=2, name="fx")
    assert y.infer_shape(x=(5, 4))[1] == [(5, 2)]


def test_gen_atomic_symbol():
    data, p, h0, h1 = (mx.sym.var(n) for n in ("data", "param", "h0", "h1"))
    s = mx.sym.RNN(data, p, h0, h1, state_size=4, num_layers=2, bidirectional=True, state_outputs=True,
                   mode="lstm", name="r")
    atomic = s[0]._gen_atomic_symbol()
    assert atomic.list_arguments() == ["data", "parameters", "state", "state_cell"]
    assert atomic.list_outputs() == ["r_output", "r_state_output", "r_statecell_output"]
    again = atomic(data=data, parameters=p, state=h0, state_cell=h1)
    assert again.list_arguments() == ["data", "param", "h0", "h1"]
    assert again.infer_shape(data=(3, 2, 5))[1] == [(3, 2, 8), (4, 2, 4), (4, 2, 4)]
    with mx.name.Prefix("pre_"):
        fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")._gen_atomic_symbol()
    assert fc.list_arguments() == ["data", "weight", "bias"]
    with pytest.raises(mx.MXNetError):
        data._gen_atomic_symbol()
