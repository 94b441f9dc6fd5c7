"""``mx.io.utils``: the helpers MXNet's iterators share (input normalisation,
indexing and slicing by batch)."""

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .ndarray_iter import _init_data as _init_named

__all__ = ["_init_data", "_has_instance", "_getdata_by_idx", "_slice_along_batch_axis"]


def _init_data(data, allow_empty, default_name):
    """``data`` (an array, a list of arrays or a dict of them) as a sorted
    list of ``(name, NDArray)``: one array is called ``default_name``,
    several ``_<i>_<default_name>``."""
    return _init_named(data, allow_empty, default_name, default_name)


def _has_instance(data, dtype):
    """Whether any array of the ``(name, array)`` list ``data`` is a ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx):
    """Each ``(name, array)`` of ``data`` reduced to the rows ``idx`` (an
    index array), in that order."""
    idx = np.asarray(idx)
    out = []
    for name, arr in data:
        if isinstance(arr, NDArray):
            out.append((name, nd.array(arr.asnumpy()[idx], dtype=arr.dtype)))
        else:
            out.append((name, arr[idx]))
    return out


def _slice_along_batch_axis(data, s, batch_axis):
    """``data[s]`` along ``batch_axis`` (a ``slice``)."""
    if batch_axis == 0:
        return data[s]
    return nd.slice_axis(data, axis=batch_axis, begin=s.start, end=s.stop)
