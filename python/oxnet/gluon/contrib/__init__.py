"""Contributed Gluon blocks (``mx.gluon.contrib``): of MXNet's
subpackages, oxnet provides ``nn`` and ``rnn``."""

from . import nn
from . import rnn

__all__ = ["nn", "rnn"]
