"""Modules written in Python (``mx.mod.PythonModule``,
``mx.mod.PythonLossModule``): a computation with no parameters of its own,
most often a loss whose gradient is a Python function, chained after a
symbolic ``Module`` in a ``SequentialModule``."""

import logging

from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule, _parse_data_desc

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(BaseModule):
    """A module whose computation is Python code, with no parameters: the
    parameter, optimizer and update methods do nothing, and a subclass
    implements ``forward``, ``backward``, ``get_outputs``,
    ``get_input_grads`` and ``_compute_output_shapes``.

    Parameters
    ----------
    data_names : list of str
        The data inputs' names.
    label_names : list of str or None
        The labels' names (``None`` for a module without labels).
    output_names : list of str
        The outputs' names.
    logger : logging.Logger or module
        Where messages go.
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = None if label_names is None else list(label_names)
        self._output_names = list(output_names)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        """The data inputs' names."""
        return self._data_names

    @property
    def output_names(self):
        """The outputs' names."""
        return self._output_names

    @property
    def data_shapes(self):
        """``DataDesc`` of the data inputs (after ``bind``)."""
        return self._data_shapes

    @property
    def label_shapes(self):
        """``DataDesc`` of the labels (after ``bind``; ``None`` without labels)."""
        return self._label_shapes

    @property
    def output_shapes(self):
        """``(name, shape)`` of the outputs (after ``bind``)."""
        return self._output_shapes

    def get_params(self):
        """No parameters: ``({}, {})``."""
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Nothing to initialize (a subclass with parameters overrides it)."""
        self.params_initialized = True

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Nothing to optimize (a subclass with parameters overrides it)."""
        self.optimizer_initialized = True

    def update(self):
        """Nothing to update (a subclass with parameters overrides it)."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Adds the outputs of the last forward against ``labels`` to
        ``eval_metric``; a module bound without labels ignores the call."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise MXNetError(f"{type(self).__name__}: pre-sliced labels are not supported by a Python module")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Records the input shapes and computes the output shapes
        (``grad_req`` must be ``'write'``)."""
        del shared_module
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise MXNetError(f"{type(self).__name__}: grad_req must be 'write' for a Python module, "
                             f"got {grad_req!r}")
        if label_shapes is not None and self._label_names is None:
            raise MXNetError(f"{type(self).__name__}: label_shapes were given to a module without label_names")
        data, labels = _parse_data_desc(self._data_names, self._label_names, data_shapes, label_shapes)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data
        self._label_shapes = labels
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """``(name, shape)`` of each output, from ``self._data_shapes`` and
        ``self._label_shapes`` (a subclass implements it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _compute_output_shapes")

    def install_monitor(self, mon):
        """A Python module has no executors to monitor."""
        raise MXNetError(f"{type(self).__name__}: a Python module has no executors to install a monitor on")


class PythonLossModule(PythonModule):
    """A loss as a module: its output is its input (the scores, for
    metrics and ``predict``), and its backward gives the gradient of the
    loss with respect to the scores, from ``grad_func(scores, labels)``
    (returning an NDArray or a numpy array) or from a subclass's
    ``_backward_impl``.

    Parameters
    ----------
    name : str
        The output is named ``name + '_output'``.
    data_names : list of str
        One name (default ``['data']``).
    label_names : list of str
        One name (default ``['softmax_label']``).
    logger : logging.Logger or module
        Where messages go.
    grad_func : callable, optional
        ``grad_func(scores, labels)`` → the gradient with respect to the scores.
    """

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",), logger=logging,
                 grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names) != 1:
            raise MXNetError(f"PythonLossModule: takes one data input and one label, got data_names="
                             f"{list(data_names)} and label_names={list(label_names)}")
        if grad_func is not None and not callable(grad_func):
            raise MXNetError(f"PythonLossModule: grad_func must be callable, got {type(grad_func).__name__}")
        self._name = name
        self._grad_func = grad_func
        self._scores = None
        self._labels = None
        self._scores_grad = None

    def _compute_output_shapes(self):
        return [(self._name + "_output", tuple(self._data_shapes[0].shape))]

    def forward(self, data_batch, is_train=None):
        """Keeps the batch's scores (and, when training, its labels)."""
        self._require(params=False, what="forward")
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            if not data_batch.label:
                raise MXNetError("PythonLossModule: a training forward needs the batch's labels")
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        """``[scores]`` of the last forward."""
        del merge_multi_context
        return [self._scores]

    def backward(self, out_grads=None):
        """Computes the gradient with respect to the scores."""
        if out_grads is not None:
            raise MXNetError("PythonLossModule: a loss module takes no out_grads in backward")
        if not self.for_training:
            raise MXNetError("PythonLossModule: backward needs a module bound with for_training=True")
        if self._scores is None or self._labels is None:
            raise MXNetError("PythonLossModule: backward needs a training forward first")
        self._backward_impl()

    def _backward_impl(self):
        """Sets ``self._scores_grad`` from ``self._scores`` and
        ``self._labels``: by default through ``grad_func``."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: give grad_func or override _backward_impl")
        grad = self._grad_func(self._scores, self._labels)
        if not isinstance(grad, nd.NDArray):
            grad = nd.array(grad)
        if grad.shape != self._scores.shape:
            raise MXNetError(f"PythonLossModule: grad_func returned shape {grad.shape} for scores of shape "
                             f"{self._scores.shape}")
        self._scores_grad = grad

    def get_input_grads(self, merge_multi_context=True):
        """``[gradient with respect to the scores]`` of the last backward."""
        del merge_multi_context
        return [self._scores_grad]
