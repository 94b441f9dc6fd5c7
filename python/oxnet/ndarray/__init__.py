"""``oxnet.nd``: the NDArray class, array creation, and one function per
registry operator (built-in, custom, or loaded from a library), with the
reference's names and keyword attributes::

    from oxnet import nd
    y = nd.FullyConnected(x, w, b, num_hidden=4)
    z = nd.broadcast_div(y, nd.sum(y, axis=1, keepdims=True))
"""

from .. import _oxnet
from .._oxnet import NDArray
from . import random
from ._ops import refresh as _refresh_ops

__all__ = [
    "NDArray", "array", "zeros", "ones", "full", "empty", "arange", "waitall",
    "uniform", "normal", "random_uniform", "random_normal", "random", "invoke",
]


def array(source_array, ctx=None, dtype=None):
    """A new array copied from ``source_array`` (an NDArray, a numpy array, a
    list or a number). The dtype defaults to float32 (the source's own for
    NDArrays), as in the reference."""
    return _oxnet.array(source_array, ctx, dtype)


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array of ``shape`` filled with ``val`` (float32 by default)."""
    result = _oxnet.full(shape, float(val), ctx, dtype)
    if out is not None:
        out[:] = result
        return out
    return result


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros (float32 by default)."""
    del kwargs
    return _oxnet.full(shape, 0.0, ctx, dtype)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones (float32 by default)."""
    del kwargs
    return _oxnet.full(shape, 1.0, ctx, dtype)


def empty(shape, ctx=None, dtype=None):
    """A new array (zero-filled: oxnet never hands out uninitialised memory)."""
    return _oxnet.empty(shape, ctx, dtype)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` without ``stop``)."""
    return _oxnet.arange(float(start), None if stop is None else float(stop), float(step), int(repeat), ctx, dtype)


def waitall():
    """Waits for all pending computation (oxnet computes synchronously: returns at once)."""
    _oxnet.waitall()


def invoke(op_name, *inputs, **kwargs):
    """Calls the registry operator ``op_name`` by name."""
    return _oxnet.invoke(_oxnet.op_handle(op_name), inputs, kwargs)


uniform = random.uniform
normal = random.normal
random_uniform = random.uniform
random_normal = random.normal

_refresh_ops(globals())
