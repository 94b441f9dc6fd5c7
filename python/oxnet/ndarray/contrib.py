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
