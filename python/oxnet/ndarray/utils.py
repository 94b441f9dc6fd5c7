"""Saving and loading arrays: ``mx.nd.save``, ``mx.nd.load`` and
``mx.nd.load_frombuffer``, in MXNet's binary format (which MXNet 1.x reads
and writes, ``.params`` files included) or as safetensors.

The format of a saved file follows its name: a name ending in
``.safetensors`` gives a safetensors file, any other MXNet's format
(``save_safetensors`` forces safetensors whatever the name). Loading
recognises either format from the content. Files are written atomically
(a temporary file renamed into place), and a corrupt or truncated file
raises ``MXNetError`` naming the file and the problem.
"""

import os

from .. import _oxnet
from .._oxnet import NDArray

__all__ = ["save", "load", "load_frombuffer", "save_safetensors", "load_safetensors"]


def _split(data):
    """(arrays, names or None) of what ``save`` accepts, checked as MXNet does."""
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        if any(not isinstance(k, str) for k in data) or any(not isinstance(v, NDArray) for v in data.values()):
            raise TypeError("save only accept dict str->NDArray or list of NDArray")
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)):
        if any(not isinstance(v, NDArray) for v in data):
            raise TypeError("save only accept dict str->NDArray or list of NDArray")
        return list(data), None
    raise ValueError("data needs to either be a NDArray, dict of str, NDArray pairs or a list of NDarrays.")


def _join(loaded):
    arrays, names = loaded
    if names is None:
        return list(arrays)
    return dict(zip(names, arrays))


def _path(fname):
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError("fname required to be a string")
    return os.fspath(fname)


def save(fname, data):
    """Saves ``data`` to the file ``fname``.

    Parameters
    ----------
    fname : str or os.PathLike
        The file name. A name ending in ``.safetensors`` writes a safetensors
        file; any other name MXNet's binary format (what ``mx.nd.save`` and
        ``Block.save_parameters`` of MXNet 1.x write and read).
    data : NDArray, list of NDArray, or dict of str to NDArray
        A dict keeps its names (and their order); a list or one array is
        saved without names.

    Example::

        mx.nd.save('my_dict.params', {'x': mx.nd.zeros((2, 3)), 'y': mx.nd.ones((1, 4))})
        mx.nd.load('my_dict.params')   # {'x': <NDArray 2x3 @cpu(0)>, 'y': <NDArray 1x4 @cpu(0)>}
    """
    path = _path(fname)
    arrays, names = _split(data)
    _oxnet.params_save(path, arrays, names, path.endswith(".safetensors"))


def save_safetensors(fname, data):
    """Saves ``data`` (as for ``save``) to ``fname`` as safetensors, whatever
    the file name. A list is stored under the names ``0``, ``1``, ... and
    marked so that ``load`` gives a list back."""
    arrays, names = _split(data)
    _oxnet.params_save(_path(fname), arrays, names, True)


def load(fname):
    """Loads the arrays saved in ``fname`` (MXNet's format or safetensors,
    recognised from the content).

    Returns
    -------
    list of NDArray, or dict of str to NDArray
        A dict (in the file's order) for a file with names, a list for one
        without, as MXNet returns them. Arrays load on the CPU.
    """
    return _join(_oxnet.params_load(_path(fname)))


def load_safetensors(fname):
    """Loads a safetensors file (``MXNetError`` for any other content); a
    dict, or a list for a file ``save_safetensors`` wrote from a list."""
    return _join(_oxnet.params_load(_path(fname), True))


def load_frombuffer(buf):
    """Loads arrays from the bytes of a saved file (either format); a list
    or a dict as ``load`` returns them."""
    if not isinstance(buf, (bytes, bytearray, memoryview, str)):
        raise TypeError("buf required to be a string or bytes")
    if isinstance(buf, str):
        buf = buf.encode("latin-1")
    return _join(_oxnet.params_load_frombuffer(bytes(buf)))
