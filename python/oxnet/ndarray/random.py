"""``nd.random``: arrays drawn from oxnet's global generator."""

from .. import _oxnet

__all__ = ["uniform", "normal"]


def _into(result, out):
    if out is None:
        return result
    out[:] = result
    return out


def uniform(low=0.0, high=1.0, shape=(1,), ctx=None, dtype=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``."""
    del kwargs
    return _into(_oxnet.random_uniform(float(low), float(high), shape, ctx, dtype), out)


def normal(loc=0.0, scale=1.0, shape=(1,), ctx=None, dtype=None, out=None, **kwargs):
    """Samples from the normal distribution with mean ``loc`` and deviation ``scale``."""
    del kwargs
    return _into(_oxnet.random_normal(float(loc), float(scale), shape, ctx, dtype), out)
