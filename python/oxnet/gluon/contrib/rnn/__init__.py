"""Contributed recurrent cells (``mx.gluon.contrib.rnn``):
``VariationalDropoutCell`` and ``LSTMPCell``."""

from . import rnn_cell
from .rnn_cell import VariationalDropoutCell, LSTMPCell

__all__ = ["VariationalDropoutCell", "LSTMPCell"]
