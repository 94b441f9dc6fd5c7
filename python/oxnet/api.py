"""``mx.api``: MXNet's registry of FFI functions behind its NumPy interface
(``mx.np``), which oxnet does not offer: every name raises an MXNetError
(see :mod:`oxnet.numpy`)."""

from ._absent import not_provided
from .numpy import REASON

__getattr__ = not_provided(__name__, REASON)
