"""``mx.torch``: MXNet's bridge to Lua Torch's operators (a plugin built
into some MXNet binaries), which oxnet does not offer: every name raises an
MXNetError."""

from ._absent import not_provided

__getattr__ = not_provided(__name__, "Lua Torch's operators are not linked into oxnet; write the operator as an "
                                     "oxnet custom operator (Python, Rust or a compiled library)")
