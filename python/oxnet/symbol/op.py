"""``mx.sym.op``: the operator functions (MXNet generates them here); the
same functions as ``mx.sym.<name>``, looked up on use so operators that
libraries register later are found too."""

from .. import symbol as _sym


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return getattr(_sym, name)
