"""Automatic names for symbols (``mx.name``): ``NameManager`` counts names
per hint (``fullyconnected0``, ``fullyconnected1``), ``Prefix`` prepends a
prefix to every name made inside its ``with`` block::

    with mx.name.Prefix("mynet_"):
        fc = mx.sym.FullyConnected(data, num_hidden=10)   # mynet_fullyconnected0
"""

import threading

__all__ = ["NameManager", "Prefix"]


class _Current(threading.local):
    value = None


class NameManager:
    """Makes unique names from hints; the current manager of this thread is
    ``NameManager.current`` and a ``with`` block makes another current."""

    _current = _Current()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """``name`` itself if given, else ``hint`` followed by a counter."""
        if name:
            return name
        if hint not in self._counter:
            self._counter[hint] = 0
        name = f"{hint}{self._counter[hint]}"
        self._counter[hint] += 1
        return name

    def __enter__(self):
        self._old_manager = NameManager.current
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old_manager
        return False


class _CurrentDescriptor:
    def __get__(self, obj, owner):
        cur = NameManager._current.value
        if cur is None:
            cur = NameManager._current.value = NameManager()
        return cur


NameManager.current = _CurrentDescriptor()


class Prefix(NameManager):
    """A name manager that puts ``prefix`` before every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)
