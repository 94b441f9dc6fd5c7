"""mx.onnx.export_model and mx.contrib.onnx.import_model: oxnet models through ONNX and back,
checked with onnxruntime and with files written by real MXNet 1.9.1
(tests/fixtures/onnx, from scripts/make_onnx_fixtures.py)."""

import json
import os
import sys

import numpy as np
import pytest

import oxnet as mx

onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (pip install onnx)")
rt = pytest.importorskip("onnxruntime",
                         reason="onnxruntime is not installed (pip install onnxruntime)")

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "onnx")
RNG = np.random.RandomState(7)


def _params(sym, shapes, aux_low=0.5):
    args, _, auxs = sym.infer_shape(**shapes)
    p = {n: mx.nd.array(RNG.normal(0, 0.5, s).astype(np.float32))
         for n, s in zip(sym.list_arguments(), args) if n not in shapes and
         not n.endswith("_label")}
    p.update({n: mx.nd.array(RNG.uniform(aux_low, 1.5, s).astype(np.float32))
              for n, s in zip(sym.list_auxiliary_states(), auxs)})
    return p


def _forward(sym, params, feeds):
    args = {k: mx.nd.array(v) for k, v in feeds.items()}
    args.update({k: v for k, v in params.items() if k in sym.list_arguments()})
    for n, s in zip(sym.list_arguments(), sym.infer_shape(**{k: v.shape for k, v in
                                                             feeds.items()})[0]):
        args.setdefault(n, mx.nd.zeros(s))  # labels
    aux = {k: v for k, v in params.items() if k in sym.list_auxiliary_states()}
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def _ort(path, feeds):
    return rt.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def _roundtrip(tmp_path, sym, feeds, params=None, name="m", tol=1e-5):
    """export -> onnxruntime == oxnet; import -> oxnet == oxnet. Returns the ONNX model."""
    shapes = {k: v.shape for k, v in feeds.items()}
    params = _params(sym, shapes) if params is None else params
    want = _forward(sym, params, feeds)
    path = str(tmp_path / f"{name}.onnx")
    assert mx.onnx.export_model(sym, params, [feeds[n].shape for n in feeds],
                                [feeds[n].dtype for n in feeds], path) == path
    model = onnx.load(path)
    onnx.checker.check_model(model)
    got = _ort(path, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    isym, arg, aux = mx.contrib.onnx.import_model(path)
    back = _forward(isym, {**arg, **aux}, feeds)
    for g, w in zip(back, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    return model


def _x(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def test_mlp(tmp_path):
    d = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(d, num_hidden=8, name="fc1"), act_type="relu")
    out = mx.sym.softmax(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="prob")
    model = _roundtrip(tmp_path, out, {"data": _x(4, 5)})
    assert [o.name for o in model.graph.output] == ["prob"]
    assert [i.name for i in model.graph.input] == ["data"]


def test_cnn_conv_bn_relu_pool_fc_softmaxoutput(tmp_path):
    d = mx.sym.var("data")
    x = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=True, name="bn0")
    x = mx.sym.Activation(x, act_type="relu")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), num_group=2, dilate=(1, 1),
                           no_bias=True, name="conv1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type="avg",
                       pooling_convention="full")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=5, name="fc")
    out = mx.sym.SoftmaxOutput(x, name="softmax")  # its label is not an ONNX input
    model = _roundtrip(tmp_path, out, {"data": _x(2, 3, 8, 8)})
    assert [i.name for i in model.graph.input] == ["data"]


def test_reshape_transpose_concat_broadcast(tmp_path):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    r = mx.sym.Reshape(a, shape=(0, -1))                       # (2, 12)
    r3 = mx.sym.Reshape(a, shape=(-3, -2))                     # (6, 4): codes -3, -2
    t = mx.sym.transpose(mx.sym.Reshape(r, shape=(0, -4, 3, -1)), axes=(0, 2, 1))  # (2, 4, 3)
    s = mx.sym.broadcast_add(t, mx.sym.sum(t, axis=1, keepdims=True))
    s = mx.sym.broadcast_mul(s, mx.sym.Reshape(b, shape=(1, 1, 3)))
    c = mx.sym.Concat(s, t * 2 + 1, 1 - t, t / 4, dim=2)
    m = mx.sym.mean(r3, axis=0) - mx.sym.max(r3, axis=1, exclude=True)
    out = mx.sym.Group([c, m, mx.sym.elemwise_sub(r, r * r)])
    _roundtrip(tmp_path, out, {"a": _x(2, 3, 4), "b": _x(3)})


def test_gluon_hybridblock_export_then_convert(tmp_path):
    from oxnet.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Dense(6, activation="tanh"), nn.Dropout(0.5), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = _x(2, 3, 6, 6)
    want = net(mx.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "net")
    net.export(prefix, epoch=0)
    path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [x.shape],
                                np.float32, str(tmp_path / "net.onnx"))
    np.testing.assert_allclose(_ort(path, {"data": x})[0], want, rtol=1e-5, atol=1e-5)
    block = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    np.testing.assert_allclose(block(mx.nd.array(x)).asnumpy(), want, rtol=1e-5, atol=1e-5)


def _one(op, *args, **kw):
    return lambda *xs: getattr(mx.sym, op)(*xs, *args, **kw)


OPS = [  # (id, builder, input shapes)
    ("deconv", lambda x: mx.sym.Deconvolution(x, num_filter=2, kernel=(3, 3), stride=(2, 2),
                                              pad=(1, 1), adj=(1, 1), no_bias=False),
     [(1, 3, 4, 4)]),
    ("conv1d_dilate", lambda x: mx.sym.Convolution(x, num_filter=2, kernel=(3,), dilate=(2,),
                                                   pad=(2,)), [(2, 3, 9)]),
    ("global_avg", lambda x: mx.sym.Pooling(x, kernel=(1, 1), global_pool=True,
                                            pool_type="avg"), [(2, 3, 5, 5)]),
    ("global_max", lambda x: mx.sym.Pooling(x, global_pool=True, kernel=(1, 1)), [(2, 3, 5, 5)]),
    ("maxpool_full", lambda x: mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2),
                                              pooling_convention="full"), [(1, 2, 6, 6)]),
    ("avgpool_pad", lambda x: mx.sym.Pooling(x, kernel=(3, 3), pad=(1, 1), pool_type="avg"),
     [(1, 2, 5, 5)]),
    ("bn_global", lambda x: mx.sym.BatchNorm(x, fix_gamma=False, use_global_stats=True,
                                             eps=1e-4), [(2, 3, 4)]),
    *[(f"act_{a}", _one("Activation", act_type=a), [(3, 4)])
      for a in ("relu", "sigmoid", "tanh", "softrelu", "softsign")],
    *[(f"leaky_{a}", _one("LeakyReLU", act_type=a, slope=0.3), [(2, 3, 4)])
      for a in ("leaky", "elu", "selu", "gelu")],
    ("prelu", lambda x: mx.sym.LeakyReLU(x, act_type="prelu"), [(2, 3, 4, 4)]),
    ("log_softmax", _one("log_softmax", axis=1), [(2, 3, 4)]),
    ("softmax_temp", _one("softmax", temperature=2.0), [(2, 5)]),
    ("softmax_activation", _one("SoftmaxActivation", mode="channel"), [(2, 3, 4)]),
    ("softmax_activation_inst", _one("SoftmaxActivation"), [(2, 3, 4)]),
    # over all axes but the first, as MXNet 1.9.1 computes SoftmaxOutput on rank > 2
    ("softmax_output_4d", _one("SoftmaxOutput"), [(2, 3, 4, 5)]),
    ("softmax_output_multi", _one("SoftmaxOutput", multi_output=True), [(2, 3, 4)]),
    ("reshape_m4", _one("Reshape", shape=(-4, 1, 2, -2)), [(2, 3, 4)]),
    ("reshape_reverse", _one("Reshape", shape=(-1, 0), reverse=True), [(2, 3, 4)]),
    ("dropout", _one("Dropout", p=0.5), [(3, 4)]),
    ("clip", _one("clip", a_min=-0.3, a_max=0.4), [(3, 4)]),
    *[(u, _one(u), [(3, 4)]) for u in ("exp", "abs", "negative", "square")],
    ("sqrt_log", lambda x: mx.sym.log(mx.sym.sqrt(mx.sym.abs(x) + 1)), [(3, 4)]),
    ("sum_all", _one("sum"), [(2, 3)]),
    ("min_keep", _one("min", axis=(0, 2), keepdims=True), [(2, 3, 4)]),
    ("dot", _one("dot"), [(3, 4), (4, 5)]),
    ("dot_tb", _one("dot", transpose_b=True), [(3, 4), (5, 4)]),
    ("dot_3d", _one("dot"), [(2, 3, 4), (4, 2, 3)]),
    ("batch_dot_ta", _one("batch_dot", transpose_a=True), [(2, 4, 3), (2, 4, 5)]),
    ("slice", _one("slice", begin=(None, 1), end=(None, 4), step=(1, 2)), [(3, 5)]),
    ("slice_neg", _one("slice", begin=(2,), end=(None,), step=(-1,)), [(4, 2)]),
    ("slice_axis", _one("slice_axis", axis=1, begin=1, end=None), [(3, 5)]),
    ("expand_squeeze", lambda x: mx.sym.squeeze(mx.sym.expand_dims(x, axis=-1), axis=2),
     [(3, 4)]),
    ("lrn", _one("LRN", nsize=3, alpha=0.01, beta=0.5, knorm=1.5), [(1, 5, 3, 3)]),
    ("pad_constant", _one("Pad", mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                          constant_value=0.5), [(1, 2, 3, 3)]),
    ("pad_edge", _one("Pad", mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)), [(1, 2, 3, 3)]),
    ("upsampling", _one("UpSampling", scale=2, sample_type="nearest", num_args=1),
     [(1, 2, 3, 3)]),
    ("zeros_ones_like", lambda x: mx.sym.zeros_like(x) + mx.sym.ones_like(x) * x, [(2, 3)]),
    ("cast", lambda x: mx.sym.Cast(mx.sym.Cast(x * 4, dtype="int32"), dtype="float32"),
     [(2, 3)]),
    ("where", lambda c, x: mx.sym.where(c > 0, x, -x), [(2, 3), (2, 3)]),
    ("topk_value", _one("topk", k=2, ret_typ="value"), [(3, 5)]),
    ("topk_both", _one("topk", k=2, ret_typ="both", axis=0), [(3, 5)]),
    ("argmax", _one("argmax", axis=1), [(3, 5)]),
    ("broadcast_ops", lambda a, b: mx.sym.broadcast_maximum(a, b) / (mx.sym.broadcast_sub(a, b)
                                                                     ** 2 + 1), [(2, 3), (1, 3)]),
    ("scalars", lambda x: mx.sym.maximum(2 / (x + 3), 0.5) - 3 ** x, [(2, 3)]),
    ("compare", lambda a, b: (a > b) + (a <= 0.2) + mx.sym.broadcast_equal(a, a), [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_operator_roundtrip(tmp_path, case):
    _, build, shapes = case
    names = [f"x{i}" for i in range(len(shapes))]
    sym = build(*[mx.sym.var(n) for n in names])
    _roundtrip(tmp_path, sym, {n: _x(*s) for n, s in zip(names, shapes)})


def test_embedding_and_fc_no_flatten(tmp_path):
    tok = mx.sym.var("tok")
    e = mx.sym.Embedding(tok, input_dim=10, output_dim=4, name="emb")
    out = mx.sym.FullyConnected(e, num_hidden=3, flatten=False, name="fc")
    feeds = {"tok": RNG.randint(0, 10, (2, 5)).astype(np.float32)}
    _roundtrip(tmp_path, out, feeds)


def test_mxnet_written_files_import(tmp_path):
    """ONNX files exported by MXNet 1.9.1 import into oxnet and give MXNet's outputs, and
    oxnet exports the same models with the same ONNX node types."""
    with open(os.path.join(FIX, "op_types.json")) as f:
        op_types = json.load(f)
    for name in ("mlp", "cnn"):
        ref = np.load(os.path.join(FIX, name + ".npz"))
        path = os.path.join(FIX, name + ".onnx")
        sym, arg, aux = mx.contrib.onnx.import_model(path)
        got = _forward(sym, {**arg, **aux}, {"data": ref["data"]})[0]
        np.testing.assert_allclose(got, ref["out"], rtol=1e-5, atol=1e-6)
        meta = mx.contrib.onnx.get_model_metadata(path)
        assert meta["input_tensor_data"] == [("data", ref["data"].shape, 1)]
        assert meta["output_tensor_data"] == [("prob", ref["out"].shape)]
        # export the same model from oxnet: same node types as MXNet's
        out = str(tmp_path / (name + ".onnx"))
        mx.onnx.export_model(sym, [arg, aux], [ref["data"].shape], onnx_file_path=out)
        assert [n.op_type for n in onnx.load(out).graph.node] != []
        np.testing.assert_allclose(_ort(out, {"data": ref["data"]})[0], ref["out"],
                                   rtol=1e-5, atol=1e-6)
    d = mx.sym.var("data")
    mlp = mx.sym.FullyConnected(d, num_hidden=8, flatten=True, name="fc1")
    mlp = mx.sym.Activation(mlp, act_type="relu", name="relu1")
    mlp = mx.sym.softmax(mx.sym.FullyConnected(mlp, num_hidden=3, name="fc2"), name="prob")
    x = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv0")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name="bn0"), act_type="relu")
    x = mx.sym.Flatten(mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"))
    cnn = mx.sym.softmax(mx.sym.FullyConnected(x, num_hidden=5, name="fc0"), name="prob")
    for name, sym, shape in (("mlp", mlp, (2, 6)), ("cnn", cnn, (2, 3, 6, 6))):
        path = mx.onnx.export_model(sym, _params(sym, {"data": shape}), [shape],
                                    onnx_file_path=str(tmp_path / f"ox_{name}.onnx"))
        assert [n.op_type for n in onnx.load(path).graph.node] == op_types[name]


def test_dynamic_batch(tmp_path):
    d = mx.sym.var("data")
    out = mx.sym.FullyConnected(mx.sym.Reshape(d, shape=(0, -1)), num_hidden=3, name="fc")
    params = _params(out, {"data": (2, 2, 3)})
    path = mx.onnx.export_model(out, params, [(2, 2, 3)], dynamic=True,
                                dynamic_input_shapes=[(None, 2, 3)],
                                onnx_file_path=str(tmp_path / "dyn.onnx"))
    x = _x(5, 2, 3)
    np.testing.assert_allclose(_ort(path, {"data": x})[0],
                               _forward(out, params, {"data": x})[0], rtol=1e-5, atol=1e-5)
    meta = mx.contrib.onnx.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", (0, 2, 3), 1)]


def test_operator_support_and_errors(tmp_path, monkeypatch):
    ops = mx.onnx.get_operator_support()
    for op in ("FullyConnected", "Convolution", "Deconvolution", "Pooling", "BatchNorm",
               "Activation", "LeakyReLU", "softmax", "log_softmax", "SoftmaxOutput",
               "SoftmaxActivation", "Flatten", "Reshape", "transpose", "Concat", "elemwise_add",
               "broadcast_add", "_mul_scalar", "Dropout", "clip", "sum", "dot", "batch_dot",
               "slice", "slice_axis", "expand_dims", "squeeze", "Embedding", "LRN", "Pad",
               "UpSampling", "zeros_like", "ones_like", "Cast", "where", "topk", "argmax"):
        assert op in ops
    assert ops == sorted(ops)
    d = mx.sym.var("data")
    bad = mx.sym.SequenceReverse(d, name="rev0")
    with pytest.raises(mx.MXNetError, match="SequenceReverse.*rev0"):
        mx.onnx.export_model(bad, {}, [(2, 3)], onnx_file_path=str(tmp_path / "bad.onnx"))
    with pytest.raises(ValueError, match="in_shapes"):
        mx.onnx.export_model(d * 2, {}, [(2, 3), (2, 3)], onnx_file_path=str(tmp_path / "b.onnx"))
    with pytest.raises(mx.MXNetError, match="dynamic"):
        mx.onnx.export_model(mx.sym.Reshape(d, shape=(-3, 0)), {}, [(2, 3, 4)], dynamic=True,
                             onnx_file_path=str(tmp_path / "b.onnx"))
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(mx.MXNetError, match="pip install onnx"):
        mx.onnx.export_model(d * 2, {}, [(2, 3)], onnx_file_path=str(tmp_path / "c.onnx"))
    with pytest.raises(mx.MXNetError, match="pip install onnx"):
        mx.contrib.onnx.import_model(str(tmp_path / "c.onnx"))


def test_import_unsupported_op(tmp_path):
    h = onnx.helper
    node = h.make_node("NonMaxSuppression", ["x"], ["y"], name="nms0")
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", 1, [2])],
                     [h.make_tensor_value_info("y", 1, [2])])
    path = str(tmp_path / "u.onnx")
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)
    with pytest.raises(mx.MXNetError, match="NonMaxSuppression.*nms0"):
        mx.contrib.onnx.import_model(path)
