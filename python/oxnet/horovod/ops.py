"""Horovod's collectives on NDArrays (``hvd.allreduce``, ``hvd.broadcast_``,
``hvd.allgather``, ...) and on Python objects, over
:mod:`oxnet.distributed`.

Every rank calls the same collectives in the same order. Collectives run
when called (there is no background queue): ``name`` and ``priority`` are
accepted and not needed. Before the data moves, the ranks compare what each
brings (shapes, dtypes, root rank) at the cost of one tiny all-reduce, so a
mismatch is an error naming the ranks on every rank, not a hang.
"""

import pickle
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray
from .basics import (Adasum, Average, Max, Min, Product, Sum, _OP_NAMES, _check_process_set, _comm,
                     global_process_set)

try:
    import cloudpickle as _pickler  # Horovod's choice: lambdas and local classes travel too
except ImportError:  # pragma: no cover - depends on the environment
    _pickler = pickle

__all__ = [
    "allreduce", "allreduce_", "grouped_allreduce", "grouped_allreduce_", "allgather", "grouped_allgather",
    "broadcast", "broadcast_", "alltoall", "reducescatter", "grouped_reducescatter", "broadcast_object",
    "allgather_object",
]

_NUMPY_REDUCE = {Min: np.min, Max: np.max, Product: np.prod}


# ----------------------------------------------------------------------
# shared checks


def _dtype_name(tensor):
    return np.dtype(tensor.dtype).name


def _check_tensor(tensor, what):
    if not isinstance(tensor, NDArray):
        raise TypeError(f"{what} takes an mx.nd.NDArray, got {type(tensor).__name__}")


def _layout(tensors):
    return [(tuple(t.shape), _dtype_name(t)) for t in tensors]


def _agree(comm, what, value):
    """The same ``value`` on every rank, or an MXNetError naming the ranks
    that differ (raised on every rank, so the job stays in step)."""
    if comm.size > 1:
        comm.agree(what, value)


def _check_root(root_rank, size, what):
    if isinstance(root_rank, bool) or not isinstance(root_rank, (int, np.integer)) or not 0 <= root_rank < size:
        raise MXNetError(f"{what}: root_rank={root_rank!r} is not a rank of this job (ranks 0..{size - 1})")
    return int(root_rank)


def _resolve_op(op, average, what, stacklevel=3):
    """Horovod's reading of ``op`` and the deprecated ``average``."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    elif average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning, stacklevel=stacklevel)
        op = Average if average else Sum
    else:
        op = Average
    if op == Adasum:
        raise ValueError(f"{what}: op=hvd.Adasum is not supported by Horovod's MXNet API (nor by oxnet.horovod); "
                         "use hvd.Average or hvd.Sum")
    if op not in _OP_NAMES:
        raise ValueError(f"{what}: unknown reduction op {op!r}; use hvd.Average, hvd.Sum, hvd.Min, hvd.Max or "
                         "hvd.Product")
    return op


def _reduce_(comm, tensors, op, prescale, postscale, what, check=True):
    """Reduces ``tensors`` in place over every rank (one fused transfer for
    Average and Sum)."""
    if check:
        _agree(comm, f"{what}: the shapes and dtypes of the tensors", _layout(tensors))
    if op in (Average, Sum):
        comm.allreduce_(tensors, average=op == Average, prescale=float(prescale), postscale=float(postscale))
        return
    for tensor in tensors:
        host = np.array(tensor.asnumpy())
        if prescale != 1.0:
            np.multiply(host, prescale, out=host, casting="unsafe")
        gathered = comm.allgather(nd.array(host.reshape(1, -1), dtype=host.dtype)).asnumpy()
        result = _NUMPY_REDUCE[op](gathered, axis=0).astype(host.dtype).reshape(host.shape)
        if postscale != 1.0:
            np.multiply(result, postscale, out=result, casting="unsafe")
        tensor[:] = nd.array(result, ctx=tensor.context, dtype=host.dtype)


# ----------------------------------------------------------------------
# all-reduce


def allreduce(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set, op=None):
    """Reduces ``tensor`` over every rank and returns the result as a new
    array (``tensor`` is not modified).

    ``op``: ``hvd.Average`` (the default), ``hvd.Sum``, ``hvd.Min``,
    ``hvd.Max`` or ``hvd.Product``; ``average`` (deprecated): True for
    Average, False for Sum. ``prescale_factor`` multiplies each rank's
    tensor before the reduction, ``postscale_factor`` the result after it.
    Every rank must give the same shape and dtype (an MXNetError names the
    ranks otherwise). ``name``/``priority`` are accepted for Horovod's
    signature.
    """
    del name, priority
    _check_tensor(tensor, "hvd.allreduce")
    return _allreduce_in_place(tensor.copy(), average, prescale_factor, postscale_factor, process_set, op,
                               "hvd.allreduce")


def allreduce_(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, op=None):
    """:func:`allreduce` in place: ``tensor`` receives the result and is returned."""
    del name, priority
    return _allreduce_in_place(tensor, average, prescale_factor, postscale_factor, process_set, op,
                               "hvd.allreduce_")


def _allreduce_in_place(tensor, average, prescale_factor, postscale_factor, process_set, op, what):
    """What :func:`allreduce` and :func:`allreduce_` share: checks, then the reduction into ``tensor``."""
    comm = _comm()
    _check_process_set(process_set, what)
    _check_tensor(tensor, what)
    op = _resolve_op(op, average, what, stacklevel=4)  # the warning names the user's call
    _reduce_(comm, [tensor], op, prescale_factor, postscale_factor, what)
    return tensor


def grouped_allreduce(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set, op=None):
    """:func:`allreduce` of a list of tensors in one transfer: returns a
    list of new arrays (the inputs are not modified). Tensors are matched
    between ranks by their position in the list."""
    del name, priority
    what = "hvd.grouped_allreduce"
    comm = _comm()
    _check_process_set(process_set, what)
    tensors = list(tensors)
    for t in tensors:
        _check_tensor(t, what)
    op = _resolve_op(op, average, what)
    outputs = [t.copy() for t in tensors]
    if outputs:
        _reduce_(comm, outputs, op, prescale_factor, postscale_factor, what)
    return outputs


def grouped_allreduce_(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, op=None):
    """:func:`grouped_allreduce` in place: each tensor receives its result;
    returns ``tensors``."""
    del name, priority
    what = "hvd.grouped_allreduce_"
    comm = _comm()
    _check_process_set(process_set, what)
    for t in tensors:
        _check_tensor(t, what)
    op = _resolve_op(op, average, what)
    if tensors:
        _reduce_(comm, list(tensors), op, prescale_factor, postscale_factor, what)
    return tensors


# ----------------------------------------------------------------------
# all-gather, broadcast, all-to-all, reduce-scatter


def allgather(tensor, name=None, priority=0, process_set=global_process_set):
    """Every rank's ``tensor`` concatenated along the first dimension, in
    rank order, as a new array. The first dimensions may differ between
    ranks; the other dimensions and the dtype must agree (an MXNetError
    names the rank otherwise)."""
    del name, priority
    what = "hvd.allgather"
    comm = _comm()
    _check_process_set(process_set, what)
    _check_tensor(tensor, what)
    return comm.allgather(tensor)


def grouped_allgather(tensors, name=None, priority=0, process_set=global_process_set):
    """:func:`allgather` of each tensor of a list; returns the list of results."""
    del name, priority
    what = "hvd.grouped_allgather"
    comm = _comm()
    _check_process_set(process_set, what)
    for t in tensors:
        _check_tensor(t, what)
    _agree(comm, f"{what}: the number of tensors", len(tensors))
    return [comm.allgather(t) for t in tensors]


def broadcast(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """Rank ``root_rank``'s ``tensor``, as a new array on every rank
    (``tensor`` is not modified). Every rank must give the same root, shape
    and dtype (an MXNetError names the ranks otherwise)."""
    del name, priority
    what = "hvd.broadcast"
    comm = _comm()
    _check_process_set(process_set, what)
    _check_tensor(tensor, what)
    output = tensor.copy()
    _broadcast_(comm, [output], root_rank, what)
    return output


def broadcast_(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """:func:`broadcast` in place: ``tensor`` receives rank ``root_rank``'s
    values and is returned."""
    del name, priority
    what = "hvd.broadcast_"
    comm = _comm()
    _check_process_set(process_set, what)
    _check_tensor(tensor, what)
    _broadcast_(comm, [tensor], root_rank, what)
    return tensor


def _broadcast_(comm, tensors, root_rank, what, names=None):
    """Overwrites ``tensors`` with the root's after checking that every
    rank gives the same root and layout (``names`` go into the check)."""
    layout = _layout(tensors) if names is None else list(zip(names, _layout(tensors)))
    _agree(comm, f"{what}: the root rank and the shapes and dtypes of the tensors", (root_rank, layout))
    root = _check_root(root_rank, comm.size, what)
    if comm.size > 1 and tensors:
        comm.broadcast_(tensors, root=root)


def alltoall(tensor, splits=None, name=None, priority=0, process_set=global_process_set):
    """Sends slices of ``tensor`` (along the first dimension) to every rank
    and returns the slices every rank sent to this one, concatenated in
    rank order.

    ``splits``: how many rows go to each rank, in rank order (a list or an
    integer NDArray summing to the first dimension); None splits the first
    dimension evenly (it must divide by the number of ranks). With
    ``splits`` the result is ``(output, received_splits)``, the second an
    int32 array of the rows received from each rank. (Every rank receives
    the whole data of every rank and keeps its part: simple, not the
    fewest bytes.)
    """
    del name, priority
    what = "hvd.alltoall"
    comm = _comm()
    _check_process_set(process_set, what)
    _check_tensor(tensor, what)
    given = splits is not None
    if given:
        raw = splits.asnumpy() if isinstance(splits, NDArray) else np.asarray(splits)
        splits = [int(s) for s in raw.reshape(-1)]
    n = comm.size
    meta = comm.allgather_object((tuple(tensor.shape), _dtype_name(tensor), splits))
    plan = _alltoall_plan(meta, n, what)
    gathered = comm.allgather(tensor).asnumpy() if n > 1 else tensor.asnumpy()
    me = comm.rank
    pieces, base = [], 0
    for (shape, _, _), sizes in zip(meta, plan):
        start = base + sum(sizes[:me])
        pieces.append(gathered[start:start + sizes[me]])
        base += shape[0]
    output = nd.array(np.concatenate(pieces), ctx=tensor.context, dtype=_dtype_name(tensor))
    if given:
        return output, nd.array([sizes[me] for sizes in plan], dtype="int32")
    return output


def _alltoall_plan(meta, n, what):
    """Every rank's row counts per destination, checked the same way on
    every rank (so a bad split is an error everywhere, not a hang)."""
    shape0, dtype0, _ = meta[0]
    plan = []
    for r, (shape, dtype, sizes) in enumerate(meta):
        if not shape:
            raise MXNetError(f"{what}: rank {r} gives a scalar; alltoall splits the first dimension")
        if shape[1:] != shape0[1:] or dtype != dtype0:
            raise MXNetError(f"{what}: rank {r} gives shape (*, {shape[1:]}) {dtype}, rank 0 (*, {shape0[1:]}) "
                             f"{dtype0}; all but the first dimension must agree")
        if sizes is None:
            if shape[0] % n:
                raise MXNetError(f"{what}: rank {r}'s first dimension {shape[0]} does not split evenly over {n} "
                                 "ranks; pass splits=")
            sizes = [shape[0] // n] * n
        elif len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != shape[0]:
            raise MXNetError(f"{what}: rank {r}'s splits {sizes} must be {n} non-negative counts summing to its "
                             f"first dimension {shape[0]}")
        plan.append(sizes)
    return plan


def _scatter_rows(rows, rank, size):
    """Horovod's share of ``rows`` for ``rank``: the first ``rows % size``
    ranks get one row more."""
    small, extra = divmod(rows, size)
    start = rank * small + min(rank, extra)
    return start, start + small + (1 if rank < extra else 0)


def reducescatter(tensor, op=Average, name=None, priority=0, process_set=global_process_set, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces ``tensor`` over every rank (``op``: ``hvd.Average`` or
    ``hvd.Sum``) and returns this rank's share of the rows: the first
    dimension is divided over the ranks, the first ``rows % size`` ranks
    getting one row more."""
    return grouped_reducescatter([tensor], op, name, priority, process_set, prescale_factor, postscale_factor)[0]


def grouped_reducescatter(tensors, op=Average, name=None, priority=0, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """:func:`reducescatter` of each tensor of a list, in one transfer."""
    del name, priority
    what = "hvd.reducescatter"
    comm = _comm()
    _check_process_set(process_set, what)
    if op not in (Average, Sum):
        raise ValueError(f"{what}: op must be hvd.Average or hvd.Sum, got {_OP_NAMES.get(op, op)!r}")
    for t in tensors:
        _check_tensor(t, what)
        if not tuple(t.shape):
            raise ValueError("reducescatter does not support scalar inputs")
    reduced = [t.copy() for t in tensors]
    if reduced:
        _reduce_(comm, reduced, op, prescale_factor, postscale_factor, what)
    out = []
    for t in reduced:
        start, stop = _scatter_rows(t.shape[0], comm.rank, comm.size)
        out.append(nd.array(t.asnumpy()[start:stop], ctx=t.context, dtype=_dtype_name(t)))
    return out


# ----------------------------------------------------------------------
# Python objects


def _dumps(obj):
    """``("ok", bytes)``, or ``("error", message)`` when ``obj`` cannot be
    pickled (sent instead, so no rank waits for ever)."""
    try:
        return ("ok", _pickler.dumps(obj))
    except Exception as e:  # pylint: disable=broad-except
        return ("error", f"{type(obj).__name__} cannot be pickled: {e}")


def broadcast_object(obj, root_rank=0, name=None):
    """Rank ``root_rank``'s ``obj`` (any picklable value; with cloudpickle
    installed also lambdas and local classes) on every rank. The root gets
    its own object back. ``name`` is accepted for Horovod's signature."""
    del name
    what = "hvd.broadcast_object"
    comm = _comm()
    _agree(comm, f"{what}: the root rank", root_rank)
    root = _check_root(root_rank, comm.size, what)
    if comm.size == 1:
        return obj
    status, payload = comm.broadcast_object(_dumps(obj) if comm.rank == root else None, root=root)
    if status != "ok":
        raise MXNetError(f"{what}: rank {root}'s object: {payload}")
    return obj if comm.rank == root else pickle.loads(payload)


def allgather_object(obj, name=None):
    """Every rank's ``obj`` (picklable), as a list in rank order. ``name``
    is accepted for Horovod's signature."""
    del name
    what = "hvd.allgather_object"
    comm = _comm()
    if comm.size == 1:
        return [obj]
    gathered = comm.allgather_object(_dumps(obj))
    for r, (status, payload) in enumerate(gathered):
        if status != "ok":
            raise MXNetError(f"{what}: rank {r}'s object: {payload}")
    return [obj if r == comm.rank else pickle.loads(p) for r, (_, p) in enumerate(gathered)]
