"""``mx.contrib``: MXNet 1.x's home of experimental APIs. Its ``ndarray``
(``nd``) and ``symbol`` (``sym``) are the contrib operators of
:mod:`oxnet.ndarray.contrib` and :mod:`oxnet.symbol.contrib`
(``mx.contrib.ndarray.CTCLoss`` is ``mx.nd.contrib.CTCLoss``)."""

import sys

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

nd = ndarray
sym = symbol

# `import oxnet.contrib.ndarray` finds the same modules
sys.modules[__name__ + ".ndarray"] = ndarray
sys.modules[__name__ + ".symbol"] = symbol

__all__ = ["ndarray", "symbol", "nd", "sym"]
