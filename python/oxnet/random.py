"""``mx.random``: oxnet's one global, seedable generator, shared by every
sampling operator, and MXNet's sampling functions (those of ``mx.nd.random``)."""

import numbers

import numpy as _np

from . import _oxnet
from .ndarray.random import (uniform, normal, randn, poisson, exponential, gamma, multinomial,
                             negative_binomial, generalized_negative_binomial, shuffle, randint)

__all__ = ["seed", "uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]


def seed(seed_state, ctx="all"):
    """Seeds the generator: every later draw follows from ``seed_state``.

    As in MXNet, ``seed_state`` is any integer (negative and large ones
    included); seeds equal modulo 2**32 give the same draws. ``ctx`` is
    ``'all'`` or a context: oxnet has one generator for every context, so
    both reseed it."""
    if isinstance(seed_state, bool) or not isinstance(seed_state, (numbers.Integral, _np.integer)):
        raise ValueError("seed_state must be int")
    if not (ctx == "all" or hasattr(ctx, "device_type")):
        raise ValueError(f"ctx must be 'all' or a Context, got {ctx!r}")
    _oxnet.seed(int(seed_state) & 0xFFFFFFFF)
