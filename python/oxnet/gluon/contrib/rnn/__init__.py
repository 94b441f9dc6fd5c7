"""Contributed recurrent cells (``mx.gluon.contrib.rnn``):
``VariationalDropoutCell`` and ``LSTMPCell``; and ``dynamic_unroll``
(also ``rnn_cell.dynamic_unroll``, where MXNet keeps it)."""

from . import rnn_cell
from .rnn_cell import VariationalDropoutCell, LSTMPCell, dynamic_unroll

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]
