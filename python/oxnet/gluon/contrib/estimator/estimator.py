"""The Gluon Estimator: ``fit`` and ``evaluate`` loops driven by event
handlers."""

import copy
import logging
import sys
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from ...utils import split_and_load
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin, TrainEnd,
                            ValidationHandler, _check_event_handlers)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]


def _sort_by_priority(handlers):
    """Sorts handlers in place by ascending ``priority`` (0 when absent);
    the sort is stable, so equal priorities keep their order."""
    handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
    return handlers


class Estimator(object):
    """Trains and evaluates a Gluon network with event handlers.

    Parameters
    ----------
    net : gluon.Block
        The network to train.
    loss : gluon.loss.Loss
        The training loss.
    train_metrics : EvalMetric or list of EvalMetric, default None
        Metrics computed on the training data. Without any, the loss's
        suggested metric (``Accuracy`` for ``SoftmaxCrossEntropyLoss``) and
        a ``metric.Loss`` named after the loss are used. Every training
        metric's name gets the prefix ``'training '``.
    val_metrics : EvalMetric or list of EvalMetric, default None
        Metrics computed on the validation data; by default copies of the
        training metrics. Names get the prefix ``'validation '`` (or have
        ``training`` replaced by ``validation``).
    initializer : Initializer, default None
        Initializes the parameters not yet initialized (a warning when all
        are).
    trainer : gluon.Trainer, default None
        The trainer; by default SGD with learning rate 0.001 (with a
        warning).
    context : Context or list of Context, default None
        Where to train; by default ``gpu(0)`` when there is a GPU, else
        ``cpu()``.
    val_net : gluon.Block, default None
        The network used for validation (usually sharing ``net``'s
        parameters); by default ``net``.
    val_loss : gluon.loss.Loss, default None
        The validation loss; by default ``loss``.
    batch_processor : BatchProcessor, default None
        Any object with ``fit_batch`` and ``evaluate_batch``; by default a
        :class:`BatchProcessor`.

    Example
    -------
    >>> est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    >>> est.fit(train_loader, val_data=val_loader, epochs=3)
    """

    logger = None
    """The ``logging.Logger`` of this estimator and its handlers: a new one
    per estimator, at level INFO, writing to ``sys.stdout``; add handlers
    (e.g. a ``logging.FileHandler``) to log elsewhere too."""

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._metrics_prepared = False
        self.prepare_loss_and_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net

        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))

        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0

    # ----- argument checks ---------------------------------------------------------------

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError("loss must be a Loss, refer to gluon.loss.Loss:{}".format(loss))
        return loss

    @staticmethod
    def _check_context(context):
        gpus = num_gpus()
        available_gpus = [gpu(i) for i in range(gpus)]
        if not context:
            if gpus > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default. To utilize all "
                              "your GPUs, specify context as a list of gpus, e.g. "
                              "context=[mx.gpu(0), mx.gpu(1)] ")
            return [gpu(0)] if gpus > 0 else [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ValueError("context must be a Context or a list of Context, for example mx.cpu() or "
                             "[mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:{}".format(context))
        for ctx in context:
            assert ctx in available_gpus or str(ctx).startswith("cpu"), (
                "%s is not available, please make sure your context is in one of: mx.cpu(), %s"
                % (ctx, ", ".join(str(c) for c in available_gpus)))
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("Customized Batch Processor must contain fit_batch() and "
                             "evaluate_batch() methods")
        return batch_processor

    def _is_initialized(self):
        params = self.net.collect_params()
        for name in params:
            try:
                params[name].list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            # initialize() leaves already initialized parameters alone
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't need "
                          "to pass initializer if you already initialized your net. You can use "
                          "net.initialize(init=your_initializer, force_reinit=True) to force "
                          "re-initialize.")

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError("Trainer must be a Gluon Trainer instance, refer to "
                             "gluon.Trainer:{}".format(trainer))
        return trainer

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """Splits ``batch[0]`` (data) and ``batch[1]`` (label) over ``ctx``."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    # ----- metrics -----------------------------------------------------------------------

    def prepare_loss_and_metrics(self):
        """Sets up the default metrics and their names; returns
        ``(train_metrics, val_metrics)``.

        Without training metrics, the loss's suggested metric (``Accuracy``
        for ``SoftmaxCrossEntropyLoss``) and a ``metric.Loss`` named after
        the loss block (its name without the trailing number, e.g.
        ``softmaxcrossentropyloss``) are used. Training metric names get
        the prefix ``'training '``; without validation metrics, deep copies
        of the training metrics are used; validation names get
        ``'validation '`` (replacing ``training``). The constructor calls
        this; later calls change nothing and return the same lists.
        """
        if not self._metrics_prepared:
            self._add_default_training_metrics()
            self._add_validation_metrics()
            self._metrics_prepared = True
        return self._train_metrics, self._val_metrics

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(metric_loss(self.loss.name.rstrip("0123456789")))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        """The training metrics (a list of EvalMetric)."""
        return self._train_metrics

    @property
    def val_metrics(self):
        """The validation metrics (a list of EvalMetric)."""
        return self._val_metrics

    # ----- loops -------------------------------------------------------------------------

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Evaluates the model on ``val_data``.

        The validation metrics are reset, then for each batch
        ``batch_processor.evaluate_batch`` runs between the handlers'
        ``batch_begin`` and ``batch_end``, within one ``epoch_begin`` /
        ``epoch_end`` pair. A ``MetricHandler`` and a ``LoggingHandler`` on
        the validation metrics are added unless given.

        Parameters
        ----------
        val_data : DataLoader
            The validation data (a ValueError for anything else).
        batch_axis : int, default 0
            The axis split over the contexts.
        event_handlers : EventHandler or list of EventHandler
            Extra handlers for the evaluation.
        """
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you "
                             "can transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)

        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None, batch_axis=0):
        """Trains the model for ``epochs`` epochs or ``batches`` batches
        (exactly one of them).

        Each batch runs ``batch_processor.fit_batch`` (forward and backward)
        between the handlers' ``batch_begin`` and ``batch_end``; the
        default ``GradientUpdateHandler`` steps the trainer. A true value
        from a ``batch_end`` ends the epoch, one from an ``epoch_end`` ends
        training. Besides ``event_handlers``, a ``StoppingHandler`` and,
        unless one of the kind is given, a ``GradientUpdateHandler``, a
        ``MetricHandler`` (training metrics), a ``ValidationHandler`` (when
        ``val_data`` is given) and a ``LoggingHandler`` are added. When
        given and default handlers are mixed, every handler's metrics must
        be among the estimator's training and validation metrics
        (ValueError).

        Parameters
        ----------
        train_data : DataLoader
            The training data (a ValueError for anything else).
        val_data : DataLoader, default None
            Validation data, evaluated after every epoch.
        epochs : int, default None
            Number of epochs.
        event_handlers : EventHandler or list of EventHandler
            Extra handlers.
        batches : int, default None
            Number of batches.
        batch_axis : int, default 0
            The axis split over the contexts.
        """
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you "
                             "can transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, train by number of "
                             "epochs or number of batches. Please specify one and only one of: "
                             "epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis

        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)

        for handler in train_begin:
            handler.train_begin(self)
        stop = False
        while not stop:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch end, even after one asked to stop
                results = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                           for handler in batch_end]
                if any(results):
                    break
            results = [handler.epoch_end(self) for handler in epoch_end]
            stop = any(results)
        for handler in train_end:
            handler.train_end(self)

    # ----- handlers ----------------------------------------------------------------------

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)

        def missing(kind):
            return not any(isinstance(h, kind) for h in handlers)

        defaults = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            defaults.append(GradientUpdateHandler())
        if missing(MetricHandler):
            defaults.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            defaults.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.train_metrics))

        mixing = bool(handlers) and bool(defaults)
        handlers.extend(defaults)
        if mixing:
            known = self.train_metrics + self.val_metrics
            for handler in handlers:
                _check_handler_metric_ref(handler, known)
        return _sort_by_priority(handlers)

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        defaults = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            defaults.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            defaults.append(LoggingHandler(metrics=self.val_metrics))

        mixing = bool(handlers) and bool(defaults)
        handlers.extend(defaults)
        if mixing:
            for handler in handlers:
                _check_handler_metric_ref(handler, self.val_metrics)
        return _sort_by_priority(handlers)

    @staticmethod
    def _categorize_handlers(event_handlers):
        """Splits handlers into the lists called at train begin, epoch
        begin, batch begin, batch end, epoch end and train end (a handler
        is in each list whose mix-in it derives from)."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
