"""Iterators built on other iterators: ``ResizeIter`` and ``PrefetchingIter``."""

import threading

from .base import DataBatch, DataDesc, DataIter

__all__ = ["ResizeIter", "PrefetchingIter"]


class ResizeIter(DataIter):
    """Serves exactly ``size`` batches per epoch from ``data_iter``,
    restarting it when it runs out.

    Parameters
    ----------
    data_iter : DataIter
        The iterator to resize.
    size : int
        Batches per epoch.
    reset_internal : bool
        Whether ``reset`` also resets ``data_iter``.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"ResizeIter: size must be a non-negative integer, got {size!r}")
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        """Starts a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        """Fetches the next batch (restarting the inner iterator if needed)."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        """The data of the current batch."""
        return self.current_batch.data

    def getlabel(self):
        """The labels of the current batch."""
        return self.current_batch.label

    def getindex(self):
        """The indices of the current batch."""
        return self.current_batch.index

    def getpad(self):
        """The padding of the current batch."""
        return self.current_batch.pad


def _renamed(descs, rename):
    return [DataDesc(rename[x.name], x.shape, x.dtype) if isinstance(x, DataDesc) else DataDesc(*x)
            for x in descs]


class PrefetchingIter(DataIter):
    """Reads the next batch of one or more iterators on background threads
    (one per iterator) while the current one is used, and serves their
    batches joined (data after data, label after label).

    Parameters
    ----------
    iters : DataIter or list of DataIter
        The iterators; they must give as many batches with equal padding.
    rename_data, rename_label : list of dict, optional
        For iterator ``i``, ``{old_name: new_name}`` for its data / labels.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: iters is empty")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.data_ready = [threading.Event() for _ in range(self.n_iter)]
        self.data_taken = [threading.Event() for _ in range(self.n_iter)]
        for event in self.data_taken:
            event.set()
        self.started = True
        self.current_batch = None
        self.next_batch = [None] * self.n_iter
        self._errors = [None] * self.n_iter
        self.prefetch_threads = [threading.Thread(target=self._prefetch, args=(i,), daemon=True)
                                 for i in range(self.n_iter)]
        for thread in self.prefetch_threads:
            thread.start()

    def _prefetch(self, i):
        while True:
            self.data_taken[i].wait()
            if not self.started:
                break
            try:
                self.next_batch[i] = self.iters[i].next()
            except StopIteration:
                self.next_batch[i] = None
            except Exception as err:  # noqa: BLE001 - re-raised on the caller's thread
                self.next_batch[i] = None
                self._errors[i] = err
            self.data_taken[i].clear()
            self.data_ready[i].set()

    def close(self):
        """Stops the background threads."""
        if not getattr(self, "started", False):
            return
        self.started = False
        for event in self.data_taken:
            event.set()
        for thread in self.prefetch_threads:
            thread.join()

    def __del__(self):
        self.close()

    @property
    def provide_data(self):
        """The data descriptions of all iterators, renamed as asked."""
        if self.rename_data is None:
            return sum([it.provide_data for it in self.iters], [])
        return sum([_renamed(it.provide_data, r) for r, it in zip(self.rename_data, self.iters)], [])

    @property
    def provide_label(self):
        """The label descriptions of all iterators, renamed as asked."""
        if self.rename_label is None:
            return sum([it.provide_label for it in self.iters], [])
        return sum([_renamed(it.provide_label, r) for r, it in zip(self.rename_label, self.iters)], [])

    def reset(self):
        """Resets every iterator and starts prefetching again."""
        for event in self.data_ready:
            event.wait()
        for it in self.iters:
            it.reset()
        for event in self.data_ready:
            event.clear()
        for event in self.data_taken:
            event.set()

    def iter_next(self):
        """Waits for the prefetched batches and makes them current."""
        for event in self.data_ready:
            event.wait()
        for err in self._errors:
            if err is not None:
                self._errors = [None] * self.n_iter
                raise err
        ended = [b is None for b in self.next_batch]
        if any(ended) and not all(ended):
            raise ValueError("PrefetchingIter: the iterators give different numbers of batches")
        if ended[0]:
            return False
        if any(b.pad != self.next_batch[0].pad for b in self.next_batch):
            raise ValueError("PrefetchingIter: the iterators give different numbers of examples")
        self.current_batch = DataBatch(sum([b.data for b in self.next_batch], []),
                                       sum([b.label for b in self.next_batch], []),
                                       self.next_batch[0].pad, self.next_batch[0].index,
                                       provide_data=self.provide_data, provide_label=self.provide_label)
        for event in self.data_ready:
            event.clear()
        for event in self.data_taken:
            event.set()
        return True

    def next(self):
        """The next joined :class:`DataBatch`."""
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        """The data of the current batch."""
        return self.current_batch.data

    def getlabel(self):
        """The labels of the current batch."""
        return self.current_batch.label

    def getindex(self):
        """The indices of the current batch."""
        return self.current_batch.index

    def getpad(self):
        """The padding of the current batch."""
        return self.current_batch.pad
