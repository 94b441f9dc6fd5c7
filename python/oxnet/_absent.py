"""Modules of MXNet 1.9.1 that oxnet deliberately does not offer. They
import (so code that imports them at the top still starts), and using any
name in them raises :class:`NotProvidedError`, which says what is missing
and what to use instead."""

import sys
import types

from .base import MXNetError

__all__ = ["NotProvidedError", "not_provided"]


class NotProvidedError(MXNetError, AttributeError):
    """A name of MXNet's API that oxnet deliberately does not offer. Also an
    ``AttributeError``, so ``hasattr`` and ``getattr(..., default)`` work."""


class _AbsentModule(types.ModuleType):
    """A module whose every public name raises :class:`NotProvidedError`."""

    def __init__(self, name, reason):
        super().__init__(name, f"``{name}``: not offered by oxnet. {reason}")
        self.__dict__["_reason"] = reason

    def __getattr__(self, attr):
        return _raise(self.__name__, attr, self._reason)


def _raise(module, attr, reason):
    if attr.startswith("__") and attr.endswith("__"):
        raise AttributeError(f"module {module!r} has no attribute {attr!r}")
    raise NotProvidedError(f"{module}.{attr}: not offered by oxnet. {reason}")


def not_provided(module, reason, submodules=()):
    """A module-level ``__getattr__`` for the package ``module`` (use
    ``__getattr__ = not_provided(__name__, reason, [...])``); each name of
    ``submodules`` becomes an importable ``module.<name>`` that behaves the
    same way."""
    for sub in submodules:
        full = f"{module}.{sub}"
        if full not in sys.modules:
            sys.modules[full] = _AbsentModule(full, reason)

    def __getattr__(attr):  # noqa: N807  (a module's hook)
        if attr in submodules:
            return sys.modules[f"{module}.{attr}"]
        return _raise(module, attr, reason)

    return __getattr__
