"""``mx.contrib.autograd``: the first, experimental autograd API of MXNet
(kept in MXNet 1.x as ``mxnet.contrib.autograd``), on top of
:mod:`oxnet.autograd`.

Here "training" means both recording operators for differentiation and
train mode (``Dropout`` active): ``train_section()`` turns both on,
``test_section()`` both off. New code should use ``mx.autograd.record()``,
``mx.autograd.backward`` and ``NDArray.attach_grad``.
"""

import functools

from .. import autograd as _ag
from ..ndarray import NDArray, zeros_like

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section", "mark_variables",
           "backward", "compute_gradient", "grad_and_loss", "grad"]

_GRAD_REQS = ("null", "write", "add")


def set_is_training(is_train):
    """Turns recording and train mode on (``is_train`` True) or off, and
    returns the previous recording state (as MXNet's does)."""
    is_train = bool(is_train)
    _ag.set_training(is_train)
    return bool(_ag.set_recording(is_train))


class TrainingStateScope:
    """A ``with`` block that runs in (``enter_state`` True) or out of the
    training state of :func:`set_is_training`, restoring the previous state
    at its end::

        with TrainingStateScope(True):
            y = model(x)
            compute_gradient([y])
    """

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)
        return self

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """A ``with`` scope that records operators in train mode::

        with mx.contrib.autograd.train_section():
            y = model(x)
            compute_gradient([y])
    """
    return TrainingStateScope(True)


def test_section():
    """A ``with`` scope, usually inside :func:`train_section`, where
    operators are neither recorded nor in train mode (evaluation, I/O,
    updates)."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Makes ``variables`` (a list of NDArray) differentiable, their
    gradients going into ``gradients`` (a list of NDArray as long).

    ``grad_reqs`` is ``'write'``, ``'add'`` or ``'null'``, for all of them
    or as a list with one per variable.
    """
    if isinstance(variables, NDArray):
        variables = [variables]
    if isinstance(gradients, NDArray):
        gradients = [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise ValueError(f"mark_variables: {len(variables)} variables and {len(gradients)} gradients must be "
                         "as many")
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ValueError(f"mark_variables: {len(reqs)} grad_reqs for {len(variables)} variables")
    for req in reqs:
        if req not in _GRAD_REQS:
            raise ValueError(f"mark_variables: grad_reqs must be one of {_GRAD_REQS}, got {req!r}")
    _ag.mark_variables(variables, gradients, reqs if not isinstance(grad_reqs, str) else grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Back-propagates from ``outputs`` (a list or tuple of NDArray) into
    the marked variables' gradients. ``out_grads``, when given, holds one
    head gradient per output (None for ones)."""
    if not isinstance(outputs, (list, tuple)):
        raise TypeError(f"backward: outputs must be a list or tuple of NDArrays, got {type(outputs).__name__}")
    if out_grads is not None:
        out_grads = list(out_grads)
        if len(out_grads) != len(outputs):
            raise ValueError(f"backward: {len(outputs)} outputs and {len(out_grads)} out_grads must be as many")
    _ag.backward(list(outputs), out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated: ``backward(outputs)``."""
    backward(outputs)


def _variables(args, argnum):
    if argnum is None:
        variables = list(args)
    else:
        nums = argnum if isinstance(argnum, list) else [argnum]
        for i in nums:
            if not isinstance(i, int) or not -len(args) <= i < len(args):
                raise ValueError(f"argnum: {i!r} is not the position of one of the {len(args)} arguments")
        variables = [args[i] for i in nums]
    for x in variables:
        if not isinstance(x, NDArray):
            raise TypeError(f"autograd inputs must be NDArrays, got {type(x).__name__} (use argnum to choose "
                            "the NDArray arguments)")
    return variables


def grad_and_loss(func, argnum=None):
    """``func`` made to return ``(gradients, outputs)``: the gradients of
    its output(s) with respect to its arguments (all of them, or those at
    the positions ``argnum``, an int or a list of int, which must be
    NDArrays), and the output(s) themselves."""

    @functools.wraps(func)
    def wrapped(*args):
        """``func(*args)`` with the gradients of its arguments."""
        variables = _variables(args, argnum)
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func, argnum=None):
    """``func`` made to return the gradients of its output(s) with respect
    to its arguments (see :func:`grad_and_loss`)::

        grad_func = grad(lambda x: x ** 2)
        grad_func(mx.nd.array([1, 2, 3]))   # [2, 4, 6]
    """
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args):
        """The gradients of ``func(*args)``."""
        return grad_with_loss_func(*args)[0]

    return wrapped
