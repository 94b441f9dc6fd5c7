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


def _axes_list(axes, nd, what):
    """Normalised axes from an int or a sequence of ints; ValueError when one
    is out of range or repeated."""
    axes = [axes] if isinstance(axes, int) else list(axes)
    out = []
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"moveaxis: {what} axis {a} is out of range for {nd} dimensions")
        out.append(a + nd if a < 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in {what} {axes}")
    return out


def moveaxis(tensor, source, destination):
    """``tensor`` with the axes ``source`` (an int or a sequence) moved to the
    positions ``destination`` (as many); the other axes keep their order."""
    nd = tensor.ndim
    src = _axes_list(source, nd, "source")
    dst = _axes_list(destination, nd, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` must have the same number of elements")
    order = [i for i in range(nd) if i not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return _oxnet.invoke(_oxnet.op_handle("transpose"), (tensor,), {"axes": tuple(order)})


def onehot_encode(indices, out):
    """Writes the one-hot encoding of ``indices`` into ``out`` (its width is
    ``out.shape[1]``) and returns ``out`` (MXNet's legacy helper)."""
    depth = out.shape[1]
    result = _oxnet.invoke(_oxnet.op_handle("one_hot"), (indices,), {"depth": depth, "dtype": out.dtype})
    out[:] = result
    return out


def from_numpy(ndarray, zero_copy=True):
    """An NDArray with the values of the numpy array ``ndarray``. With
    ``zero_copy`` (the default, as MXNet) it shares ``ndarray``'s memory,
    which must be C-contiguous, and makes ``ndarray`` read-only as MXNet
    does (the engine may write to the shared memory); otherwise a copy."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return _oxnet.array(ndarray, None, ndarray.dtype)
    shared = _oxnet.from_numpy_shared(ndarray)
    ndarray.flags.writeable = False
    return shared


def from_dlpack(dlpack):
    """The NDArray a DLPack capsule (or an object with ``__dlpack__``)
    holds, sharing its memory; a capsule can be consumed once."""
    return _oxnet.from_dlpack(dlpack)


def to_dlpack_for_read(data):
    """A DLPack capsule sharing ``data``'s memory, for reading."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule sharing ``data``'s memory, for writing."""
    return data.to_dlpack_for_write()

def histogram(a, bins=10, range=None):  # pylint: disable=redefined-builtin
    """The histogram of ``a`` (flattened): ``(counts, bin_edges)``. ``bins``
    is a bin count (equal widths over ``range``) or an NDArray of edges, as
    MXNet's; a count without ``range`` takes numpy's result, as MXNet does."""
    if isinstance(bins, NDArray):
        return _oxnet.invoke(_oxnet.op_handle("_histogram"), (a, bins), {})
    if isinstance(bins, numbers.Integral):
        if range is None:
            counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
            return _oxnet.array(counts, None, "int64"), _oxnet.array(edges, None, None)
        return _oxnet.invoke(_oxnet.op_handle("_histogram"), (a,), {"bin_cnt": int(bins), "range": tuple(range)})
    raise ValueError("bins argument should be either an integer or an NDArray")
