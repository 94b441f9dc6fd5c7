"""Training callbacks that log metrics into pandas DataFrames or draw them
live with bokeh in a Jupyter notebook (MXNet 1.x's
``mxnet.notebook.callback``).

pandas and bokeh are optional: they are imported when a callback that
needs them is created, and a missing one is an MXNetError naming the
package to install. Each callback object gives the keyword arguments of
``Module.fit`` / ``FeedForward.fit`` that install it through
``callback_args()``; :func:`args_wrapper` joins those of several.
"""

import datetime
import importlib
import time
from collections import defaultdict

from ..base import MXNetError

__all__ = ["PandasLogger", "LiveBokehChart", "LiveTimeSeries", "LiveLearningCurve", "args_wrapper"]


def _require(module_name, package, what):
    """``import module_name``, or an MXNetError saying to install ``package``."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise MXNetError(f"{what} needs the {package} package, which is not installed; "
                         f"install it with `pip install {package}`") from None


def _add_new_columns(dataframe, metrics):
    """Adds to ``dataframe`` an empty column for each key of ``metrics`` it lacks."""
    for col in set(metrics.keys()) - set(dataframe.columns):
        dataframe[col] = None


def _extend(base_data, new_data):
    """Appends to the list ``base_data`` the items of ``new_data`` beyond its length."""
    base_data.extend(new_data[len(base_data):])


class PandasLogger:
    """Logs training into three pandas DataFrames: ``train_df`` (the
    training metrics every ``frequent`` batches), ``eval_df`` (the
    validation metrics after each evaluation) and ``epoch_df`` (time per
    epoch). A row holds the metric values (the metric is reset after each
    row) and ``batches_per_sec``, ``records_per_sec``, ``elapsed`` (a
    ``timedelta`` since the logger was made), ``minibatch_count`` and
    ``epoch``.

    Parameters
    ----------
    batch_size : int
        Examples per batch (for ``records_per_sec``).
    frequent : int, default 50
        Log the training metrics every ``frequent`` batches.

    Raises
    ------
    MXNetError
        When pandas is not installed.

    Examples
    --------
    >>> logger = mx.notebook.callback.PandasLogger(batch_size=32)
    >>> mod.fit(train, eval_data=val, num_epoch=3, **logger.callback_args())
    >>> logger.train_df.tail()
    """

    def __init__(self, batch_size, frequent=50):
        pd = _require("pandas", "pandas", "PandasLogger")
        if not isinstance(frequent, int) or isinstance(frequent, bool) or frequent <= 0:
            raise ValueError(f"PandasLogger: frequent must be a positive int, got {frequent!r}")
        self.batch_size = batch_size
        self.frequent = frequent
        self._dataframes = {"train": pd.DataFrame(), "eval": pd.DataFrame(), "epoch": pd.DataFrame()}
        self.last_time = time.time()
        self.start_time = datetime.datetime.now()
        self.last_epoch_time = datetime.datetime.now()

    @property
    def train_df(self):
        """The training metrics, one row every ``frequent`` batches."""
        return self._dataframes["train"]

    @property
    def eval_df(self):
        """The validation metrics, one row per evaluation."""
        return self._dataframes["eval"]

    @property
    def epoch_df(self):
        """``elapsed`` and ``epoch_time`` at the end of each epoch."""
        return self._dataframes["epoch"]

    @property
    def all_dataframes(self):
        """The dict ``{'train': ..., 'eval': ..., 'epoch': ...}`` of the DataFrames."""
        return self._dataframes

    def elapsed(self):
        """The ``timedelta`` since this logger was made."""
        return datetime.datetime.now() - self.start_time

    def append_metrics(self, metrics, df_name):
        """Appends the dict ``metrics`` as a row of DataFrame ``df_name``
        (``'train'``, ``'eval'`` or ``'epoch'``), adding columns as needed."""
        if df_name not in self._dataframes:
            raise ValueError(f"append_metrics: df_name must be one of {sorted(self._dataframes)}, got {df_name!r}")
        dataframe = self._dataframes[df_name]
        _add_new_columns(dataframe, metrics)
        dataframe.loc[len(dataframe)] = metrics

    def train_cb(self, param):
        """Batch-end callback: logs a ``train`` row every ``frequent`` batches."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")

    def eval_cb(self, param):
        """Eval-end callback: logs an ``eval`` row."""
        self._process_batch(param, "eval")

    def _process_batch(self, param, df_name):
        """Appends a row of ``param``'s metrics (then resets them) and speed to ``df_name``."""
        now = time.time()
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        else:
            metrics = {}
        try:
            speed = self.frequent / (now - self.last_time)
        except ZeroDivisionError:
            speed = float("inf")
        metrics["batches_per_sec"] = speed
        metrics["records_per_sec"] = speed * self.batch_size
        metrics["elapsed"] = self.elapsed()
        metrics["minibatch_count"] = param.nbatch
        metrics["epoch"] = param.epoch
        self.append_metrics(metrics, df_name)
        self.last_time = now

    def epoch_cb(self, *args):
        """Epoch-end callback (its arguments are ignored): logs ``elapsed``
        and ``epoch_time`` (the time since the previous epoch's end)."""
        del args
        now = datetime.datetime.now()
        metrics = {"elapsed": self.elapsed(), "epoch_time": now - self.last_epoch_time}
        self.append_metrics(metrics, "epoch")
        self.last_epoch_time = now

    def callback_args(self):
        """``fit`` keyword arguments installing this logger::

            mod.fit(train, eval_data=val, **logger.callback_args())
        """
        return {"batch_end_callback": self.train_cb, "eval_end_callback": self.eval_cb,
                "epoch_end_callback": self.epoch_cb}


class LiveBokehChart:
    """The base of charts drawn with bokeh in a Jupyter notebook and
    redrawn as training goes on (at most every ``display_freq`` seconds,
    and after each evaluation). Subclasses define ``setup_chart`` and
    ``update_chart_data``.

    Parameters
    ----------
    pandas_logger : PandasLogger or None
        Where the data comes from (None: a new one with ``batch_size`` and
        ``frequent``; it needs pandas).
    metric_name : str
        The metric drawn.
    display_freq : float, default 10
        Seconds between two redraws.
    batch_size, frequent :
        For the ``PandasLogger`` made when none is given.

    Raises
    ------
    MXNetError
        When bokeh (or, for the logger, pandas) is not installed.
    """

    def __init__(self, pandas_logger, metric_name, display_freq=10, batch_size=None, frequent=50):
        self._bokeh = _require("bokeh.plotting", "bokeh", type(self).__name__)
        self._bokeh_io = _require("bokeh.io", "bokeh", type(self).__name__)
        if pandas_logger:
            self.pandas_logger = pandas_logger
        else:
            self.pandas_logger = PandasLogger(batch_size=batch_size, frequent=frequent)
        self.display_freq = display_freq
        self.last_update = time.time()
        self.metric_name = metric_name
        self._bokeh_io.output_notebook()
        self.handle = self.setup_chart()

    def _figure(self, **kwargs):
        """A bokeh figure (``figure``; ``Figure`` in older bokeh)."""
        make = getattr(self._bokeh, "figure", None) or getattr(self._bokeh, "Figure")
        return make(**kwargs)

    def setup_chart(self):
        """Draws the chart and returns its notebook handle (subclasses)."""
        raise NotImplementedError("Incomplete base class: LiveBokehChart must be sub-classed")

    def update_chart_data(self):
        """Moves new data into the chart (subclasses)."""
        raise NotImplementedError("Incomplete base class: LiveBokehChart must be sub-classed")

    def interval_elapsed(self):
        """Whether more than ``display_freq`` seconds passed since the last redraw."""
        return time.time() - self.last_update > self.display_freq

    def _push_render(self):
        """Sends the chart to the notebook."""
        self._bokeh_io.push_notebook(handle=self.handle)
        self.last_update = time.time()

    def _do_update(self):
        """Updates the data and redraws."""
        self.update_chart_data()
        self._push_render()

    def batch_cb(self, param):
        """Batch-end callback: redraws when ``display_freq`` seconds passed."""
        del param
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        """Eval-end callback: redraws."""
        del param
        self._do_update()

    def callback_args(self):
        """``fit`` keyword arguments installing this chart."""
        return {"batch_end_callback": self.batch_cb, "eval_end_callback": self.eval_cb}


class LiveTimeSeries(LiveBokehChart):
    """A live line of values against the elapsed time; add a point with
    ``update_chart_data(value)``. ``fig_params`` go to bokeh's ``figure``."""

    def __init__(self, **fig_params):
        bokeh = _require("bokeh.plotting", "bokeh", "LiveTimeSeries")
        make = getattr(bokeh, "figure", None) or getattr(bokeh, "Figure")
        self.fig = make(x_axis_type="datetime", x_axis_label="Elapsed time", **fig_params)
        super().__init__(None, None)

    def setup_chart(self):
        """Draws the empty line and shows the figure."""
        self.start_time = datetime.datetime.now()
        self.x_axis_val = []
        self.y_axis_val = []
        self.fig.line(self.x_axis_val, self.y_axis_val)
        return self._bokeh.show(self.fig, notebook_handle=True)

    def elapsed(self):
        """The ``timedelta`` since the chart was made."""
        return datetime.datetime.now() - self.start_time

    def update_chart_data(self, value=None):
        """Adds the point (elapsed time, ``value``) and redraws (None adds nothing)."""
        if value is not None:
            self.x_axis_val.append(self.elapsed())
            self.y_axis_val.append(value)
        self._push_render()

    def _do_update(self):
        self.update_chart_data()


class LiveLearningCurve(LiveBokehChart):
    """A live learning curve: the training metric ``metric_name`` (sampled
    every ``frequent`` batches) and its validation value after each
    evaluation, against the training time.

    Parameters
    ----------
    metric_name : str
        The metric drawn (a name from ``eval_metric.get_name_value()``).
    display_freq : float, default 10
        Seconds between two redraws.
    frequent : int, default 50
        Sample the training metric every ``frequent`` batches.
    """

    def __init__(self, metric_name, display_freq=10, frequent=50):
        self.frequent = frequent
        self.start_time = datetime.datetime.now()
        self._data = {"train": {"elapsed": []}, "eval": {"elapsed": []}}
        super().__init__(None, metric_name, display_freq, frequent=frequent)

    def setup_chart(self):
        """Draws the empty training and validation curves and shows the figure."""
        self.fig = self._figure(x_axis_type="datetime", x_axis_label="Training time")
        self.x_axis_val1, self.y_axis_val1 = [], []
        self.train1 = self.fig.line(self.x_axis_val1, self.y_axis_val1, line_dash="dotted", alpha=0.3,
                                    legend_label="train")
        self.train2 = self.fig.circle(self.x_axis_val1, self.y_axis_val1, size=1.5, line_alpha=0.3,
                                      fill_alpha=0.3, legend_label="train")
        self.train2.visible = False  # shown once there are many points
        self.x_axis_val2, self.y_axis_val2 = [], []
        self.valid1 = self.fig.line(self.x_axis_val2, self.y_axis_val2, line_color="green", line_width=2,
                                    legend_label="validation")
        self.valid2 = self.fig.circle(self.x_axis_val2, self.y_axis_val2, line_color="green", line_width=2)
        self.fig.legend.location = "bottom_right"
        self.fig.yaxis.axis_label = self.metric_name
        return self._bokeh.show(self.fig, notebook_handle=True)

    def batch_cb(self, param):
        """Batch-end callback: samples the metric every ``frequent`` batches; redraws every ``display_freq`` s."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        """Eval-end callback: records the validation metric and redraws."""
        self._process_batch(param, "eval")
        self._do_update()

    def _process_batch(self, param, df_name):
        """Records ``param``'s metrics (then resets them) with the elapsed time under ``df_name``."""
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        else:
            metrics = {}
        metrics["elapsed"] = datetime.datetime.now() - self.start_time
        for key, value in metrics.items():
            self._data[df_name].setdefault(key, []).append(value)

    def update_chart_data(self):
        """Moves the recorded points into the curves; past 10 training
        points the training curve is drawn as dots."""
        train = self._data["train"]
        if train["elapsed"] and self.metric_name in train:
            _extend(self.x_axis_val1, train["elapsed"])
            _extend(self.y_axis_val1, train[self.metric_name])
        evals = self._data["eval"]
        if evals["elapsed"] and self.metric_name in evals:
            _extend(self.x_axis_val2, evals["elapsed"])
            _extend(self.y_axis_val2, evals[self.metric_name])
        if len(train["elapsed"]) > 10:
            self.train1.visible = False
            self.train2.visible = True


def args_wrapper(*args):
    """The ``fit`` keyword arguments installing all the callback objects
    given (``PandasLogger``, ``LiveLearningCurve``, ...): each keyword maps
    to the list of their callbacks::

        mod.fit(train, **args_wrapper(logger, curve))
    """
    out = defaultdict(list)
    for callback in args:
        if not hasattr(callback, "callback_args"):
            raise TypeError(f"args_wrapper: {type(callback).__name__} has no callback_args(); give callback "
                            "objects such as PandasLogger or LiveLearningCurve")
        for key, value in callback.callback_args().items():
            out[key].append(value)
    return dict(out)
