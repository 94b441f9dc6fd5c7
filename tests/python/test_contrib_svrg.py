"""mx.contrib.svrg_optimization: SVRGModule and its optimizers, checked
against MXNet 1.9.1's numbers (tests/fixtures/contrib/reference.json,
written by scripts/make_contrib_fixtures.py) and against oxnet itself
(several contexts, kvstores, checkpoints)."""

import json
import os
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.contrib.svrg_optimization.svrg_module import SVRGModule
from oxnet.contrib.svrg_optimization.svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "contrib" / "reference.json"
REF = json.loads(FIXTURES.read_text())["svrg"]
X = np.array(REF["x"], dtype="float32")
Y = np.array(REF["y"], dtype="float32")
LR = (("learning_rate", 0.01),)


def data_iter():
    return mx.io.NDArrayIter(X, Y, batch_size=5, shuffle=False, label_name="lin_reg_label", last_batch_handle="pad")


def linreg(name="fc1"):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), name=name, num_hidden=1)
    return mx.sym.LinearRegressionOutput(fc, mx.sym.Variable("lin_reg_label"), name="lro")


def svrg(update_freq=2, context=mx.cpu(), name="fc1"):
    return SVRGModule(linreg(name), data_names=["data"], label_names=["lin_reg_label"], update_freq=update_freq,
                      context=context)


def ready(kvstore="local", optimizer_params=LR, **kwargs):
    di = data_iter()
    mod = svrg(**kwargs)
    mod.bind(di.provide_data, di.provide_label)
    mod.init_params(mx.init.One())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=optimizer_params)
    return di, mod


def params(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def assert_params(mod, expected, prefix="fc1"):
    got = params(mod)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key.replace("fc1", prefix)], np.array(value), rtol=1e-5, atol=1e-6)


def fit(num_epoch=3, update_freq=3, optimizer_params=LR, kvstore="local", **kwargs):
    di = data_iter()
    mod = svrg(update_freq=update_freq, **kwargs)
    metric = mx.metric.create("mse")
    mod.fit(di, eval_metric=metric, optimizer="sgd", optimizer_params=optimizer_params, num_epoch=num_epoch,
            initializer=mx.init.One(), kvstore=kvstore)
    return mod, metric.get()[1]


# --------------------------------------------------------------- MXNet's numbers
def test_full_grads_and_one_step_match_mxnet():
    di, mod = ready()
    mod.update_full_grads(di)
    for name, value in REF["full_grads"].items():
        # 12 examples in batches of 5 (the last padded by 3): the mean over 2.4 batches
        np.testing.assert_allclose(mod._param_dict[0][name].asnumpy(), np.array(value), rtol=1e-6)
    di.reset()
    mod.forward_backward(next(di))
    mod.update()
    assert_params(mod, REF["one_step"])


@pytest.mark.parametrize("key,opt_params", [("fit_sgd", LR), ("fit_momentum", LR + (("momentum", 0.9),))])
def test_fit_matches_mxnet(key, opt_params):
    mod, mse = fit(optimizer_params=opt_params)
    assert_params(mod, REF[key])
    assert mse == pytest.approx(REF[key + "_mse"], rel=1e-5)


def test_full_grads_by_hand():
    """The full gradient is the mean over the batches of LinearRegressionOutput's summed gradient."""
    di, mod = ready()
    mod.update_full_grads(di)
    w, b = np.ones((1, 2), "float32"), 0.0
    batches = [np.arange(0, 5), np.arange(5, 10), np.array([10, 11, 0, 1, 2])]  # the pad wraps around
    gw, gb = np.zeros((1, 2)), 0.0
    for idx in batches:
        err = X[idx].dot(w.T).ravel() + b - Y[idx]
        gw += err.dot(X[idx])
        gb += err.sum()
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), gw / 2.4, rtol=1e-5)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_bias"].asnumpy(), [gb / 2.4], rtol=1e-5)


def test_svrg_gradient_rule():
    """After a step the gradient array holds g(w) - g(w_snapshot) + full."""
    di, mod = ready()
    mod.update_full_grads(di)
    di.reset()
    batch = next(di)
    mod.forward_backward(batch)
    g = mod._exec_group.grad_arrays[0][0].asnumpy().copy()
    g_snap = mod._mod_aux._exec_group.grad_arrays[0][0].asnumpy().copy()
    np.testing.assert_allclose(g, g_snap)  # the snapshot is the current weights
    mod.update()
    np.testing.assert_allclose(mod._exec_group.grad_arrays[0][0].asnumpy(),
                               mod._param_dict[0]["fc1_weight"].asnumpy(), rtol=1e-6)


# ------------------------------------------------------------- oxnet itself
def test_full_grads_do_not_accumulate():
    # MXNet 1.9.1 adds each pass onto the previous one: [[-45, -55]] then [[-67.5, -82.5]] on its test data
    di, mod = ready()
    mod.update_full_grads(di)
    first = mod._param_dict[0]["fc1_weight"].asnumpy().copy()
    mod.update_full_grads(di)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), first)


def test_param_named_full_uses_the_default_optimizer():
    # MXNet 1.9.1 assigns the gradient to any weight whose name contains "full"
    mod, _ = fit(name="fullyconnected0")
    assert_params(mod, REF["fit_sgd"], prefix="fullyconnected0")


@pytest.mark.parametrize("kvstore", ["local", "device", "object"])
def test_kvstores_and_two_contexts_equal_one(kvstore):
    kv = mx.kv.create("local") if kvstore == "object" else kvstore
    mod, _ = fit(context=[mx.cpu(0), mx.cpu(1)], kvstore=kv)
    assert_params(mod, REF["fit_sgd"])


def test_two_contexts_without_update_on_kvstore(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    mod, _ = fit(context=[mx.cpu(0), mx.cpu(1)], optimizer_params=LR + (("momentum", 0.9),))
    assert not mod._update_on_kvstore
    assert_params(mod, REF["fit_momentum"])


def test_kvstore_object_keeps_weights_and_adds_full_keys():
    # MXNet 1.9.1 pulls the zero <name>_full values into the weights here
    kv = mx.kv.create("local")
    di, mod = ready(kvstore=kv)
    assert mod._update_on_kvstore
    np.testing.assert_allclose(mod._exec_group.param_arrays[0][0].asnumpy(), [[1, 1]])
    out = mx.nd.zeros((1, 2))
    kv.pull("fc1_weight_full", out=out)
    np.testing.assert_allclose(out.asnumpy(), 0)
    mod.update_full_grads(di)
    di.reset()
    mod.forward_backward(next(di))
    mod.update()
    assert_params(mod, REF["one_step"])


def test_accumulate_kvstore():
    kv = mx.kv.create("local")
    _, mod = ready(kvstore=kv)
    ones = [mx.nd.ones((1, 2)) for _ in range(4)]
    mod._accumulate_kvstore("fc1_weight", ones)
    assert len(mod._param_dict) == mod._ctx_len == 1
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), [[4, 4]])


def test_update_freq_schedule(monkeypatch):
    calls = []
    original = SVRGModule.update_full_grads

    def spy(self, train_data):
        calls.append(True)
        original(self, train_data)

    monkeypatch.setattr(SVRGModule, "update_full_grads", spy)
    fit(num_epoch=5, update_freq=2)
    assert len(calls) == 3  # epochs 0, 2, 4


def test_bind_and_errors():
    mod = svrg()
    with pytest.raises(TypeError, match="update_freq"):
        svrg(update_freq=None)
    with pytest.raises(TypeError, match="update_freq"):
        svrg(update_freq=2.0)
    with pytest.raises(ValueError, match="update_freq"):
        svrg(update_freq=0)
    di = data_iter()
    mod.bind(di.provide_data, di.provide_label)
    assert mod.binded and mod._mod_aux.binded
    mod.init_params(mx.init.One())
    with pytest.raises(MXNetError, match="init_optimizer"):
        mod.update_full_grads(di)
    mod.init_optimizer(optimizer_params=LR)
    with pytest.raises(MXNetError, match="update_full_grads"):
        mod.forward(next(di), is_train=True)

    pred = svrg()
    pred.bind(di.provide_data, di.provide_label, for_training=False)
    assert pred.binded and not pred._mod_aux.binded


def test_bind_without_labels_and_reshape():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    mod = SVRGModule(net, data_names=["data"], label_names=None, update_freq=2)
    mod.bind(data_shapes=[("data", (3, 4))])
    assert mod._mod_aux.binded
    mod.init_params()
    mod._mod_aux.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((3, 4))], label=None), is_train=True)
    mod.backward([mx.nd.ones((3, 4))])
    mod.update()
    mod.reshape(data_shapes=[("data", (2, 4))])
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 4))], label=None), is_train=True)
    assert mod.get_outputs()[0].shape == (2, 4)
    assert mod._mod_aux.get_outputs()[0].shape == (2, 4)


def test_checkpoint_round_trip(tmp_path):
    mod, _ = fit(optimizer_params=LR + (("momentum", 0.9),))
    prefix = str(tmp_path / "svrg")
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    plain = SVRGModule.load(prefix, 3, data_names=["data"], label_names=["lin_reg_label"])
    assert type(plain) is mx.mod.Module  # as MXNet: Module.load
    again = SVRGModule.load(prefix, 3, load_optimizer_states=True, update_freq=3, data_names=["data"],
                            label_names=["lin_reg_label"])
    assert isinstance(again, SVRGModule) and again.update_freq == 3
    di = data_iter()
    again.bind(di.provide_data, di.provide_label)
    again.init_optimizer(optimizer="sgd", optimizer_params=LR + (("momentum", 0.9),))
    assert_params(again, REF["fit_momentum"])
    old, new = mod._updater._py_states, again._updater._py_states
    assert sorted(old) == sorted(new)
    for key in old:
        np.testing.assert_allclose(new[key].asnumpy(), old[key].asnumpy())


# -------------------------------------------------------------- optimizers
def test_svrg_optimizer_constructor_and_registry():
    opt = _SVRGOptimizer(default_optimizer="sgd", learning_rate=-1.0, momentum=0.5)
    assert opt.default_opt.lr == -1.0 and opt.default_opt.momentum == 0.5
    assert isinstance(opt.aux_opt, _AssignmentOptimizer)
    created = mx.optimizer.create("_svrgoptimizer", default_optimizer="adam")
    assert isinstance(created, _SVRGOptimizer) and isinstance(created.default_opt, mx.optimizer.Adam)
    given = mx.optimizer.SGD(learning_rate=0.3)
    assert _SVRGOptimizer(default_optimizer=given).default_opt is given
    with pytest.raises(TypeError, match="default_optimizer"):
        _SVRGOptimizer(default_optimizer=3)
    with pytest.raises(MXNetError, match="param_idx2name"):
        _SVRGOptimizer(default_optimizer="sgd").update(7, mx.nd.ones(2), mx.nd.ones(2), None)


def test_svrg_optimizer_on_kvstore():
    opt = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: "weight", 1: "weight_full"}, learning_rate=1.0)
    kv = mx.kv.create("local")
    kv.set_optimizer(opt)
    w = mx.nd.array([0, 0, 0])
    kv.init(0, w)
    kv.push(0, mx.nd.array([1, 1, 1]))
    kv.pull(0, w)
    np.testing.assert_allclose(w.asnumpy(), [-1, -1, -1])  # SGD step
    full = mx.nd.array([1, 1, 1])
    kv.init(1, full)
    kv.push(1, mx.nd.array([2, 2, 2]))
    kv.pull(1, full)
    np.testing.assert_allclose(full.asnumpy(), [2, 2, 2])  # assigned


def test_assignment_optimizer():
    opt = mx.optimizer.create("_assignmentoptimizer")
    w, g = mx.nd.zeros((2, 2)), mx.nd.array([[1, 2], [3, 4]])
    assert opt.create_state(0, w) is None
    opt.update(0, w, g, None)
    np.testing.assert_allclose(w.asnumpy(), g.asnumpy())


def test_lazy_import():
    assert mx.contrib.svrg_optimization.SVRGModule is SVRGModule
    assert os.path.basename(mx.contrib.svrg_optimization.svrg_optimizer.__file__) == "svrg_optimizer.py"
