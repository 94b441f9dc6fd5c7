"""Engine settings (MXNet 1.x's ``mxnet.engine``).

oxnet runs operators eagerly on the calling thread, with no asynchronous
engine to batch them: ``bulk`` and ``set_bulk_size`` keep MXNet's interface
(the size is remembered and returned) and change nothing in how operators
run. A hybridized block already runs its whole graph as one call.
"""

import threading

__all__ = ["set_bulk_size", "bulk"]

_state = threading.local()


def set_bulk_size(size):
    """Sets the bulk size (operators per engine batch in MXNet); returns the previous one."""
    previous = getattr(_state, "size", 0)
    _state.size = int(size)
    return previous


class _BulkScope:
    def __init__(self, size):
        self._size = size
        self._old = None

    def __enter__(self):
        self._old = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old)


def bulk(size):
    """A ``with`` scope with the bulk size set to ``size``."""
    return _BulkScope(size)
