"""mx.mod.Module, mx.model checkpoints and mx.callback: training that
reproduces MXNet 1.9.1's parameters, a classifier reaching a stated
accuracy, checkpoint and optimizer-state round trips, prediction with
padding, reshaping, input gradients and the callbacks' log lines."""

import logging
import os

import numpy as np
import pytest

import oxnet as mx


def _regression_data():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (30, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 1.0]) > 0).astype("float32").reshape(30, 1)
    w0 = rng.uniform(-0.1, 0.1, (1, 4)).astype("float32")
    return x, y, w0


def _regression_loss():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    # the loss is the output: backward starts from ones, as make_loss does
    return mx.sym.mean(mx.sym.square(mx.sym.sigmoid(fc) - mx.sym.var("label")))


# MXNet 1.9.1, same data, with mx.sym.make_loss around the loss; batch_size=7 with
# roll_over, 5 epochs, starting from w0 and a zero bias.
MXNET_PARAMS = {
    "sgd": ({"learning_rate": 0.1, "wd": 0.01, "momentum": 0.9},
            [[0.14785081148147583, -0.1506064236164093, 0.1620049774646759, 0.004701751284301281]],
            [-0.006593904923647642], 0.2220226712524891),
    "adam": ({"learning_rate": 0.1},
             [[1.3030962944030762, -1.6864118576049805, 1.127611517906189, 0.13444560766220093]],
             [0.0063702864572405815], 0.11420630943030119),
}


@pytest.mark.parametrize("optimizer", sorted(MXNET_PARAMS))
def test_fit_reproduces_mxnet_parameters(optimizer):
    params, weight, bias, loss = MXNET_PARAMS[optimizer]
    x, y, w0 = _regression_data()
    it = mx.io.NDArrayIter(x, y, batch_size=7, label_name="label", last_batch_handle="roll_over")
    mod = mx.mod.Module(_regression_loss(), data_names=("data",), label_names=("label",))
    mod.fit(it, num_epoch=5, optimizer=optimizer, optimizer_params=params, eval_metric=mx.metric.Loss(),
            arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.zeros((1,))})
    arg, aux = mod.get_params()
    assert aux == {}
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), weight, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), bias, rtol=1e-5, atol=1e-6)
    assert mod.score(it, mx.metric.Loss())[0][1] == pytest.approx(loss, rel=1e-5)
    assert mod._optimizer.rescale_grad == pytest.approx(1 / 7)


def _blobs(n, seed):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    x = rng.normal(0, 0.5, (n, 2)) + np.where(y[:, None] == 1, 1.5, -1.5)
    return x.astype("float32"), y.astype("float32")


def test_module_learns_linearly_separable_classes():
    mx.random.seed(42)
    np.random.seed(42)
    x, y = _blobs(200, 0)
    logits = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(logits, mx.sym.var("label"))
    train = mx.io.NDArrayIter(x, y, batch_size=20, shuffle=True, label_name="label")
    mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",))
    mod.fit(train, num_epoch=10, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Xavier(), eval_metric=mx.metric.Loss())
    assert mod.score(train, mx.metric.Loss())[0][1] < 0.05

    # a prediction module for the logits, with the trained parameters
    pred = mx.mod.Module(logits, data_names=("data",), label_names=None)
    xt, yt = _blobs(100, 1)
    test = mx.io.NDArrayIter(xt, batch_size=32)  # 100 = 3 * 32 + 4: the last batch is padded
    pred.bind(test.provide_data, for_training=False)
    pred.set_params(*mod.get_params())
    out = pred.predict(test)
    assert out.shape == (100, 2)
    accuracy = float((out.asnumpy().argmax(axis=1) == yt).mean())
    assert accuracy >= 0.99


def _mlp():
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu")
    return mx.sym.FullyConnected(h, num_hidden=3, name="fc2")


def _trained_mlp_module(x, y, optimizer="adam"):
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(_mlp(), mx.sym.var("label"))
    it = mx.io.NDArrayIter(x, y, batch_size=5, label_name="label")
    mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",))
    mod.fit(it, num_epoch=3, optimizer=optimizer, optimizer_params={"learning_rate": 0.05},
            initializer=mx.init.Xavier(), eval_metric=mx.metric.Loss())
    return mod, it


def test_checkpoint_round_trip_gives_identical_outputs_and_optimizer_states(tmp_path):
    mx.random.seed(3)
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (20, 4)).astype("float32")
    y = rng.randint(0, 3, 20).astype("float32")
    mod, it = _trained_mlp_module(x, y)
    prefix = str(tmp_path / "mlp")
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    for suffix in ("-symbol.json", "-0003.params", "-0003.states"):
        assert os.path.exists(prefix + suffix)
    saved = mx.nd.load(prefix + "-0003.params")
    assert sorted(saved) == ["arg:fc1_bias", "arg:fc1_weight", "arg:fc2_bias", "arg:fc2_weight"]

    loaded = mx.mod.Module.load(prefix, 3, load_optimizer_states=True, data_names=("data",),
                                label_names=("label",))
    loaded.bind(it.provide_data, it.provide_label)
    loaded.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.05})
    assert loaded._updater.get_states() == mod._updater.get_states()
    for a, b in zip(mod.predict(it, always_output_list=True), loaded.predict(it, always_output_list=True)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())

    # one more epoch from the saved optimizer states lands where the original lands
    for m in (mod, loaded):
        it.reset()
        for batch in it:
            m.forward_backward(batch)
            m.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), loaded.get_params()[0][name].asnumpy())

    # without the states, Adam starts afresh and the parameters part ways
    fresh = mx.mod.Module.load(prefix, 3, data_names=("data",), label_names=("label",))
    fresh.bind(it.provide_data, it.provide_label)
    fresh.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.05})
    it.reset()
    for batch in it:
        fresh.forward_backward(batch)
        fresh.update()
    assert not np.array_equal(fresh.get_params()[0]["fc1_weight"].asnumpy(),
                              mod.get_params()[0]["fc1_weight"].asnumpy())


def test_model_checkpoint_functions(tmp_path):
    sym = _mlp()
    args = {"fc1_weight": mx.nd.ones((8, 4)), "fc1_bias": mx.nd.zeros((8,)),
            "fc2_weight": mx.nd.ones((3, 8)) * 2, "fc2_bias": mx.nd.zeros((3,))}
    aux = {"bn_moving_mean": mx.nd.ones((2,))}
    prefix = str(tmp_path / "m")
    mx.model.save_checkpoint(prefix, 12, sym, args, aux)
    sym2, args2, aux2 = mx.model.load_checkpoint(prefix, 12)
    assert sym2.list_arguments() == sym.list_arguments()
    assert sorted(args2) == sorted(args) and sorted(aux2) == ["bn_moving_mean"]
    assert args2["fc2_weight"].asnumpy().tolist() == [[2.0] * 8] * 3
    mx.nd.save(prefix + "-0001.params", {"weight": mx.nd.ones((1,))})
    with pytest.raises(mx.MXNetError, match="invalid parameter name 'weight'"):
        mx.model.load_params(prefix, 1)


def test_save_and_load_params(tmp_path):
    mod = mx.mod.Module(_mlp(), label_names=None)
    mod.bind([("data", (2, 4))], for_training=False)
    mod.init_params(mx.init.Uniform(1.0))
    fname = str(tmp_path / "p.params")
    mod.save_params(fname)
    other = mx.mod.Module(_mlp(), label_names=None)
    other.bind([("data", (2, 4))], for_training=False)
    other.init_params(mx.init.Zero())
    other.load_params(fname)
    batch = mx.io.DataBatch([mx.nd.array(np.arange(8).reshape(2, 4))])
    mod.forward(batch)
    other.forward(batch)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), other.get_outputs()[0].asnumpy())


def test_forward_reshapes_for_another_batch_size_and_keeps_parameters():
    mod = mx.mod.Module(_mlp(), label_names=None)
    mod.bind([("data", (4, 4))], for_training=False)
    mod.init_params(mx.init.Uniform(0.5))
    assert mod.output_shapes == [("fc2_output", (4, 3))]
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (6, 4)))
    mod.forward(mx.io.DataBatch([x]))
    out6 = mod.get_outputs()[0].asnumpy()
    assert out6.shape == (6, 3) and mod.data_shapes[0].shape == (6, 4)
    mod.forward(mx.io.DataBatch([x[0:4]]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), out6[:4], rtol=1e-6)
    assert mod.predict(x).shape == (6, 3)


def test_input_gradients_and_fixed_parameters():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    mod = mx.mod.Module(out, label_names=None, fixed_param_names=["fc_bias"])
    mod.bind([("data", (3, 2))], inputs_need_grad=True)
    w = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array([0.5, -0.5])})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    mod.forward(mx.io.DataBatch([mx.nd.ones((3, 2))]), is_train=True)
    mod.backward([mx.nd.ones((3, 2))])
    # d(sum of outputs)/d(data) = column sums of the weight, for every example
    assert mod.get_input_grads()[0].asnumpy().tolist() == [[4.0, 6.0]] * 3
    mod.update()
    arg, _ = mod.get_params()
    assert arg["fc_bias"].asnumpy().tolist() == [0.5, -0.5]  # fixed
    # weight -= lr * rescale_grad(1/3) * grad(3 per entry)
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), w - 1.0, rtol=1e-6)


def test_variable_init_attribute_wins_over_the_initializer():
    gamma = mx.sym.var("gamma", init=mx.init.One())
    sym = mx.sym.LeakyReLU(data=mx.sym.var("data"), gamma=gamma, act_type="prelu")
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", (10, 10))])
    mod.init_params()
    assert (mod.get_params()[0]["gamma"].asnumpy() == 1).all()
    assert mod.params_initialized and not mod.optimizer_initialized and mod.binded
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()


def test_shared_module_uses_the_same_parameter_memory():
    mod = mx.mod.Module(_mlp(), label_names=None)
    mod.bind([("data", (4, 4))])
    mod.init_params(mx.init.Uniform(0.5))
    other = mx.mod.Module(_mlp(), label_names=None)
    other.bind([("data", (2, 4))], shared_module=mod)
    mod._exec_group.execs[0].arg_dict["fc1_weight"][:] = 0.25
    assert (other._exec_group.execs[0].arg_dict["fc1_weight"].asnumpy() == 0.25).all()


def test_module_errors_name_the_problem():
    sym = _mlp()
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(sym, data_names=("x",))
    with pytest.warns(UserWarning, match="label_names"):
        mod = mx.mod.Module(sym)  # no softmax_label in this symbol
    with pytest.raises(mx.MXNetError, match="needs bind"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((1, 4))]))
    with pytest.raises(mx.MXNetError, match="empty list"):
        mx.mod.Module(sym, context=[])
    with pytest.raises(ValueError, match="work_load_list has 1 entries for 2 contexts"):
        mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1])
    with pytest.raises(ValueError, match="num_epoch"):
        mx.mod.Module(sym, label_names=None).fit(mx.io.NDArrayIter(np.zeros((2, 4))))
    with pytest.raises(ValueError, match="don't match names"):
        mx.mod.Module(sym, label_names=None).bind([("x", (1, 4))])


def test_fit_logs_and_calls_back(tmp_path, caplog):
    x, y, w0 = _regression_data()
    train = mx.io.NDArrayIter(x, y, batch_size=10, label_name="label")
    val = mx.io.NDArrayIter(x[:10], y[:10], batch_size=10, label_name="label")
    seen = []
    prefix = str(tmp_path / "cb")
    mod = mx.mod.Module(_regression_loss(), data_names=("data",), label_names=("label",))
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, num_epoch=2, eval_metric=mx.metric.Loss(),
                arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.zeros((1,))},
                batch_end_callback=[mx.callback.Speedometer(10, frequent=1), mx.callback.log_train_metric(2),
                                    lambda p: seen.append((p.epoch, p.nbatch))],
                epoch_end_callback=mx.callback.do_checkpoint(prefix, period=2),
                eval_end_callback=mx.callback.LogValidationMetricsCallback())
    text = caplog.text
    assert seen == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert "Epoch[1] Train-loss=" in text and "Epoch[1] Validation-loss=" in text
    assert "Epoch[0] Time cost=" in text
    assert "Epoch[0] Batch [0-1]\tSpeed: " in text and " samples/sec\tloss=" in text
    assert "Iter[1] Batch[2] Train-loss=" in text
    assert os.path.exists(prefix + "-0002.params") and not os.path.exists(prefix + "-0001.params")


def test_progress_bar_text(caplog):
    bar = mx.callback.ProgressBar(total=4, length=8)
    with caplog.at_level(logging.INFO):
        bar(mx.model.BatchEndParam(epoch=0, nbatch=1, eval_metric=None, locals=None))
    assert "[==------] 25%" in caplog.text


def test_iter_predict_and_unmerged_predict():
    mod = mx.mod.Module(_mlp(), label_names=None)
    mod.bind([("data", (4, 4))], for_training=False)
    mod.init_params(mx.init.Uniform(0.5))
    it = mx.io.NDArrayIter(np.random.RandomState(1).uniform(size=(10, 4)), batch_size=4)
    sizes = [outs[0].shape[0] for outs, _, _ in mod.iter_predict(it)]
    assert sizes == [4, 4, 2]
    per_batch = mod.predict(it, merge_batches=False)
    assert [b[0].shape for b in per_batch] == [(4, 3), (4, 3), (2, 3)]
    np.testing.assert_array_equal(np.concatenate([b[0].asnumpy() for b in per_batch]),
                                  mod.predict(it).asnumpy())


FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "module")


def test_loads_a_checkpoint_written_by_mxnet_and_predicts_the_same(tmp_path):
    # written by scripts/make_module_fixtures.py with MXNet 1.9.1
    expected = np.load(os.path.join(FIXTURES, "mlp-expected.npz"))
    mod = mx.mod.Module.load(os.path.join(FIXTURES, "mlp"), 3, label_names=None)
    mod.bind([("data", (5, 4))], for_training=False)
    out = mod.predict(mx.io.NDArrayIter(expected["data"], batch_size=5))
    np.testing.assert_allclose(out.asnumpy(), expected["out"], rtol=1e-5, atol=1e-6)
    # and writes it back with the same names and values
    mod.save_checkpoint(str(tmp_path / "again"), 3)
    ours = mx.nd.load(str(tmp_path / "again-0003.params"))
    theirs = mx.nd.load(os.path.join(FIXTURES, "mlp-0003.params"))
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        np.testing.assert_array_equal(ours[key].asnumpy(), value.asnumpy())


class _DictKVStore:
    """A minimal in-process kvstore (what Module asks of one), to check the
    update-on-kvstore path of Module against the direct updater path."""

    type = "local"

    def __init__(self):
        self.store, self.updater, self.keys = {}, None, {}

    def is_capable(self, capability):
        return capability == "optimizer"

    def set_optimizer(self, optimizer):
        self.updater = mx.optimizer.get_updater(optimizer)

    def init(self, key, value):
        self.keys[key] = len(self.keys)
        self.store[key] = value.copy()

    def pull(self, key, out, priority=0):
        for o in out:
            self.store[key].copyto(o)

    def pushpull(self, key, value, out=None, priority=0):
        grad = value[0].copy()
        for v in value[1:]:
            grad += v
        self.updater(self.keys[key], grad, self.store[key])
        self.pull(key, out, priority)


def test_update_on_a_kvstore_matches_the_direct_updater():
    x, y, w0 = _regression_data()
    results = []
    for kv in (None, _DictKVStore()):
        it = mx.io.NDArrayIter(x, y, batch_size=10, label_name="label")
        mod = mx.mod.Module(_regression_loss(), data_names=("data",), label_names=("label",))
        mod.fit(it, num_epoch=3, kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
                eval_metric=mx.metric.Loss(), arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.zeros((1,))})
        assert mod._update_on_kvstore is (kv is not None)
        results.append(mod.get_params()[0]["fc_weight"].asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    assert not np.allclose(results[0], w0)
    with pytest.raises(TypeError, match="kvstore must be KVStore, str or None"):
        mx.mod.Module(_regression_loss(), data_names=("data",), label_names=("label",)).fit(
            mx.io.NDArrayIter(x, y, batch_size=10, label_name="label"), num_epoch=1, kvstore=3)


def test_module_checkpoint_callback_saves_optimizer_states(tmp_path):
    x, y, w0 = _regression_data()
    mod = mx.mod.Module(_regression_loss(), data_names=("data",), label_names=("label",))
    prefix = str(tmp_path / "mc")
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=10, label_name="label"), num_epoch=2, optimizer="adam",
            eval_metric=mx.metric.Loss(), epoch_end_callback=mx.callback.module_checkpoint(mod, prefix, 1, True))
    for name in ("-symbol.json", "-0001.params", "-0001.states", "-0002.params", "-0002.states"):
        assert os.path.exists(prefix + name)
    with open(prefix + "-0002.states", "rb") as f:
        assert f.read() == mod._updater.get_states()


def test_training_curve_matches_mxnet():
    # scripts/make_module_fixtures.py: MXNet 1.9.1's Module.fit from given
    # initial parameters (SGD, momentum, weight decay, no shuffle), its
    # training accuracy and cross-entropy after each epoch, its validation
    # accuracy per epoch and its final parameters
    f = np.load(os.path.join(FIXTURES, "mlp-curve.npz"))
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=8, name="fc1"), act_type="tanh")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")
    x, y = f["x"], f["y"]
    train, val = mx.io.NDArrayIter(x, y, batch_size=8), mx.io.NDArrayIter(x[:16], y[:16], batch_size=8)
    metric = mx.metric.create(["acc", "ce"])
    curve, val_acc = [], []
    mod = mx.mod.Module(net)
    mod.fit(train, eval_data=val, eval_metric=metric, num_epoch=5, optimizer="sgd",
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3},
            arg_params={k[5:]: mx.nd.array(f[k]) for k in f.files if k.startswith("init:")},
            epoch_end_callback=lambda *_: curve.append([v for _, v in metric.get_name_value()]),
            eval_end_callback=lambda p: val_acc.append(p.eval_metric.get_name_value()[0][1]))
    np.testing.assert_allclose(np.array(curve), f["curve"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(val_acc, f["val_acc"])
    final, _ = mod.get_params()
    for k in f.files:
        if k.startswith("final:"):
            np.testing.assert_allclose(final[k[6:]].asnumpy(), f[k], rtol=1e-4, atol=1e-5, err_msg=k)
