"""``mx.sym.zeros``, ``mx.sym.ones`` and ``mx.sym.full``: constant-array
nodes (the ``_zeros``, ``_ones`` and ``_full`` operators), as in MXNet."""


def _op(name):
    from .. import symbol
    return getattr(symbol, name)


def _attrs(shape, dtype, kwargs):
    if dtype is not None:
        kwargs["dtype"] = dtype
    kwargs["shape"] = shape
    return kwargs


def zeros(shape, dtype=None, **kwargs):
    """A node holding zeros of ``shape`` (float32 unless ``dtype`` says otherwise)."""
    return _op("_zeros")(**_attrs(shape, dtype, kwargs))


def ones(shape, dtype=None, **kwargs):
    """A node holding ones of ``shape`` (float32 unless ``dtype`` says otherwise)."""
    return _op("_ones")(**_attrs(shape, dtype, kwargs))


def full(shape, val, dtype=None, **kwargs):
    """A node holding ``val`` in every element of ``shape``."""
    return _op("_full")(value=val, **_attrs(shape, dtype, kwargs))
