"""Gluon Blocks, HybridBlocks, Parameters and the Trainer: naming, deferred
initialisation, hybridization (same numbers as imperative), hooks, saving
and loading, export/imports, stale gradients, grad_req='add'."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn

import seed_custom_layer


def _mlp(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"))
        net.add(nn.Dense(3))
    return net


def test_names_follow_name_scopes():
    net = _mlp(prefix="model_")
    names = list(net.collect_params().keys())
    assert names == ["model_dense0_weight", "model_dense0_bias", "model_dense1_weight", "model_dense1_bias"]
    assert net[0].name == "model_dense0" and len(net) == 2
    other = nn.Dense(2)
    assert other.prefix.startswith("dense") and other.weight.name == other.prefix + "weight"


def test_collect_params_select_regex():
    net = _mlp(prefix="m_")
    assert list(net.collect_params(".*weight").keys()) == ["m_dense0_weight", "m_dense1_weight"]
    assert list(net.collect_params("m_dense1_.*").keys()) == ["m_dense1_weight", "m_dense1_bias"]


def test_deferred_init_fills_unknown_shapes_on_first_call():
    net = _mlp()
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError, match="deferred"):
        net[0].weight.data()
    x = nd.ones((4, 5))
    assert net(x).shape == (4, 3)
    assert net[0].weight.shape == (8, 5) and net[1].weight.shape == (3, 8)


def test_parameter_errors_name_the_parameter():
    p = gluon.Parameter("lonely", shape=(2, 3))
    with pytest.raises(mx.MXNetError, match="lonely.*not been initialized"):
        p.data()
    with pytest.raises(mx.MXNetError, match="lonely.*invalid shape"):
        gluon.Parameter("lonely", shape=(2, 0)).initialize()
    p.initialize()
    with pytest.raises(mx.MXNetError, match="lonely.*incompatible"):
        p.shape = (3, 3)


def _run_step(hybrid, seed=7):
    mx.random.seed(seed)
    net = _mlp(prefix="same_")
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize()
    x = nd.array(np.linspace(-1, 1, 20).reshape(4, 5))
    y = nd.array([0, 2, 1, 1])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9})
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(4)
    return {k: v.data().asnumpy() for k, v in net.collect_params().items()}, net(x).asnumpy()


def test_hybridized_training_matches_imperative():
    imperative, out_i = _run_step(hybrid=False)
    hybrid, out_h = _run_step(hybrid=True)
    for k in imperative:
        np.testing.assert_allclose(hybrid[k], imperative[k], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out_h, out_i, rtol=1e-6, atol=1e-6)


def test_dense_matches_numpy_and_its_gradient():
    layer = nn.Dense(3, in_units=4, activation="tanh")
    layer.initialize(mx.init.Uniform(0.5))
    a = np.random.default_rng(0).uniform(-1, 1, (2, 4)).astype(np.float32)
    x = nd.array(a)
    with autograd.record():
        y = layer(x)
    y.backward()
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    z = np.tanh(a @ w.T + b)
    np.testing.assert_allclose(y.asnumpy(), z, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), ((1 - z ** 2).T @ a), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(layer.bias.grad().asnumpy(), (1 - z ** 2).sum(0), rtol=1e-4, atol=1e-6)


def test_stale_gradient_is_an_error_naming_the_parameter():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(2, in_units=2))
    unused = nn.Dense(2, in_units=2, prefix="unused_")
    net.initialize()
    unused.initialize()
    params = net.collect_params()
    params.update(unused.collect_params())
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    before = unused.weight.data().asnumpy().copy()
    with autograd.record():
        loss = net(nd.ones((1, 2))).sum()
    loss.backward()
    with pytest.raises(mx.MXNetError, match="unused_(weight|bias).*has not been updated"):
        trainer.step(1)
    np.testing.assert_array_equal(unused.weight.data().asnumpy(), before)
    trainer.step(1, ignore_stale_grad=True)


def test_grad_req_add_accumulates_until_zero_grad():
    layer = nn.Dense(1, in_units=2, use_bias=False)
    layer.initialize(mx.init.One())
    layer.collect_params().setattr("grad_req", "add")
    x = nd.array([[1.0, 2.0]])
    for _ in range(3):
        with autograd.record():
            y = layer(x)
        y.backward()
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), [[3.0, 6.0]])
    layer.zero_grad()
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), [[0.0, 0.0]])


def test_hooks_run_and_detach():
    layer = nn.Dense(2, in_units=2)
    layer.initialize()
    seen = []
    pre = layer.register_forward_pre_hook(lambda b, inputs: seen.append(("pre", inputs[0].shape)))
    post = layer.register_forward_hook(lambda b, inputs, out: seen.append(("post", out.shape)))
    layer(nd.ones((3, 2)))
    assert seen == [("pre", (3, 2)), ("post", (3, 2))]
    pre.detach()
    post.detach()
    layer(nd.ones((3, 2)))
    assert len(seen) == 2


def test_save_and_load_parameters_round_trip(tmp_path):
    net = _mlp()
    net.initialize()
    x = nd.ones((2, 4))
    expected = net(x).asnumpy()
    path = str(tmp_path / "mlp.params")
    net.save_parameters(path)
    other = _mlp()
    other.load_parameters(path)
    np.testing.assert_allclose(other(x).asnumpy(), expected, rtol=1e-6)


def test_failed_load_leaves_parameters_unchanged(tmp_path):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4), nn.Dense(2, in_units=3))
    net.initialize()
    path = str(tmp_path / "bad.params")
    nd.save(path, {"0.weight": nd.ones((3, 4)), "0.bias": nd.ones((3,)), "1.weight": nd.ones((5, 3)),
                   "1.bias": nd.ones((2,))})
    before = {k: v.data().asnumpy().copy() for k, v in net.collect_params().items()}
    with pytest.raises(mx.MXNetError, match="incompatible"):
        net.load_parameters(path)
    for k, v in net.collect_params().items():
        np.testing.assert_array_equal(v.data().asnumpy(), before[k])
    nd.save(path, {"0.weight": nd.ones((3, 4))})
    with pytest.raises(mx.MXNetError, match="missing in file"):
        net.load_parameters(path)


def test_export_and_imports_round_trip(tmp_path):
    net = _mlp()
    net.initialize()
    net.hybridize()
    x = nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    expected = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "mlp"), epoch=3)
    assert params_file.endswith("mlp-0003.params")
    loaded = nd.load(params_file)
    assert all(k.startswith("arg:") for k in loaded)
    block = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(block(x).asnumpy(), expected, rtol=1e-6)


def test_cast_changes_parameter_dtypes():
    net = _mlp()
    net.initialize()
    net(nd.ones((1, 4)))
    net.cast("float64")
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())
    assert net(nd.ones((1, 4), dtype="float64")).dtype == np.float64


def test_hybrid_sequential_refuses_plain_blocks():
    net = nn.HybridSequential()
    with pytest.raises(mx.MXNetError, match="HybridSequential|HybridBlock"):
        net.add(nn.Lambda("relu"))


def test_forward_written_with_nd_is_hybridized_by_tracing():
    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = self.params.get("w", shape=(3,), init=mx.init.Constant(2.0))

        def forward(self, x):
            return nd.broadcast_mul(x, self.w.data()) + 1

    block = Scale()
    block.initialize()
    x = nd.array([[1.0, 2.0, 3.0]])
    expected = block(x).asnumpy()
    block.hybridize()
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), expected)
    np.testing.assert_allclose(block.w.grad().asnumpy(), [1.0, 2.0, 3.0])
    assert block._cached_op is not None


def test_seed_003_runs_and_constant_stays():
    net, _, _ = seed_custom_layer.main()
    params = net.collect_params()
    scales = [v for k, v in params.items() if k.endswith("scales")][0]
    np.testing.assert_array_equal(scales.data().asnumpy(), [2.0])
    weights = [v for k, v in params.items() if k.endswith("weights")][0]
    assert weights.shape == (5, 5)
    out, hybrid_out = seed_custom_layer.simple_layers()
    np.testing.assert_allclose(out.asnumpy(), [0.0, 0.5, 1.0])
    assert hybrid_out.shape == (5, 1)


def _seed_003_step(hybrid):
    mx.random.seed(11)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5))
        net.add(seed_custom_layer.NormalizationHybridLayer(hidden_units=5, scales=nd.array([2])))
        net.add(nn.Dense(1))
    net.initialize(mx.init.Xavier(magnitude=2.24))
    if hybrid:
        net.hybridize()
    x = nd.random_uniform(low=-10, high=10, shape=(5, 2))
    label = nd.random_uniform(low=-1, high=1, shape=(5, 1))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    for _ in range(2):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), label)
        loss.backward()
        trainer.step(x.shape[0])
    return [p.data().asnumpy() for p in net.collect_params().values()]


def test_seed_003_same_parameters_hybridized_and_imperative():
    for a, b in zip(_seed_003_step(False), _seed_003_step(True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_trainer_states_round_trip(tmp_path):
    def setup():
        mx.random.seed(3)
        net = _mlp(prefix="st_")
        net.initialize(mx.init.Xavier())
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        return net, trainer

    x, y = nd.array(np.linspace(-1, 1, 20).reshape(4, 5)), nd.array([0, 1, 2, 1])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(net, trainer):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(4)

    net, trainer = setup()
    for _ in range(2):
        step(net, trainer)
    path = str(tmp_path / "trainer.states")
    trainer.save_states(path)
    net.save_parameters(str(tmp_path / "net.params"))
    step(net, trainer)
    expected = {k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}

    other, other_trainer = setup()
    other(x)
    other.load_parameters(str(tmp_path / "net.params"))
    other_trainer.load_states(path)
    step(other, other_trainer)
    for k, v in other._collect_params_with_prefix().items():
        np.testing.assert_allclose(v.data().asnumpy(), expected[k], rtol=1e-6, atol=1e-7)
    (tmp_path / "bad.states").write_bytes(b"not states")
    with pytest.raises(mx.MXNetError, match="bad.states"):
        other_trainer.load_states(str(tmp_path / "bad.states"))


def test_shared_parameters_save_once_with_deduplicate_and_load_back(tmp_path):
    net = nn.HybridSequential()
    first = nn.Dense(4, in_units=4)
    net.add(first, nn.Dense(4, in_units=4, params=first.params))
    net.initialize()
    assert net[0].weight is net[1].weight
    path = str(tmp_path / "shared.params")
    net.save_parameters(path, deduplicate=True)
    assert sorted(nd.load(path)) == ["0.bias", "0.weight"]
    other = nn.HybridSequential()
    second = nn.Dense(4, in_units=4)
    other.add(second, nn.Dense(4, in_units=4, params=second.params))
    other.load_parameters(path)
    x = nd.ones((1, 4))
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)



def test_an_unused_input_warns_and_a_none_input_does_not():
    """Hybridized, an input the graph never reads draws MXNet's warning; an
    optional input given as None (left out) does not."""
    import warnings

    class Pick(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y=None, scale=None):
            return x * 2 if scale is None else F.broadcast_mul(x, scale)

    x = nd.array([1.0, 2.0])
    block = Pick()
    block.hybridize()
    with pytest.warns(UserWarning, match="data1 input to HybridBlock .* is not used"):
        out = block(x, nd.array([5.0]))
    np.testing.assert_allclose(out.asnumpy(), [2.0, 4.0])
    block = Pick()
    block.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = block(x, None, nd.array([3.0]))
    np.testing.assert_allclose(out.asnumpy(), [3.0, 6.0])
