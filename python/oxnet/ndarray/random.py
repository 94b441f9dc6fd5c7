"""``nd.random`` (``mx.nd.random``): arrays drawn from oxnet's global
generator, as in MXNet 1.x.

Each sampler takes numbers or NDArrays as its parameters: with numbers it
calls ``_random_<dist>`` (an array of ``shape``, ``(1,)`` by default), with
NDArrays ``_sample_<dist>`` (for every parameter element, ``shape``
samples). The registry's other ``_random_*`` operators appear here without
the prefix (``uniform_like``, ``pdf_normal``, ...).
"""

import numbers

import numpy as _np

from .. import _oxnet
from .._oxnet import NDArray

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]

_PREFIX = "_random_"


def _call(op_name, *args, **kwargs):
    """Calls registry operator ``op_name``, leaving out keywords that are None."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return _oxnet.invoke(_oxnet.op_handle(op_name), args, kwargs)


def _is_number(x):
    return isinstance(x, (numbers.Number, _np.number)) and not isinstance(x, bool)


def _random_helper(dist, params, shape, dtype, ctx, out, kwargs):
    """Dispatches to ``_random_<dist>`` for numbers, ``_sample_<dist>`` for NDArrays."""
    if isinstance(params[0], NDArray):
        for p in params[1:]:
            if not isinstance(p, NDArray):
                raise TypeError("Distribution parameters must all have the same type, but got "
                                f"both {type(params[0])} and {type(p)}.")
        if dtype is None and out is not None:
            dtype = out.dtype
        return _call("_sample_" + dist, *params, shape=shape, dtype=dtype, out=out, **kwargs)
    if _is_number(params[0]):
        for p in params[1:]:
            if not _is_number(p):
                raise TypeError("Distribution parameters must all have the same type, but got "
                                f"both {type(params[0])} and {type(p)}.")
        if out is not None:
            shape = out.shape if shape is None else shape
            dtype = out.dtype if dtype is None else dtype
        elif shape is None:
            shape = (1,)
        names = _SCALAR_PARAMS[dist]
        attrs = {n: (int(v) if dist in ("negative_binomial", "randint") and n in ("k", "low", "high") else float(v))
                 for n, v in zip(names, params)}
        attrs.update(kwargs)
        result = _call(_PREFIX + dist, shape=shape, dtype=dtype, ctx=ctx, out=out, **attrs)
        if out is None and ctx is not None and hasattr(ctx, "device_type") and result.context != ctx:
            result = result.as_in_context(ctx)
        return result
    raise TypeError(f"Distribution parameters must be either NDArray or numbers, but got {type(params[0])}.")


_SCALAR_PARAMS = {
    "uniform": ("low", "high"),
    "normal": ("loc", "scale"),
    "gamma": ("alpha", "beta"),
    "exponential": ("lam",),
    "poisson": ("lam",),
    "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha"),
    "randint": ("low", "high"),
}


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``; ``low`` and
    ``high`` are numbers or NDArrays (then ``shape`` samples per element)."""
    return _random_helper("uniform", [low, high], shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution with mean ``loc`` and standard
    deviation ``scale`` (numbers or NDArrays)."""
    return _random_helper("normal", [loc, scale], shape, dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Samples from the normal distribution: ``randn(2, 3, loc=0, scale=1)``
    draws an array of shape ``(2, 3)``; with NDArrays ``loc`` and ``scale``,
    ``(2, 3)`` samples per element."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    for name, value in (("loc", loc), ("scale", scale)):
        if not (_is_number(value) or isinstance(value, NDArray)):
            raise TypeError(f"randn: {name} must be a number or an NDArray, got {type(value)}")
    return _random_helper("normal", [loc, scale], shape or None, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution with rate ``lam`` (counts, as floats)."""
    return _random_helper("poisson", [lam], shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (rate ``1/scale``)."""
    return _random_helper("exponential", [1.0 / scale], shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _random_helper("gamma", [alpha, beta], shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples the failures before the ``k``-th success with success probability ``p``."""
    return _random_helper("negative_binomial", [k, p], shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the generalized negative binomial distribution with mean
    ``mu`` and dispersion ``alpha``."""
    return _random_helper("generalized_negative_binomial", [mu, alpha], shape, dtype, ctx, out, kwargs)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Draws category indices from the distributions in ``data``'s last axis;
    with ``get_prob`` also returns the log probabilities of the draws."""
    return _call("_sample_multinomial", data, shape=shape, get_prob=get_prob, out=out, dtype=dtype, **kwargs)


def shuffle(data, **kwargs):
    """A random permutation of ``data`` along its first axis."""
    return _call("_shuffle", data, **kwargs)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Draws integers uniformly from ``[low, high)`` (int32 unless ``dtype='int64'``)."""
    if not (_is_number(low) and _is_number(high)):
        raise TypeError(f"randint: low and high must be integers, got {type(low)} and {type(high)}")
    return _random_helper("randint", [low, high], shape, dtype, ctx, out, kwargs)


def refresh(module_globals, source):
    """Adds to ``module_globals`` every registry operator named
    ``_random_NAME`` as ``NAME`` (taken from the namespace ``source``),
    keeping the functions written here."""
    for name, aliases, *_ in _oxnet.list_ops():
        for n in [name, *aliases]:
            if n.startswith(_PREFIX) and n[len(_PREFIX):] not in module_globals and n in source:
                module_globals[n[len(_PREFIX):]] = source[n]
