"""The small contrib modules: mx.contrib.io (DataLoaderIter),
mx.contrib.autograd (the legacy autograd API), mx.contrib.tensorboard
(LogMetricsCallback, with fake SummaryWriters) and mx.notebook.callback
(PandasLogger and the bokeh charts, with fake pandas/bokeh when absent)."""

import datetime
import sys
import types

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.gluon.data import ArrayDataset, DataLoader
from oxnet.model import BatchEndParam


# ------------------------------------------------------------------ contrib.io
def dataset(n=10):
    return ArrayDataset(mx.nd.arange(n * 6).reshape((n, 2, 3)), mx.nd.arange(n))


@pytest.mark.parametrize("last_batch,pads,labels", [
    ("discard", [0, 0], [[0, 1, 2, 3], [4, 5, 6, 7]]),
    ("keep", [0, 0, 2], [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 0]]),
    ("rollover", [0, 0], [[0, 1, 2, 3], [4, 5, 6, 7]]),
])
def test_dataloaderiter_batches(last_batch, pads, labels):
    it = mx.contrib.io.DataLoaderIter(DataLoader(dataset(), 4, last_batch=last_batch))
    assert it.batch_size == 4
    assert it.provide_data == [mx.io.DataDesc("data", (4, 2, 3), "float32")]
    assert it.provide_label == [mx.io.DataDesc("softmax_label", (4,), "float32")]
    batches = list(it)
    assert [b.pad for b in batches] == pads
    assert [b.label[0].asnumpy().tolist() for b in batches] == labels
    assert all(b.data[0].shape == (4, 2, 3) and b.index is None for b in batches)
    if last_batch == "keep":
        last = batches[-1].data[0].asnumpy()
        np.testing.assert_array_equal(last[:2], np.arange(48, 60).reshape(2, 2, 3))
        np.testing.assert_array_equal(last[2:], 0)  # padding (MXNet leaves it uninitialised)
    it.reset()
    second = [b.label[0].asnumpy().tolist() for b in it]
    if last_batch == "rollover":  # the two left over start the next epoch, as in MXNet
        assert second == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    else:
        assert second == labels


def test_dataloaderiter_names_dtype_and_errors():
    it = mx.contrib.io.DataLoaderIter(DataLoader(dataset(), 4, last_batch="keep"), data_name="x",
                                      label_name="y", dtype="float16")
    assert it.provide_data[0].name == "x" and it.provide_label[0].name == "y"
    assert it.provide_data[0].dtype == "float16"
    assert {b.data[0].dtype for b in it} == {np.float16}  # padded batch included
    with pytest.raises(ValueError, match="no batch"):
        mx.contrib.io.DataLoaderIter([])
    with pytest.raises(TypeError, match="pairs"):
        mx.contrib.io.DataLoaderIter([mx.nd.ones((2, 2))])
    with pytest.raises(TypeError, match="iterable"):
        mx.contrib.io.DataLoaderIter(5)
    fresh = mx.contrib.io.DataLoaderIter(DataLoader(dataset(), 4))
    with pytest.raises(ValueError, match="current batch"):
        fresh.getdata()


def test_dataloaderiter_feeds_a_module():
    x = np.random.RandomState(0).uniform(size=(20, 3)).astype("float32")
    y = x.dot(np.array([1.0, -2.0, 0.5], dtype="float32"))
    it = mx.contrib.io.DataLoaderIter(DataLoader(ArrayDataset(x, y), 5), label_name="lin_label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1),
                                        mx.sym.Variable("lin_label"))
    mod = mx.mod.Module(net, label_names=["lin_label"])
    mod.fit(it, num_epoch=40, optimizer_params=(("learning_rate", 0.5),), eval_metric="mse")
    assert mod.score(it, "mse")[0][1] < 1e-3


# ------------------------------------------------------------- contrib.autograd
ag = mx.contrib.autograd


def test_grad_and_loss_and_grad():
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = mx.nd.array([[0.5, -1.0], [2.0, 0.0]])
    grads, out = ag.grad_and_loss(lambda a, b: a * b + a ** 2)(x, y)
    np.testing.assert_allclose(out.asnumpy(), (x * y + x ** 2).asnumpy())
    np.testing.assert_allclose(grads[0].asnumpy(), (y + 2 * x).asnumpy())
    np.testing.assert_allclose(grads[1].asnumpy(), x.asnumpy())
    only = ag.grad(lambda a, b, mode: a * b if mode else a + b, argnum=[1])(x, y, True)
    assert len(only) == 1
    np.testing.assert_allclose(only[0].asnumpy(), x.asnumpy())
    one = ag.grad(lambda a: mx.nd.exp(a), argnum=0)(x)
    np.testing.assert_allclose(one[0].asnumpy(), np.exp(x.asnumpy()), rtol=1e-6)
    with pytest.raises(TypeError, match="NDArray"):
        ag.grad(lambda a, b: a)(x, 3.0)
    with pytest.raises(ValueError, match="argnum"):
        ag.grad(lambda a: a, argnum=2)(x)


def test_sections_and_set_is_training():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    x = mx.nd.ones((50, 50))
    with ag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        assert (mx.nd.Dropout(x, p=0.5).asnumpy() == 0).any()
        with ag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
            np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), 1)
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    assert ag.set_is_training(True) is False  # the previous state
    assert ag.set_is_training(False) is True
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()


def test_mark_variables_backward_out_grads():
    x = mx.nd.ones((3, 5))
    dx = mx.nd.zeros_like(x)
    ag.mark_variables([x], [dx])
    with ag.train_section():
        a, b, c = mx.nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
        ag.backward([a, b, c], [None, mx.nd.array([1, 2, 3, 4, 5]), mx.nd.array([5, 4, 3, 2, 1])])
    np.testing.assert_array_equal(dx.asnumpy(), [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])

    ag.mark_variables([x], [dx], grad_reqs="add")
    for _ in range(2):
        with ag.train_section():
            y = x * 2
        ag.compute_gradient([y])
    np.testing.assert_array_equal(dx.asnumpy(), [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]] + np.full((3, 5), 4))

    with pytest.raises(ValueError, match="grad_reqs"):
        ag.mark_variables([x], [dx], grad_reqs="sometimes")
    with pytest.raises(ValueError, match="as many"):
        ag.mark_variables([x, x], [dx])
    with pytest.raises(TypeError, match="list or tuple"):
        ag.backward(x)
    with pytest.raises(ValueError, match="as many"):
        ag.backward([x], [None, None])


# ---------------------------------------------------------- contrib.tensorboard
class _FakeWriter:
    """A SummaryWriter that remembers what it is given."""

    made = []

    def __init__(self, logdir):
        self.logdir = logdir
        self.scalars = []
        _FakeWriter.made.append(self)

    def add_scalar(self, tag, value, global_step=None):
        self.scalars.append((tag, value, global_step))


def _fake_module(name, **attrs):
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _param(epoch, nbatch, metric):
    return BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals={})


def test_log_metrics_callback_with_mxboard(monkeypatch):
    monkeypatch.setitem(sys.modules, "mxboard", _fake_module("mxboard", SummaryWriter=_FakeWriter))
    cb = mx.contrib.tensorboard.LogMetricsCallback("logs/train", prefix="train")
    assert cb.summary_writer.logdir == "logs/train"
    metric = mx.metric.create(["mse", "mae"])
    metric.update([mx.nd.array([1.0, 2.0])], [mx.nd.array([1.5, 4.0])])
    cb(_param(3, 7, metric))
    cb(_param(4, 0, None))  # no metric: nothing written
    assert cb.summary_writer.scalars == [("train-mse", pytest.approx(2.125), 3), ("train-mae", pytest.approx(1.25), 3)]
    plain = mx.contrib.tensorboard.LogMetricsCallback("logs/eval")
    plain(_param(1, 0, metric))
    assert [s[0] for s in plain.summary_writer.scalars] == ["mse", "mae"]


def test_log_metrics_callback_in_fit(monkeypatch):
    monkeypatch.setitem(sys.modules, "mxboard", _fake_module("mxboard", SummaryWriter=_FakeWriter))
    x = np.arange(8, dtype="float32").reshape(4, 2)
    it = mx.io.NDArrayIter(x, x.sum(axis=1), batch_size=2, label_name="lin_label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1),
                                        mx.sym.Variable("lin_label"))
    mod = mx.mod.Module(net, label_names=["lin_label"])
    cb = mx.contrib.tensorboard.LogMetricsCallback("logs")
    mod.fit(it, num_epoch=2, eval_metric="mse", batch_end_callback=cb)
    assert [(tag, step) for tag, _, step in cb.summary_writer.scalars] == [("mse", 0)] * 2 + [("mse", 1)] * 2


def test_log_metrics_callback_fallbacks(monkeypatch):
    monkeypatch.setitem(sys.modules, "mxboard", None)
    monkeypatch.setitem(sys.modules, "tensorboardX", _fake_module("tensorboardX", SummaryWriter=_FakeWriter))
    assert isinstance(mx.contrib.tensorboard.LogMetricsCallback("d").summary_writer, _FakeWriter)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.utils", None)
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(MXNetError, match="mxboard"):
        mx.contrib.tensorboard.LogMetricsCallback("d")


# ------------------------------------------------------------- notebook.callback
nbcb = mx.notebook.callback


class _FakeLoc:
    def __init__(self, frame):
        self._frame = frame

    def __setitem__(self, index, row):
        assert index == len(self._frame.rows)
        self._frame.rows.append({c: row.get(c) for c in self._frame.columns})


class _FakeDataFrame:
    """The bit of pandas.DataFrame that PandasLogger uses."""

    def __init__(self):
        self.columns = []
        self.rows = []
        self.loc = _FakeLoc(self)

    def __setitem__(self, column, value):
        assert value is None
        self.columns.append(column)
        for row in self.rows:
            row[column] = None

    def __len__(self):
        return len(self.rows)


def _fake_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", _fake_module("pandas", DataFrame=_FakeDataFrame))


def _metric(value):
    metric = mx.metric.create("mse")
    metric.update([mx.nd.array([value])], [mx.nd.array([0.0])])
    return metric


def _check_logger(logger, column):
    for nbatch in range(5):
        logger.train_cb(_param(0, nbatch, _metric(nbatch)))
    logger.eval_cb(_param(0, 5, _metric(3.0)))
    logger.epoch_cb(0, None, {}, {})  # as Module.fit calls an epoch-end callback
    train = column(logger.train_df, "mse")
    assert train == [0.0, 4.0, 16.0]  # batches 0, 2 and 4 (frequent=2)
    assert column(logger.train_df, "minibatch_count") == [0, 2, 4]
    assert column(logger.eval_df, "mse") == [9.0]
    speed = column(logger.train_df, "batches_per_sec")
    records = column(logger.train_df, "records_per_sec")
    assert all(r == pytest.approx(s * 8) for r, s in zip(records, speed))
    assert len(logger.epoch_df) == 1
    assert isinstance(column(logger.epoch_df, "epoch_time")[0], datetime.timedelta)
    assert set(logger.all_dataframes) == {"train", "eval", "epoch"}


def test_pandas_logger_with_fake_pandas(monkeypatch):
    _fake_pandas(monkeypatch)
    logger = nbcb.PandasLogger(batch_size=8, frequent=2)
    _check_logger(logger, lambda df, c: [row[c] for row in df.rows])
    args = logger.callback_args()
    assert args == {"batch_end_callback": logger.train_cb, "eval_end_callback": logger.eval_cb,
                    "epoch_end_callback": logger.epoch_cb}
    with pytest.raises(ValueError, match="df_name"):
        logger.append_metrics({}, "test")


def test_pandas_logger_with_pandas():
    pytest.importorskip("pandas")
    logger = nbcb.PandasLogger(batch_size=8, frequent=2)
    _check_logger(logger, lambda df, c: list(df[c]))


def test_missing_packages(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MXNetError, match="pandas"):
        nbcb.PandasLogger(batch_size=4)
    monkeypatch.setitem(sys.modules, "bokeh", None)
    monkeypatch.setitem(sys.modules, "bokeh.plotting", None)
    monkeypatch.setitem(sys.modules, "bokeh.io", None)
    with pytest.raises(MXNetError, match="bokeh"):
        nbcb.LiveLearningCurve("mse")
    with pytest.raises(MXNetError, match="bokeh"):
        nbcb.LiveTimeSeries()


class _Glyph:
    def __init__(self, x, y, kwargs):
        self.x, self.y, self.kwargs, self.visible = x, y, kwargs, True


class _Figure:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.glyphs = []
        self.legend = types.SimpleNamespace(location=None)
        self.yaxis = types.SimpleNamespace(axis_label=None)

    def line(self, x, y, **kwargs):
        self.glyphs.append(_Glyph(x, y, kwargs))
        return self.glyphs[-1]

    circle = line


def test_live_learning_curve_with_fake_bokeh(monkeypatch):
    _fake_pandas(monkeypatch)
    pushed = []
    plotting = _fake_module("bokeh.plotting", figure=_Figure, show=lambda fig, notebook_handle: ("handle", fig))
    bio = _fake_module("bokeh.io", output_notebook=lambda: None, push_notebook=lambda handle: pushed.append(handle))
    monkeypatch.setitem(sys.modules, "bokeh", _fake_module("bokeh", plotting=plotting, io=bio))
    monkeypatch.setitem(sys.modules, "bokeh.plotting", plotting)
    monkeypatch.setitem(sys.modules, "bokeh.io", bio)
    curve = nbcb.LiveLearningCurve("mse", display_freq=3600, frequent=1)
    assert curve.fig.yaxis.axis_label == "mse"
    for nbatch in range(12):
        curve.batch_cb(_param(0, nbatch, _metric(nbatch)))
    assert pushed == []  # display_freq not reached
    curve.eval_cb(_param(0, 12, _metric(2.0)))
    assert len(pushed) == 1
    assert curve.y_axis_val1 == [float(i * i) for i in range(12)]
    assert curve.y_axis_val2 == [4.0]
    assert not curve.train1.visible and curve.train2.visible
    series = nbcb.LiveTimeSeries(title="loss")
    series.update_chart_data(0.5)
    assert series.y_axis_val == [0.5] and len(pushed) == 2
    wrapped = nbcb.args_wrapper(curve, nbcb.PandasLogger(batch_size=1))
    assert len(wrapped["batch_end_callback"]) == 2 and len(wrapped["epoch_end_callback"]) == 1
    with pytest.raises(TypeError, match="callback_args"):
        nbcb.args_wrapper(object())


def test_lazy_modules():
    import oxnet.contrib.autograd as cag
    import oxnet.contrib.io as cio
    import oxnet.contrib.tensorboard as ctb
    import oxnet.notebook.callback as ncb

    assert (mx.contrib.autograd, mx.contrib.io, mx.contrib.tensorboard, mx.notebook.callback) == (cag, cio, ctb, ncb)
