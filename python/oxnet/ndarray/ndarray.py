"""``mxnet.ndarray.ndarray``: the module where MXNet 1.x defines ``NDArray``.
User code imports from it directly (``from mxnet.ndarray.ndarray import
NDArray``), so oxnet keeps the path; everything here is the one class and
functions of :mod:`oxnet.ndarray`."""

from . import NDArray, arange, array, empty, full, ones, waitall, zeros  # noqa: F401

# MXNet's module shadows the builtin ``slice`` with its operator and keeps
# the builtin as ``py_slice``; suites import it from here.
py_slice = slice

# Storage types by name and id, as MXNet numbers them (oxnet arrays are dense).
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}

__all__ = ["NDArray", "array", "zeros", "ones", "full", "empty", "arange", "waitall", "py_slice"]


def __getattr__(name):
    # MXNet defines its array functions (add, maximum, concatenate, ...) in
    # mx.nd.ndarray; oxnet's are the mx.nd ones
    if not name.startswith("_"):
        from .. import ndarray as _package
        if name in _package.__dict__:
            return _package.__dict__[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
