"""Datasets: indexable collections of samples (``mx.gluon.data.Dataset`` and friends).

A dataset answers ``len(ds)`` and ``ds[i]``; a sample is one value or a tuple
(``(data, label)``). Anything with ``__len__`` and ``__getitem__`` (a list, a
numpy array, an NDArray) can stand where a dataset is expected; wrap it in
``SimpleDataset`` to get the methods below. ``RecordFileDataset`` serves
the records of a RecordIO file by position (through its ``.idx``).
"""

from ... import ndarray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """The interface of every dataset: ``__getitem__`` (the i-th sample) and
    ``__len__`` (the number of samples), both to be overridden, plus
    ``transform``, ``transform_first``, ``filter``, ``shard``, ``take`` and
    ``sample``, which return new datasets built on this one.
    """

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __len__")

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def transform(self, fn, lazy=True):
        """A dataset whose samples are ``fn(sample)``; a tuple sample is
        unpacked into the arguments (``fn(data, label)``).

        With ``lazy=True`` (the default) ``fn`` runs each time a sample is
        read, so a random augmentation differs from epoch to epoch; with
        ``lazy=False`` every sample is transformed once, now, and kept.
        """
        mapped = _MappedDataset(self, fn)
        if lazy:
            return mapped
        return SimpleDataset([mapped[i] for i in range(len(mapped))])

    def transform_first(self, fn, lazy=True):
        """Like ``transform``, but ``fn`` sees only the first element of each
        sample (the data), and the rest (the label) passes unchanged."""
        return self.transform(_FirstOnly(fn), lazy)

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true, in their
        order. ``fn`` runs on every sample once, now."""
        from .sampler import FilterSampler

        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Part ``index`` of ``num_shards`` contiguous parts of this dataset,
        whose sizes differ by at most one (the first ``len % num_shards``
        parts have one more sample). Shard before shuffling, so that each
        worker of a distributed job sees its own samples."""
        num_shards, index = int(num_shards), int(index)
        if num_shards <= 0:
            raise ValueError(f"Dataset.shard: num_shards must be positive, got {num_shards}")
        if not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: index {index} is out of range for {num_shards} shards")
        base, extra = divmod(len(self), num_shards)
        start = index * base + min(index, extra)
        size = base + (1 if index < extra else 0)
        from .sampler import SequentialSampler

        return _SampledDataset(self, SequentialSampler(size, start))

    def take(self, count):
        """The first ``count`` samples (all of them when ``count`` is None or
        larger than the dataset)."""
        if count is None or count > len(self):
            count = len(self)
        from .sampler import SequentialSampler

        return _SampledDataset(self, SequentialSampler(int(count)))

    def sample(self, sampler):
        """The samples at the indices that ``sampler`` (a ``Sampler``) yields,
        in its order (drawn once, now)."""
        from .sampler import Sampler

        if not isinstance(sampler, Sampler):
            raise TypeError(
                f"Dataset.sample: expected a gluon.data.Sampler, got {type(sampler).__name__}"
            )
        return _SampledDataset(self, sampler)


class SimpleDataset(Dataset):
    """A dataset over any object with ``len()`` and ``[]`` (a list, a numpy
    array, an NDArray...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """Several equally long array-likes zipped: sample ``i`` is
    ``(a1[i], a2[i], ...)``, or ``a1[i]`` alone when one array is given.

    Each argument may be an NDArray, a numpy array, a list or a dataset. A
    one-dimensional NDArray is read through numpy (so its samples are numbers,
    as in the reference); other NDArrays give NDArray samples.
    """

    def __init__(self, *args):
        if not args:
            raise ValueError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(
                    f"ArrayDataset: all arrays must have the same length; array 0 has length "
                    f"{self._length} but array {i} has length {len(data)}"
                )
            if isinstance(data, ndarray.NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __len__(self):
        return self._length

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)


class _MappedDataset(Dataset):
    """The samples of ``data`` passed through ``fn`` on each read."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _FirstOnly:
    """Applies ``fn`` to the first argument and passes the others through.
    A class rather than a closure so that it pickles into worker processes."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, first, *rest):
        if rest:
            return (self._fn(first),) + rest
        return self._fn(first)


class _SampledDataset(Dataset):
    """The samples of ``data`` at the indices a sampler yielded (drawn once)."""

    def __init__(self, data, sampler):
        self._data = data
        self._indices = list(sampler)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[idx]]


class RecordFileDataset(Dataset):
    """The records (bytes) of the RecordIO file ``filename``, in the order
    of its index ``filename`` with ``.rec`` replaced by ``.idx``. It pickles
    (a DataLoader worker reopens the file)."""

    def __init__(self, filename):
        import os
        from ... import recordio
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        if not os.path.exists(self.idx_file):
            raise FileNotFoundError(f"RecordFileDataset: the index {self.idx_file!r} of {filename!r} is missing "
                                    "(python -m oxnet.tools.im2rec writes both)")
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
