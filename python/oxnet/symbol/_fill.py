"""``mx.sym.zeros``, ``ones``, ``full``, ``arange``, ``eye`` and
``linspace``: constant-array nodes (the ``_zeros``, ``_ones``, ``_full``,
``_arange``, ``_eye`` and ``_linspace`` operators), as in MXNet."""


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


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None, **kwargs):
    """A node holding evenly spaced values in ``[start, stop)`` (``[0, start)``
    without ``stop``), each repeated ``repeat`` times (the ``_arange``
    operator), float32 unless ``dtype`` says otherwise."""
    if dtype is not None:
        kwargs["dtype"] = dtype
    return _op("_arange")(start=start, stop="None" if stop is None else stop, step=step, repeat=repeat,
                          infer_range=infer_range, name=name, **kwargs)


def eye(N, M=0, k=0, dtype=None, **kwargs):  # noqa: N803  (MXNet's names)
    """A node holding an ``N`` × ``M`` matrix (``M`` = ``N`` when 0) with
    ones on the ``k``-th diagonal (the ``_eye`` operator)."""
    if dtype is not None:
        kwargs["dtype"] = dtype
    return _op("_eye")(N=N, M=M, k=k, **kwargs)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """A node holding ``num`` evenly spaced values from ``start`` to ``stop``
    (included with ``endpoint``), as ``numpy.linspace`` (``_linspace``)."""
    kwargs = {"dtype": dtype} if dtype is not None else {}
    return _op("_linspace")(start=start, stop=stop, num=num, endpoint=endpoint, name=name, **kwargs)
