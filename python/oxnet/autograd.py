"""Imperative automatic differentiation (the reference's ``mxnet.autograd``).

Operators called inside ``with record():`` are recorded; ``backward`` walks
the record and fills the gradient buffers attached with
``NDArray.attach_grad``. The flags are per thread.
"""

from . import _oxnet
from .ndarray import NDArray
from .symbol import Symbol

# NDArray and Symbol are part of ``from mxnet.autograd import *`` in MXNet
# (user code relies on it), so they are here too.
__all__ = [
    "record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
    "set_recording", "set_training", "backward", "grad", "mark_variables", "Function", "get_symbol",
    "NDArray", "Symbol",
]


class _Scope:
    """Sets the recording and/or training flag for a ``with`` block, restoring both after."""

    def __init__(self, is_record, train_mode):
        self._record = is_record
        self._train = train_mode
        self._prev = None

    def __enter__(self):
        prev_record = _oxnet.set_recording(self._record) if self._record is not None else None
        prev_train = _oxnet.set_training(self._train) if self._train is not None else None
        self._prev = (prev_record, prev_train)
        return self

    def __exit__(self, *exc):
        prev_record, prev_train = self._prev
        if prev_record is not None:
            _oxnet.set_recording(prev_record)
        if prev_train is not None:
            _oxnet.set_training(prev_train)
        return False


def record(train_mode=True):
    """Records operator calls for differentiation (train mode by default)."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """Stops recording inside a ``record()`` block."""
    return _Scope(False, train_mode)


def train_mode():
    """Train mode (Dropout active, custom ops get ``is_train=True``) without changing recording."""
    return _Scope(None, True)


def predict_mode():
    """Predict mode without changing recording."""
    return _Scope(None, False)


def is_recording():
    """Whether operator calls are being recorded."""
    return _oxnet.is_recording()


def is_training():
    """Whether train mode is on."""
    return _oxnet.is_training()


def set_recording(is_recording):  # pylint: disable=redefined-outer-name
    """Sets the recording flag; returns the previous value."""
    return _oxnet.set_recording(bool(is_recording))


def set_training(train_mode):  # pylint: disable=redefined-outer-name
    """Sets the train-mode flag; returns the previous value."""
    return _oxnet.set_training(bool(train_mode))


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Back-propagates from ``heads`` (an NDArray or a list) into the
    variables' gradient buffers, honouring each one's ``grad_req``."""
    _oxnet.backward(heads, head_grads, retain_graph, train_mode)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Returns the gradients of ``heads`` with respect to ``variables``, as
    a list with one gradient per variable (also when ``variables`` is one
    NDArray: MXNet 1.x returns a list then too, and code indexes it). With
    ``create_graph=True`` the gradients are recorded, so they can be
    differentiated again."""
    return list(_oxnet.grad(heads, variables, head_grads, retain_graph, create_graph, train_mode))


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as variables whose gradients go into ``gradients``."""
    _oxnet.mark_variables(variables, gradients, grad_reqs)


class Function:
    """A differentiable function written as a forward/backward pair in
    Python (MXNet's ``autograd.Function``)::

        class Sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)

        y = Sigmoid()(x)      # under autograd.record(), recorded as one node

    ``forward`` takes and returns NDArrays (one or a tuple); ``backward``
    gets one gradient per output and returns one per input. An instance is
    called once.
    """

    _count = 0

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keeps arrays for ``backward`` (as ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs):
        """The computation; subclasses override it."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """The gradients of the inputs; subclasses override it."""
        raise NotImplementedError

    def __call__(self, *inputs):
        from .base import MXNetError  # pylint: disable=import-outside-toplevel
        from .ndarray import NDArray  # pylint: disable=import-outside-toplevel

        if self._used:
            raise MXNetError(f"{type(self).__name__}: each Function instance can only be called once; "
                             "create a new instance for each call")
        self._used = True
        with pause():
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = (outputs,) if single else tuple(outputs)
        if not is_recording():
            return outputs
        for o in outs:
            if not isinstance(o, NDArray):
                raise MXNetError(f"{type(self).__name__}.forward must return NDArrays, got {type(o).__name__}")
        Function._count += 1
        name = f"_function_{type(self).__name__}_{Function._count}"
        cache = {}

        def grad_of(index):
            def grad(_outputs, _inputs, out_grads):
                if index in cache.setdefault("served", set()) or "grads" not in cache:
                    with pause():
                        result = self.backward(*out_grads)
                    result = (result,) if isinstance(result, NDArray) else tuple(result)
                    if len(result) != len(inputs):
                        raise MXNetError(f"{type(self).__name__}.backward returned {len(result)} gradients for "
                                         f"{len(inputs)} inputs")
                    cache["grads"], cache["served"] = result, set()
                cache["served"].add(index)
                return cache["grads"][index]
            return grad

        arguments = [f"in{i}" for i in range(len(inputs))]
        _oxnet.register_function(name, arguments, lambda _ins: list(outs), [grad_of(i) for i in range(len(inputs))],
                                 type(self).__doc__ or "", [f"out{i}" for i in range(len(outs))])
        try:
            recorded = _oxnet.invoke(_oxnet.op_handle(name), tuple(inputs), None)
        finally:
            _oxnet.unregister_function(name)
        recorded = recorded if isinstance(recorded, (list, tuple)) else [recorded]
        return recorded[0] if single else tuple(recorded)


def get_symbol(x):
    """The Symbol of the computation autograd recorded for ``x`` (an NDArray
    or a list): variables are named ``var0``, ``var1``, ... in the order
    the record reaches them; arrays that took no part in autograd appear as
    variables ``const0``, ...."""
    from .symbol import Symbol  # pylint: disable=import-outside-toplevel

    heads = list(x) if isinstance(x, (list, tuple)) else [x]
    return Symbol(_oxnet.recorded_symbol(heads))
