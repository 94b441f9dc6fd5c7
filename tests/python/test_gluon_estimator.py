"""mx.gluon.contrib.estimator: the Estimator's loops against hand-written
Gluon loops, handler ordering, metrics, logging, checkpoints, early stopping
and argument errors."""

import io
import logging
import os
import re
import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.gluon.contrib.estimator import (BatchBegin, BatchEnd, BatchProcessor, CheckpointHandler,
                                           EarlyStoppingHandler, EpochBegin, EpochEnd, Estimator,
                                           GradientUpdateHandler, LoggingHandler, MetricHandler,
                                           StoppingHandler, TrainBegin, TrainEnd, ValidationHandler)

N_SAMPLES, N_FEATURES, N_CLASSES, BATCH = 22, 5, 3, 5  # 5 batches per epoch, the last of 2
BATCHES_PER_EPOCH = 5


def _data(seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(N_SAMPLES, N_FEATURES).astype(np.float32)
    y = rng.randint(0, N_CLASSES, N_SAMPLES).astype(np.float32)
    return x, y


def _weights(seed=1):
    rng = np.random.RandomState(seed)
    return [rng.randn(8, N_FEATURES).astype(np.float32) * 0.5, rng.randn(8).astype(np.float32) * 0.1,
            rng.randn(N_CLASSES, 8).astype(np.float32) * 0.5, np.zeros(N_CLASSES, np.float32)]


def _net(weights=None, ctx=None, hybrid=False):
    """A 5-8-3 MLP with fixed (numpy-given) weights."""
    net = gluon.nn.HybridSequential() if hybrid else gluon.nn.Sequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(8, activation="relu", in_units=N_FEATURES),
                gluon.nn.Dense(N_CLASSES, in_units=8))
    net.initialize(ctx=ctx or mx.cpu())
    for param, value in zip(net.collect_params().values(), weights or _weights()):
        param.set_data(mx.nd.array(value))
    return net


def _params(net):
    return [p.data().asnumpy() for p in net.collect_params().values()]


def _loader(x, y, batch_size=BATCH):
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)),
                                 batch_size=batch_size)


def _trainer(net):
    return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9})


def _quiet(est):
    """Sends the estimator's log to a buffer, which is returned."""
    buf = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(buf)]
    return buf


def _estimator(net, **kwargs):
    kwargs.setdefault("trainer", _trainer(net))
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), **kwargs)
    return est, _quiet(est)


def _hand_loop(net, trainer, x, y, epochs=None, batches=None):
    """The plain Gluon loop the Estimator stands for; returns the last
    epoch's per-sample losses and predictions."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    done, epoch = 0, 0
    while True:
        losses, preds = [], []
        for xb, yb in _loader(x, y):
            with autograd.record():
                out = net(xb)
                loss = loss_fn(out, yb)
            loss.backward()
            trainer.step(xb.shape[0])
            losses.append(loss.asnumpy())
            preds.append(out.asnumpy())
            done += 1
            if done == batches:
                return np.concatenate(losses), np.concatenate(preds)
        epoch += 1
        if epoch == epochs:
            return np.concatenate(losses), np.concatenate(preds)


def test_fit_reaches_the_hand_written_loops_parameters_and_metrics():
    x, y = _data()
    est, _ = _estimator(_net())
    est.fit(_loader(x, y), epochs=3)

    ref = _net()
    losses, preds = _hand_loop(ref, _trainer(ref), x, y, epochs=3)
    for got, want in zip(_params(est.net), _params(ref)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the training metrics hold the last epoch, accumulated batch by batch
    names = [m.name for m in est.train_metrics]
    assert names == ["training accuracy", "training softmaxcrossentropyloss"]
    acc, loss = [m.get()[1] for m in est.train_metrics]
    assert acc == pytest.approx(np.mean(preds.argmax(axis=1) == y[:len(preds)]))
    assert loss == pytest.approx(float(losses.mean()), rel=1e-5)


def test_fit_by_batches():
    x, y = _data()
    est, _ = _estimator(_net())
    est.fit(_loader(x, y), batches=7)  # an epoch and two batches
    ref = _net()
    _hand_loop(ref, _trainer(ref), x, y, batches=7)
    for got, want in zip(_params(est.net), _params(ref)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_evaluate_uses_val_net_and_val_loss_and_resets_metrics():
    x, y = _data()
    net = _net()
    val_net = _net(weights=_weights(seed=7))
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=_trainer(net),
                    val_net=val_net, val_loss=gluon.loss.SoftmaxCrossEntropyLoss(weight=2.0))
    _quiet(est)
    loader = _loader(x, y)
    for _ in range(2):  # a second evaluation starts from reset metrics
        est.evaluate(loader)
        out = val_net(mx.nd.array(x)).asnumpy()
        acc, loss = [m.get()[1] for m in est.val_metrics]
        assert acc == pytest.approx(np.mean(out.argmax(axis=1) == y))
        # val_loss: cross-entropy weighted by 2
        shifted = out - out.max(axis=1, keepdims=True)
        nll = np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(len(y)), y.astype(int)]
        assert loss == pytest.approx(2 * float(nll.mean()), rel=1e-5)
    assert [m.name for m in est.val_metrics] == ["validation accuracy",
                                                 "validation softmaxcrossentropyloss"]


def test_metric_names_defaults_and_prepare_loss_and_metrics():
    net = _net()
    est = Estimator(net, gluon.loss.L2Loss(), trainer=_trainer(net))
    # no suggested metric for L2Loss: only the loss metric
    assert [type(m) for m in est.train_metrics] == [mx.metric.Loss]
    assert [m.name for m in est.train_metrics] == ["training l2loss"]
    assert [m.name for m in est.val_metrics] == ["validation l2loss"]
    assert est.val_metrics[0] is not est.train_metrics[0]
    train, val = est.prepare_loss_and_metrics()
    assert train is est.train_metrics and val is est.val_metrics
    assert [m.name for m in train] == ["training l2loss"]  # no second prefix

    rmse, mae = mx.metric.RMSE(), mx.metric.MAE()
    est = Estimator(net, gluon.loss.L2Loss(), train_metrics=mx.metric.CompositeEvalMetric([rmse, mae]),
                    val_metrics=[mx.metric.RMSE()], trainer=_trainer(net))
    # given metrics: no loss metric is added (MXNet 1.9.1)
    assert est.train_metrics == [rmse, mae]
    assert [m.name for m in est.train_metrics] == ["training rmse", "training mae"]
    assert [m.name for m in est.val_metrics] == ["validation rmse"]


def test_argument_errors_and_warnings():
    x, y = _data()
    net = _net()
    loss = gluon.loss.L2Loss()
    with pytest.raises(ValueError, match="loss must be a Loss"):
        Estimator(net, "mse")
    with pytest.raises(ValueError, match="metrics must be a Metric"):
        Estimator(net, loss, train_metrics="acc", trainer=_trainer(net))
    with pytest.raises(ValueError, match="Trainer must be a Gluon Trainer"):
        Estimator(net, loss, trainer="sgd")
    with pytest.raises(ValueError, match="context must be a Context"):
        Estimator(net, loss, trainer=_trainer(net), context="cpu")
    with pytest.raises(AssertionError, match="is not available"):
        Estimator(net, loss, trainer=_trainer(net), context=[mx.gpu(mx.context.num_gpus())])
    with pytest.raises(ValueError, match="fit_batch"):
        Estimator(net, loss, trainer=_trainer(net), batch_processor=object())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = Estimator(net, loss)
    assert any("No trainer specified" in str(w.message) for w in caught)
    assert isinstance(est.trainer.optimizer, mx.optimizer.SGD)
    assert est.trainer.learning_rate == pytest.approx(0.001)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Estimator(net, loss, trainer=_trainer(net), initializer=mx.init.Xavier())
    assert any("Network already fully initialized" in str(w.message) for w in caught)

    # an uninitialized network is initialized on the estimator's context
    fresh = gluon.nn.Dense(2, in_units=3)
    Estimator(fresh, loss, trainer=None, initializer=mx.init.One())
    np.testing.assert_array_equal(fresh.weight.data().asnumpy(), np.ones((2, 3)))

    est, _ = _estimator(_net())
    loader = _loader(x, y)
    for kwargs in ({}, {"epochs": 1, "batches": 1}):
        with pytest.raises(ValueError, match="exactly one type of iteration"):
            est.fit(loader, **kwargs)
    with pytest.raises(ValueError, match="Gluon DataLoader"):
        est.fit(mx.io.NDArrayIter(x, y, batch_size=5), epochs=1)
    with pytest.raises(ValueError, match="Gluon DataLoader"):
        est.evaluate([mx.nd.array(x)])
    with pytest.raises(ValueError, match="handlers must be an EventHandler"):
        est.fit(loader, epochs=1, event_handlers=["log"])
    # a handler mixed with default ones must use the estimator's metrics
    with pytest.raises(ValueError, match="outside of the known training and validation metrics"):
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.RMSE()])])
    with pytest.raises(ValueError, match="log_interval"):
        LoggingHandler(log_interval="batch")


class _Recorder(TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd):
    """Appends ``(tag, event)`` to a shared list at every event."""

    def __init__(self, log, tag, priority=0):
        self.log, self.tag, self.priority = log, tag, priority

    def train_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_begin"))

    def epoch_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_begin"))

    def batch_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "batch_begin"))

    def batch_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "batch_end"))
        return False

    def epoch_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_end"))
        return False

    def train_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_end"))


def test_default_handlers_and_priority_order():
    x, y = _data()
    est, _ = _estimator(_net())
    early = EarlyStoppingHandler(monitor=est.val_metrics[0], mode="max")
    handlers = est._prepare_default_handlers(val_data=_loader(x, y), event_handlers=[early])
    kinds = [type(h) for h in handlers]
    assert kinds == [GradientUpdateHandler, MetricHandler, ValidationHandler, EarlyStoppingHandler,
                     StoppingHandler, LoggingHandler]
    assert [getattr(h, "priority", 0) for h in handlers] == [-2000, -1000, -1000, 0, 0, np.inf]
    # without validation data there is no ValidationHandler
    kinds = [type(h) for h in est._prepare_default_handlers(None, None)]
    assert kinds == [GradientUpdateHandler, MetricHandler, StoppingHandler, LoggingHandler]
    # a given handler of a kind replaces the default one
    mine = MetricHandler(est.train_metrics, priority=5)
    handlers = est._prepare_default_handlers(None, mine)
    assert [h for h in handlers if isinstance(h, MetricHandler)] == [mine]

    # the events of one fit, in order: handlers sorted by priority
    log = []

    class Update(GradientUpdateHandler):
        def batch_end(self, estimator, *args, **kwargs):
            log.append(("update", "batch_end"))
            return super().batch_end(estimator, *args, **kwargs)

    class Metrics(MetricHandler):
        def batch_end(self, estimator, *args, **kwargs):
            log.append(("metric", "batch_end"))
            return super().batch_end(estimator, *args, **kwargs)

    def fake_eval(val_data, batch_axis, event_handlers):
        log.append(("validate", "epoch_end"))

    handlers = [_Recorder(log, "late", priority=10), _Recorder(log, "early", priority=-5000),
                Update(), Metrics(est.train_metrics),
                ValidationHandler(_loader(x, y), fake_eval), LoggingHandler(metrics=est.train_metrics)]
    est.fit(_loader(x[:10], y[:10]), epochs=1, event_handlers=handlers)
    batch = [("early", "batch_begin"), ("late", "batch_begin"),
             ("early", "batch_end"), ("update", "batch_end"), ("metric", "batch_end"),
             ("late", "batch_end")]
    assert log == ([("early", "train_begin"), ("late", "train_begin"),
                    ("early", "epoch_begin"), ("late", "epoch_begin")]
                   + batch * 2
                   + [("early", "epoch_end"), ("validate", "epoch_end"), ("late", "epoch_end"),
                      ("early", "train_end"), ("late", "train_end")])


def test_stopping_from_handlers_and_validation_periods():
    x, y = _data()

    class StopAt(BatchEnd, EpochEnd):
        def __init__(self, batch=None, epoch=None):
            self.batch, self.epoch, self.batches, self.epochs = batch, epoch, 0, 0

        def batch_end(self, estimator, *args, **kwargs):
            self.batches += 1
            return self.batches == self.batch

        def epoch_end(self, estimator, *args, **kwargs):
            self.epochs += 1
            return self.epochs == self.epoch

    est, _ = _estimator(_net())
    stop = StopAt(batch=3)  # ends the first epoch early, not the training
    est.fit(_loader(x, y), epochs=2, event_handlers=[stop])
    assert (stop.batches, stop.epochs) == (3 + BATCHES_PER_EPOCH, 2)
    stop = StopAt(epoch=2)
    est.fit(_loader(x, y), epochs=10, event_handlers=[stop])
    assert (stop.batches, stop.epochs) == (2 * BATCHES_PER_EPOCH, 2)

    calls = []
    val = ValidationHandler(_loader(x, y), lambda **kw: calls.append(kw["batch_axis"]),
                            epoch_period=2, batch_period=4)
    est.fit(_loader(x, y), epochs=3, event_handlers=[val])
    # 15 batches: every 4th (3 times); 3 epochs: the 2nd (once)
    assert len(calls) == 15 // 4 + 3 // 2 and set(calls) == {0}


def test_logging_handler_lines():
    x, y = _data()
    est, buf = _estimator(_net())
    loader = _loader(x, y)
    est.fit(loader, val_data=loader, epochs=2,
            event_handlers=[LoggingHandler(log_interval=2, metrics=est.train_metrics)])
    lines = buf.getvalue().splitlines()
    assert lines[0] == "Training begin: using optimizer SGD with current learning rate 0.5000 "
    assert lines[1] == "Train for 2 epochs."
    assert lines[2] == "[Epoch 0] Begin, current learning rate: 0.5000"
    batch_re = re.compile(r"\[Epoch (\d)\]\[Batch (\d)\]\[Samples (\d+)\] time/interval: \d+\.\d{3}s "
                          r"training accuracy: \d\.\d{4}, training softmaxcrossentropyloss: \d\.\d{4}$")
    logged = [tuple(int(g) for g in m.groups()) for m in map(batch_re.match, lines) if m]
    # every 2nd batch of 5 (sizes 5, 5, 5, 5, 2), samples counted over the whole training
    assert logged == [(0, 0, 5), (0, 2, 15), (0, 4, 22), (1, 0, 27), (1, 2, 37), (1, 4, 44)]
    assert lines.count("Validation Begin") == 2
    val_re = re.compile(r"\[Epoch 0\] Finished in \d+\.\d{3}s, validation accuracy: \d\.\d{4}, "
                        r"validation softmaxcrossentropyloss: \d\.\d{4}$")
    assert sum(bool(val_re.match(line)) for line in lines) == 2
    # the last lines carry the final metric values
    values = ", ".join("%s: %.4f" % m.get() for m in est.train_metrics)
    assert re.match(r"\[Epoch 1\] Finished in \d+\.\d{3}s, " + re.escape(values) + "$", lines[-2])
    assert re.match(r"Train finished using total \d+s with 2 epochs\. " + re.escape(values) + "$",
                    lines[-1])

    est, buf = _estimator(_net())
    est.fit(loader, batches=3)  # the default handler logs per epoch only
    lines = buf.getvalue().splitlines()
    assert lines[1] == "Train for 3 batches."
    assert not any("[Batch" in line for line in lines)
    assert re.match(r"Train finished using total \d+s with 1 epochs\. training accuracy: ", lines[-1])


def test_checkpoints_written_and_resumed(tmp_path):
    x, y = _data()
    loader = _loader(x, y)
    snapshots = []

    class Snapshot(EpochEnd):
        priority = 1  # after the checkpoint handler

        def epoch_end(self, estimator, *args, **kwargs):
            snapshots.append(_params(estimator.net))

    tmp = str(tmp_path / "one")
    est, _ = _estimator(_net())
    acc = est.train_metrics[0]
    ckpt = CheckpointHandler(tmp, model_prefix="m", monitor=acc, save_best=True, mode="max",
                             max_checkpoints=2)
    accs = []

    class AccLog(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            accs.append(acc.get()[1])

    est.fit(loader, epochs=3, event_handlers=[ckpt, Snapshot(), AccLog()])
    # epoch E ends after 5 * (E + 1) batches; only the last two are kept
    assert sorted(os.listdir(tmp)) == ["m-best.params", "m-best.states", "m-epoch1batch10.params",
                                       "m-epoch1batch10.states", "m-epoch2batch15.params",
                                       "m-epoch2batch15.states"]

    def load(name):
        net = _net(weights=[np.zeros_like(w) for w in _weights()])
        net.load_parameters(os.path.join(tmp, name))
        return _params(net)

    for epoch in (1, 2):
        for got, want in zip(load("m-epoch%dbatch%d.params" % (epoch, 5 * (epoch + 1))),
                             snapshots[epoch]):
            np.testing.assert_array_equal(got, want)
    best = int(np.argmax(accs))  # the first epoch with the highest accuracy
    for got, want in zip(load("m-best.params"), snapshots[best]):
        np.testing.assert_array_equal(got, want)

    # resuming: 2 epochs, then a fresh run asked for 4 continues for 2 more and
    # ends where 4 uninterrupted epochs end (momentum states restored too)
    tmp2 = str(tmp_path / "two")
    first, _ = _estimator(_net())
    first.fit(loader, epochs=2, event_handlers=[CheckpointHandler(tmp2, model_prefix="r")])
    resumed, buf = _estimator(_net(weights=_weights(seed=5)))
    handler = CheckpointHandler(tmp2, model_prefix="r", max_checkpoints=2, resume_from_checkpoint=True)
    resumed.fit(loader, epochs=4, event_handlers=[handler])
    assert resumed.max_epoch == 2
    assert "CheckpointHandler: Checkpoint resumed from epoch 1 batch 10, continue to train for 2 epochs" \
        in buf.getvalue()
    straight, _ = _estimator(_net())
    straight.fit(loader, epochs=4)
    for got, want in zip(_params(resumed.net), _params(straight.net)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # numbering continues; max_checkpoints counts the files found on resuming
    assert sorted(f for f in os.listdir(tmp2) if f.endswith(".params")) == [
        "r-epoch2batch15.params", "r-epoch3batch20.params"]
    with pytest.raises(ValueError, match="maximum number of epoch 4 reached"):
        again, _ = _estimator(_net())
        again.fit(loader, epochs=4, event_handlers=[
            CheckpointHandler(tmp2, model_prefix="r", resume_from_checkpoint=True)])
    with pytest.raises(AssertionError, match="same type of period"):
        again.fit(loader, batches=4, event_handlers=[
            CheckpointHandler(tmp2, model_prefix="r", resume_from_checkpoint=True)])

    # resuming by batches: 4 batches, then 5 more from the start of the data
    tmp4 = str(tmp_path / "four")
    first, _ = _estimator(_net())
    first.fit(loader, batches=4, event_handlers=[
        CheckpointHandler(tmp4, model_prefix="c", epoch_period=None, batch_period=2)])
    resumed, _ = _estimator(_net(weights=_weights(seed=5)))
    resumed.fit(loader, batches=9, event_handlers=[
        CheckpointHandler(tmp4, model_prefix="c", epoch_period=None, batch_period=2,
                          resume_from_checkpoint=True)])
    assert resumed.max_batch == 5
    ref = _net()
    trainer = _trainer(ref)
    _hand_loop(ref, trainer, x, y, batches=4)
    _hand_loop(ref, trainer, x, y, batches=5)
    for got, want in zip(_params(resumed.net), _params(ref)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # batch indices continue over the resumed run (the epoch number restarts at trained + 1)
    assert sorted(f for f in os.listdir(tmp4) if f.endswith(".params")) == [
        "c-epoch0batch1.params", "c-epoch0batch3.params", "c-epoch1batch5.params",
        "c-epoch1batch7.params"]

    # by batches, on a hybridized network: the symbol is saved too
    tmp3 = str(tmp_path / "three")
    net = _net(hybrid=True)
    net.hybridize()
    est, _ = _estimator(net)
    est.fit(loader, batches=7, event_handlers=[
        CheckpointHandler(tmp3, model_prefix="b", epoch_period=None, batch_period=3)])
    # batches 2 and 5 (0-based, counted over the training) end a period
    assert sorted(os.listdir(tmp3)) == ["b-epoch0batch2.params", "b-epoch0batch2.states",
                                        "b-epoch1batch5.params", "b-epoch1batch5.states",
                                        "b-symbol.json"]
    with pytest.raises(ValueError, match="save best"):
        CheckpointHandler(tmp3, save_best=True)


class _Scripted(mx.metric.EvalMetric):
    """A metric whose value in epoch e (counted by resets) is ``values[e]``."""

    def __init__(self, values):
        self.values, self.epoch = values, -1
        super().__init__("scripted")

    def reset(self):
        super().reset()
        self.epoch += 1

    def update(self, labels, preds):
        pass

    def get(self):
        return (self.name, self.values[min(self.epoch, len(self.values) - 1)])


def _early_stop_run(values, **kwargs):
    x, y = _data()
    metric = _Scripted(values)
    net = _net()
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), train_metrics=[metric],
                    trainer=_trainer(net))
    buf = _quiet(est)
    metric.epoch = -1  # count the resets of fit only
    stopper = EarlyStoppingHandler(metric, **kwargs)
    epochs = []

    class Count(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            epochs.append(1)

    est.fit(_loader(x[:5], y[:5]), epochs=len(values), event_handlers=[stopper, Count()])
    return stopper, len(epochs), buf.getvalue()


def test_early_stopping_on_a_scripted_metric():
    # min mode, min_delta 0.05, patience 2 (by hand):
    # e0 1.00 < inf: best 1.00 | e1 0.80 + 0.05 < 1.00: best 0.80
    # e2 0.79 + 0.05 >= 0.80: wait 1 | e3 0.85: wait 2 = patience: stop after epoch 3
    stopper, ran, log = _early_stop_run([1.0, 0.8, 0.79, 0.85, 0.5, 0.4], mode="min",
                                        min_delta=0.05, patience=2)
    assert (ran, stopper.stopped_epoch, stopper.current_epoch, stopper.best) == (4, 3, 4, 0.8)
    assert "[Epoch 3] EarlyStoppingHanlder: early stopping due to training scripted not improving" in log

    # max mode with a baseline: e0 0.5 and e1 0.55 do not beat 0.6: stop after epoch 1
    stopper, ran, _ = _early_stop_run([0.5, 0.55, 0.9, 0.95], mode="max", baseline=0.6, patience=2)
    assert (ran, stopper.stopped_epoch, stopper.best) == (2, 1, 0.6)

    # patience 0: the first epoch without improvement stops (e2: 0.7 is not > 0.7)
    stopper, ran, _ = _early_stop_run([0.6, 0.7, 0.7, 0.9], mode="max")
    assert (ran, stopper.stopped_epoch) == (3, 2)

    # max mode, min_delta 0.05, patience 1: e1 0.58 - 0.05 > 0.5: best 0.58;
    # e2 0.61 - 0.05 <= 0.58: stop after epoch 2
    stopper, ran, _ = _early_stop_run([0.5, 0.58, 0.61, 0.9], mode="max", min_delta=0.05, patience=1)
    assert (ran, stopper.stopped_epoch, stopper.best) == (3, 2, 0.58)

    # improving throughout: runs all epochs, no early-stopping line
    stopper, ran, log = _early_stop_run([3.0, 2.0, 1.0], mode="min")
    assert (ran, stopper.stop_training) == (3, False) and "EarlyStopping" not in log

    # 'auto' picks max for any metric, as MXNet 1.9.1 does (with a warning)
    with pytest.warns(UserWarning, match="`greater` operator"):
        stopper, ran, _ = _early_stop_run([3.0, 2.0, 1.0], mode="auto")
    assert (ran, stopper.stopped_epoch) == (2, 1)
    with pytest.raises(ValueError, match="CompositeEvalMetric"):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric([mx.metric.MAE()]))


def test_custom_batch_processor():
    x, y = _data()

    class Scaled(BatchProcessor):
        """Trains on inputs times 2 and counts the calls."""

        def __init__(self):
            super().__init__()
            self.fits = self.evals = 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            self.fits += 1
            return super().fit_batch(estimator, (train_batch[0] * 2, train_batch[1]), batch_axis)

        def evaluate_batch(self, estimator, val_batch, batch_axis=0):
            self.evals += 1
            return super().evaluate_batch(estimator, val_batch, batch_axis)

    proc = Scaled()
    est, _ = _estimator(_net(), batch_processor=proc)
    est.fit(_loader(x, y), val_data=_loader(x[:10], y[:10]), epochs=2)
    assert (proc.fits, proc.evals) == (2 * BATCHES_PER_EPOCH, 2 * 2)
    ref = _net()
    _hand_loop(ref, _trainer(ref), 2 * x, y, epochs=2)
    for got, want in zip(_params(est.net), _params(ref)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
