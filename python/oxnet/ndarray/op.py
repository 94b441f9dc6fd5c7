"""``mx.nd.op``: the operator functions (MXNet generates them here); the
same functions as ``mx.nd.<name>``, looked up on use so operators that
libraries register later are found too."""

from .. import ndarray as _nd


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return getattr(_nd, name)
