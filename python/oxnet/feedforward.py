"""``mx.model.FeedForward``: MXNet's first (deprecated) trainer of a
symbol with one data input and one label, kept so that old scripts run.
It trains through ``mx.mod.Module`` and predicts through a bound
executor; new code should use ``mx.mod.Module``."""

import logging
import warnings

import numpy as np

from . import io
from . import metric as _metric
from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .callback import LogValidationMetricsCallback
from .context import Context, cpu
from .initializer import Uniform

__all__ = ["FeedForward"]


class FeedForward:
    """A symbolic network with its parameters and training settings.

    Parameters
    ----------
    symbol : Symbol or callable
        The network (ending in a loss such as ``SoftmaxOutput``), or
        ``sym_gen(bucket_key)`` returning it for the training data's
        ``default_bucket_key``.
    ctx : Context or list of Context
        Where it runs (the first one; oxnet trains on one device here).
    num_epoch : int
        Epochs ``fit`` trains (up to, counting from ``begin_epoch``).
    epoch_size : int, optional
        Batches per epoch (the data is then served by ``io.ResizeIter``).
    optimizer : str or Optimizer
        By name, created with ``rescale_grad = 1 / batch_size`` and the
        extra keyword arguments (``learning_rate``, ``momentum``, ``wd``, ...).
    initializer : Initializer
        For parameters not in ``arg_params`` / ``aux_params``.
    numpy_batch_size : int
        Batch size when ``fit``/``predict`` are given numpy arrays.
    arg_params, aux_params : dict of str to NDArray
        Parameters to start from (and, after ``fit``, the trained ones).
    allow_extra_params : bool
        Whether names the symbol lacks may be in the parameter dicts.
    begin_epoch : int
        The first epoch's number.
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None, aux_params=None,
                 allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use mxnet.mod.Module instead.",
                      DeprecationWarning, stacklevel=2)
        if isinstance(symbol, sym.Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError(f"FeedForward: symbol must be a Symbol or a callable, got {type(symbol).__name__}")
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = list(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self.allow_extra_params = allow_extra_params
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        self.arg_params = arg_params
        self.aux_params = aux_params
        if self.symbol is not None:
            self._drop_extra_params()

    def _drop_extra_params(self):
        if not self.allow_extra_params:
            return
        args, auxs = set(self.symbol.list_arguments()), set(self.symbol.list_auxiliary_states())
        if self.arg_params:
            self.arg_params = {k: v for k, v in self.arg_params.items() if k in args}
        if self.aux_params:
            self.aux_params = {k: v for k, v in self.aux_params.items() if k in auxs}

    # ------------------------------------------------------------ data
    def _iter(self, X, y, is_train):
        """``X`` as a DataIter (numpy/NDArray ``X`` and ``y`` batched by
        ``numpy_batch_size``; shuffled for training)."""
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("FeedForward: y must be given when X is an array")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise TypeError("FeedForward: y must be an array when X is an array")
            if X.shape[0] != y.shape[0]:
                raise ValueError(f"FeedForward: {X.shape[0]} samples but {y.shape[0]} labels")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape((-1,))
            if y.ndim != 1:
                raise ValueError("FeedForward: labels must be 1-D (or 2-D with one column)")
            size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, size, shuffle=True, last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, size, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError(f"FeedForward: X must be a DataIter, NDArray or numpy array, got {type(X).__name__}")
        return X

    def _eval_iter(self, eval_data):
        if eval_data is None or isinstance(eval_data, io.DataIter):
            return eval_data
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            data, label = eval_data
            if data is None:
                raise ValueError("FeedForward: eval_data holds no data")
            if label is None and isinstance(data, io.DataIter):
                return data
            data = np.array(data) if isinstance(data, list) else data
            label = np.array(label) if isinstance(label, list) else label
            return self._iter(data, label, is_train=True)
        raise TypeError("FeedForward: eval_data must be a DataIter or an (data, label) pair of arrays")

    # ------------------------------------------------------------ training
    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None, monitor=None,
            eval_end_callback=LogValidationMetricsCallback(), eval_batch_end_callback=None):
        """Trains from ``begin_epoch`` to ``num_epoch`` on ``X`` (a DataIter,
        or arrays with labels ``y``), evaluating on ``eval_data`` after each
        epoch; the trained parameters end in ``arg_params``/``aux_params``."""
        from .module import Module

        del work_load_list
        if self.num_epoch is None:
            raise MXNetError("FeedForward.fit: num_epoch is not set")
        data = self._iter(X, y, is_train=True)
        eval_data = self._eval_iter(eval_data)
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._drop_extra_params()
        if self.epoch_size is not None:
            data = io.ResizeIter(data, self.epoch_size, reset_internal=False)
        data_names = [d[0] for d in data.provide_data]
        label_names = [d[0] for d in data.provide_label]
        mod = Module(self.symbol, data_names=data_names, label_names=label_names, context=self.ctx[0],
                     logger=logger or logging)
        optimizer, params = self.optimizer, None
        if isinstance(optimizer, str):
            params = dict(self.kwargs)
            params.setdefault("rescale_grad", 1.0 / data.batch_size)
        mod.fit(data, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                batch_end_callback=batch_end_callback, kvstore=kvstore, optimizer=optimizer,
                optimizer_params=params if params is not None else (("learning_rate", 0.01),),
                eval_end_callback=eval_end_callback, eval_batch_end_callback=eval_batch_end_callback,
                initializer=self.initializer, arg_params=self.arg_params, aux_params=self.aux_params,
                allow_missing=True, begin_epoch=self.begin_epoch, num_epoch=self.num_epoch, monitor=monitor)
        self.arg_params, self.aux_params = mod.get_params()

    # ------------------------------------------------------------ inference
    def _predictor(self, data):
        from .module import Module

        if self.arg_params is None:
            raise MXNetError("FeedForward: no parameters yet; fit the model or give arg_params")
        data_names = [d[0] for d in data.provide_data]
        # the label inputs (MXNet's rule: arguments named ...label) are not parameters
        label_names = [n for n in self.symbol.list_arguments() if n.endswith("label") and n not in data_names]
        mod = Module(self.symbol, data_names=data_names, label_names=label_names, context=self.ctx[0])
        mod.bind(data_shapes=data.provide_data, for_training=False)
        mod.set_params(self.arg_params, self.aux_params or {}, allow_missing=False,
                       allow_extra=self.allow_extra_params)
        return mod

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs for ``X`` as numpy (one array, or a list for several
        outputs), padding removed; with ``return_data`` also the inputs and
        labels: ``(outputs, data, label)``."""
        data = self._iter(X, None, is_train=False)
        if reset:
            data.reset()
        mod = self._predictor(data)
        outs, inputs, labels = [], [], []
        for i, batch in enumerate(data):
            if num_batch is not None and i == num_batch:
                break
            mod.forward(batch, is_train=False)
            real = data.batch_size - (batch.pad or 0)
            outs.append([o[0:real].asnumpy() for o in mod.get_outputs()])
            if return_data:
                inputs.append([x[0:real].asnumpy() for x in batch.data])
                labels.append([x[0:real].asnumpy() for x in (batch.label or [])])

        def merged(rows):
            cols = [np.concatenate(c) for c in zip(*rows)] if rows else []
            return cols[0] if len(cols) == 1 else cols

        if return_data:
            return merged(outs), merged(inputs), merged(labels)
        return merged(outs)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None, reset=True):
        """``eval_metric`` (name or EvalMetric) over ``X``; returns its value."""
        from .model import BatchEndParam

        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        data = self._iter(X, None, is_train=False)
        if reset:
            data.reset()
        mod = self._predictor(data)
        for i, batch in enumerate(data):
            if num_batch is not None and i == num_batch:
                break
            mod.forward(batch, is_train=False)
            eval_metric.update(batch.label, mod.get_outputs())
            if batch_end_callback is not None:
                param = BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric, locals=locals())
                for cb in batch_end_callback if isinstance(batch_end_callback, list) else [batch_end_callback]:
                    cb(param)
        return eval_metric.get()[1]

    # ------------------------------------------------------------ files
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Writes ``prefix-symbol.json`` and ``prefix-<epoch>.params``
        (``epoch`` defaults to ``num_epoch``)."""
        from .model import save_checkpoint

        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise MXNetError("FeedForward.save: give epoch (num_epoch is not set)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params or {},
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint, continuing from ``epoch``."""
        from .model import load_checkpoint

        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params, begin_epoch=epoch,
                           **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=Uniform(0.01), eval_data=None, eval_metric="acc", epoch_end_callback=None,
               batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
               eval_end_callback=LogValidationMetricsCallback(), eval_batch_end_callback=None, **kwargs):
        """Makes a FeedForward and fits it; returns it."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size, optimizer=optimizer,
                            initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
