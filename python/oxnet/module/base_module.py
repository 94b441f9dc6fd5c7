"""``BaseModule``: the training and evaluation loops shared by modules
(``fit``, ``score``, ``predict``, ``iter_predict``), as in MXNet 1.x."""

import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam

__all__ = ["BaseModule"]


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _check_input_names(symbol, names, typename, throw):
    """Checks that every name in ``names`` is an argument of ``symbol``
    (raising ``ValueError`` with ``throw``, warning otherwise)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={names}) but input with name '{name}' "
               "is not found in symbol.list_arguments(). Did you mean one of:\n\t" + "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = (f"Data provided by {name}_shapes don't match names specified by {name}_names "
               f"({data_shapes} vs. {data_names})")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """``data_shapes`` and ``label_shapes`` as lists of ``DataDesc``, checked
    against the module's names (data must match; labels only warn)."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """A computation unit with the loops that drive it.

    A module moves through states: created, ``bind`` (memory for given
    input shapes), ``init_params``, ``init_optimizer``; then ``forward``,
    ``backward``, ``update`` per batch. ``fit`` does all of it; ``score``
    and ``predict`` evaluate. Subclasses implement the per-batch methods.

    Parameters
    ----------
    logger : logging.Logger or module
        Where progress is logged (default: the ``logging`` module).
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------------ loops
    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _require(self, binded=True, params=True, what="this call"):
        if binded and not self.binded:
            raise MXNetError(f"{type(self).__name__}: {what} needs a bound module; call bind() first")
        if params and not self.params_initialized:
            raise MXNetError(f"{type(self).__name__}: {what} needs initialized parameters; call init_params() "
                             "first")

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None, score_end_callback=None,
              reset=True, epoch=0, sparse_row_id_fn=None):
        """Evaluates ``eval_metric`` over ``eval_data``.

        Parameters
        ----------
        eval_data : DataIter
            The evaluation data.
        eval_metric : str or EvalMetric
            The metric (a name is passed to ``mx.metric.create``).
        num_batch : int, optional
            Stop after this many batches.
        batch_end_callback, score_end_callback : callable or list, optional
            Called with a ``BatchEndParam`` after each batch / at the end.
        reset : bool
            Reset ``eval_data`` first.
        epoch : int
            The epoch number given to the callbacks.

        Returns
        -------
        list of (str, float)
            The metric's ``get_name_value()``.
        """
        self._require(what="score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields ``(outputs, nbatch, batch)`` for each batch of ``eval_data``,
        the outputs without the batch's padding."""
        self._require(what="iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True, always_output_list=False,
                sparse_row_id_fn=None):
        """Runs the module over ``eval_data`` and collects the outputs.

        Parameters
        ----------
        eval_data : DataIter, NDArray or numpy.ndarray
            The inputs. An array is run as one batch (its first output is returned).
        num_batch : int, optional
            Stop after this many batches.
        merge_batches : bool
            Concatenate the batches' outputs (padding removed) into one array per output.
        reset : bool
            Reset ``eval_data`` first.
        always_output_list : bool
            Return a list even for a single output.

        Returns
        -------
        NDArray, list of NDArray, or (without ``merge_batches``) a list per batch.
        """
        self._require(what="predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            if any(len(out) != num_outputs for out in output_list):
                raise MXNetError("predict: cannot merge batches, as the number of outputs is not the same in "
                                 "every batch (bucketing?); use merge_batches=False")
            merged = [nd.concatenate([out[i] for out in output_list]) for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return merged[0]
            return merged
        return output_list

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None, eval_batch_end_callback=None,
            initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
            force_rebind=False, force_init=False, begin_epoch=0, num_epoch=None, validation_metric=None,
            monitor=None, sparse_row_id_fn=None):
        """Trains the module: bind, init_params, init_optimizer, then for each
        epoch from ``begin_epoch`` to ``num_epoch``: forward, backward, update
        and metric update per batch; log ``Epoch[e] Train-<metric>=<value>``
        and the time; call ``epoch_end_callback(epoch, symbol, arg_params,
        aux_params)``; score ``eval_data`` with ``validation_metric`` (default
        ``eval_metric``) and log ``Epoch[e] Validation-...``; reset ``train_data``.

        Parameters are MXNet's: ``eval_metric`` (name or EvalMetric),
        ``batch_end_callback`` (``BatchEndParam``), ``kvstore``, ``optimizer``
        (name or Optimizer), ``optimizer_params``, ``initializer``,
        ``arg_params``/``aux_params`` (initial values), ``allow_missing``,
        ``force_rebind``, ``force_init``, ``monitor``.
        """
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._fit_epoch_begin(epoch, train_data)
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = self._fit_train_metric(eval_metric)
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # sync the parameters back from the executor
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            self._fit_epoch_end(train_data)

    # what subclasses' training loops change in fit
    def _fit_epoch_begin(self, epoch, train_data):
        """Called by :meth:`fit` before each epoch's first batch."""

    def _fit_train_metric(self, eval_metric):
        """The epoch's training metric that :meth:`fit` logs."""
        return eval_metric.get_global_name_value()

    def _fit_epoch_end(self, train_data):
        """Called by :meth:`fit` after each epoch: rewinds the data."""
        train_data.reset()

    # ------------------------------------------------------------ parameters
    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Sets the parameters from ``arg_params``/``aux_params`` (dicts of name to NDArray)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname):
        """Saves the parameters to ``fname`` (``arg:``/``aux:`` keys, as ``mx.model``)."""
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Loads parameters saved by ``save_params`` (or ``mx.model.save_checkpoint``)."""
        from ..model import _split_params

        arg_params, aux_params = _split_params(nd.load(fname), fname)
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The values of the state inputs (none for a module without states)."""
        self._require(what="get_states")
        del merge_multi_context
        return []

    def set_states(self, states=None, value=None):
        """Sets the state inputs (a module without states accepts nothing)."""
        self._require(what="set_states")
        if states or value:
            raise MXNetError(f"{type(self).__name__}: this module has no states to set")

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares for ``data_batch`` (nothing to do here; sparse row pulls are not supported)."""
        del data_batch
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    # ------------------------------------------------------- to be overridden
    @property
    def symbol(self):
        """The symbol of the module."""
        return self._symbol

    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """``DataDesc`` of the data inputs."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """``DataDesc`` of the labels."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """``(name, shape)`` of the outputs."""
        raise NotImplementedError()

    def get_params(self):
        """``(arg_params, aux_params)``."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initializes the parameters."""
        raise NotImplementedError()

    def install_monitor(self, mon):
        """Installs a monitor on the executors."""
        raise NotImplementedError()

    def forward(self, data_batch, is_train=None):
        """Forward computation."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Backward computation."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the inputs of the last backward."""
        raise NotImplementedError()

    def update(self):
        """Updates the parameters with the optimizer."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulates the outputs of the last forward into ``eval_metric``."""
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocates memory for the given input shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Sets up the optimizer."""
        raise NotImplementedError()
