"""Loading compiled operator libraries: those built against oxnet's extension
API (seed 004: C, C++ or Rust) and those built for MXNet 1.7-1.9 against
MXNet's own lib_api.h, which load unchanged."""

import os

from . import _oxnet
from .base import MXNetError

__all__ = ["load"]


def load(path, verbose=True):
    """Loads the shared library at ``path`` (an absolute path) and registers
    its operators, which then appear in ``oxnet.nd`` and ``oxnet.sym`` like built-ins. A
    library built for MXNet 1.7-1.9 (``MX_LIBRARY_VERSION`` 11) loads as it is.
    Prints "Found N operators in library" and their names unless ``verbose``
    is False. Returns the names of the operators it registered."""
    if not isinstance(path, (str, os.PathLike)):
        raise MXNetError(f"library.load expects a path, got {type(path).__name__}")
    names = _oxnet.load_library(os.fspath(path), bool(verbose))
    from .ndarray import _ops as nd_ops  # pylint: disable=import-outside-toplevel
    from .symbol import _ops as sym_ops  # pylint: disable=import-outside-toplevel
    from . import ndarray, symbol  # pylint: disable=import-outside-toplevel

    nd_ops.refresh(vars(ndarray))
    sym_ops.refresh(vars(symbol))
    return names
