"""``NDArrayIter``: batches from arrays held in memory, as MXNet 1.x's."""

from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray
from .base import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _init_data(data, allow_empty, default_name, what):
    """``data`` (an array, a list of arrays or a dict of them) as a list of
    ``(name, NDArray)`` sorted by name, as MXNet names them: one array gets
    ``default_name``, several get ``_<i>_<default_name>``."""
    if data is None:
        if not allow_empty:
            raise ValueError(f"NDArrayIter: {what} must be given")
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        data = list(data)
        if not data and not allow_empty:
            raise ValueError(f"NDArrayIter: {what} is an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f"_{i}_{default_name}", d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError(f"NDArrayIter: {what} must be an NDArray, a numpy.ndarray, a list of them or a dict "
                        f"with them as values, got {type(data).__name__}")
    out = {}
    for k, v in data.items():
        if not isinstance(v, NDArray):
            try:
                v = nd.array(v)
            except Exception as err:  # noqa: BLE001 - reported with the name
                raise TypeError(f"NDArrayIter: invalid type {type(v).__name__} for {what} {k!r}: should be "
                                "NDArray or numpy.ndarray") from err
        out[k] = v
    return sorted(out.items())


class NDArrayIter(DataIter):
    """Iterates over NDArrays or numpy arrays in batches.

    Parameters
    ----------
    data : array, list of arrays or dict of name to array
        The inputs. One array is named ``data_name``; a list of several is
        named ``_0_<data_name>``, ``_1_<data_name>``, ...; a dict gives its
        own names. Names are served in sorted order. Non-NDArray values are
        converted with ``mx.nd.array`` (so to float32).
    label : same kinds as ``data``, optional
        The labels (named from ``label_name`` likewise).
    batch_size : int
        Examples per batch.
    shuffle : bool
        Shuffle the examples (with ``numpy.random``) at every reset.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        What to do with a last batch smaller than ``batch_size``: ``'pad'``
        fills it with examples from the start (``pad`` tells how many);
        ``'discard'`` drops it; ``'roll_over'`` keeps it and serves it
        first in the next epoch, completed by examples of that epoch.
    data_name, label_name : str
        Names of a single data / label array.
    layout : str
        Layout of the arrays; the position of ``'N'`` is the batch axis.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW"):
        super().__init__(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"NDArrayIter: batch_size must be a positive integer, got {batch_size!r}")
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(f"NDArrayIter: last_batch_handle must be one of {', '.join(_LAST_BATCH_HANDLES)}, "
                             f"got {last_batch_handle!r}")
        self.data = _init_data(data, False, data_name, "data")
        self.label = _init_data(label, True, label_name, "label")
        self.layout = layout
        # as in MXNet, the first data array sets the number of examples; arrays
        # with more are served only up to it
        num = self.data[0][1].shape[0]
        self.idx = np.arange(num)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.cursor = -self.batch_size
        self.num_data = num
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    def _batch_axis(self):
        return self.layout.find("N")

    def _descs(self, source):
        axis = self._batch_axis()
        return [DataDesc(k, tuple(v.shape[:axis]) + (self.batch_size,) + tuple(v.shape[axis + 1:]), v.dtype,
                         layout=self.layout) for k, v in source]

    @property
    def provide_data(self):
        """``DataDesc`` of each data array, with the batch size on the batch axis."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """``DataDesc`` of each label array, with the batch size on the batch axis."""
        return self._descs(self.label)

    def hard_reset(self):
        """Goes back to the start, dropping any rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        """Goes back to the start (reshuffling with ``shuffle``); with
        ``'roll_over'`` the examples left at the end of this epoch open the next."""
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and self.num_data - self.batch_size < self.cursor < self.num_data:
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        """Moves the cursor one batch on; returns whether examples remain."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        """The next :class:`DataBatch`; a short last batch ends the epoch
        (with ``'discard'`` and ``'roll_over'``, the latter keeping it)."""
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._batch_axis()] != self.batch_size:
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, source, start=None, end=None):
        start = 0 if start is None else start
        if end is None:
            end = source[0][1].shape[self._batch_axis()] if source else 0
        axis = self._batch_axis()
        if source and end > source[0][1].shape[axis]:
            # MXNet fails here too (slice_axis: invalid end), e.g. roll_over with batch_size > examples
            raise MXNetError(f"NDArrayIter: cannot take examples [{start}, {end}) of {source[0][1].shape[axis]}; "
                             f"batch_size {self.batch_size} with last_batch_handle={self.last_batch_handle!r} "
                             "needs more examples")
        return [nd.slice_axis(v, axis=axis, begin=start, end=end) for _, v in source]

    def _concat(self, first, second):
        if not first or not second:
            return first if first else second
        return [nd.concat(a, b, dim=self._batch_axis()) for a, b in zip(first, second)]

    @staticmethod
    def _tile(data, repeats):
        out = []
        for d in data:
            reps = [1] * d.ndim
            reps[0] = repeats
            out.append(nd.tile(d, reps=tuple(reps)))
        return out

    def _batchify(self, source):
        if self.cursor >= self.num_data:
            raise ValueError("NDArrayIter: the iterator is past its end; call reset()")
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            if self._cache_data is None and self._cache_label is None:
                raise ValueError("NDArrayIter: roll_over expected examples kept from the last epoch")
            cache = self._cache_data if self._cache_data is not None else self._cache_label
            second = self._getdata(source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache, second)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first = self._getdata(source, start=self.cursor)
            if pad > self.num_data:
                second = self._tile(self._getdata(source, end=self.num_data), pad // self.num_data)
                if pad % self.num_data:
                    second = self._concat(second, self._getdata(source, end=pad % self.num_data))
            else:
                second = self._getdata(source, end=pad)
            return self._concat(first, second)
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(source, self.cursor, end)

    def getdata(self):
        """The data arrays of the current batch."""
        return self._batchify(self.data)

    def getlabel(self):
        """The label arrays of the current batch."""
        return self._batchify(self.label)

    def getpad(self):
        """Padding examples in the current batch (``'pad'``: how many came
        from the start; ``'roll_over'`` first batch: how many were rolled over)."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self.data = [(k, nd.array(v.asnumpy()[self.idx], v.context)) for k, v in self.data]
        self.label = [(k, nd.array(v.asnumpy()[self.idx], v.context)) for k, v in self.label]
