"""``mx.tvmop``: MXNet's TVM-generated operators, which oxnet does not have:
every name raises an MXNetError."""

from ._absent import not_provided

__getattr__ = not_provided(__name__, "oxnet has no TVM-generated operators; its operators are Rust kernels, and "
                                     "a library of your own loads with mx.library.load")
