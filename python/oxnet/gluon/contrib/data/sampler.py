"""Samplers of ``mx.gluon.contrib.data``."""

import numbers

from ....base import MXNetError
from ...data.sampler import Sampler

__all__ = ["IntervalSampler"]


class _IntervalTooLarge(MXNetError, AssertionError):
    """``interval`` larger than ``length`` (MXNet asserts; this error is
    both an MXNetError and an AssertionError)."""


class IntervalSampler(Sampler):
    """The indices of ``[0, length)`` taken ``interval`` apart: ``0,
    interval, 2*interval, ...``; with ``rollover=True`` (the default) further
    sweeps start at 1, 2, ... until every index has been given once, and
    with ``rollover=False`` only the first sweep is given.

    As in MXNet 1.9.1, ``len()`` is ``length`` in both cases (the number of
    indices a ``rollover=False`` sampler gives is ``ceil(length /
    interval)``).

    Parameters
    ----------
    length : int
        The number of items.
    interval : int
        The step between two indices of a sweep; at least 1 and at most
        ``length``.
    rollover : bool, default True
        Whether to sweep again from the skipped items.

    Examples
    --------
    >>> list(IntervalSampler(13, interval=3))
    [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    >>> list(IntervalSampler(13, interval=3, rollover=False))
    [0, 3, 6, 9, 12]
    """

    def __init__(self, length, interval, rollover=True):
        for name, value in (("length", length), ("interval", interval)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"IntervalSampler: `{name}` must be an int, got {value!r}")
        if length < 0:
            raise ValueError(f"IntervalSampler: `length` must not be negative, got {length}")
        if interval < 1:
            raise ValueError(f"IntervalSampler: `interval` must be at least 1, got {interval}")
        if interval > length:
            raise _IntervalTooLarge(
                f"Interval {interval} must be smaller than or equal to length {length}")
        self._length = int(length)
        self._interval = int(interval)
        self._rollover = bool(rollover)

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length
