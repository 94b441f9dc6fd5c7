"""Recurrent layers and cells (``mx.gluon.rnn``): the fused layers
(``RNN``, ``LSTM``, ``GRU``), the step-by-step cells
(``RNNCell``, ``LSTMCell``, ``GRUCell``), their stacks and modifiers, and
``unroll`` to run them over sequences."""

from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
