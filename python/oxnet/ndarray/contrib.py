"""``mx.nd.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.nd.contrib.CTCLoss`` is ``mx.nd._contrib_CTCLoss``. Filled in by
``oxnet.ndarray._ops.refresh``.

Also MXNet's Python helpers of ``mx.nd.contrib``: ``isnan``, ``isinf`` and
``isfinite`` (element-wise 1 or 0 in the input's dtype).
"""

import numpy as _np


def isnan(data):
    """1 where ``data`` is NaN, else 0."""
    return data != data  # pylint: disable=comparison-with-itself


def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0."""
    return data.abs() == _np.inf


def isfinite(data):
    """1 where ``data`` is neither NaN nor infinite, else 0."""
    not_nan = data == data  # pylint: disable=comparison-with-itself
    return (data.abs() != _np.inf) * not_nan


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draws ``num_sampled`` classes (with repeats) from the approximately
    Zipfian distribution P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1)
    over ``[0, range_max)``, as MXNet's candidate sampler does.

    Returns ``(sampled_classes, expected_count_true, expected_count_sampled)``:
    the int64 draws, and the expected counts (in ``num_sampled`` draws) of
    ``true_classes`` and of each draw."""
    import math
    from .random import uniform
    if ctx is None:
        ctx = true_classes.context
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    # exp(rand) - 1 lies in [0, range_max); the clip guards the rounding at the ends
    from .. import ndarray as _ns
    sampled_classes = _ns.clip(rand.exp() - 1, a_min=0, a_max=range_max - 1).astype("int64")
    true_cls = true_classes.as_in_context(ctx).astype("float64")
    expected_count_true = ((true_cls + 2.0) / (true_cls + 1.0)).log() / log_range * num_sampled
    sampled_cls = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled_cls + 2.0) / (sampled_cls + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled
