"""``DataLoader``: mini-batches from a dataset, read in this process, in
worker processes or in worker threads (``mx.gluon.data.DataLoader``).

Worker processes are started with the ``'forkserver'`` method (``'spawn'``
where that is missing), never by forking this process: a child forked from a
multi-threaded process keeps only the forking thread, and a lock that
another thread held at that instant (in the engine's registry, in the
allocator) stays locked in the child, which can then hang. (oxnet's thread
pool itself notices a forked child and runs its kernels inline.) So the dataset and the
``batchify_fn`` must be picklable (defined at module level; a script must
guard its entry point with ``if __name__ == '__main__':``); NDArrays cross
between processes as numpy arrays. ``thread_pool=True`` runs the workers as
threads of this process instead, with no such requirement.
"""

import collections
import io
import multiprocessing
import multiprocessing.pool
import os
import pickle
import random as _py_random
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import ndarray as nd
from ... import random as _mx_random
from ...base import MXNetError
from ...context import Context
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]

# Start method for worker processes; a DataLoader's ``start_method`` overrides it.
DEFAULT_START_METHOD = (
    "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
)


def default_batchify_fn(data):
    """Stacks a list of samples into a batch: NDArrays with ``nd.stack``,
    numbers and numpy arrays into one NDArray of their numpy dtype, and tuple
    samples element by element (a list with one batch per element)."""
    if len(data) == 0:
        raise ValueError("default_batchify_fn: no samples to batch")
    first = data[0]
    if isinstance(first, nd.NDArray):
        return nd.stack(*data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(column)) for column in zip(*data)]
    try:
        stacked = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"default_batchify_fn: the samples cannot be stacked into one array: {e}") from e
    return nd.array(stacked, dtype=stacked.dtype)


# The reference has a separate shared-memory collate for workers; here workers
# batch the same way and the result crosses to the main process as numpy.
default_mp_batchify_fn = default_batchify_fn


def _rebuild_ndarray(array):
    """An NDArray again from the numpy array it was sent as."""
    return nd.array(array, dtype=array.dtype)


def _reduce_ndarray(array):
    """Sends an NDArray between processes as a numpy array."""
    return _rebuild_ndarray, (array.asnumpy(),)


ForkingPickler.register(nd.NDArray, _reduce_ndarray)


def _to_context(batch, ctx):
    """``batch`` (NDArrays, possibly in nested lists or tuples) on ``ctx``."""
    if isinstance(batch, nd.NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, (list, tuple)):
        return [_to_context(b, ctx) for b in batch]
    return batch


# ----- worker processes ----------------------------------------------------------------

_worker_state = {}


def _process_initializer(dataset, batchify_fn):
    """Runs once in each worker process: keeps the dataset and the batchify
    function, and reseeds the random generators so that workers differ."""
    _worker_state["dataset"] = dataset
    _worker_state["batchify_fn"] = batchify_fn
    seed = int.from_bytes(os.urandom(4), "little")
    np.random.seed(seed)
    _py_random.seed(seed)
    _mx_random.seed(seed)


def _process_worker(indices):
    """Builds one batch in a worker process, pickled for the trip back."""
    dataset = _worker_state["dataset"]
    batch = _worker_state["batchify_fn"]([dataset[i] for i in indices])
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(batch)
    return buf.getvalue()


def _thread_worker(dataset, batchify_fn, indices):
    """Builds one batch in a worker thread."""
    return batchify_fn([dataset[i] for i in indices])


class _WorkerIter:
    """One pass over the batches, computed by a pool of workers and returned
    in the batch sampler's order, keeping up to ``prefetch + 1`` in flight."""

    def __init__(self, loader):
        self._loader = loader
        self._pool = loader._pool
        self._batches = iter(loader._batch_sampler)
        self._pending = collections.deque()
        for _ in range(loader._prefetch):
            self._submit()

    def _submit(self):
        indices = next(self._batches, None)
        if indices is None:
            return
        loader = self._loader
        if loader._thread_pool:
            job = self._pool.apply_async(_thread_worker, (loader._dataset, loader._batchify_fn, indices))
        else:
            job = self._pool.apply_async(_process_worker, (indices,))
        self._pending.append(job)

    def __iter__(self):
        return self

    def __next__(self):
        self._submit()
        if not self._pending:
            raise StopIteration
        job = self._pending.popleft()
        loader = self._loader
        try:
            result = job.get(loader._timeout)
        except multiprocessing.TimeoutError:
            loader._stop_pool()
            kind = "thread" if loader._thread_pool else "process"
            raise MXNetError(
                f"DataLoader: a worker {kind} gave no batch within timeout={loader._timeout} seconds "
                "(a slow transform or a hung worker; raise `timeout` if loading is just slow)"
            ) from None
        batch = result if loader._thread_pool else pickle.loads(result)
        if loader._pin_memory:
            batch = _to_context(batch, Context("cpu_pinned", loader._pin_device_id))
        return batch


class DataLoader:
    """Reads a dataset in mini-batches.

    Parameters
    ----------
    dataset : Dataset
        The samples (any object with ``len()`` and ``[]``, e.g. an NDArray).
    batch_size : int
        Samples per batch (required unless ``batch_sampler`` is given).
    shuffle : bool
        Visit the samples in a new random order every epoch.
    sampler : Sampler
        The order of the samples (not together with ``shuffle``).
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with a last batch shorter than ``batch_size``
        (see ``BatchSampler``); ``'keep'`` by default.
    batch_sampler : Sampler
        Gives the lists of indices of each batch; excludes ``batch_size``,
        ``shuffle``, ``sampler`` and ``last_batch``.
    batchify_fn : callable
        Turns a list of samples into a batch (``default_batchify_fn``).
    num_workers : int
        Worker processes (or threads with ``thread_pool``); 0 reads in the
        calling thread. Batches come in the same order either way.
    pin_memory, pin_device_id
        Put batches on ``Context('cpu_pinned', pin_device_id)`` (the same
        memory as the CPU in this build).
    prefetch : int
        Batches requested ahead of the one being read (``2 * num_workers``).
    thread_pool : bool
        Use threads instead of processes for the workers.
    timeout : float
        Seconds to wait for a worker's batch before raising an error.
    auto_reload : bool
        Start fetching the next epoch's first batches as soon as an epoch ends.
    start_method : str
        oxnet's addition: the multiprocessing start method of worker
        processes (``DEFAULT_START_METHOD``; see the module notes before
        choosing ``'fork'``).

    A worker's exception reaches the caller of ``next()`` with its type and
    message (its traceback attached as the cause).
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False,
                 start_method=None):
        if timeout is None or timeout <= 0:
            raise ValueError(f"DataLoader: timeout must be positive, got {timeout}")
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("DataLoader: batch_size must be given unless batch_sampler is")
            if sampler is None:
                order = _sampler.RandomSampler if shuffle else _sampler.SequentialSampler
                sampler = order(len(dataset))
            elif shuffle:
                raise ValueError("DataLoader: shuffle must not be given together with sampler")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError(
                "DataLoader: batch_size, shuffle, sampler and last_batch must not be given "
                "together with batch_sampler"
            )
        self._dataset = dataset
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._num_workers = max(0, int(num_workers))
        self._pin_memory = bool(pin_memory)
        self._pin_device_id = int(pin_device_id)
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        self._start_method = start_method or DEFAULT_START_METHOD
        self.auto_reload = bool(auto_reload)
        self._pool = None
        self._ready = None
        if self._num_workers > 0:
            self._start_pool()
        if self.auto_reload:
            self._ready = self._new_iter()

    def _start_pool(self):
        if self._thread_pool:
            self._pool = multiprocessing.pool.ThreadPool(self._num_workers)
            return
        context = multiprocessing.get_context(self._start_method)
        try:
            self._pool = context.Pool(
                self._num_workers, initializer=_process_initializer,
                initargs=(self._dataset, self._batchify_fn),
            )
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise MXNetError(
                f"DataLoader(num_workers={self._num_workers}): the dataset and batchify_fn must "
                f"be picklable to reach worker processes started with {self._start_method!r} "
                f"(define them at module level, or pass thread_pool=True): {e}"
            ) from e

    def _stop_pool(self):
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()

    def _new_iter(self):
        if self._num_workers == 0:
            return self._same_thread_iter()
        if self._pool is None:
            self._start_pool()
        return _WorkerIter(self)

    def _same_thread_iter(self):
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            if self._pin_memory:
                batch = _to_context(batch, Context("cpu_pinned", self._pin_device_id))
            yield batch

    def __iter__(self):
        current, self._ready = self._ready, None
        if current is None:
            current = self._new_iter()
        yield from current
        if self.auto_reload and self._ready is None:
            self._ready = self._new_iter()

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        try:
            self._stop_pool()
        except Exception:  # pylint: disable=broad-except
            pass  # interpreter shutdown: the pool may already be gone
