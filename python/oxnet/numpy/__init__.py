"""``mx.np``: MXNet's NumPy-compatible array interface, which oxnet does not
offer. Importing works; every name raises an MXNetError pointing to
``mx.nd``, whose operators cover the same computations."""

from .._absent import not_provided

REASON = ("MXNet's NumPy-compatible interface (mx.np / mx.npx) is not offered; use mx.nd (MXNet 1.x's NDArray "
          "API) and numpy itself on the host (NDArray.asnumpy(), mx.nd.array(...))")

__getattr__ = not_provided(__name__, REASON, ("arrayprint", "fallback", "fallback_linalg", "function_base", "io",
                                              "linalg", "multiarray", "random", "stride_tricks", "utils"))
