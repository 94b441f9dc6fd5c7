"""mx.contrib.amp: the amp_cast / amp_multicast operators, convert_symbol
against graphs MXNet 1.9.1 made (tests/fixtures/amp, written by
scripts/make_amp_fixtures.py), converted models' outputs, a model saved by
MXNet with its casts, and dynamic loss scaling in a Gluon training loop."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd
from oxnet.contrib import amp

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "amp")


def _fixture(name):
    return os.path.join(FIXTURES, name)


# ---------------------------------------------------------------------------
# operators

def test_amp_cast_values_dtypes_and_gradient():
    x = mx.nd.array([1.5, 65504.0, 1e6, 0.1])
    y = mx.nd.amp_cast(x, dtype="float16")
    assert y.dtype == np.float16
    # float16 rounds 1e6 past its largest value (65504) to infinity
    np.testing.assert_array_equal(y.asnumpy().astype(np.float64), [1.5, 65504.0, np.inf, 0.0999755859375])
    b = mx.nd.amp_cast(x, dtype="bfloat16")
    assert b.dtype == "bfloat16"
    # bfloat16 keeps 8 significant bits: 0.1 -> 0.10009765625 (round to nearest even)
    np.testing.assert_array_equal(b.astype("float32").asnumpy(), [1.5, 65536.0, 999424.0, 0.10009765625])
    # integers and float64 pass through, as in MXNet 1.9.1
    i = mx.nd.amp_cast(mx.nd.array([3, 4], dtype="int32"), dtype="float16")
    assert i.dtype == np.int32 and i.asnumpy().tolist() == [3, 4]
    d = mx.nd.amp_cast(mx.nd.array([0.1], dtype="float64"), dtype="float16")
    assert d.dtype == np.float64 and d.asnumpy()[0] == 0.1
    # float32 -> float64 is a cast (float32 is an AMP dtype)
    assert mx.nd.amp_cast(mx.nd.array([1.0]), dtype="float64").dtype == np.float64
    # the gradient is the head gradient cast back to the input's dtype
    x = mx.nd.array([0.5, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        h = mx.nd.amp_cast(x, dtype="float16")
        out = (h * mx.nd.array([1.0, 2.0, 3.0], dtype="float16")).sum()
    out.backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.asnumpy(), [1.0, 2.0, 3.0])


def test_amp_multicast_widest_narrowest_and_gradient():
    h = mx.nd.array([1.5, 2.0], dtype="float16")
    f = mx.nd.array([0.1, 3.0])
    i = mx.nd.array([7, 8], dtype="int32")
    outs = mx.nd.amp_multicast(h, f, i, num_outputs=3)
    assert [o.dtype for o in outs] == [np.float32, np.float32, np.int32]
    np.testing.assert_array_equal(outs[0].asnumpy(), [1.5, 2.0])
    outs = mx.nd.amp_multicast(h, f, num_outputs=2, cast_narrow=True)
    assert [o.dtype for o in outs] == [np.float16, np.float16]
    np.testing.assert_array_equal(outs[1].asnumpy(), np.array([0.1, 3.0], np.float32).astype(np.float16))
    # MXNet 1.9.1's rule: float64 is not cast, but first it sets the width
    d = mx.nd.array([4.0], dtype="float64")
    assert [o.dtype for o in mx.nd.amp_multicast(d, h[:1], num_outputs=2)] == [np.float64, np.float64]
    assert [o.dtype for o in mx.nd.amp_multicast(h[:1], d, num_outputs=2)] == [np.float16, np.float64]
    # gradients come back in each input's dtype
    h.attach_grad()
    f.attach_grad()
    with autograd.record():
        a, b = mx.nd.amp_multicast(h, f, num_outputs=2)
        loss = (a * 2 + b * 3).sum()
    loss.backward()
    assert h.grad.dtype == np.float16 and f.grad.dtype == np.float32
    np.testing.assert_array_equal(h.grad.asnumpy(), [2.0, 2.0])
    np.testing.assert_array_equal(f.grad.asnumpy(), [3.0, 3.0])
    with pytest.raises(mx.base.MXNetError, match="num_outputs"):
        mx.nd.amp_multicast(h, num_outputs=0)


def test_amp_symbols_infer_shape_and_type():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    c = mx.sym.amp_multicast(x, y, num_outputs=2, name="mc")
    assert c.list_arguments() == ["x", "y"] and len(c) == 2
    _, out_shapes, _ = c.infer_shape(x=(2, 3), y=(4,))
    assert out_shapes == [(2, 3), (4,)]
    _, out_types, _ = c.infer_type(x=np.float16, y=np.float32)
    assert out_types == [np.float32, np.float32]
    _, out_types, _ = mx.sym.amp_cast(x, dtype="float16").infer_type(x=np.float32)
    assert out_types == [np.float16]


# ---------------------------------------------------------------------------
# convert_symbol against MXNet 1.9.1

def _net_cnn():
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.Activation(x, act_type="relu", name="act")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    f = mx.sym.Flatten(x, name="flat")
    a = mx.sym.Activation(mx.sym.FullyConnected(f, num_hidden=8, name="fc1"), act_type="softrelu", name="act2")
    b = mx.sym.FullyConnected(f, num_hidden=8, name="fc2")
    s = mx.sym.elemwise_add(a, b, name="add")
    y = mx.sym.FullyConnected(s, num_hidden=4, name="fc3")
    return mx.sym.softmax(y, name="out")


def _net_split():
    data = mx.sym.var("data")
    parts = mx.sym.split(data, num_outputs=2, axis=1, name="split")
    a = mx.sym.FullyConnected(parts[0], num_hidden=3, name="fca")
    b = mx.sym.FullyConnected(mx.sym.exp(parts[1], name="ex"), num_hidden=3, name="fcb")
    c = mx.sym.broadcast_add(a, b, name="badd")
    d = mx.sym.broadcast_mul(c, mx.sym.var("scale"), name="bmul")
    return mx.sym.Group([mx.sym.tanh(d, name="th"), mx.sym.relu(a, name="rl")])


def _describe(sym):
    graph = json.loads(sym.tojson())
    nodes = graph["nodes"]
    consumers = {}
    for n in nodes:
        for e in n["inputs"]:
            if nodes[e[0]]["op"] in ("amp_cast", "amp_multicast"):
                consumers.setdefault(nodes[e[0]]["name"], []).append([n["name"], e[1]])
    amp_nodes = sorted(json.dumps({"op": n["op"], "name": n["name"], "attrs": n.get("attrs", {}),
                                   "inputs": [[nodes[e[0]]["name"], e[1]] for e in n["inputs"]],
                                   "consumers": sorted(consumers.get(n["name"], []))}, sort_keys=True)
                       for n in nodes if n["op"] in ("amp_cast", "amp_multicast"))
    return {"amp_nodes": amp_nodes, "heads": [[nodes[h[0]]["name"], h[1]] for h in graph["heads"]],
            "dtypes": {n["name"]: n.get("attrs", {}).get("__dtype__") for n in nodes if n["op"] == "null"}}


def _convert(key):
    net, target, how = key.split("/")
    sym = {"cnn": _net_cnn, "split": _net_split}[net]()
    if how.startswith("optional="):
        return amp.convert_symbol(sym, target_dtype=target, cast_optional_params=how.endswith("True"),
                                  data_names=["data"])
    if how == "default_data_names":
        return amp.convert_symbol(sym, target_dtype=target)
    if how == "excluded":
        return amp.convert_symbol(sym, target_dtype=target, excluded_sym_names=["fc2", "conv"], data_names=["data"])
    assert how == "own_lists"
    return amp.convert_symbol(sym, target_dtype=target, target_dtype_ops=["FullyConnected"],
                              fp32_ops=["Convolution"], conditional_fp32_ops=[], data_names=["data"])


with open(_fixture("convert_symbol.json"), encoding="utf-8") as _f:
    _REFERENCE = json.load(_f)


@pytest.mark.parametrize("key", sorted(_REFERENCE))
def test_convert_symbol_matches_mxnet(key):
    want = _REFERENCE[key]
    got = _describe(_convert(key))
    want_nodes = sorted(json.dumps(n, sort_keys=True) for n in want["amp_nodes"])
    assert got["amp_nodes"] == want_nodes
    assert got["heads"] == want["heads"]
    assert got["dtypes"] == want["dtypes"]


def test_convert_symbol_counts_on_the_cnn():
    conv = amp.convert_symbol(_net_cnn(), target_dtype="float16", data_names=["data"])
    graph = json.loads(conv.tojson())
    casts = [n for n in graph["nodes"] if n["op"] == "amp_cast"]
    # to float16: data, the weights and biases of conv, fc1, fc2, fc3, and
    # the sum (fc3's input); bn, relu, pool and flatten keep float16, so fc1
    # and fc2 read it uncast. To float32: fc1's output (softrelu is float32),
    # fc2's (the sum's other input is float32: the widest) and fc3's (softmax)
    assert len([c for c in casts if c["attrs"]["dtype"] == "float16"]) == 10
    assert sorted(c["name"] for c in casts if c["attrs"]["dtype"] == "float32") == [
        "fc1_output_amp_cast_float32", "fc2_output_amp_cast_float32", "fc3_output_amp_cast_float32"]
    assert not [n for n in graph["nodes"] if n["op"] == "amp_multicast"]


def test_convert_symbol_argument_errors():
    sym = _net_cnn()
    with pytest.raises(ValueError, match="target_dtype"):
        amp.convert_symbol(sym, target_dtype="float64")
    with pytest.raises(TypeError, match="Symbol"):
        amp.convert_symbol("net")
    with pytest.raises(ValueError, match="two or more lists"):
        amp.convert_symbol(sym, target_dtype_ops=["FullyConnected"], fp32_ops=["FullyConnected"])
    with pytest.raises(ValueError, match="none of"):
        amp.convert_symbol(sym, target_dtype_ops=["no_such_op"])


def test_lists_name_oxnet_operators():
    from oxnet import _oxnet
    names = set()
    for name, aliases, *_ in _oxnet.list_ops():
        names.update([name, *aliases])
    for target in ("float16", "bfloat16"):
        for lst in (amp.list_lp16_ops(target), amp.list_fp32_ops(target), amp.list_lp16_fp32_ops(target),
                    amp.list_widest_type_cast(target), amp.list_loss_output_functions(target)):
            assert set(lst) <= names
        assert {c[0] for c in amp.list_conditional_fp32_ops(target)} <= names
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert amp.list_fp16_ops() == amp.list_lp16_ops("float16")
    assert amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("float16")
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert "elemwise_add" in amp.list_widest_type_cast("float16")


# ---------------------------------------------------------------------------
# converted models run

def _cnn_params(rng):
    sym = _net_cnn()
    shapes, _, aux_shapes = sym.infer_shape(data=(2, 3, 8, 8))
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in zip(sym.list_arguments(), shapes) if n != "data"}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.0, s)) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return sym, args, aux


@pytest.mark.parametrize("target", ["bfloat16", "float16"])
def test_convert_model_outputs_close_to_float32(target):
    rng = np.random.RandomState(3)
    sym, args, aux = _cnn_params(rng)
    data = mx.nd.array(rng.uniform(-1, 1, (2, 3, 8, 8)))
    want = sym.bind(mx.cpu(), dict(args, data=data), aux_states=dict(aux)).forward()[0].asnumpy()
    csym, cargs, caux = amp.convert_model(sym, dict(args), dict(aux), target_dtype=target,
                                          cast_optional_params=True)
    assert cargs["fc1_weight"].dtype == (np.float16 if target == "float16" else "bfloat16")
    assert caux["bn_moving_mean"].dtype == np.float32
    got = csym.bind(mx.cpu(), dict(cargs, data=data), aux_states=dict(caux)).forward()[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=0, atol=1e-2 if target == "bfloat16" else 2e-3)


def test_model_saved_by_mxnet_with_amp_casts_loads_and_runs():
    sym = mx.sym.load(_fixture("cnn_bf16-symbol.json"))
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
    assert ops.count("amp_cast") == 15 and ops.count("amp_multicast") == 0
    params = mx.nd.load(_fixture("cnn_bf16-0000.params"))
    io = np.load(_fixture("cnn_bf16-io.npz"))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    args["data"] = mx.nd.array(io["data"])
    out = sym.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    np.testing.assert_allclose(out, io["bf16_out"], rtol=0, atol=2e-3)
    np.testing.assert_allclose(out, io["fp32_out"], rtol=0, atol=1e-2)
    # without its casts it is the float32 model again
    plain = amp.remove_amp_cast(sym)
    assert "amp_cast" not in plain.tojson()
    out = plain.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    np.testing.assert_allclose(out, io["fp32_out"], rtol=1e-5, atol=1e-6)


def test_convert_hybrid_block_runs():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(8, activation="relu"), mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (4, 5)))
    want = net(x).asnumpy()
    block = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.cpu())
    got = block(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=0, atol=3e-2)


# ---------------------------------------------------------------------------
# loss scaling

def test_loss_scaler_rules():
    class P:  # the part of a Parameter the scaler reads
        grad_req = "write"

        def __init__(self, g):
            self._g = g

        def list_grad(self):
            return [self._g]

    ok, bad = P(mx.nd.ones(3)), P(mx.nd.array([1.0, np.inf, 0.0]))
    s = amp.LossScaler()
    assert s.loss_scale == 2.0 ** 16
    assert s.has_overflow([ok, bad]) is True
    assert s.loss_scale == 2.0 ** 16  # the halving applies from the next step
    assert s.has_overflow([ok]) is False and s.loss_scale == 2.0 ** 15
    s._unskipped = 1998
    assert s.has_overflow([ok]) is False
    assert s.has_overflow([ok]) is False and s._next_loss_scale == 2.0 ** 16  # doubled after 2000 clean steps
    assert s.has_overflow([ok]) is False and s.loss_scale == 2.0 ** 16
    assert amp.LossScaler().has_overflow([P(mx.nd.array([np.nan]))]) is True


def test_init_trainer_needs_a_trainer():
    with pytest.raises((TypeError, mx.base.MXNetError)):
        amp.init_trainer(mx.optimizer.SGD())
    with pytest.raises(mx.base.MXNetError, match="init_trainer"):
        with amp.scale_loss(mx.nd.ones(1), object()):
            pass


_TRAINING_SCRIPT = textwrap.dedent("""
    import numpy as np
    import oxnet as mx
    from oxnet import autograd, gluon
    from oxnet.contrib import amp

    amp.init(target_dtype="float16")
    # init wraps the operator functions: FullyConnected now runs in float16
    y = mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.zeros(4), num_hidden=4)
    assert y.dtype == np.float16, y.dtype
    s = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2, name="fc")
    ops = [n["op"] for n in __import__("json").loads(s.tojson())["nodes"]]
    assert ops.count("amp_cast") == 3, ops
    assert s.list_arguments() == ["x", "fc_weight", "fc_bias"], s.list_arguments()
    # float32 operators cast float16 inputs back
    assert mx.nd.exp(mx.nd.ones(2, dtype="float16")).dtype == np.float32
    # widest-type operators get one dtype
    assert (mx.nd.elemwise_add(mx.nd.ones(2, dtype="float16"), mx.nd.ones(2))).dtype == np.float32

    rng = np.random.RandomState(0)
    X = mx.nd.array(rng.uniform(-1, 1, (32, 4)))
    Y = mx.nd.array(X.asnumpy() @ np.array([[1.0], [-2.0], [0.5], [3.0]]))
    net = gluon.nn.Dense(1)
    net.initialize(mx.init.Zero())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2})
    amp.init_trainer(trainer)
    scaler = trainer._amp_loss_scaler
    loss_fn = gluon.loss.L2Loss()
    losses = []
    for step in range(40):
        with autograd.record():
            loss = loss_fn(net(X).astype("float32"), Y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(32)
        losses.append(float(loss.mean().asnumpy().item()))
    assert losses[-1] < 0.1 * losses[0], losses
    # float16 gradients of a loss scaled by 2**16 overflow: the first steps
    # were skipped (the loss did not move) while the scale was halved
    assert losses[1] == losses[0] and scaler.loss_scale < 2.0 ** 16, (losses, scaler.loss_scale)
    next_scale = scaler._next_loss_scale
    # an inf gradient: the step is skipped and the scale halved
    before = {k: v.data().asnumpy().copy() for k, v in net.collect_params().items()}
    with autograd.record():
        loss = loss_fn(net(X).astype("float32"), Y)
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    net.weight.grad()[:] = np.inf
    trainer.step(32)
    for k, v in net.collect_params().items():
        assert np.array_equal(v.data().asnumpy(), before[k]), k
    assert scaler.loss_scale == next_scale and scaler._next_loss_scale == next_scale / 2
    with autograd.record():
        loss = loss_fn(net(X).astype("float32"), Y)
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(32)
    assert scaler.loss_scale == next_scale / 2
    assert not np.array_equal(net.weight.data().asnumpy(), before[net.weight.name])
    # unscale divides the gradients by the scale now
    with autograd.record():
        loss = loss_fn(net(X).astype("float32"), Y)
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    g_scaled = net.weight.grad().asnumpy().copy()
    amp.unscale(trainer)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), g_scaled / scaler.loss_scale, rtol=1e-6)
    assert trainer._scale == 1.0
    print("OK")
""")


def test_init_and_training_loop_with_loss_scaling():
    # amp.init rewrites mx.nd / mx.sym for the whole process: run it apart
    proc = subprocess.run([sys.executable, "-c", _TRAINING_SCRIPT], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_symbol_save_leaves_out_amp_casts_unless_asked(tmp_path):
    x = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.amp_cast(x, dtype="float16"), num_hidden=2, name="fc")
    net.save(str(tmp_path / "plain.json"))
    net.save(str(tmp_path / "kept.json"), remove_amp_cast=False)
    assert "amp_cast" not in (tmp_path / "plain.json").read_text()
    assert "amp_cast" in (tmp_path / "kept.json").read_text()
    assert mx.sym.load(str(tmp_path / "plain.json")).list_arguments() == net.list_arguments()
    assert "amp_cast" not in net.tojson(remove_amp_cast=True)
    assert "amp_cast" in net.tojson(remove_amp_cast=False) and "amp_cast" in net.tojson()
