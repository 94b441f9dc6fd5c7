"""Loading operator libraries compiled against oxnet's extension API (seed 004)."""

import os

from . import _oxnet
from .base import MXNetError

__all__ = ["load"]


def load(path, verbose=True):
    """Loads the shared library at ``path`` (an absolute path) and registers
    its operators, which then appear in ``oxnet.nd`` like built-ins.
    Prints "Found N operators in library" and their names unless ``verbose``
    is False. Returns the names of the operators it registered."""
    if not isinstance(path, (str, os.PathLike)):
        raise MXNetError(f"library.load expects a path, got {type(path).__name__}")
    names = _oxnet.load_library(os.fspath(path), bool(verbose))
    from .ndarray import _ops  # pylint: disable=import-outside-toplevel
    from . import ndarray  # pylint: disable=import-outside-toplevel

    _ops.refresh(vars(ndarray))
    return names
