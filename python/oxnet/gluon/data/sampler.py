"""Samplers: the order in which a DataLoader reads a dataset (``mx.gluon.data.*Sampler``).

A sampler is an iterable of indices with a length; ``BatchSampler`` groups the
indices of another sampler into lists, one list per mini-batch.
"""

import numpy as np

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler",
    "IntervalSampler",
]

_LAST_BATCH_MODES = ("keep", "discard", "rollover")


class Sampler:
    """The interface of every sampler: ``__iter__`` (the indices) and
    ``__len__`` (how many there are), both to be overridden."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __len__")


class SequentialSampler(Sampler):
    """The indices ``start, start + 1, ..., start + length - 1`` in order."""

    def __init__(self, length, start=0):
        self._length = int(length)
        self._start = int(start)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """The indices ``0 .. length - 1`` in a new random order on every pass
    (drawn from numpy's global generator, so ``np.random.seed`` fixes it)."""

    def __init__(self, length):
        self._length = int(length)

    def __iter__(self):
        order = np.random.permutation(self._length)
        return iter(order.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is
    true (``fn`` runs on every sample once, when the sampler is made)."""

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class IntervalSampler(Sampler):
    """The indices ``0, interval, 2*interval, ...`` below ``length``; with
    ``rollover=True`` (the default) it then starts again from 1, 2, ... until
    every index has been given once, otherwise it stops after the first sweep.

    ``IntervalSampler(7, 3)`` gives ``0, 3, 6, 1, 4, 2, 5``;
    with ``rollover=False``, ``0, 3, 6``.
    """

    def __init__(self, length, interval, rollover=True):
        length, interval = int(length), int(interval)
        if interval <= 0:
            raise ValueError(f"IntervalSampler: interval must be positive, got {interval}")
        if interval > length:
            raise ValueError(
                f"IntervalSampler: interval {interval} must not exceed length {length}"
            )
        self._length = length
        self._interval = interval
        self._rollover = bool(rollover)

    def __iter__(self):
        sweeps = self._interval if self._rollover else 1
        for offset in range(sweeps):
            yield from range(offset, self._length, self._interval)

    def __len__(self):
        # The reference reports the full length even without rollover; the
        # number of indices actually given is more useful to a DataLoader.
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    ``last_batch`` says what happens to a final group that is too short:
    ``'keep'`` yields it, ``'discard'`` drops it, ``'rollover'`` keeps it and
    puts it at the start of the next pass (so the next epoch's first batch
    mixes the two epochs' indices).

    >>> list(BatchSampler(SequentialSampler(7), 3, 'keep'))
    [[0, 1, 2], [3, 4, 5], [6]]
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        batch_size = int(batch_size)
        if batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be positive, got {batch_size}")
        if last_batch not in _LAST_BATCH_MODES:
            raise ValueError(
                f"BatchSampler: last_batch must be one of 'keep', 'discard' or 'rollover', "
                f"got {last_batch!r}"
            )
        self._sampler = sampler
        self._batch_size = batch_size
        self._last_batch = last_batch
        self._carried = []

    def __iter__(self):
        batch, self._carried = self._carried, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._carried = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == "keep":
            return -(-n // self._batch_size)
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._carried) + n) // self._batch_size
