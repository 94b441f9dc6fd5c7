"""``mx.sym.sparse``: MXNet's sparse-storage operators. oxnet stores every
array densely: every name here raises an MXNetError saying so; the dense
operators of ``mx.sym`` compute the same values."""

from .._absent import not_provided
from ..ndarray.sparse import REASON

__getattr__ = not_provided(__name__, REASON)
