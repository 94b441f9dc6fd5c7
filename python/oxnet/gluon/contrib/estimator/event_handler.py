"""Event handlers of the Gluon Estimator.

A handler is an object deriving from one or more of the mix-ins
:class:`TrainBegin`, :class:`TrainEnd`, :class:`EpochBegin`,
:class:`EpochEnd`, :class:`BatchBegin` and :class:`BatchEnd`; the
estimator calls the matching method of every handler at that event, in
ascending order of the handler's ``priority`` attribute (0 when it has
none). A ``batch_end`` or ``epoch_end`` that returns a true value stops
the batch loop or the training.
"""

import os
import re
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as metric_loss
from .utils import _check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler",
           "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]


class EventHandler(object):
    """The common base of the event mix-ins."""


def _check_event_handlers(handlers):
    """Normalises an ``event_handlers`` argument to a new list of
    ``EventHandler`` (ValueError for anything else)."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(h, EventHandler) for h in handlers):
        raise ValueError("handlers must be an EventHandler or a list of EventHandler, "
                         "got: {}".format(handlers))
    return handlers


class TrainBegin(EventHandler):
    """Mix-in: ``train_begin(estimator)`` is called once before training."""

    def train_begin(self, estimator, *args, **kwargs):
        """Called at the start of ``Estimator.fit``."""


class TrainEnd(EventHandler):
    """Mix-in: ``train_end(estimator)`` is called once after training."""

    def train_end(self, estimator, *args, **kwargs):
        """Called at the end of ``Estimator.fit``."""


class EpochBegin(EventHandler):
    """Mix-in: ``epoch_begin(estimator)`` is called before each epoch (and
    before an evaluation pass)."""

    def epoch_begin(self, estimator, *args, **kwargs):
        """Called at the start of each epoch."""


class EpochEnd(EventHandler):
    """Mix-in: ``epoch_end(estimator)`` is called after each epoch (and
    after an evaluation pass); a true return value stops training."""

    def epoch_end(self, estimator, *args, **kwargs):
        """Called at the end of each epoch; returns whether to stop."""
        return False


class BatchBegin(EventHandler):
    """Mix-in: ``batch_begin(estimator, batch=...)`` is called before each
    batch."""

    def batch_begin(self, estimator, *args, **kwargs):
        """Called before each batch with keyword ``batch``."""


class BatchEnd(EventHandler):
    """Mix-in: ``batch_end(estimator, batch=, pred=, label=, loss=)`` is
    called after each batch; a true return value ends the epoch."""

    def batch_end(self, estimator, *args, **kwargs):
        """Called after each batch; returns whether to stop."""
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after ``max_epoch`` epochs or ``max_batch`` batches.

    The estimator adds one to every ``fit``; at ``train_begin`` it takes
    the limits from ``estimator.max_epoch`` and ``estimator.max_batch``.

    Parameters
    ----------
    max_epoch : int, default None
        Number of epochs to train.
    max_batch : int, default None
        Number of batches to train.
    """

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        """Reads the limits from the estimator and resets the counters."""
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        """Counts a batch; True once ``max_batch`` batches have run."""
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        """Counts an epoch; True once ``max_epoch`` epochs have run."""
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` at each epoch begin and updates them at each batch
    end: a ``metric.Loss`` with the batch's losses, any other metric with
    ``(label, pred)``.

    Parameters
    ----------
    metrics : EvalMetric or list of EvalMetric
        The metrics to update.
    priority : scalar, default -1000
        Handlers run in ascending priority; metrics are updated before the
        handlers (priority 0, logging at +inf) that read them.
    """

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        """Resets every metric."""
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        """Updates every metric with the batch's ``label``, ``pred`` and
        ``loss``."""
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn`` on ``val_data`` every ``epoch_period`` epochs and/or
    every ``batch_period`` batches.

    Parameters
    ----------
    val_data : DataLoader
        The validation data.
    eval_fn : callable
        Called as ``eval_fn(val_data=, batch_axis=, event_handlers=)``;
        usually ``estimator.evaluate``.
    epoch_period : int, default 1
        Validate after every this many epochs (None: never at epoch end).
    batch_period : int, default None
        Validate after every this many batches (None: never at batch end).
    priority : scalar, default -1000
        Handlers run in ascending priority; validation comes before the
        handlers that read validation metrics.
    event_handlers : EventHandler or list of EventHandler
        Handlers passed on to ``eval_fn``.
    """

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def train_begin(self, estimator, *args, **kwargs):
        """Resets the counters."""
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        """Validates when the batch count is a multiple of ``batch_period``."""
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        """Validates when the epoch count is a multiple of ``epoch_period``."""
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


def _metric_text(metrics):
    """``'name: value, name: value'`` with 4 decimals."""
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs training progress and ``metrics`` to ``estimator.logger``.

    Lines, as MXNet writes them: ``Training begin: using optimizer SGD with
    current learning rate 0.1000``, ``Train for N epochs.`` (or batches),
    ``[Epoch e] Begin, current learning rate: 0.1000`` (``Validation
    Begin`` when the metrics are validation metrics), with an integer
    ``log_interval`` ``[Epoch e][Batch b][Samples s] time/interval: 0.001s
    name: value, ...`` every ``log_interval`` batches, ``[Epoch e] Finished
    in 0.010s, name: value, ...`` and ``Train finished using total Ns with
    E epochs. name: value, ...``.

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        Log at epoch boundaries only, or also every this many batches.
    metrics : EvalMetric or list of EvalMetric
        The metrics written in the lines.
    priority : scalar, default inf
        Handlers run in ascending priority; logging comes last.
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf):
        super(LoggingHandler, self).__init__()
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def _per_batch(self):
        return isinstance(self.log_interval, int)

    def train_begin(self, estimator, *args, **kwargs):
        """Logs the optimizer, learning rate and length of training; resets
        the counters."""
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        """Logs the total time, the number of epochs and the metrics."""
        msg = "Train finished using total %ds with %d epochs. " % (time.time() - self.train_start,
                                                                   self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        """Starts the batch timer (integer ``log_interval`` only)."""
        if self._per_batch():
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        """Counts samples; logs every ``log_interval`` batches."""
        if self._per_batch():
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples, self.log_interval_time)
                self.log_interval_time = 0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        """Logs the epoch start (or ``Validation Begin`` for validation
        metrics)."""
        self.epoch_start = time.time()
        if any("training" in metric.name for metric in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        """Logs the epoch time and the metrics."""
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, time.time() - self.epoch_start)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


def _comparison(mode, monitor, who):
    """``np.greater`` or ``np.less`` for a ``mode`` of 'min', 'max' or
    'auto' (with a warning); an unknown mode warns and means 'auto'.

    As in MXNet 1.9.1, 'auto' chooses ``np.greater`` whatever the metric
    (MXNet's name test is always true), so pass ``mode='min'`` for losses
    and errors.
    """
    if mode not in ("auto", "min", "max"):
        warnings.warn("%s mode %s is unknown, fallback to auto mode. 'auto' uses max mode for "
                      "the comparison of the monitored value" % (who, mode), RuntimeWarning)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    warnings.warn("`greater` operator will be used to determine if {} has improved. Please specify "
                  "`mode='min'` to use the `less` operator. Specify `mode='max'` to disable this "
                  "warning.".format(monitor.get()[0]))
    return np.greater


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves parameters (``net.save_parameters``) and trainer states
    (``trainer.save_states``) every ``epoch_period`` epochs and/or
    ``batch_period`` batches, as ``{model_prefix}-epoch{E}batch{B}.params``
    and ``.states`` in ``model_dir`` (E: the epoch index, B: at an epoch end
    the number of batches trained so far, at a batch end the index of that
    batch, counted over the whole training); with ``save_best`` also
    ``{model_prefix}-best.params``/``.states`` whenever ``monitor``
    improves. After the first batch the symbol of a hybridized network is
    saved as ``{model_prefix}-symbol.json``.

    Parameters
    ----------
    model_dir : str
        The folder for the files (created if missing).
    model_prefix : str, default 'model'
        The start of every file name.
    monitor : EvalMetric, default None
        The metric deciding which model is best.
    verbose : int, default 0
        1 logs every save.
    save_best : bool, default False
        Keep the best model too (``monitor`` required).
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether a lower or a higher monitored value is better; as in MXNet
        1.9.1 'auto' means higher (with a warning).
    epoch_period : int, default 1
        Save after every this many epochs (None: not at epoch ends).
    batch_period : int, default None
        Save after every this many batches (None: not at batch ends).
    max_checkpoints : int, default 5
        How many epoch/batch checkpoints to keep; older ones are deleted
        (the best one is not counted).
    resume_from_checkpoint : bool, default False
        At ``train_begin``, load the latest checkpoint in ``model_dir`` and
        train only the remaining epochs (or batches).
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0, save_best=False,
                 mode="auto", epoch_period=1, batch_period=None, max_checkpoints=5,
                 resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric objects "
                             "from estimator.train_metrics and estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = -1
        self.trained_batch = -1
        if save_best:
            self.monitor_op = _comparison(mode, monitor, "ModelCheckpoint")
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        """Resets the counters and the best value; resumes from the latest
        checkpoint when asked (the saving period must then be of the same
        kind, epochs or batches, as the training length)."""
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            error_msg = ("To use resume from checkpoint, you must only specify the same type of "
                         "period you used for training. For example, if you are training based on "
                         "number of epochs, you must save only based on epochs, and set "
                         "batch_period to None.")
            if estimator.max_batch:
                assert self.batch_period, error_msg
                assert not self.epoch_period, error_msg
            if estimator.max_epoch:
                assert self.epoch_period, error_msg
                assert not self.batch_period, error_msg
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        """Saves the symbol after the first batch; saves a checkpoint every
        ``batch_period`` batches."""
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        """Saves a checkpoint every ``epoch_period`` epochs."""
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint:
            # numbers continue those of the checkpoint resumed from
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch
            if not estimator.max_epoch:
                batch += 1
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving "
                                  "model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn("Skipping save best because %s is not updated, make sure you pass one of "
                          "the metric objects estimator.train_metrics and estimator.val_metrics as "
                          "monitor" % name, RuntimeWarning)
        elif self.monitor_op(value, self.best):
            best_prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, best_prefix)
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to "
                                      "%0.5f, updating best model at %s with prefix: %s",
                                      self.current_epoch, name, self.best, value, self.model_dir,
                                      best_prefix)
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, "
                                  "skipping updating best model", self.current_epoch, name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        graph = getattr(estimator.net, "_cached_graph", None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info("Model architecture(symbol file) is not saved, please use "
                                  "HybridBlock to construct your model, and call net.hybridize() "
                                  "before passing to Estimator in order to save model architecture "
                                  "as %s.", symbol_file)

    def _remove_checkpoint(self, prefix):
        for ext in (".params", ".states"):
            path = os.path.join(self.model_dir, prefix + ext)
            if os.path.exists(path):
                os.remove(path)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))
        if file_prefix.endswith("-best"):
            return  # the best checkpoint does not count towards max_checkpoints
        if file_prefix in self.saved_checkpoints:
            self.saved_checkpoints.remove(file_prefix)
        self.saved_checkpoints.append(file_prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            self._remove_checkpoint(self.saved_checkpoints.pop(0))

    def _existing_checkpoints(self):
        """``[(epoch, batch, prefix)]`` of this prefix's checkpoints in
        ``model_dir``, oldest first (ValueError for an unparsable name)."""
        start = self.model_prefix + "-epoch"
        pattern = re.compile(re.escape(start) + r"(\d+)batch(\d+)\.params$")
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(start) and fname.endswith(".params")):
                continue
            match = pattern.match(fname)
            if match is None:
                raise ValueError("Error parsing checkpoint file, please check your checkpoints have "
                                 "the format: {model_name}-epoch{epoch_number}batch{batch_number}"
                                 ".params, there should also be a .states file for each .params "
                                 "file")
            found.append((int(match.group(1)), int(match.group(2)), fname[:-len(".params")]))
        return sorted(found)

    def _resume_from_checkpoint(self, estimator):
        existing = self._existing_checkpoints()
        self.saved_checkpoints = [prefix for _, _, prefix in existing]
        if not existing:
            self.trained_epoch = self.trained_batch = -1
            if estimator.max_batch:
                what = "%d batches" % estimator.max_batch
            else:
                what = "%d epochs" % estimator.max_epoch
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from scratch for %s",
                                  what)
            return
        self.trained_epoch, self.trained_batch, prefix = existing[-1]
        msg = ("CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to train for "
               % (self.trained_epoch, self.trained_batch))
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError("Found checkpoint with maximum number of epoch %d reached, please "
                                 "specify resume_from_checkpoint=False (default value) if you want "
                                 "to train from scratch." % estimator.max_epoch)
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError("Found checkpoint with maximum number of batch %d reached, please "
                                 "specify resume_from_checkpoint=False (default value) if you want "
                                 "to train from scratch." % self.trained_batch)
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += "%d batches " % estimator.max_batch
        param_file = os.path.join(self.model_dir, prefix + ".params")
        trainer_file = os.path.join(self.model_dir, prefix + ".states")
        assert os.path.exists(param_file), "Failed to load checkpoint, %s does not exist" % param_file
        assert os.path.exists(trainer_file), "Failed to load checkpoint, %s does not exist" % trainer_file
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(trainer_file)
        estimator.logger.warning(msg)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when ``monitor`` has not improved for ``patience``
    epochs.

    At each epoch end the value improves when it beats the best so far by
    more than ``min_delta`` (``value - min_delta > best`` in max mode,
    ``value + min_delta < best`` in min mode); otherwise a wait counter
    grows, and training stops once it reaches ``patience``. The best value
    starts at ``baseline`` (or -inf/+inf).

    Parameters
    ----------
    monitor : EvalMetric
        The metric watched (not a CompositeEvalMetric).
    min_delta : float, default 0
        The margin an improvement must exceed.
    patience : int, default 0
        Epochs without improvement tolerated.
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether a lower or a higher value is better; as in MXNet 1.9.1
        'auto' means higher (with a warning).
    baseline : float, default None
        The value to beat from the start.
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        super(EarlyStoppingHandler, self).__init__()
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from estimator.train_metrics "
                             "and estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, please "
                             "specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _comparison(mode, monitor, "EarlyStopping")
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta
        self.best = None

    def train_begin(self, estimator, *args, **kwargs):
        """Resets the counters and the best value."""
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        """Compares the monitored value with the best; True when training
        should stop."""
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn("%s is not updated, make sure you pass one of the metric objects from "
                          "estimator.train_metrics and estimator.val_metrics as monitor." % name,
                          RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        """Logs the epoch training stopped at (if it stopped early)."""
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHanlder: early stopping due to %s not "
                                  "improving", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Applies ``estimator.trainer.step(batch_size)`` at each batch end,
    ``batch_size`` being the summed first dimension of the batch's losses.

    Parameters
    ----------
    priority : scalar, default -2000
        Handlers run in ascending priority; the update comes first.
    """

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        """Steps the trainer."""
        loss = kwargs["loss"]
        if not isinstance(loss, list):
            loss = [loss]
        estimator.trainer.step(sum(value.shape[0] for value in loss))
