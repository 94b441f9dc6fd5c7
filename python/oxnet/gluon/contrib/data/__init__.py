"""Contributed Gluon data tools (``mx.gluon.contrib.data``), as in MXNet
1.9.1: :class:`IntervalSampler` and the language-model datasets of
:mod:`.text` (``WikiText2``, ``WikiText103``), which read MXNet's files from
disk (oxnet does not download)."""

from . import text
from .sampler import IntervalSampler

__all__ = ["text", "IntervalSampler"]
