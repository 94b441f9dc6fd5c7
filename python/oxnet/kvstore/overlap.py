"""Summing gradients over the workers while the backward pass still runs.

The distributed store's steady path (:class:`~oxnet.kvstore.dist.DistKVStore`)
knows, from its second step on, which gradient buffers a step sums and the
parameters they belong to. :class:`GradientOverlap` hooks those parameters
(gradient-ready hooks, :class:`oxnet._oxnet.GradSignals`): the backward pass
announces each gradient the moment it is complete, and a communication
thread sums it over the workers, bucket by bucket, while the earlier layers'
gradients are still computed. ``trainer.step`` then only waits for what is
left: the last bucket (the first layers, whose gradients come last) and any
bucket still on its way.

Buckets of up to ``OXNET_BUCKET_BYTES`` (1 MiB by default) are cut along
the parameters in reverse at first, then, after the first step that
announces gradients, along rank 0's order of announcements (the order this
network's backward pass completes them). Every worker sums them in that
order whatever order the signals arrive in; signals only decide *when*. So the collectives match on
every worker even where a gradient is never announced (its bucket then
waits for the step). The communication thread has its own MPI communicator,
so its sums never meet the main thread's collectives (SyncBatchNorm's),
which needs MPI's ``MPI_THREAD_MULTIPLE``.

Correct whatever the training loop does: a second backward pass before the
step announces gradients again; where one's bucket was already summed the
step knows it (every worker learns it with the last bucket, in one extra
element) and all sum every gradient again.

``OXNET_OVERLAP=1`` turns the overlap on, ``0`` off (the step then sums
everything itself); by default it is on where each rank on the machine has
two cores or more and MPI offers threads.
"""

import os
import queue
import threading

from .. import _oxnet
from .. import ndarray as nd
from ..base import MXNetError

__all__ = ["GradientOverlap", "overlap_enabled", "bucket_bytes"]

# control messages on the signal queue (gradients are posted as positions >= 0)
_STEP = -1
_STOP = -2


def overlap_enabled(comm):
    """Whether the store overlaps: ``OXNET_OVERLAP`` (``1``/``0``); by
    default where each rank on this machine has at least two cores (the
    communication thread needs a core of its own: with one, it takes its
    time from backward, and MPI's waiting spins on it). Only for more than
    one worker, and when MPI gives threads."""
    raw = os.environ.get("OXNET_OVERLAP", "").strip().lower()
    if raw in ("", "auto"):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        wanted = cores // max(comm.local_size, 1) >= 2
    elif raw in ("0", "1", "true", "false", "on", "off"):
        wanted = raw in ("1", "true", "on")
    else:
        raise MXNetError(f"OXNET_OVERLAP={raw!r}: expected 1, 0 or auto")
    return wanted and comm.size > 1 and getattr(comm, "thread_multiple", False) and hasattr(comm, "duplicate")


def bucket_bytes():
    """The largest bucket summed while backward runs, in bytes (``OXNET_BUCKET_BYTES``)."""
    raw = os.environ.get("OXNET_BUCKET_BYTES", str(1 << 20))
    try:
        value = int(raw)
    except ValueError:
        raise MXNetError(f"OXNET_BUCKET_BYTES={raw!r}: expected a number of bytes") from None
    if value <= 0:
        raise MXNetError(f"OXNET_BUCKET_BYTES={raw!r}: must be positive")
    return value


def make_buckets(order, sizes, limit):
    """The positions in ``order`` (the order backward completes them) cut
    into consecutive buckets of at most ``limit`` bytes each (``sizes``: the
    bytes of each position; a larger array goes alone)."""
    buckets, current, filled = [], [], 0
    for i in order:
        if current and filled + sizes[i] > limit:
            buckets.append(current)
            current, filled = [], 0
        current.append(i)
        filled += sizes[i]
    if current:
        buckets.append(current)
    return buckets


class GradientOverlap:
    """Sums ``grads[i]`` over the workers into ``sums[i]`` as backward
    completes them (see the module). ``variables[i]`` is the parameter
    array whose gradient buffer ``grads[i]`` is.

    The first buckets follow the parameters in reverse; after the first
    step that announces gradients, rank 0's order of announcements (the
    order this network's backward pass completes them) is given to every
    worker and the buckets are cut again along it."""

    def __init__(self, comm, variables, grads, sums):
        self._grads, self._sums = list(grads), list(sums)
        self._sizes = [g.size * _itemsize(g) for g in grads]
        self._comm = comm.duplicate()  # its own MPI communicator
        self._signals = _oxnet.GradSignals()
        self._variables = list(variables)
        #: which parameters are hooked (the others wait for the step)
        self.watched = self._signals.watch(self._variables, self._grads)
        self._replies = queue.SimpleQueue()
        #: buckets summed while backward ran (before their step asked)
        self.early = 0
        #: steps that summed every gradient again (one changed after its bucket was summed)
        self.redone = 0
        self._steps = 0
        self._flag = self._flag_sum = None
        self._cut(list(reversed(range(len(self._grads)))))
        self._thread = threading.Thread(target=self._run, name="oxnet-allreduce", daemon=True)
        self._thread.start()

    @property
    def sums(self):
        """The arrays the sums land in."""
        return self._sums

    @staticmethod
    def layout(grads):
        """The first buckets of these gradients: what every worker must
        agree on before making a :class:`GradientOverlap`."""
        sizes = [g.size * _itemsize(g) for g in grads]
        return tuple(tuple(b) for b in make_buckets(reversed(range(len(grads))), sizes, bucket_bytes()))

    def _cut(self, order):
        """Cuts the buckets along ``order`` (while the thread waits)."""
        self.buckets = make_buckets(order, self._sizes, bucket_bytes())
        self._bucket_of = {i: b for b, members in enumerate(self.buckets) for i in members}
        # the last bucket travels with one more element: whether a worker saw
        # a gradient change after its bucket was summed
        last = self.buckets[-1]
        self._last_sources = [self._grads[i] for i in last]
        self._last_outs = [self._sums[i] for i in last]
        dtype = self._grads[last[0]].dtype
        if self._flag is None or self._flag.dtype != dtype:
            self._flag = nd.zeros((1,), dtype=dtype)
            self._flag_sum = nd.zeros((1,), dtype=dtype)

    # ------------------------------------------------------------------
    # the communication thread

    def _sum_bucket(self, b):
        members = self.buckets[b]
        self._comm.allreduce_into([self._grads[i] for i in members], [self._sums[i] for i in members])

    def _run(self):
        fresh = True  # the step's state is set up at its first signal (the buckets may be cut anew between steps)
        while True:
            signal = self._signals.get()
            if signal is None or signal == _STOP:
                return
            try:
                if fresh:
                    last, fresh = len(self.buckets) - 1, False
                    seen = [False] * len(self._grads)
                    missing = [len(b) for b in self.buckets]
                    done, changed, arrivals = 0, False, []
                if signal == _STEP:
                    while done < last:
                        self._sum_bucket(done)
                        done += 1
                    self._replies.put((changed, arrivals))
                    fresh = True
                    continue
                b = self._bucket_of[signal]
                if b < done:
                    changed = True  # announced again after its bucket was summed
                elif not seen[signal]:
                    seen[signal] = True
                    missing[b] -= 1
                    arrivals.append(signal)
                while done < last and missing[done] == 0:
                    self._sum_bucket(done)
                    done += 1
                    self.early += 1
            except BaseException as e:  # pylint: disable=broad-except  (handed to the step)
                self._replies.put(e)
                return

    # ------------------------------------------------------------------
    # the step

    def finish(self):
        """Completes this step's sums (called by the step, after backward):
        waits for the thread's buckets, sums the last bucket, and, where any
        worker saw a gradient change after its bucket was summed, every
        gradient again."""
        if not self._thread.is_alive():
            raise MXNetError("the gradient communication thread has stopped; the distributed store cannot step")
        self._signals.post(_STEP)
        reply = self._replies.get()
        if isinstance(reply, BaseException):
            raise MXNetError(f"summing gradients over the workers failed: {reply}") from reply
        changed, arrivals = reply
        self._flag[:] = 1.0 if changed else 0.0
        self._comm.allreduce_into(self._last_sources + [self._flag], self._last_outs + [self._flag_sum])
        if self._flag_sum.asscalar() > 0:
            self._comm.allreduce_into(self._grads, self._sums)
            self.redone += 1
        self._steps += 1
        if self._steps == 2:
            # the first step whose backward pass announced (the plan was made
            # in the step before): cut the buckets along rank 0's order
            previous = [i for b in self.buckets for i in b]
            order = arrivals + [i for i in previous if i not in set(arrivals)]
            self._cut(self._comm.broadcast_object(order, root=0))

    def close(self):
        """Removes the hooks and ends the thread (once it has finished what
        it was given: a bucket other workers sum too)."""
        self._signals.unwatch(self._variables)
        self._signals.post(_STOP)


def _itemsize(array):
    import numpy as np  # pylint: disable=import-outside-toplevel
    try:
        return np.dtype(array.dtype).itemsize
    except TypeError:
        return 2  # float16/bfloat16 names numpy may lack
