"""Start-up, shutdown and the job's geometry for :mod:`oxnet.horovod`
(Horovod's ``init``, ``size``, ``rank``, ... and its reduction-op and
process-set names).

The job is oxnet's communication layer: :func:`oxnet.distributed.world`,
MPI under a launcher (``mpirun``, ``python -m oxnet.tools.launch``), else a
world of one process.
"""

import importlib.util
import socket
import warnings

from .. import distributed

__all__ = [
    "init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank",
    "cross_rank", "is_homogeneous", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled",
    "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline",
    "stop_timeline", "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set",
]

#: the reduction operations, with Horovod's numeric values
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}

_NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."


class _State:
    """What :func:`init` learnt about the job (None before it)."""

    comm = None
    cross_rank = 0
    cross_size = 1
    homogeneous = True


_STATE = _State()


def _comm():
    """The communicator of an initialized job (a ValueError otherwise)."""
    comm = _STATE.comm
    if comm is None:
        raise ValueError(_NOT_INITIALIZED)
    return comm


class ProcessSet:
    """A set of ranks that runs collectives together (Horovod's
    ``hvd.ProcessSet``).

    oxnet runs every collective over the whole job: the global process set
    (:data:`global_process_set`), or a set naming every rank, is accepted
    where Horovod takes ``process_set=``; any smaller set is an error.
    """

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet should be initialized with a list of process ranks; oxnet.horovod does "
                             "not take MPI communicators") from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError(f"ProcessSet should be initialized with a list of process ranks, got {ranks!r}")
        self.ranks = ranks

    def _covers_job(self):
        return self is global_process_set or (self.ranks is not None and _STATE.comm is not None
                                               and self.ranks == list(range(_STATE.comm.size)))

    def size(self):
        """How many ranks the set holds (None for a set oxnet cannot run)."""
        if self is global_process_set or self.process_set_id == 0:
            return size()
        return None

    def rank(self):
        """This process's rank within the set (None for a set oxnet cannot run)."""
        if self is global_process_set or self.process_set_id == 0:
            return rank()
        return None

    def included(self):
        """Whether this process belongs to the set."""
        if self is global_process_set:
            return True
        return rank() in (self.ranks or [])

    def __str__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm={self.mpi_comm})"


#: every rank of the job (the only process set oxnet runs)
global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _check_process_set(process_set, what):
    """Accepts the global set (or one naming every rank); anything else is a
    ValueError saying oxnet has no sub-job collectives."""
    if process_set is None or process_set is global_process_set:
        return
    if isinstance(process_set, ProcessSet) and process_set._covers_job():
        return
    ranks = getattr(process_set, "ranks", process_set)
    raise ValueError(f"{what}: process_set={ranks!r}: oxnet.horovod runs collectives over every rank of the job "
                     "only (hvd.global_process_set); process sets over a subset of the ranks are not supported")


def add_process_set(process_set):
    """Horovod's dynamic process sets: a set naming every rank is accepted
    (and is the global set); a subset is a ValueError."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    _comm()
    _check_process_set(process_set, "hvd.add_process_set")
    process_set.process_set_id = 0
    return process_set


def remove_process_set(process_set):
    """Returns False: the global process set is never removed (and no other exists)."""
    del process_set
    return False


def init(comm=None, process_sets=None):
    """Starts Horovod: joins this process to the job (every process of the
    job calls it). Calling it again does nothing.

    ``comm``: None (the whole job), a list of every rank, or an mpi4py
    communicator over the whole job (``MPI.COMM_WORLD``); ``process_sets``:
    None, ``'dynamic'`` or sets naming every rank (oxnet has no collectives
    over part of the job).
    """
    if _STATE.comm is not None:
        return
    world = distributed.world()
    if comm is not None:
        _check_init_comm(comm, world)
    if process_sets not in (None, "dynamic"):
        for ps in process_sets:
            ranks = getattr(ps, "ranks", ps)
            if sorted(ranks) != list(range(world.size)):
                raise ValueError(f"hvd.init: process set {ranks!r}: oxnet.horovod runs collectives over every rank "
                                 "of the job only; process sets over a subset of the ranks are not supported")
            if isinstance(ps, ProcessSet):
                ps.process_set_id = 0  # the same ranks as the global set
    # Horovod's cross communicator: the ranks sharing this one's local rank, one per machine
    info = world.allgather_object((world.local_rank, world.local_size, socket.gethostname()))
    peers = [r for r, (lr, _, _) in enumerate(info) if lr == world.local_rank]
    _STATE.cross_size = len(peers)
    _STATE.cross_rank = peers.index(world.rank)
    _STATE.homogeneous = len({ls for _, ls, _ in info}) == 1
    global_process_set.ranks = list(range(world.size))
    _STATE.comm = world


def _check_init_comm(comm, world):
    if isinstance(comm, (list, tuple, range)):
        if sorted(comm) != list(range(world.size)):
            raise ValueError(f"hvd.init(comm={list(comm)!r}): oxnet.horovod runs over every rank of the job "
                             f"(0..{world.size - 1}); a subset of the ranks is not supported")
        return
    try:
        from mpi4py import MPI  # pylint: disable=import-outside-toplevel
    except ImportError:
        MPI = None
    if MPI is not None and isinstance(comm, MPI.Comm):
        if world.kind == "mpi" and MPI.Comm.Compare(comm, MPI.COMM_WORLD) in (MPI.IDENT, MPI.CONGRUENT):
            return
        if world.kind != "mpi" and comm.Get_size() == 1:
            return
        raise ValueError("hvd.init(comm=...): oxnet.horovod runs over MPI.COMM_WORLD only; a communicator over "
                         "part of the job is not supported")
    raise ValueError(f"hvd.init: comm must be None, a list of ranks or an mpi4py communicator, got "
                     f"{type(comm).__name__}")


def shutdown():
    """Leaves the job: later calls need :func:`init` again. (MPI itself
    stays up until the process ends, as other oxnet parts may use it.)"""
    _STATE.comm = None


def is_initialized():
    """Whether :func:`init` was called (and :func:`shutdown` not since)."""
    return _STATE.comm is not None


def size():
    """How many processes (ranks) the job has."""
    return _comm().size


def local_size():
    """How many of the job's processes run on this machine."""
    return _comm().local_size


def rank():
    """This process's rank in ``[0, size())``."""
    return _comm().rank


def local_rank():
    """This process's rank among those on its machine (use it to pick a GPU)."""
    return _comm().local_rank


def cross_size():
    """How many processes share this one's local rank: the number of
    machines, on a job with as many processes on each."""
    _comm()
    return _STATE.cross_size


def cross_rank():
    """This process's rank among those sharing its local rank (the index
    of its machine, on a job with as many processes on each)."""
    _comm()
    return _STATE.cross_rank


def is_homogeneous():
    """Whether every machine runs as many processes."""
    _comm()
    return _STATE.homogeneous


def mpi_threads_supported():
    """Whether MPI was started with ``MPI_THREAD_MULTIPLE`` (so other code
    may call MPI too). False in a world of one process, which has no MPI."""
    comm = _comm()
    return bool(getattr(comm, "thread_multiple", False))


def mpi_enabled():
    """Whether the job runs over MPI (started by a launcher and initialized)."""
    return _STATE.comm is not None and _STATE.comm.kind == "mpi"


def mpi_built():
    """Whether MPI is available to oxnet (``mpi4py`` is installed)."""
    return importlib.util.find_spec("mpi4py") is not None


def gloo_enabled():
    """False: oxnet has no Gloo transport."""
    return False


def gloo_built():
    """False: oxnet has no Gloo transport."""
    return False


def nccl_built():
    """0 (Horovod's NCCL version code): oxnet reduces over MPI, through the
    host for GPU arrays; averaging is done in the framework, as Horovod does
    without NCCL."""
    return 0


def ddl_built():
    """False: oxnet has no IBM DDL transport."""
    return False


def ccl_built():
    """False: oxnet has no oneCCL transport."""
    return False


def cuda_built():
    """False: collectives do not run on the GPU (GPU arrays travel through
    host memory, and work)."""
    return False


def rocm_built():
    """False: oxnet has no ROCm transport."""
    return False


def start_timeline(file_path, mark_cycles=False):
    """Accepted for compatibility: oxnet records no Horovod timeline (a
    warning says so)."""
    del mark_cycles
    _comm()
    warnings.warn(f"hvd.start_timeline({file_path!r}): oxnet.horovod records no timeline", stacklevel=2)


def stop_timeline():
    """Accepted for compatibility (see :func:`start_timeline`)."""
    _comm()
