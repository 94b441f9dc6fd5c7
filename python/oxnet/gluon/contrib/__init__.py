"""Contributed Gluon blocks and tools (``mx.gluon.contrib``): of MXNet's
subpackages, oxnet provides ``nn``, ``rnn`` and ``estimator``."""

from . import nn
from . import rnn
from . import estimator

__all__ = ["nn", "rnn", "estimator"]
