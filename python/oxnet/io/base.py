"""The data-iterator vocabulary of ``mx.io``: ``DataDesc``, ``DataBatch`` and
the ``DataIter`` base class, as in MXNet 1.x."""

from collections import namedtuple

import numpy as np

__all__ = ["DataDesc", "DataBatch", "DataIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input of a network.

    A ``(name, shape)`` named tuple (so ``DataDesc('data', (2, 3))`` compares
    equal to ``('data', (2, 3))``) carrying two more attributes: ``dtype``
    (default ``numpy.float32``) and ``layout`` (default ``'NCHW'``: the
    position of ``N`` is the batch axis).
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The batch axis of ``layout`` (the position of ``'N'``; 0 when
        ``layout`` is None, -1 when it has no ``'N'``)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc`` objects from ``(name, shape)`` pairs and, optionally,
        ``(name, dtype)`` pairs."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch from a data iterator.

    Parameters
    ----------
    data : list of NDArray
        The inputs, each holding ``batch_size`` examples.
    label : list of NDArray, optional
        The labels.
    pad : int, optional
        How many examples at the end are padding (ignored by ``predict``).
    index : numpy.ndarray, optional
        The indices of the examples in the batch.
    bucket_key : optional
        The bucket key (for bucketing modules).
    provide_data, provide_label : list of DataDesc, optional
        Descriptions of ``data`` and ``label``.
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base class of data iterators: ``next()`` returns a :class:`DataBatch`
    and raises ``StopIteration`` at the end of the data; ``reset()`` starts
    again. Subclasses implement ``iter_next``, ``getdata``, ``getlabel``,
    ``getpad`` (and optionally ``getindex``), or override ``next``.

    Parameters
    ----------
    batch_size : int
        The number of examples per batch.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Goes back to the beginning of the data."""

    def next(self):
        """The next :class:`DataBatch`; raises ``StopIteration`` at the end."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; returns whether there is one."""

    def getdata(self):
        """The data of the current batch (a list of NDArray)."""

    def getlabel(self):
        """The labels of the current batch (a list of NDArray)."""

    def getindex(self):
        """The example indices of the current batch (None here)."""
        return None

    def getpad(self):
        """How many examples of the current batch are padding."""


class BatchSourceIter(DataIter):
    """An iterator that makes whole batches (``_make_batch()``, returning a
    :class:`DataBatch` or raising ``StopIteration``) and keeps the last one
    current, as MXNet's native (C++) iterators do: after ``next()`` (or
    ``iter_next()``), ``getdata``/``getlabel`` give that batch's data and
    label array (one NDArray each, as MXNet's ``MXDataIter``), ``getpad``
    and ``getindex`` its padding and indices."""

    _batch = None

    def _make_batch(self):
        raise NotImplementedError

    def next(self):
        """The next batch (it becomes the current one); StopIteration at the end."""
        try:
            self._batch = self._make_batch()
        except StopIteration:
            self._batch = None
            raise
        return self._batch

    def iter_next(self):
        try:
            self.next()
        except StopIteration:
            return False
        return True

    def _current(self, what):
        if self._batch is None:
            from ..base import MXNetError
            raise MXNetError(f"{type(self).__name__}.{what}: there is no current batch; call next() or iter_next() "
                             "first")
        return self._batch

    def getdata(self):
        return self._current("getdata").data[0]

    def getlabel(self):
        label = self._current("getlabel").label
        return label[0] if label else None

    def getpad(self):
        return self._current("getpad").pad

    def getindex(self):
        return self._current("getindex").index

