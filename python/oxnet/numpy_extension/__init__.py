"""``mx.npx``: MXNet's NumPy extensions, which oxnet does not offer (see
:mod:`oxnet.numpy`). Importing works; every name raises an MXNetError."""

from .._absent import not_provided
from ..numpy import REASON

__getattr__ = not_provided(__name__, REASON, ("image", "random", "utils"))
