"""``mx.contrib``: MXNet 1.x's home of experimental APIs. Its ``ndarray``
(``nd``) and ``symbol`` (``sym``) are the contrib operators of
:mod:`oxnet.ndarray.contrib` and :mod:`oxnet.symbol.contrib`
(``mx.contrib.ndarray.CTCLoss`` is ``mx.nd.contrib.CTCLoss``). The other
subpackages (``amp``, ``autograd``, ``io``, ``onnx``, ``quantization``,
``svrg_optimization``, ``tensorboard``, ``text``) load on first use, as
attribute (``mx.contrib.text``) or import."""

import importlib
import sys

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

nd = ndarray
sym = symbol

# `import oxnet.contrib.ndarray` finds the same modules
sys.modules[__name__ + ".ndarray"] = ndarray
sys.modules[__name__ + ".symbol"] = symbol

_LAZY = ("amp", "autograd", "io", "onnx", "quantization", "svrg_optimization", "tensorboard", "text")

__all__ = ["ndarray", "symbol", "nd", "sym", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
