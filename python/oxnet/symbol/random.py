"""``sym.random`` (``mx.sym.random``): sampling nodes for graphs, as in
MXNet 1.x. With numbers as parameters a sampler is a ``_random_<dist>``
node (of ``shape``, or the shape the graph infers when none is given);
with Symbols a ``_sample_<dist>`` node. The registry's other ``_random_*``
operators appear here without the prefix (``uniform_like``, ``pdf_normal``, ...).
"""

import numbers

import numpy as _np

from .. import _oxnet
from ..ndarray.random import _SCALAR_PARAMS
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]

_PREFIX = "_random_"


def _op(name):
    from .. import symbol
    return getattr(symbol, name)


def _call(op_name, *args, **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return _op(op_name)(*args, **kwargs)


def _is_number(x):
    return isinstance(x, (numbers.Number, _np.number)) and not isinstance(x, bool)


def _random_helper(dist, params, shape, dtype, kwargs):
    """Dispatches to ``_random_<dist>`` for numbers, ``_sample_<dist>`` for Symbols."""
    if isinstance(params[0], Symbol):
        for p in params[1:]:
            if not isinstance(p, Symbol):
                raise TypeError("Distribution parameters must all have the same type, but got "
                                f"both {type(params[0])} and {type(p)}.")
        return _call("_sample_" + dist, *params, shape=shape, dtype=dtype, **kwargs)
    if _is_number(params[0]):
        for p in params[1:]:
            if not _is_number(p):
                raise TypeError("Distribution parameters must all have the same type, but got "
                                f"both {type(params[0])} and {type(p)}.")
        attrs = dict(zip(_SCALAR_PARAMS[dist], params))
        # a `_random_<dist>` node has no inputs: as in MXNet's composition,
        # symbols given by keyword (``data=``) are not attached
        attrs.update({k: v for k, v in kwargs.items() if not isinstance(v, Symbol)})
        return _call(_PREFIX + dist, shape=shape, dtype=dtype, **attrs)
    raise TypeError(f"Distribution parameters must be either Symbol or numbers, but got {type(params[0])}.")


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Uniform samples on ``[low, high)``."""
    return _random_helper("uniform", [low, high], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Normal samples with mean ``loc`` and standard deviation ``scale``."""
    return _random_helper("normal", [loc, scale], shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Normal samples of shape ``shape`` (``loc``, ``scale`` as keywords)."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    for name, value in (("loc", loc), ("scale", scale)):
        if not (_is_number(value) or isinstance(value, Symbol)):
            raise TypeError(f"randn: {name} must be a number or a Symbol, got {type(value)}")
    return _random_helper("normal", [loc, scale], shape or None, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    """Poisson samples with rate ``lam``."""
    return _random_helper("poisson", [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Exponential samples with mean ``scale``."""
    return _random_helper("exponential", [1.0 / scale], shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Gamma samples with shape ``alpha`` and scale ``beta``."""
    return _random_helper("gamma", [alpha, beta], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Negative binomial samples: failures before the ``k``-th success."""
    return _random_helper("negative_binomial", [k, p], shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Generalized negative binomial samples with mean ``mu`` and dispersion ``alpha``."""
    return _random_helper("generalized_negative_binomial", [mu, alpha], shape, dtype, kwargs)


def multinomial(data, shape=None, get_prob=True, dtype="int32", **kwargs):
    """Category indices drawn from the distributions in ``data``'s last axis
    (and, with ``get_prob``, their log probabilities)."""
    return _call("_sample_multinomial", data, shape=shape, get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data, **kwargs):
    """``data`` randomly permuted along its first axis."""
    return _call("_shuffle", data, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Integers drawn uniformly from ``[low, high)``."""
    if not (_is_number(low) and _is_number(high)):
        raise TypeError(f"randint: low and high must be integers, got {type(low)} and {type(high)}")
    return _random_helper("randint", [low, high], shape, dtype, kwargs)


def refresh(module_globals, source):
    """Adds every registry operator ``_random_NAME`` of ``source`` to
    ``module_globals`` as ``NAME``, keeping the functions written here."""
    for name, aliases, *_ in _oxnet.list_ops():
        for n in [name, *aliases]:
            if n.startswith(_PREFIX) and n[len(_PREFIX):] not in module_globals and n in source:
                module_globals[n[len(_PREFIX):]] = source[n]
