"""``mx.cython``: MXNet's optional Cython implementation of its C API
bindings. oxnet's bindings are Rust (pyo3), so there is nothing to select:
every name raises an MXNetError."""

from .._absent import not_provided

__getattr__ = not_provided(__name__, "oxnet's Python bindings are compiled Rust (pyo3); there is no Cython layer "
                                     "to choose", ("base", "ndarray", "symbol"))
