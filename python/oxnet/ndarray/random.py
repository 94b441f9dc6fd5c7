"""``nd.random``: arrays drawn from oxnet's global generator."""

from .. import _oxnet

__all__ = ["uniform", "normal"]


def uniform(low=0.0, high=1.0, shape=(1,), ctx=None, dtype=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``."""
    del kwargs
    result = _oxnet.random_uniform(float(low), float(high), shape, ctx, dtype)
    if out is not None:
        out[:] = result
        return out
    return result


def normal(loc=0.0, scale=1.0, shape=(1,), ctx=None, dtype=None, out=None, **kwargs):
    """Samples from the normal distribution with mean ``loc`` and deviation ``scale``."""
    del kwargs
    result = _oxnet.random_normal(float(loc), float(scale), shape, ctx, dtype)
    if out is not None:
        out[:] = result
        return out
    return result
