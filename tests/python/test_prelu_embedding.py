"""LeakyReLU (act_type prelu, rrelu and the others) and Embedding: values and
gradients against numpy, the Symbol API (names, infer_shape, infer_type,
executors), and outputs and gradients of MXNet 1.9.1 itself on the same
inputs (run by subprocess in .venv-mxnet; skipped when it is missing)."""

import pathlib
import subprocess

import numpy as np
import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"
RRELU_MEAN = (0.125 + 0.334) / 2


def _expand_gamma(dshape, gshape):
    """Gamma's shape laid over the data's axes 0 and 1 (MXNet's rule), for the numpy reference."""
    out = [1] * len(dshape)
    left = len(gshape)
    for i in reversed(range(min(2, len(dshape)))):
        if left and gshape[left - 1] in (dshape[i], 1):
            out[i] = gshape[left - 1]
            left -= 1
    assert left == 0
    return tuple(out)


def _numpy_prelu(x, gamma, head):
    g = gamma.reshape(_expand_gamma(x.shape, gamma.shape))
    y = np.where(x > 0, x, g * x)
    dx = head * np.where(x > 0, 1.0, g)
    per_elem = head * np.minimum(x, 0)
    axes = tuple(i for i, e in enumerate(g.shape) if e == 1)
    dgamma = per_elem.sum(axis=axes, keepdims=True).reshape(gamma.shape)
    return y, dx, dgamma


def _numpy_embedding(idx, weight, head):
    rows = np.clip(np.trunc(idx).astype(np.int64), 0, weight.shape[0] - 1)
    y = weight[rows]
    dw = np.zeros_like(weight)
    np.add.at(dw, rows.reshape(-1), head.reshape(-1, weight.shape[1]))
    return y, dw


# ----- prelu ------------------------------------------------------------------------

PRELU_CASES = [((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((2, 3, 4), (2,)), ((2, 3), (2, 3)),
               ((4, 3, 2, 2), (3,)), ((4, 3, 2, 2), (4, 3)), ((5,), (5,)), ((5,), (1,))]


@pytest.mark.parametrize("dshape,gshape", PRELU_CASES)
def test_prelu_values_and_gradients_match_numpy(dshape, gshape):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, dshape)
    gamma = rng.uniform(0.05, 0.5, gshape)
    head = rng.uniform(-1, 1, dshape)
    want_y, want_dx, want_dg = _numpy_prelu(x, gamma, head)
    xs, gs = mx.nd.array(x, dtype="float64"), mx.nd.array(gamma, dtype="float64")
    xs.attach_grad()
    gs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.LeakyReLU(xs, gamma=gs, act_type="prelu")
    y.backward(mx.nd.array(head, dtype="float64"))
    np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-12)
    np.testing.assert_allclose(xs.grad.asnumpy(), want_dx, rtol=1e-12)
    np.testing.assert_allclose(gs.grad.asnumpy(), want_dg, rtol=1e-10, atol=1e-12)


def test_prelu_errors_name_the_problem():
    x = mx.nd.ones((2, 3, 4))
    with pytest.raises(mx.base.MXNetError, match="gamma"):
        mx.nd.LeakyReLU(x, mx.nd.ones((4,)), act_type="prelu")
    with pytest.raises(mx.base.MXNetError, match="LeakyReLU"):
        mx.nd.LeakyReLU(x, act_type="prelu")
    with pytest.raises(mx.base.MXNetError, match="act_type"):
        mx.nd.LeakyReLU(x, act_type="prelux")


def test_prelu_symbol_names_and_inference():
    data = mx.sym.var("data")
    act = mx.sym.LeakyReLU(data, act_type="prelu", name="act")
    assert act.list_arguments() == ["data", "act_gamma"]
    assert act.list_outputs() == ["act_output"]
    args, outs, aux = act.infer_shape(data=(4, 16, 5, 5))
    assert args == [(4, 16, 5, 5), (16,)] and outs == [(4, 16, 5, 5)] and aux == []
    args, outs, _ = act.infer_shape(data=(2, 3), act_gamma=(1,))
    assert args == [(2, 3), (1,)]
    types, out_types, _ = act.infer_type(data="float64")
    assert types == [np.float64, np.float64] and out_types == [np.float64]
    with pytest.raises(mx.base.MXNetError, match="gamma"):
        act.infer_shape(data=(2, 3), act_gamma=(4,))
    # the other act_types keep one argument
    assert mx.sym.LeakyReLU(data, act_type="leaky", name="l").list_arguments() == ["data"]


# ----- rrelu ------------------------------------------------------------------------

def test_rrelu_outputs_and_modes():
    x = mx.nd.array([[-1.0, 2.0, 0.0, -4.0]])
    y, mask = mx.nd.LeakyReLU(x, act_type="rrelu")  # MXNet shows the mask too
    np.testing.assert_allclose(y.asnumpy(), [[-RRELU_MEAN, 2.0, 0.0, -4 * RRELU_MEAN]], rtol=1e-6)
    np.testing.assert_allclose(mask.asnumpy(), np.full((1, 4), RRELU_MEAN), rtol=1e-6)
    big = mx.nd.array(-np.ones((50, 40)))
    big.attach_grad()
    with mx.autograd.record():
        y, mask = mx.nd.LeakyReLU(big, act_type="rrelu", lower_bound=0.2, upper_bound=0.4)
    y.backward()
    m = mask.asnumpy()
    assert ((m >= 0.2) & (m < 0.4)).all() and abs(m.mean() - 0.3) < 0.01 and m.std() > 0.03
    np.testing.assert_allclose(y.asnumpy(), -m, rtol=1e-6)
    np.testing.assert_allclose(big.grad.asnumpy(), m, rtol=1e-6)
    sym = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="rrelu", name="r")
    assert sym.list_outputs() == ["r_output", "r_mask"]
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 3), (2, 3)]


# ----- Embedding --------------------------------------------------------------------

def test_embedding_values_clip_and_gradient():
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[-1.5, 0.7], [3.9, 7.0]], dtype=np.float32)
    head = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    want_y, want_dw = _numpy_embedding(idx, weight, head)
    w = mx.nd.array(weight)
    d = mx.nd.array(idx)
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Embedding(d, w, input_dim=4, output_dim=3)
    y.backward(mx.nd.array(head))
    np.testing.assert_array_equal(y.asnumpy(), want_y)
    np.testing.assert_array_equal(w.grad.asnumpy(), want_dw)
    np.testing.assert_array_equal(want_dw[0], [3, 5, 7])  # two clipped lookups of row 0 added up
    # integer indices, the weight given by keyword, the weight's dtype wins
    y = mx.nd.Embedding(mx.nd.array([1, 3], dtype="int32"), weight=w.astype("float64"), input_dim=4,
                        output_dim=3, sparse_grad=True)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), weight[[1, 3]])
    with pytest.raises(mx.base.MXNetError, match="weight"):
        mx.nd.Embedding(d, w, input_dim=5, output_dim=3)
    with pytest.raises(mx.base.MXNetError, match="input_dim"):
        mx.nd.Embedding(d, w, output_dim=3)


def test_embedding_symbol_inference_and_executor():
    data = mx.sym.var("data")
    emb = mx.sym.Embedding(data, input_dim=6, output_dim=4, name="emb")
    assert emb.list_arguments() == ["data", "emb_weight"]
    args, outs, _ = emb.infer_shape(data=(2, 3))
    assert args == [(2, 3), (6, 4)] and outs == [(2, 3, 4)]
    types, out_types, _ = emb.infer_type(data="int32")
    assert types == [np.int32, np.float32] and out_types == [np.float32]
    f16 = mx.sym.Embedding(data, input_dim=6, output_dim=4, dtype="float16", name="e16")
    assert f16.infer_type(data="int32")[1] == [np.float16]
    assert f16.infer_type(data="int32", e16_weight="float64")[1] == [np.float64]
    # a graph: embedding then prelu, whose gamma's shape (3,) comes from the sequence axis
    net = mx.sym.LeakyReLU(emb, act_type="prelu", name="act")
    args, outs, _ = net.infer_shape(data=(2, 3))
    assert dict(zip(net.list_arguments(), args)) == {"data": (2, 3), "emb_weight": (6, 4), "act_gamma": (3,)}
    exe = net.simple_bind(mx.cpu(), data=(2, 3))
    rng = np.random.RandomState(3)
    values = {"data": np.array([[0, 5, 9], [2, 2, -1]], dtype=np.float32),
              "emb_weight": rng.uniform(-1, 1, (6, 4)).astype(np.float32),
              "act_gamma": np.array([0.1, 0.2, 0.3], dtype=np.float32)}
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    head = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.array(head))
    e, _ = _numpy_embedding(values["data"], values["emb_weight"], np.zeros((2, 3, 4), np.float32))
    y, de, dg = _numpy_prelu(e, values["act_gamma"], head)
    _, dw_from_e = _numpy_embedding(values["data"], values["emb_weight"], de)
    np.testing.assert_allclose(out.asnumpy(), y, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["emb_weight"].asnumpy(), dw_from_e, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["act_gamma"].asnumpy(), dg, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(exe.grad_dict["data"].asnumpy(), np.zeros((2, 3)))


# ----- against MXNet 1.9.1 ----------------------------------------------------------

MXNET_SCRIPT = r"""
import sys
import numpy as np
import mxnet as mx

inp = dict(np.load(sys.argv[1]))
out = {}

def run(key, op_inputs, head, grads=None, **kwargs):
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in op_inputs]
    grads = grads or range(len(arrays))
    for i in grads:
        arrays[i].attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, kwargs.pop("op"))(*arrays, **kwargs)
    if isinstance(y, list):
        y = y[0]
    y.backward(mx.nd.array(head, dtype=head.dtype))
    out[key + ":y"] = y.asnumpy()
    for i in grads:
        out[key + ":g%d" % i] = arrays[i].grad.asnumpy()

n = int(inp["n_prelu"])
for i in range(n):
    run("prelu%d" % i, [inp["prelu%d:x" % i], inp["prelu%d:gamma" % i]], inp["prelu%d:head" % i],
        op="LeakyReLU", act_type="prelu")
for act, slope in [("leaky", 0.1), ("elu", 0.7), ("selu", 0.25), ("gelu", 0.25)]:
    run(act, [inp["act:x"]], inp["act:head"], op="LeakyReLU", act_type=act, slope=slope)
with mx.autograd.predict_mode():
    out["rrelu:y"] = mx.nd.LeakyReLU(mx.nd.array(inp["act:x"]), act_type="rrelu", lower_bound=0.2,
                                     upper_bound=0.5)[0].asnumpy()
for name in ["emb_f", "emb_i"]:
    # MXNet refuses to differentiate Embedding's indices (oxnet gives them zeros)
    run(name, [inp[name + ":idx"], inp["emb:w"]], inp["emb:head"], grads=[1], op="Embedding", input_dim=5,
        output_dim=3)

# shape inference and an executor over both operators
data = mx.sym.var("data")
net = mx.sym.LeakyReLU(mx.sym.Embedding(data, input_dim=5, output_dim=3, name="emb"), act_type="prelu",
                       name="act")
args, outs, _ = net.infer_shape(data=(2, 4))
for name, shape in zip(net.list_arguments(), args):
    out["shape:" + name] = np.array(shape)
exe = net.simple_bind(mx.cpu(), grad_req={"data": "null", "emb_weight": "write", "act_gamma": "write"},
                      data=(2, 4))
exe.arg_dict["data"][:] = inp["emb_f:idx"]
exe.arg_dict["emb_weight"][:] = inp["emb:w"]
exe.arg_dict["act_gamma"][:] = inp["exe:gamma"]
out["exe:y"] = exe.forward(is_train=True)[0].asnumpy()
exe.backward(mx.nd.array(inp["emb:head"]))
out["exe:grad:emb_weight"] = exe.grad_dict["emb_weight"].asnumpy()
# the same model imperatively (MXNet's executor gets gamma's gradient wrong in this graph)
w, g = mx.nd.array(inp["emb:w"]), mx.nd.array(inp["exe:gamma"])
w.attach_grad()
g.attach_grad()
with mx.autograd.record():
    e = mx.nd.Embedding(mx.nd.array(inp["emb_f:idx"]), w, input_dim=5, output_dim=3)
    y = mx.nd.LeakyReLU(e, g, act_type="prelu")
y.backward(mx.nd.array(inp["emb:head"]))
out["imp:y"], out["imp:grad:emb_weight"], out["imp:grad:act_gamma"] = y.asnumpy(), w.grad.asnumpy(), g.grad.asnumpy()
np.savez(sys.argv[2], **out)
"""


def _oxnet_run(op_inputs, head, **kwargs):
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in op_inputs]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, kwargs.pop("op"))(*arrays, **kwargs)
    if isinstance(y, list):
        y = y[0]
    y.backward(mx.nd.array(head, dtype=head.dtype))
    return y.asnumpy(), [a.grad.asnumpy() for a in arrays]


def test_outputs_and_gradients_match_mxnet(tmp_path):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    rng = np.random.RandomState(11)
    inp = {"n_prelu": np.array(len(PRELU_CASES))}
    for i, (dshape, gshape) in enumerate(PRELU_CASES):
        inp[f"prelu{i}:x"] = rng.uniform(-1, 1, dshape).astype(np.float32)
        inp[f"prelu{i}:gamma"] = rng.uniform(0.05, 0.5, gshape).astype(np.float32)
        inp[f"prelu{i}:head"] = rng.uniform(-1, 1, dshape).astype(np.float32)
    inp["act:x"] = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    inp["act:head"] = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
    inp["emb:w"] = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    inp["emb_f:idx"] = np.array([[0, 4.7, -2, 9], [1.2, 1, 3, 4]], dtype=np.float32)
    inp["emb_i:idx"] = np.array([[0, 4, 4, 2], [1, 1, 3, 0]], dtype=np.int32)
    inp["emb:head"] = rng.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    inp["exe:gamma"] = rng.uniform(0.05, 0.5, (4,)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", **inp)
    result = subprocess.run([str(MXNET_PYTHON), "-c", MXNET_SCRIPT, str(tmp_path / "inputs.npz"),
                             str(tmp_path / "mxnet.npz")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ref = dict(np.load(tmp_path / "mxnet.npz"))

    def check(key, y, grads):
        np.testing.assert_allclose(y, ref[key + ":y"], rtol=1e-5, atol=1e-6, err_msg=key)
        for i, g in enumerate(grads):
            if f"{key}:g{i}" not in ref:
                np.testing.assert_array_equal(g, 0, err_msg=f"{key} grad {i}")
                continue
            np.testing.assert_allclose(g, ref[f"{key}:g{i}"], rtol=1e-5, atol=1e-6, err_msg=f"{key} grad {i}")

    for i in range(len(PRELU_CASES)):
        check(f"prelu{i}", *_oxnet_run([inp[f"prelu{i}:x"], inp[f"prelu{i}:gamma"]], inp[f"prelu{i}:head"],
                                       op="LeakyReLU", act_type="prelu"))
    for act, slope in [("leaky", 0.1), ("elu", 0.7), ("selu", 0.25), ("gelu", 0.25)]:
        y, grads = _oxnet_run([inp["act:x"]], inp["act:head"], op="LeakyReLU", act_type=act, slope=slope)
        if act == "selu":
            # MXNet 1.9.1's selu gradient below zero is lambda*(y + alpha), not the derivative
            # lambda*alpha*exp(x) = y + lambda*alpha (oxnet's, checked by central differences)
            x = inp["act:x"]
            np.testing.assert_allclose(y, ref["selu:y"], rtol=1e-5, atol=1e-6)
            lam, alpha = 1.0507009873554805, 1.6732632423543772
            mx_rule = inp["act:head"] * np.where(x > 0, lam, lam * (ref["selu:y"] + alpha))
            np.testing.assert_allclose(ref["selu:g0"], mx_rule, rtol=1e-5, atol=1e-6)
            true = inp["act:head"] * np.where(x > 0, lam, lam * alpha * np.exp(x))
            np.testing.assert_allclose(grads[0], true, rtol=1e-5, atol=1e-6)
            continue
        check(act, y, grads)
    with mx.autograd.predict_mode():
        y = mx.nd.LeakyReLU(mx.nd.array(inp["act:x"]), act_type="rrelu", lower_bound=0.2, upper_bound=0.5)[0]
    np.testing.assert_allclose(y.asnumpy(), ref["rrelu:y"], rtol=1e-6)
    for name in ["emb_f", "emb_i"]:
        y, grads = _oxnet_run([inp[name + ":idx"], inp["emb:w"]], inp["emb:head"], op="Embedding", input_dim=5,
                              output_dim=3)
        check(name, y, grads)

    data = mx.sym.var("data")
    net = mx.sym.LeakyReLU(mx.sym.Embedding(data, input_dim=5, output_dim=3, name="emb"), act_type="prelu",
                           name="act")
    args, _, _ = net.infer_shape(data=(2, 4))
    for name, shape in zip(net.list_arguments(), args):
        assert tuple(ref["shape:" + name]) == shape, name
    exe = net.simple_bind(mx.cpu(), data=(2, 4))
    exe.arg_dict["data"][:] = inp["emb_f:idx"]
    exe.arg_dict["emb_weight"][:] = inp["emb:w"]
    exe.arg_dict["act_gamma"][:] = inp["exe:gamma"]
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), ref["exe:y"], rtol=1e-6)
    np.testing.assert_allclose(ref["imp:y"], ref["exe:y"], rtol=1e-6)
    exe.backward(mx.nd.array(inp["emb:head"]))
    for k in ["emb_weight", "act_gamma"]:
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), ref["imp:grad:" + k], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["emb_weight"].asnumpy(), ref["exe:grad:emb_weight"], rtol=1e-5,
                               atol=1e-6)
