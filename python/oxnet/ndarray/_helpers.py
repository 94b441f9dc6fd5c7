"""Functions of MXNet 1.x's ``mx.nd`` that are Python over operators there
too: ``eye``, ``linspace``, ``concatenate``, ``moveaxis``,
``onehot_encode`` and ``from_numpy``."""

import numbers

import numpy as np

from .. import _oxnet
from .._oxnet import NDArray

__all__ = ["eye", "linspace", "concatenate", "moveaxis", "onehot_encode", "from_numpy"]


def _into(result, out):
    if out is None:
        return result
    out[:] = result
    return out


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An ``N x M`` array (``M=0``: ``N x N``) with ones on diagonal ``k``
    (above the main one for ``k > 0``) and zeros elsewhere."""
    out = kwargs.pop("out", None)
    values = np.eye(int(N), int(M) if M else None, int(k))
    return _into(_oxnet.array(values, ctx, dtype if dtype is not None else "float32"), out)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (``stop``
    excluded when ``endpoint`` is false), float32 by default."""
    values = np.linspace(float(start), float(stop), int(num), endpoint=bool(endpoint))
    return _oxnet.array(values, ctx, dtype if dtype is not None else "float32")


def concatenate(arrays, axis=0, always_copy=True):
    """Joins ``arrays`` (same shape but along ``axis``) along ``axis``; with
    one array and ``always_copy=False``, returns it."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError("concatenate takes a non-empty list of NDArrays")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    first = arrays[0].shape
    ax = axis % len(first) if first else 0
    want = first[:ax] + first[ax + 1:]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape[:ax] + a.shape[ax + 1:] != want or a.dtype != arrays[0].dtype:
            raise ValueError(f"concatenate: array {i} has shape {a.shape} and dtype {a.dtype}, which cannot "
                             f"join shape {first} and dtype {arrays[0].dtype} along axis {axis}")
    return _oxnet.invoke(_oxnet.op_handle("concat"), tuple(arrays), {"dim": axis})


def moveaxis(tensor, source, destination):
    """``tensor`` with axis ``source`` moved to position ``destination``
    (the other axes keep their order)."""
    nd = tensor.ndim
    src = source + nd if source < 0 else source
    dst = destination + nd if destination < 0 else destination
    if not 0 <= src < nd:
        raise ValueError(f"moveaxis: source axis {source} is out of range for {nd} dimensions")
    if not 0 <= dst < nd:
        raise ValueError(f"moveaxis: destination axis {destination} is out of range for {nd} dimensions")
    order = [i for i in range(nd) if i != src]
    order.insert(dst, src)
    return _oxnet.invoke(_oxnet.op_handle("transpose"), (tensor,), {"axes": tuple(order)})


def onehot_encode(indices, out):
    """Writes the one-hot encoding of ``indices`` into ``out`` (its width is
    ``out.shape[1]``) and returns ``out`` (MXNet's legacy helper)."""
    depth = out.shape[1]
    result = _oxnet.invoke(_oxnet.op_handle("one_hot"), (indices,), {"depth": depth, "dtype": out.dtype})
    out[:] = result
    return out


def from_numpy(ndarray, zero_copy=True):
    """An NDArray with the values of the numpy array ``ndarray``. oxnet
    copies (its arrays own aligned memory); MXNet's ``zero_copy`` shares
    memory, so with ``zero_copy=True`` MXNet requires a C-contiguous array,
    and oxnet checks the same before copying."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    if zero_copy and not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    return _oxnet.array(ndarray, None, ndarray.dtype)

