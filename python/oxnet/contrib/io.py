"""``mx.contrib.io``: data iterators made from other data sources (MXNet
1.x's ``mxnet.contrib.io``).

:class:`DataLoaderIter` lets a Gluon ``DataLoader`` feed the symbolic API
(``Module.fit``, ``Module.score``, ...), which reads ``mx.io.DataIter``\\ s.
"""

from .. import ndarray as nd
from ..io import DataDesc, DataIter

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """An ``mx.io.DataIter`` over the ``(data, label)`` batches of a Gluon
    ``DataLoader``.

    The first batch fixes ``batch_size`` and the shapes announced by
    ``provide_data`` / ``provide_label`` (one ``DataDesc`` each, with
    ``dtype``). Every batch is cast to ``dtype``; a shorter batch (the last
    one of a ``last_batch='keep'`` loader) is padded with zeros up to
    ``batch_size`` and its ``pad`` says how many examples are padding.

    Parameters
    ----------
    loader : mx.gluon.data.DataLoader
        Any iterable that can be iterated again and yields
        ``(data, label)`` pairs of NDArrays.
    data_name : str, default 'data'
        The name in ``provide_data``.
    label_name : str, default 'softmax_label'
        The name in ``provide_label``.
    dtype : str or numpy dtype, default 'float32'
        The type of the data and labels given out.

    Examples
    --------
    >>> loader = mx.gluon.data.DataLoader(dataset, batch_size=32, last_batch='discard')
    >>> it = mx.contrib.io.DataLoaderIter(loader)
    >>> mod.fit(it, num_epoch=2)
    """

    def __init__(self, loader, data_name="data", label_name="softmax_label", dtype="float32"):
        super().__init__()
        if not isinstance(data_name, str):
            raise TypeError(f"DataLoaderIter: data_name must be a str, got {type(data_name).__name__}")
        if not isinstance(label_name, str):
            raise TypeError(f"DataLoaderIter: label_name must be a str, got {type(label_name).__name__}")
        try:
            self._iter = iter(loader)
        except TypeError:
            raise TypeError(f"DataLoaderIter: loader must be an iterable such as a gluon DataLoader, got "
                            f"{type(loader).__name__}") from None
        self._loader = loader
        try:
            first = next(self._iter)
        except StopIteration:
            raise ValueError("DataLoaderIter: loader yields no batch") from None
        data, label = self._split(first)
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch = None
        self.reset()

    @staticmethod
    def _split(batch):
        """``(data, label)`` of a loader batch; anything else is a TypeError."""
        if not isinstance(batch, (list, tuple)) or len(batch) != 2:
            raise TypeError("DataLoaderIter: the loader must yield (data, label) pairs, got "
                            f"{type(batch).__name__}" + (f" of {len(batch)}" if isinstance(batch, (list, tuple))
                                                         else ""))
        data, label = batch
        return nd.array(data) if not isinstance(data, nd.NDArray) else data, \
            nd.array(label) if not isinstance(label, nd.NDArray) else label

    def reset(self):
        """Starts a new pass over the loader."""
        self._iter = iter(self._loader)
        self._current_batch = None

    def iter_next(self):
        """Fetches the next batch; False at the end of the loader."""
        try:
            self._current_batch = self._split(next(self._iter))
        except StopIteration:
            self._current_batch = None
        return self._current_batch is not None

    def _padded(self, array):
        array = array.astype(self.dtype)
        short = self.batch_size - array.shape[0]
        if short <= 0:
            return array
        out = nd.zeros((self.batch_size,) + tuple(array.shape[1:]), ctx=array.context, dtype=self.dtype)
        out[:array.shape[0]] = array
        return out

    def _require_batch(self, what):
        if self._current_batch is None:
            raise ValueError(f"DataLoaderIter.{what}: there is no current batch; call iter_next() "
                             "(or next()) first")

    def getdata(self):
        """The current batch's data, as a one-element list (padded to ``batch_size``)."""
        self._require_batch("getdata")
        return [self._padded(self._current_batch[0])]

    def getlabel(self):
        """The current batch's label, as a one-element list (padded to ``batch_size``)."""
        self._require_batch("getlabel")
        return [self._padded(self._current_batch[1])]

    def getpad(self):
        """How many examples of the current batch are padding (0 for a full batch)."""
        self._require_batch("getpad")
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        """None: a DataLoader does not say which examples it gave."""
        return None
