"""Base definitions shared by the package: the engine's exception type and
the per-thread "current" instance of scope classes (``mx.name``,
``mx.AttrScope``)."""

import threading

from ._oxnet import MXNetError

__all__ = ["MXNetError", "ThreadScope"]


class ThreadScope:
    """A class attribute ``current``: this thread's active instance of a
    scope class (``default()`` made on first use). ``with`` blocks make
    another current through :meth:`enter` and restore it with :meth:`exit`."""

    def __init__(self, default):
        self._default = default
        self._local = threading.local()

    def __get__(self, obj, owner):
        current = getattr(self._local, "value", None)
        if current is None:
            current = self._local.value = self._default()
        return current

    def enter(self, scope):
        """Makes ``scope`` current; returns the one it replaces."""
        previous = self.__get__(None, None)
        self._local.value = scope
        return previous

    def exit(self, previous):
        """Makes ``previous`` current again."""
        self._local.value = previous
