"""Contributed recurrent cells (``mx.gluon.contrib.rnn``):
``VariationalDropoutCell`` and ``LSTMPCell``; and ``dynamic_unroll``
(also ``rnn_cell.dynamic_unroll``, where MXNet keeps it)."""

from . import rnn_cell
from .rnn_cell import VariationalDropoutCell, LSTMPCell, dynamic_unroll

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]

from . import conv_rnn_cell  # noqa: E402  (the Conv*RNNCell, Conv*LSTMCell and Conv*GRUCell cells)
from .conv_rnn_cell import *  # noqa: E402,F401,F403
__all__ += conv_rnn_cell.__all__
