"""Contributed Gluon blocks (``mx.gluon.contrib``): of MXNet's
subpackages, oxnet provides ``nn``."""

from . import nn

__all__ = ["nn"]
