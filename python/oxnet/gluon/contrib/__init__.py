"""Contributed Gluon blocks and tools (``mx.gluon.contrib``): MXNet's
subpackages ``nn``, ``rnn``, ``estimator``, ``cnn`` and ``data``. The last
two load on first use (``mx.gluon.contrib.cnn``), as attribute or import."""

import importlib

from . import nn
from . import rnn
from . import estimator

_LAZY = ("cnn", "data")

__all__ = ["nn", "rnn", "estimator", "cnn", "data"]


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
