"""``mx.ndarray.register``: MXNet's generator of operator functions from its C
registry. oxnet builds its operator functions from its own registry
(``oxnet.ndarray._ops``), so MXNet's generator functions are not offered."""

from .._absent import not_provided

__getattr__ = not_provided(__name__, "oxnet generates the operator functions of mx.ndarray from its own registry; "
                                     "call them as mx.ndarray.<op> (mx.library.load adds a library's operators)")
