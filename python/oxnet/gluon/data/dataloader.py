"""``DataLoader``: mini-batches from a dataset, read in this process, in
worker processes or in worker threads (``mx.gluon.data.DataLoader``).

How workers start
-----------------
With ``num_workers > 0`` the loader starts its worker processes when it is
made (as MXNet 1.9.1 does), and they serve every pass until the loader is
deleted. On platforms that have it (Linux) a worker is a *fork* of this
process, as in MXNet: it inherits the dataset, its transforms and the
``batchify_fn`` as they are, so lambdas, local functions, open files and
objects that cannot be pickled all work, and a script needs no
``if __name__ == '__main__':`` guard. Only the lists of sample indices go to
a worker and only finished batches come back, pickled, with NDArrays sent
as numpy arrays (NDArrays again on arrival).

A fork keeps only the thread that forked. oxnet's operator thread pool
notices that it is in a forked child and runs its kernels inline there, so
a worker can use any operator (``nd`` operators, ``nd.array``,
``asnumpy``, image decoding, random sampling). Each worker reseeds numpy's,
Python's and oxnet's random generators with its own seed, derived from
numpy's state in this process (so ``np.random.seed`` before making the
loader makes the workers' draws repeatable) and the worker's number: random
augmentations differ between workers (in MXNet 1.9.1 forked workers start
from the same numpy and MXNet generator state). Workers ignore ``SIGINT``,
so Ctrl-C stops only this process, which then stops them.

``start_method`` (oxnet's addition; ``DEFAULT_START_METHOD`` by default:
``'fork'`` where the platform has it, ``'spawn'`` elsewhere) may name
``'forkserver'`` or ``'spawn'`` instead; those start a fresh interpreter,
so the dataset and ``batchify_fn`` must then be picklable (defined at
module level) and a script must guard its entry point.

``thread_pool=True`` runs the workers as threads of this process instead,
with no such requirement.

Failures
--------
An exception raised in a worker (by the dataset's ``__getitem__``, a
transform or the ``batchify_fn``) is raised again by ``next()`` with its
type and message, a note naming the worker and the batch, and the worker's
traceback as its ``__cause__``; that pass ends there and the loader stays
usable. A worker process that dies (``os._exit``, a signal, a crash) or
cannot start raises ``MXNetError`` naming the worker and the cause as soon
as it happens, whether or not a ``timeout`` is set; the loader then stops
its workers and starts new ones for the next pass. A batch that takes
longer than ``timeout`` seconds raises ``DataLoaderTimeoutError`` (an
``MXNetError`` and a ``multiprocessing.TimeoutError``, which MXNet raises).
Workers are joined when the loader is deleted; they also exit by themselves
when this process goes away.
"""

import collections
import hashlib
import io
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.pool
import os
import pickle
import random as _py_random
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import ndarray as nd
from ... import random as _mx_random
from ... import util as _util
from ...base import MXNetError
from ...context import Context
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]

# Start method of worker processes; a DataLoader's ``start_method`` overrides it.
# Fork where the platform has it (macOS has it but its system libraries are not
# safe to use in a forked child, so Python spawns there).
DEFAULT_START_METHOD = (
    "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
)


class DataLoaderTimeoutError(MXNetError, multiprocessing.TimeoutError):
    """A worker gave no batch within the DataLoader's ``timeout``."""


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


def _dumps(obj):
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _to_context(batch, ctx):
    """``batch`` (NDArrays, possibly in nested lists or tuples) on ``ctx``."""
    if isinstance(batch, nd.NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, (list, tuple)):
        return [_to_context(b, ctx) for b in batch]
    return batch


def _describe_indices(indices, limit=8):
    indices = list(indices)
    shown = ", ".join(str(i) for i in indices[:limit])
    return f"[{shown}{', ...' if len(indices) > limit else ''}]"


class _RemoteTraceback(Exception):
    """The traceback text of an exception raised in a worker."""

    def __str__(self):
        return self.args[0]


# ----- worker processes ----------------------------------------------------------------

# Parent-side ends of the pipes of every live worker set of this process. A
# forked worker closes its copies, so that a worker of one loader never keeps
# another loader's pipes open (a worker learns that its parent is gone from
# the end of its task pipe).
_PARENT_ENDS = weakref.WeakSet()
# Worker sets started by this process: part of each worker's seed.
_STARTED = itertools.count()


def _worker_seed(generation, worker_id):
    """A seed for one worker: from numpy's state here (not advancing it), the
    worker set's number in this process and the worker's number."""
    state = np.random.get_state()
    digest = hashlib.sha256()
    digest.update(np.asarray(state[1]).tobytes())
    digest.update(f"{state[2]}/{generation}/{worker_id}".encode())
    return int.from_bytes(digest.digest()[:4], "little")


def _seed_everything(seed):
    np.random.seed(seed)
    _py_random.seed(seed)
    _mx_random.seed(seed)


class _WorkerPipes:
    """A worker's two threads besides its main one: one reads the tasks the
    parent sends as soon as they come (so that the parent never blocks on a
    full pipe), one sends finished batches (so that the worker goes on with
    its next batch while the parent has not read the previous one yet)."""

    def __init__(self, tasks, results, parent_pid):
        self._tasks_conn = tasks
        self._results_conn = results
        self._parent_pid = parent_pid
        self._tasks = collections.deque()
        self._outbox = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False  # no more tasks: the parent closed the pipe or is gone
        self._closed = False  # the main thread is done
        self._receiver = threading.Thread(target=self._receive, name="DataLoader worker receiver",
                                          daemon=True)
        self._sender = threading.Thread(target=self._send, name="DataLoader worker sender", daemon=True)
        self._receiver.start()
        self._sender.start()

    def _stop(self):
        with self._cond:
            self._stopping = True
            self._tasks.clear()
            self._cond.notify_all()

    def _receive(self):
        conn = self._tasks_conn
        while True:
            try:
                if not conn.poll(1.0):
                    if os.getppid() != self._parent_pid:
                        break  # the parent died without closing the pipe
                    continue
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message is None:
                break
            with self._cond:
                self._tasks.append(message)
                self._cond.notify_all()
        self._stop()

    def next_task(self):
        """The next (key, indices) to build, or None once the worker should stop."""
        with self._cond:
            while not self._tasks and not self._stopping:
                self._cond.wait()
            return self._tasks.popleft() if self._tasks else None

    def put(self, data):
        with self._cond:
            self._outbox.append(data)
            self._cond.notify_all()

    def _send(self):
        while True:
            with self._cond:
                while not self._outbox and not self._closed:
                    self._cond.wait()
                if not self._outbox:
                    return
                data = self._outbox.popleft()
            try:
                self._results_conn.send_bytes(data)
            except OSError:  # the parent closed its end: it wants no more batches
                self._stop()
                return

    def close(self):
        """Sends what is left (unless the parent stopped reading) and ends."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._sender.join()


def _error_message(key, exc):
    """The message a worker sends for an exception: the exception itself when
    it survives pickling, its type, text and traceback in any case."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        pickled = _dumps(exc)
        pickle.loads(pickled)
    except Exception:  # pylint: disable=broad-except
        pickled = None
    return _dumps((key, "error", (pickled, type(exc).__name__, str(exc), tb)))


def _worker_main(worker_id, parent_pid, tasks, results, state):
    """A worker process: builds the batches whose indices arrive on ``tasks``
    and sends them (or the exception a batch raised) back on ``results``."""
    # pylint: disable=unused-argument
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for conn in list(_PARENT_ENDS):
        try:
            conn.close()
        except OSError:
            pass
    try:
        payload, inherited, np_shape, np_array, seed = state
        dataset, batchify_fn = inherited if payload is None else pickle.loads(payload)
        _util.set_np(shape=np_shape, array=np_array)
        _seed_everything(seed)
    except BaseException as e:  # pylint: disable=broad-except
        results.send_bytes(_error_message(None, e))
        return
    pipes = _WorkerPipes(tasks, results, parent_pid)
    try:
        while True:
            task = pipes.next_task()
            if task is None:
                break
            key, indices = task
            try:
                batch = batchify_fn([dataset[i] for i in indices])
                data = _dumps((key, "ok", batch))
            except Exception as e:  # pylint: disable=broad-except
                data = _error_message(key, e)
            pipes.put(data)
    finally:
        pipes.close()


def _exit_reason(exitcode):
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with code {exitcode}"


class _ProcessWorkers:
    """A set of worker processes, each with a pipe for the indices of its
    batches and one for the batches it sends back. Batches are keyed by
    (pass id, batch number); several passes may use the set at once."""

    def __init__(self, num_workers, dataset, batchify_fn, start_method):
        self._owner = os.getpid()
        self._start_method = start_method
        self.failure = None  # why the set stopped, once it has
        self._procs = []
        self._tasks = []
        self._results = []
        self._load = [0] * num_workers
        self._assigned = {}  # key -> (worker, indices)
        self._done = {}  # key -> (worker, status, payload)
        self._dropped = set()  # pass ids whose batches are no longer wanted
        # Passes over the same loader may run in several threads.
        self._lock = threading.RLock()
        generation = next(_STARTED)
        np_shape, np_array = _util.is_np_shape(), _util.is_np_array()
        context = multiprocessing.get_context(start_method)
        forked = start_method == "fork"
        try:
            if not forked:
                try:
                    payload = _dumps((dataset, batchify_fn))
                except Exception as e:
                    raise MXNetError(
                        f"DataLoader(num_workers={num_workers}): the dataset and batchify_fn must be "
                        f"picklable to reach worker processes started with {start_method!r} (define "
                        "them at module level, use the default start_method 'fork', or pass "
                        f"thread_pool=True): {type(e).__name__}: {e}"
                    ) from e
            nd.waitall()
            for worker_id in range(num_workers):
                seed = _worker_seed(generation, worker_id)
                if forked:
                    state = (None, (dataset, batchify_fn), np_shape, np_array, seed)
                else:
                    state = (payload, None, np_shape, np_array, seed)
                task_r, task_w = context.Pipe(duplex=False)
                result_r, result_w = context.Pipe(duplex=False)
                _PARENT_ENDS.add(task_w)
                _PARENT_ENDS.add(result_r)
                self._tasks.append(task_w)
                self._results.append(result_r)
                proc = context.Process(
                    target=_worker_main, name=f"DataLoader worker {worker_id}",
                    args=(worker_id, self._owner, task_r, result_w, state), daemon=True,
                )
                with warnings.catch_warnings():
                    # Python >= 3.12 warns on any fork of a multi-threaded process; the
                    # threads here are oxnet's pool, which a forked child does not use.
                    warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks",
                                            category=DeprecationWarning)
                    proc.start()
                self._procs.append(proc)
                task_r.close()
                result_w.close()
        except BaseException:
            self.shutdown()
            raise

    @property
    def alive(self):
        return self.failure is None

    def _name(self, worker):
        proc = self._procs[worker]
        return f"DataLoader worker {worker} (pid {proc.pid})"

    def _fail(self, message):
        """Stops the set and raises ``MXNetError(message)``."""
        self.failure = message
        self.shutdown()
        raise MXNetError(message)

    def _check_alive(self):
        if self.failure is not None:
            raise MXNetError(f"DataLoader: the worker processes were stopped earlier: {self.failure}")

    def submit(self, key, indices):
        """Sends one batch's indices to the least busy worker."""
        with self._lock:
            self._submit(key, indices)

    def _submit(self, key, indices):
        self._check_alive()
        worker = min(range(len(self._procs)), key=lambda w: (self._load[w], (w - key[1]) % len(self._procs)))
        try:
            self._tasks[worker].send((key, list(indices)))
        except OSError:
            self._died(worker)
        self._load[worker] += 1
        self._assigned[key] = (worker, indices)

    def _died(self, worker):
        proc = self._procs[worker]
        proc.join(1.0)
        owed = [k for k, (w, _) in self._assigned.items() if w == worker and k not in self._done]
        doing = ""
        if owed:
            first = min(owed)
            doing = (f" while preparing batch {first[1]} (samples "
                     f"{_describe_indices(self._assigned[first][1])})")
        self._fail(
            f"{self._name(worker)} {_exit_reason(proc.exitcode)}{doing}. The workers were stopped; "
            "the next pass over the DataLoader starts new ones."
        )

    def _receive(self, worker):
        """Reads one message of ``worker``; False when its pipe has ended."""
        try:
            data = self._results[worker].recv_bytes()
        except (EOFError, OSError):
            return False
        try:
            key, status, payload = pickle.loads(data)
        except Exception as e:  # pylint: disable=broad-except
            self._fail(f"{self._name(worker)} sent a batch that cannot be unpickled here: "
                       f"{type(e).__name__}: {e}")
        if key is None:  # it could not start
            _, type_name, text, tb = payload
            self._fail(f"{self._name(worker)} failed to start ({type_name}: {text}):\n{tb}")
        if key in self._assigned:
            self._load[worker] -= 1
        if key[0] in self._dropped:
            self._assigned.pop(key, None)
            if not any(k[0] == key[0] for k in self._assigned):
                self._dropped.discard(key[0])
        else:
            self._done[key] = (worker, status, payload)
        return True

    def get(self, key, timeout):
        """The batch ``key``, raising what its worker raised, or an error
        when a worker dies or nothing comes within ``timeout`` seconds."""
        with self._lock:
            return self._get(key, timeout)

    def _get(self, key, timeout):
        self._check_alive()
        deadline = None if timeout is None else _now() + timeout
        while key not in self._done:
            waiting = {}
            for w, proc in enumerate(self._procs):
                waiting[self._results[w]] = ("result", w)
                waiting[proc.sentinel] = ("exit", w)
            remaining = None if deadline is None else max(0.0, deadline - _now())
            ready = multiprocessing.connection.wait(list(waiting), remaining)
            if not ready:
                worker = self._assigned.get(key, (None,))[0]
                who = self._name(worker) if worker is not None else "The DataLoader's workers"
                self.failure = f"{who} gave no batch within timeout={timeout} seconds"
                self.shutdown()
                raise DataLoaderTimeoutError(
                    f"{who} gave batch {key[1]} no answer within the DataLoader's timeout={timeout} "
                    "seconds (a slow transform or a hung worker; raise `timeout` if loading is just "
                    "slow). The workers were stopped; the next pass starts new ones."
                )
            exited = []
            for obj in ready:
                kind, w = waiting[obj]
                if kind == "result":
                    if not self._receive(w):
                        exited.append(w)
                else:
                    exited.append(w)
            for w in exited:
                # batches it sent before it went are still in the pipe
                while self._results[w].poll(0) and self._receive(w):
                    pass
                self._died(w)
        worker, status, payload = self._done.pop(key)
        _, indices = self._assigned.pop(key)
        if status == "ok":
            return payload
        pickled, type_name, text, tb = payload
        where = f"{self._name(worker)}, batch {key[1]} (samples {_describe_indices(indices)})"
        exc = None
        if pickled is not None:
            try:
                exc = pickle.loads(pickled)
            except Exception:  # pylint: disable=broad-except
                exc = None
        if not isinstance(exc, BaseException):
            raise MXNetError(f"{where} raised {type_name}: {text}\n\nWorker traceback:\n{tb}")
        exc.__cause__ = _RemoteTraceback(f"\n\nIn {where}:\n{tb}")
        if hasattr(exc, "add_note"):
            exc.add_note(f"(raised in {where})")
        raise exc

    def drop(self, pass_id):
        """Forgets the batches of a pass that will not be read."""
        if os.getpid() != self._owner:
            return
        with self._lock:
            self._drop(pass_id)

    def _drop(self, pass_id):
        for key in [k for k in self._done if k[0] == pass_id]:
            del self._done[key]
            self._assigned.pop(key, None)
        if any(k[0] == pass_id for k in self._assigned):
            self._dropped.add(pass_id)

    def shutdown(self):
        """Stops and joins the workers (at once; a busy worker is terminated)."""
        if os.getpid() != self._owner:
            return  # a copy inherited by a forked child: the processes are not its own
        # Closing the pipes tells a worker to stop (after the batch it is making)
        # and fails a send it is blocked in; nothing here waits on a worker for
        # longer than the deadline below.
        for conn in self._tasks + self._results:
            try:
                conn.close()
            except OSError:
                pass  # already gone: the workers must still be joined below
        deadline = _now() + 1.0
        for proc in self._procs:
            proc.join(max(0.0, deadline - _now()))
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
        for proc in self._procs:
            proc.join(1.0)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
        self._tasks, self._results = [], []
        self._procs = []
        self._done.clear()
        self._assigned.clear()
        if self.failure is None:
            self.failure = "the DataLoader was shut down"


def _now():
    return time.monotonic()


# ----- worker threads ------------------------------------------------------------------

def _thread_initializer(np_shape, np_array):
    _util.set_np(shape=np_shape, array=np_array)


def _thread_worker(dataset, batchify_fn, seq, indices):
    """Builds one batch in a worker thread."""
    try:
        return batchify_fn([dataset[i] for i in indices])
    except Exception as e:
        if hasattr(e, "add_note"):
            e.add_note(f"(raised in DataLoader worker thread {threading.current_thread().name}, "
                       f"batch {seq} (samples {_describe_indices(indices)}))")
        raise


_PASS_IDS = itertools.count()


class _WorkerIter:
    """One pass over the batches, computed by the loader's workers and
    returned in the batch sampler's order, keeping up to ``prefetch + 1`` in
    flight."""

    def __init__(self, loader):
        self._loader = loader
        self._thread_pool = loader._thread_pool
        self._workers = loader._workers
        self._id = next(_PASS_IDS)
        self._batches = iter(loader._batch_sampler)
        self._pending = collections.deque()
        self._sent = 0
        self._finished = False
        for _ in range(loader._prefetch):
            self._submit()

    @property
    def usable(self):
        """False once the workers it was given have been stopped or replaced."""
        if self._workers is not self._loader._workers:
            return False
        return self._thread_pool or self._workers.alive

    def _submit(self):
        indices = next(self._batches, None)
        if indices is None:
            return
        key = (self._id, self._sent)
        self._sent += 1
        if self._thread_pool:
            loader = self._loader
            job = self._workers.apply_async(
                _thread_worker, (loader._dataset, loader._batchify_fn, key[1], indices))
            self._pending.append((key, job))
        else:
            self._workers.submit(key, indices)
            self._pending.append((key, key))

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        try:
            self._submit()
            if not self._pending:
                self._finished = True
                raise StopIteration
            loader = self._loader
            key, item = self._pending.popleft()
            if self._thread_pool:
                try:
                    batch = item.get(loader._timeout)
                except multiprocessing.TimeoutError:
                    loader._abandon_threads()
                    raise DataLoaderTimeoutError(
                        f"DataLoader: a worker thread gave batch {key[1]} no answer within "
                        f"timeout={loader._timeout} seconds (a slow transform or a hung worker; "
                        "raise `timeout` if loading is just slow)"
                    ) from None
            else:
                batch = self._workers.get(item, loader._timeout)
        except StopIteration:
            raise
        except BaseException:
            self.close()
            raise
        if loader._pin_memory:
            batch = _to_context(batch, Context("cpu_pinned", loader._pin_device_id))
        return batch

    def close(self):
        """Ends the pass; batches still being made are thrown away."""
        if self._finished:
            return
        self._finished = True
        self._pending.clear()
        if not self._thread_pool and self._workers.alive:
            self._workers.drop(self._id)

    def __del__(self):
        try:
            self.close()
        except Exception:  # pylint: disable=broad-except
            pass


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
        calling thread. Batches come in the same order either way. Worker
        processes are forks of this process (see the module notes), so the
        dataset, its transforms and ``batchify_fn`` may be lambdas or local
        functions.
    pin_memory, pin_device_id
        Put batches on ``Context('cpu_pinned', pin_device_id)`` (the same
        memory as the CPU in this build).
    prefetch : int
        Batches requested ahead of the one being read (``2 * num_workers``).
    thread_pool : bool
        Use threads instead of processes for the workers.
    timeout : float or None
        Seconds to wait for a worker's batch before raising
        ``DataLoaderTimeoutError``; ``None`` waits without limit (a worker
        that dies is reported at once either way).
    auto_reload : bool
        Start fetching the next epoch's first batches as soon as an epoch ends.
    start_method : str
        oxnet's addition: the multiprocessing start method of worker
        processes (``DEFAULT_START_METHOD``: ``'fork'`` where available);
        with ``'forkserver'`` or ``'spawn'`` the dataset and ``batchify_fn``
        must be picklable.

    A worker's exception reaches the caller of ``next()`` with its type and
    message, a note naming the worker and the batch, and the worker's
    traceback as its cause; a worker process that dies raises ``MXNetError``
    naming it and how it ended.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False,
                 start_method=None):
        self._workers = None
        self._owner_pid = os.getpid()
        if timeout is not None and not timeout > 0:
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
        start_method = start_method or DEFAULT_START_METHOD
        if start_method not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"DataLoader: start_method {start_method!r} is not available here "
                f"(choose from {multiprocessing.get_all_start_methods()})"
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
        self._start_method = start_method
        self.auto_reload = bool(auto_reload)
        self._ready = None
        if self._num_workers > 0:
            self._start_workers()
        if self.auto_reload:
            self._ready = self._new_iter()

    def _start_workers(self):
        if self._thread_pool:
            self._workers = multiprocessing.pool.ThreadPool(
                self._num_workers, initializer=_thread_initializer,
                initargs=(_util.is_np_shape(), _util.is_np_array()),
            )
        else:
            self._workers = _ProcessWorkers(self._num_workers, self._dataset, self._batchify_fn,
                                            self._start_method)

    def _abandon_threads(self):
        """Leaves a thread pool with a hung thread behind (threads cannot be
        stopped; the thread ends when its batch does)."""
        pool, self._workers = self._workers, None
        if pool is not None:
            pool.close()

    def _stop_workers(self):
        workers, self._workers = self._workers, None
        if workers is None:
            return
        if self._thread_pool:
            workers.close()  # never blocks on a busy thread
        else:
            workers.shutdown()

    def _new_iter(self):
        if self._num_workers == 0:
            return self._same_thread_iter()
        if self._workers is None or (not self._thread_pool and not self._workers.alive):
            self._start_workers()
        return _WorkerIter(self)

    def _same_thread_iter(self):
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            if self._pin_memory:
                batch = _to_context(batch, Context("cpu_pinned", self._pin_device_id))
            yield batch

    def __iter__(self):
        current, self._ready = self._ready, None
        if current is None or (isinstance(current, _WorkerIter) and not current.usable):
            current = self._new_iter()
        try:
            yield from current
        finally:
            if isinstance(current, _WorkerIter):
                current.close()
        if self.auto_reload and self._ready is None:
            self._ready = self._new_iter()

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        if getattr(self, "_owner_pid", None) != os.getpid():
            return  # a copy inherited by a forked child: the workers are not its own
        try:
            self._stop_workers()
        except Exception:  # pylint: disable=broad-except
            pass  # interpreter shutdown: the workers may already be gone
