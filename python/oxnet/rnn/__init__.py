"""``mx.rnn``: MXNet 1.x's legacy symbolic recurrent cells, checkpoint
helpers that unpack fused weights, and a bucketing sentence iterator.

Newer code uses ``mx.gluon.rnn``; this package is for code written against
``mx.rnn`` and ``mx.mod.Module``.
"""

from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403

from . import conv_rnn_cell
from .conv_rnn_cell import *  # noqa: F401,F403

from . import rnn
from .rnn import *  # noqa: F401,F403

from . import io
from .io import *  # noqa: F401,F403

__all__ = rnn_cell.__all__ + conv_rnn_cell.__all__ + rnn.__all__ + io.__all__
