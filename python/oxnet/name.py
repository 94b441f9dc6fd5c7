"""Automatic names for symbols (``mx.name``): ``NameManager`` counts names
per hint (``fullyconnected0``, ``fullyconnected1``), ``Prefix`` prepends a
prefix to every name made inside its ``with`` block::

    with mx.name.Prefix("mynet_"):
        fc = mx.sym.FullyConnected(data, num_hidden=10)   # mynet_fullyconnected0
"""

from .base import ScopedClassMeta, ThreadScope

__all__ = ["NameManager", "Prefix"]


class NameManager(metaclass=ScopedClassMeta):
    """Makes unique names from hints; the current manager of this thread is
    ``NameManager.current`` and a ``with`` block makes another current."""

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
        self._old_manager = _CURRENT.enter(self)
        return self

    def __exit__(self, *exc):
        _CURRENT.exit(self._old_manager)
        return False


_CURRENT = ThreadScope(NameManager)
NameManager.current = _CURRENT


class Prefix(NameManager):
    """A name manager that puts ``prefix`` before every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)
