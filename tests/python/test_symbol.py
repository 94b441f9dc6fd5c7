"""mx.sym: the Symbol API, inference, JSON and the Executor, checked
against numpy, against imperative autograd, and against files and outputs
of MXNet 1.9.1 itself."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "graph"
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"
CASES = ["mlp", "elemwise", "shapes", "group", "legacy"]


def mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=5)
    act = mx.sym.Activation(fc1, act_type="tanh", name="act")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.softmax(fc2, name="out")


# ----- structure and naming ---------------------------------------------------

def test_missing_inputs_become_variables_named_after_the_node():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert net.list_outputs() == ["out_output"]
    assert net.list_auxiliary_states() == []
    assert net.list_inputs() == net.list_arguments()
    assert net.name == "out"
    assert isinstance(net, mx.sym.Symbol)


def test_automatic_names_prefix_and_attribute_scopes():
    with mx.name.NameManager():
        x = mx.sym.var("x")
        a = mx.sym.FullyConnected(x, num_hidden=2)
        b = mx.sym.FullyConnected(a, num_hidden=2)
        c = x * 2.0
        d = x * c
    assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
    assert b.list_arguments() == ["x", "fullyconnected0_weight", "fullyconnected0_bias",
                                  "fullyconnected1_weight", "fullyconnected1_bias"]
    assert (c.name, d.name) == ("_mulscalar0", "_mul0")
    with mx.name.Prefix("net_"):
        e = mx.sym.relu(x)
        f = mx.sym.relu(x, name="r")
    assert (e.name, f.name) == ("net_relu0", "net_r")
    with mx.AttrScope(ctx_group="stage1", mood="calm"):
        g = mx.sym.FullyConnected(x, num_hidden=2, name="g")
        v = mx.sym.var("v", attr={"mood": "sad"})
    assert g.attr("ctx_group") == "stage1" and g.attr("__ctx_group__") == "stage1"
    assert g.attr("mood") == "calm" and v.attr("mood") == "sad"
    # scope attributes reach the variables the operator made, as in MXNet
    assert g.attr_dict()["g_weight"]["mood"] == "calm"
    assert g.attr("num_hidden") == "2"


def test_variable_attributes():
    w = mx.sym.var("w", shape=(3, 0), dtype=np.float64, lr_mult=0.5, wd_mult=2, init="zeros",
                   __extra__="x")
    assert w.attr("__shape__") == "(3, 0)"
    assert w.attr("__dtype__") == "1"
    assert w.attr("__lr_mult__") == "0.5" and w.attr("__wd_mult__") == "2"
    assert w.attr("__init__") == "zeros" and w.attr("__extra__") == "x"
    assert w.list_attr()["__shape__"] == "(3, 0)"
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.var("bad", mood="x")
    w._set_attr(lr_mult="3")
    assert w.attr("lr_mult") == "3"


def test_internals_indexing_children_and_groups():
    net = mlp()
    internals = net.get_internals()
    assert internals.list_outputs() == ["data", "fc1_weight", "fc1_bias", "fc1_output", "act_output",
                                        "fc2_weight", "fc2_bias", "fc2_output", "out_output"]
    fc1 = internals["fc1_output"]
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert internals[3].name == "fc1" and internals[-1].name == "out"
    assert [s.name for s in internals[1:3]] == ["fc1_weight", "fc1_bias"]
    with pytest.raises(mx.MXNetError, match="no output named"):
        internals["nope"]
    with pytest.raises(IndexError):
        internals[42]
    assert fc1.get_children().list_outputs() == ["data", "fc1_weight", "fc1_bias"]
    assert mx.sym.var("z").get_children() is None
    group = mx.sym.Group([fc1, net])
    assert len(group) == 2 and group.name is None
    assert group.list_outputs() == ["fc1_output", "out_output"]
    assert [s.name for s in group] == ["fc1", "out"]
    with pytest.raises(mx.MXNetError, match="2 outputs"):
        mx.sym.relu(group)


def test_composition_replaces_variables():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    x = mx.sym.var("x")
    pre = mx.sym.sigmoid(x, name="pre")
    composed = net(data=pre)
    assert composed.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert net(pre).list_arguments() == ["x", "fc_weight", "fc_bias"]
    with pytest.raises(mx.MXNetError, match="no variable `nothere`"):
        net(nothere=pre)
    copied = net.__copy__()
    assert copied.list_arguments() == net.list_arguments() and copied.tojson() == net.tojson()


def test_arithmetic_matches_numpy_and_is_elementwise():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    expr = (a * b + 2.0) / a - 1 + (3.0 - b) ** 2 - (-a) + 1.0 / b + 2 ** a
    av = np.array([[0.5, 1.0], [2.0, 4.0]], dtype=np.float32)
    bv = np.array([[1.5, -1.0], [0.5, 2.0]], dtype=np.float32)
    got = expr.eval(a=mx.nd.array(av), b=mx.nd.array(bv))[0].asnumpy()
    want = (av * bv + 2.0) / av - 1 + (3.0 - bv) ** 2 + av + 1.0 / bv + 2 ** av
    np.testing.assert_allclose(got, want, rtol=1e-5)
    cmp = (a > b) + (a <= 1.0) + (a == a)
    got = cmp.eval(a=mx.nd.array(av), b=mx.nd.array(bv))[0].asnumpy()
    np.testing.assert_allclose(got, (av > bv).astype(np.float32) + (av <= 1.0).astype(np.float32) + 1.0)
    # symbol-with-symbol arithmetic does not broadcast, as in MXNet
    with pytest.raises(mx.MXNetError):
        (a + b).eval(a=mx.nd.ones((2, 2)), b=mx.nd.ones((1, 2)))


# ----- inference ----------------------------------------------------------------

def test_infer_shape_forward_backward_and_partial():
    net = mlp()
    arg, out, aux = net.infer_shape(data=(7, 4))
    assert arg == [(7, 4), (5, 4), (5,), (3, 5), (3,)]
    assert out == [(7, 3)] and aux == []
    assert net.infer_shape((7, 4)) == (arg, out, aux)
    assert net.infer_shape() == (None, None, None)
    arg, out, _ = net.infer_shape_partial()
    assert arg[0] == () and out == [()]
    # a partially known weight (5, 0) learns its input size from the data
    x = mx.sym.var("x")
    w = mx.sym.var("w", shape=(5, 0))
    fc = mx.sym.FullyConnected(x, w, num_hidden=5, no_bias=True, name="fc")
    assert fc.infer_shape(x=(2, 9))[0] == [(2, 9), (5, 9)]
    assert fc.infer_shape_partial()[0] == [(), (5, 0)]
    # backward: an element-wise sum fills its unknown input from the other
    s = mx.sym.var("p") + mx.sym.var("q")
    assert s.infer_shape(q=(3, 2))[0] == [(3, 2), (3, 2)]


def test_infer_shape_conflict_names_node_operator_and_both_shapes():
    x = mx.sym.var("x")
    w = mx.sym.var("w", shape=(5, 3))
    fc = mx.sym.FullyConnected(x, w, num_hidden=5, no_bias=True, name="fc7")
    with pytest.raises(mx.MXNetError) as e:
        fc.infer_shape(x=(2, 9))
    msg = str(e.value)
    assert "fc7" in msg and "FullyConnected" in msg and "(5, 3)" in msg and "(5, 9)" in msg
    with pytest.raises(mx.MXNetError, match="no input named 'nothere'"):
        fc.infer_shape(nothere=(1,))


def test_infer_type():
    x = mx.sym.var("x")
    y = mx.sym.exp(x) * 2.0
    arg, out, aux = y.infer_type(x=np.float64)
    assert arg == [np.float64] and out == [np.float64] and aux == []
    assert y.infer_type() == (None, None, None)
    z = mx.sym.var("z", dtype="float16")
    assert mx.sym.relu(z).infer_type()[1] == [np.float16]


# ----- JSON ------------------------------------------------------------------------

def test_json_round_trip_and_files(tmp_path):
    net = mlp()
    text = net.tojson()
    graph = json.loads(text)
    assert [n["op"] for n in graph["nodes"]] == ["null", "null", "null", "FullyConnected", "Activation",
                                                 "null", "null", "FullyConnected", "softmax"]
    assert graph["arg_nodes"] == [0, 1, 2, 5, 6]
    assert graph["node_row_ptr"] == list(range(10))
    assert graph["heads"] == [[8, 0, 0]]
    assert graph["attrs"]["mxnet_version"] == ["int", 10901]
    back = mx.sym.load_json(text)
    assert back.tojson() == text
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert mx.sym.load(str(path)).list_arguments() == net.list_arguments()
    assert mx.sym.fromjson(text).list_outputs() == ["out_output"]


@pytest.mark.parametrize("text, message", [
    ("{\"nodes\": [", "not valid JSON"),
    ("{\"nodes\": [{\"op\": \"bogus\", \"name\": \"n\", \"inputs\": []}], \"heads\": [[0, 0, 0]]}",
     "unknown operator `bogus`"),
    ("{\"nodes\": [{\"op\": \"relu\", \"name\": \"r\", \"inputs\": [[0, 0, 0]]}], \"heads\": [[0, 0, 0]]}",
     "cycle"),
    ("{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []}], \"heads\": [[3, 0, 0]]}",
     "reads node 3"),
])
def test_malformed_json_is_a_clear_error(text, message):
    with pytest.raises(mx.MXNetError, match=message):
        mx.sym.load_json(text)
    # the engine stays usable
    assert mlp().list_arguments()[0] == "data"


def test_load_of_a_missing_file_names_it(tmp_path):
    missing = tmp_path / "nothing-symbol.json"
    with pytest.raises(mx.MXNetError, match="nothing-symbol.json"):
        mx.sym.load(str(missing))


def _fixture(name):
    sym = mx.sym.load(str(FIXTURES / f"{name}-symbol.json"))
    data = np.load(FIXTURES / f"{name}.npz")
    return sym, data


@pytest.mark.parametrize("name", CASES)
def test_mxnet_written_graphs_reproduce_mxnet_outputs_and_gradients(name):
    sym, data = _fixture(name)
    args = {k[4:]: mx.nd.array(v) for k, v in data.items() if k.startswith("arg:")}
    assert sorted(args) == sorted(sym.list_arguments())
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), data[f"out:{i}"], rtol=1e-5, atol=1e-6)
    exe.backward([mx.nd.array(data[f"head:{i}"]) for i in range(len(outs))])
    for k in args:
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), data[f"grad:{k}"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"gradient of {k} in {name}")


def test_legacy_attributes_are_upgraded_like_mxnet_does():
    sym, _ = _fixture("legacy")
    d = sym.attr_dict()
    assert d["data"]["__ctx_group__"] == "stage1" and d["data"]["__lr_mult__"] == "0.2"
    assert d["fc1_weight"]["__lr_mult__"] == "1.2"
    assert d["fc1_weight"]["__wd_mult__"] == "0.3"


def _run_in_mxnet(json_path, npz_path, *flags):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    result = subprocess.run([str(MXNET_PYTHON), str(FIXTURES / "check_oxnet_json.py"), str(json_path),
                             str(npz_path), *flags], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", ["mlp", "elemwise", "group", "legacy"])
def test_mxnet_loads_what_oxnet_writes(tmp_path, name):
    sym, data = _fixture(name)
    path = tmp_path / f"{name}-symbol.json"
    sym.save(str(path))
    got = _run_in_mxnet(path, FIXTURES / f"{name}.npz", "--backward")
    assert got["arguments"] == sym.list_arguments()
    for i, o in enumerate(got["outputs"]):
        np.testing.assert_allclose(np.array(o["data"], dtype=np.float32), data[f"out:{i}"], rtol=1e-5,
                                   atol=1e-6)
    for k, g in got["grads"].items():
        np.testing.assert_allclose(np.array(g["data"], dtype=np.float32), data[f"grad:{k}"], rtol=1e-4,
                                   atol=1e-5)


def test_mxnet_loads_an_oxnet_built_graph(tmp_path):
    net = mlp()
    rng = np.random.RandomState(0)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 4))[0]))
    args = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
    npz = tmp_path / "args.npz"
    np.savez(npz, **{f"arg:{k}": v for k, v in args.items()})
    path = tmp_path / "mlp-symbol.json"
    net.save(str(path))
    got = _run_in_mxnet(path, npz)
    mine = net.eval(**{k: mx.nd.array(v) for k, v in args.items()})[0].asnumpy()
    np.testing.assert_allclose(np.array(got["outputs"][0]["data"], dtype=np.float32), mine, rtol=1e-5)


# ----- executors ---------------------------------------------------------------------

def _numpy_mlp(args, x):
    h = np.tanh(x @ args["fc1_weight"].T + args["fc1_bias"])
    z = h @ args["fc2_weight"].T + args["fc2_bias"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_simple_bind_forward_backward_match_numpy_and_autograd():
    net = mlp()
    exe = net.simple_bind(mx.cpu(), data=(3, 4))
    rng = np.random.RandomState(1)
    values = {k: rng.uniform(-1, 1, a.shape).astype(np.float32) for k, a in exe.arg_dict.items()}
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), _numpy_mlp(values, values["data"]), rtol=1e-5)
    assert exe.outputs[0].shape == (3, 3)
    assert list(exe.output_dict) == ["out_output"]
    head = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    exe.backward(mx.nd.array(head))
    # the same model through imperative autograd
    arrays = {k: mx.nd.array(v) for k, v in values.items()}
    for a in arrays.values():
        a.attach_grad()
    with mx.autograd.record():
        h = mx.nd.tanh(mx.nd.FullyConnected(arrays["data"], arrays["fc1_weight"], arrays["fc1_bias"], num_hidden=5))
        y = mx.nd.softmax(mx.nd.FullyConnected(h, arrays["fc2_weight"], arrays["fc2_bias"], num_hidden=3))
    y.backward(mx.nd.array(head))
    for k in values:
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), arrays[k].grad.asnumpy(), rtol=1e-5, atol=1e-7)


def test_grad_req_add_accumulates_and_null_keeps_no_gradient():
    x = mx.sym.var("x")
    w = mx.sym.var("w")
    y = mx.sym.sum(x * w)
    xv = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    wv = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    exe = y.simple_bind(mx.cpu(), grad_req={"x": "add", "w": "write"}, x=(3,), w=(3,))
    exe.arg_dict["x"][:] = xv
    exe.arg_dict["w"][:] = wv
    exe.grad_dict["x"][:] = 10.0
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 10.0 + 2 * wv)
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), xv)
    exe2 = y.simple_bind(mx.cpu(), grad_req=["null", "write"], x=(3,), w=(3,))
    assert exe2.grad_arrays[0] is None and list(exe2.grad_dict) == ["w"]
    exe2.copy_params_from({"x": mx.nd.array(xv), "w": mx.nd.array(wv)})
    exe2.forward(is_train=True)
    exe2.backward()
    np.testing.assert_allclose(exe2.grad_dict["w"].asnumpy(), xv)


def test_bind_with_given_arrays_and_errors():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    y = mx.sym.dot(x, w)
    xv, wv = mx.nd.ones((2, 3)), mx.nd.ones((3, 4))
    gx, gw = mx.nd.zeros((2, 3)), mx.nd.zeros((3, 4))
    exe = y.bind(mx.cpu(), {"x": xv, "w": wv}, args_grad={"x": gx, "w": gw})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 4)))
    np.testing.assert_allclose(gx.asnumpy(), np.full((2, 3), 4.0))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.full((2, 4), 3.0))
    exe = y.bind(mx.cpu(), [xv, wv])
    assert exe.grad_arrays == [None, None]
    exe.backward()  # nothing to compute
    # backward before any forward runs a train-mode forward first (MXNet
    # would read whatever the forward buffers held)
    gx[:] = 0
    exe = y.bind(mx.cpu(), {"x": xv, "w": wv}, args_grad={"x": gx, "w": gw})
    exe.backward(mx.nd.ones((2, 4)))
    np.testing.assert_allclose(gx.asnumpy(), np.full((2, 3), 4.0))
    with pytest.raises(mx.MXNetError, match="no array for 'w'"):
        y.bind(mx.cpu(), {"x": xv})
    # names the symbol lacks are ignored, as MXNet ignores them (the loop
    # tests of MXNet's test_contrib_control_flow bind dicts of this kind)
    exe = y.bind(mx.cpu(), {"x": xv, "w": wv, "q": wv}, args_grad={"x": gx, "q": gw})
    assert sorted(exe.arg_dict) == ["w", "x"]
    with pytest.raises(mx.MXNetError) as e:
        y.bind(mx.cpu(), [xv, mx.nd.ones((5, 4))])
    assert "dot" in str(e.value) and "(5, 4)" in str(e.value)
    with pytest.raises(mx.MXNetError, match="cannot infer the shapes of w"):
        y.simple_bind(mx.cpu(), x=(2, 3))


def test_forward_keywords_reshape_monitor_and_eval():
    net = mlp()
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 4))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    out = exe.forward(data=mx.nd.ones((2, 4)))[0]
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 3), 1 / 3), rtol=1e-6)
    assert seen == [("fc1_output", (2, 5)), ("act_output", (2, 5)), ("fc2_output", (2, 3)), ("out_output", (2, 3))]
    with pytest.raises(mx.MXNetError, match="allow_up_sizing"):
        exe.reshape(data=(6, 4))
    bigger = exe.reshape(allow_up_sizing=True, data=(6, 4))
    assert bigger.arg_dict["data"].shape == (6, 4)
    bigger.arg_dict["fc2_bias"][:] = 1.0  # shared with the first executor
    assert exe.arg_dict["fc2_bias"].asnumpy().tolist() == [1.0, 1.0, 1.0]
    assert bigger.forward()[0].shape == (6, 3)
    # down-sizing: the new data array is a view of the start of the old one
    smaller = exe.reshape(data=(1, 4))
    smaller.arg_dict["data"][:] = 7.0
    assert exe.arg_dict["data"].asnumpy()[0].tolist() == [7.0] * 4
    assert exe.arg_dict["data"].asnumpy()[1].tolist() == [1.0] * 4
    with pytest.raises(mx.MXNetError, match="unknown argument 'nope'"):
        exe.forward(nope=mx.nd.ones((1,)))
    s = mx.sym.var("a") * 3.0
    np.testing.assert_allclose(s.eval(a=mx.nd.array([1, 2]))[0].asnumpy(), [3.0, 6.0])


def test_a_failing_custom_op_inside_a_graph_names_the_node():
    class Fails(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom in forward")

    @mx.operator.register("graph_fails")
    class FailsProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Fails()

    y = mx.sym.Custom(mx.sym.var("x"), op_type="graph_fails", name="bad_node")
    exe = y.simple_bind(mx.cpu(), x=(2,))
    with pytest.raises(ValueError, match="boom in forward") as e:
        exe.forward()
    assert "bad_node" in str(e.value) or "graph_fails" in str(e.value)
    # the engine stays usable
    assert mlp().infer_shape(data=(1, 4))[1] == [(1, 3)]


def test_seed_000_softmax_trains_a_symbolic_mlp():
    import seed_softmax_symbolic

    net = seed_softmax_symbolic.build_net()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "softmax_label"]
    # the label's shape comes backwards from the data's, through the op's own infer_shape
    arg_shapes, out_shapes, _ = net.infer_shape(data=(10, 8))
    assert arg_shapes[-1] == (10,) and out_shapes == [(10, 3)]
    losses, accuracy = seed_softmax_symbolic.train(steps=20, verbose=False)
    assert losses[-1] < 0.5 * losses[0]
    assert accuracy > 0.9


# ----- mx.test_utils for graphs ------------------------------------------------------

def test_symbolic_checks_of_test_utils():
    from oxnet.test_utils import (check_consistency, check_numeric_gradient, check_symbolic_backward,
                                  check_symbolic_forward, simple_forward)

    x, w = mx.sym.var("x"), mx.sym.var("w")
    y = mx.sym.tanh(mx.sym.dot(x, w))
    xv = np.array([[0.1, -0.2], [0.3, 0.4]], dtype=np.float32)
    wv = np.array([[0.5, 1.0, -1.0], [2.0, 0.0, 0.25]], dtype=np.float32)
    fwd = np.tanh(xv @ wv)
    check_symbolic_forward(y, [xv, wv], [fwd])
    check_symbolic_forward(y, {"x": xv, "w": wv}, {y.list_outputs()[0]: fwd})
    with pytest.raises(AssertionError):
        check_symbolic_forward(y, [xv, wv], [fwd + 1.0])
    head = np.ones_like(fwd)
    dz = head * (1 - fwd ** 2)
    grads = check_symbolic_backward(y, [xv, wv], [head], {"x": dz @ wv.T, "w": xv.T @ dz})
    np.testing.assert_allclose(grads["w"], xv.T @ dz, rtol=1e-4, atol=1e-6)
    check_symbolic_backward(y, [xv, wv], [head], [dz @ wv.T, xv.T @ dz], grad_req="add")
    with pytest.raises(AssertionError):
        check_symbolic_backward(y, [xv, wv], [head], {"x": dz @ wv.T * 2})
    np.testing.assert_allclose(simple_forward(y, x=xv, w=wv), fwd, rtol=1e-4)
    err = check_numeric_gradient(y, [xv, wv])
    assert err < 1e-4
    gt = check_consistency(y, [{"ctx": mx.cpu(), "x": (2, 2), "w": (2, 3), "type_dict": {"x": np.float32, "w": np.float32}},
                               {"ctx": mx.cpu(), "x": (2, 2), "w": (2, 3), "type_dict": {"x": np.float64, "w": np.float64}}])
    assert gt[y.list_outputs()[0]].dtype == np.float64 and "w_grad" in gt


# ----- tracing and cached graphs -------------------------------------------------------

def test_python_nd_code_traces_into_a_symbol():
    def block(x, w):
        h = mx.nd.FullyConnected(x, w, num_hidden=3, no_bias=True)
        with pytest.raises(mx.MXNetError, match="traced array"):
            h.asnumpy()
        return mx.nd.relu(h) * 2.0

    sym = mx.sym.trace(block, {"x": (2, 4), "w": (3, 4)})
    assert sym.list_arguments() == ["x", "w"]
    xv = np.random.RandomState(0).uniform(-1, 1, (2, 4)).astype(np.float32)
    wv = np.random.RandomState(1).uniform(-1, 1, (3, 4)).astype(np.float32)
    got = sym.eval(x=mx.nd.array(xv), w=mx.nd.array(wv))[0].asnumpy()
    np.testing.assert_allclose(got, np.maximum(xv @ wv.T, 0) * 2.0, rtol=1e-5)
    with pytest.raises(ZeroDivisionError):
        mx.sym.trace(lambda x: 1 / 0, {"x": (1,)})
    with pytest.raises(mx.MXNetError, match="not inputs"):
        mx.sym.trace(lambda x: x + mx.nd.ones((1,)), {"x": (1,)})


def test_cached_op_runs_a_symbol_and_records_one_node():
    net = mlp()
    op = mx.nd.CachedOp(net, flags=[("static_alloc", True)])
    assert op.input_names == net.list_arguments()
    rng = np.random.RandomState(3)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(3, 4))[0]))
    values = {k: mx.nd.array(rng.uniform(-1, 1, s)) for k, s in shapes.items()}
    out = op(*[values[k] for k in op.input_names])
    ref = net.eval(**values)[0]
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6)
    # under autograd, mixed with imperative code
    w = values["fc1_weight"]
    w.attach_grad()
    w2 = w.copy()
    w2.attach_grad()
    with mx.autograd.record():
        args = dict(values, fc1_weight=w)
        y = op(**args) * mx.nd.array([[1.0, 2.0, 3.0]])
    y.backward()
    with mx.autograd.record():
        h = mx.nd.tanh(mx.nd.FullyConnected(values["data"], w2, values["fc1_bias"], num_hidden=5))
        z = mx.nd.softmax(mx.nd.FullyConnected(h, values["fc2_weight"], values["fc2_bias"], num_hidden=3))
        z = z * mx.nd.array([[1.0, 2.0, 3.0]])
    z.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), w2.grad.asnumpy(), rtol=1e-5, atol=1e-7)


def test_fluent_methods_call_the_operators():
    x = mx.sym.var("x")
    y = x.reshape((2, 3)).sum(axis=1).exp().astype("float64")
    got = y.eval(x=mx.nd.arange(6))[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.asnumpy(), np.exp([3.0, 12.0]), rtol=1e-6)
    assert x.transpose().name.startswith("transpose")


def test_contrib_namespaces_hold_the_contrib_operators():
    """``mx.nd.contrib.X`` / ``mx.sym.contrib.X`` are the operators named
    ``_contrib_X``, as in MXNet."""
    import oxnet.ndarray.contrib as nd_contrib
    import oxnet.symbol.contrib as sym_contrib

    assert nd_contrib is mx.nd.contrib and sym_contrib is mx.sym.contrib
    data = mx.nd.array(np.random.default_rng(3).uniform(-1, 1, (4, 2, 3)))
    label = mx.nd.array([[1, 2], [2, 0]])
    np.testing.assert_allclose(mx.nd.contrib.CTCLoss(data, label).asnumpy(),
                               mx.nd.CTCLoss(data, label).asnumpy())
    net = mx.sym.contrib.ctc_loss(mx.sym.var("data"), mx.sym.var("label"), blank_label="last")
    assert net.list_arguments() == ["data", "label"]
    assert mx.nd.contrib.box_nms is mx.nd._contrib_box_nms
    assert not hasattr(mx.nd.contrib, "FullyConnected")


def test_backward_ignores_gradients_no_step_reads_and_extra_ones():
    # as MXNet 1.9.1: shape_array's gradient is zero whatever flows in, so
    # the head gradient given for it is not looked at (not even its shape)
    x = mx.sym.var("x")
    xv, gx = mx.nd.ones((3, 4)), mx.nd.full((3, 4), 7.0)
    exe = mx.sym.shape_array(x).bind(mx.cpu(), {"x": xv}, args_grad={"x": gx})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((3, 4))])
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [3, 4])
    np.testing.assert_array_equal(gx.asnumpy(), np.zeros((3, 4)))
    # gradients beyond the outputs' count are ignored
    y = mx.sym.relu(x)
    exe = y.bind(mx.cpu(), {"x": xv}, args_grad={"x": gx})
    exe.forward(is_train=True)
    exe.backward([mx.nd.full((3, 4), 2.0), mx.nd.ones((5,))])
    np.testing.assert_array_equal(gx.asnumpy(), np.full((3, 4), 2.0))
    # a gradient that is read must still have the output's shape
    with pytest.raises(mx.MXNetError, match="output gradient 0"):
        exe.backward([mx.nd.ones((2, 2))])


def test_given_dtypes_win_over_declared_ones():
    # as MXNet 1.9.1: `Variable(dtype=...)` only fills in a dtype that the
    # arrays bound (or the types given to infer_type) do not
    x = mx.sym.Variable("x", dtype="float32")
    y = 2 * x
    _, out_types, _ = y.infer_type(x="float64")
    assert out_types == [np.float64]
    _, out_types, _ = y.infer_type()
    assert out_types == [np.float32]
    exe = y.bind(mx.cpu(), {"x": mx.nd.array([1.5, 2.0], dtype="float64")})
    out = exe.forward()[0]
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), [3.0, 4.0])
