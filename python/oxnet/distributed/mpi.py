"""The MPI communicator (through ``mpi4py``).

Arrays on the host that are contiguous are handed to MPI as zero-copy
numpy views of their memory; others (strided, on a GPU, or float16/bfloat16,
which MPI cannot sum) travel through a host copy. Small arrays are packed
into one buffer per all-reduce, up to ``OXNET_FUSION_THRESHOLD`` bytes
(64 MiB by default, as Horovod's; ``0`` sends each array by itself): one
message of many gradients costs one latency instead of many.

A list of contiguous host arrays of one dtype, together within the
threshold, is packed and unpacked by the engine in one call each.

On an unhandled exception a rank prints it with its rank and aborts the
whole job (``MPI_Abort``), so the other ranks never wait for it for ever.
"""

import hashlib
import os
import pickle
import sys

import numpy as np

from .. import _oxnet
from ..base import MXNetError
from . import MPI_PACKAGES, Communicator, _check_root

__all__ = ["MPICommunicator", "fusion_threshold"]

# numpy type strings of the dtypes MPI sums as they are
_NATIVE = {"<f4", "<f8", "|i1", "|u1", "<i4", "<i8"}


def fusion_threshold():
    """The largest fused all-reduce buffer in bytes (``OXNET_FUSION_THRESHOLD``)."""
    raw = os.environ.get("OXNET_FUSION_THRESHOLD", str(64 * 1024 * 1024))
    try:
        value = int(raw)
    except ValueError:
        raise MXNetError(f"OXNET_FUSION_THRESHOLD={raw!r}: expected a number of bytes") from None
    if value < 0:
        raise MXNetError(f"OXNET_FUSION_THRESHOLD={raw!r}: must not be negative")
    return value


def _load_mpi():
    try:
        import mpi4py  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise MXNetError(f"this process was started by an MPI launcher, but mpi4py is not installed: "
                         f"{MPI_PACKAGES}") from e
    # a communication thread may call MPI while the main thread does too
    mpi4py.rc.thread_level = "multiple"
    try:
        from mpi4py import MPI  # pylint: disable=import-outside-toplevel
    except (ImportError, RuntimeError, OSError) as e:
        raise MXNetError(f"mpi4py could not load an MPI library ({e}): {MPI_PACKAGES}") from e
    return MPI


#: arrays of at least this many elements skip the fusion buffer in
#: ``allreduce_into`` (256 KiB of float32: packing them would copy more than
#: one MPI call costs)
OWN_MEMORY_ELEMENTS = 65536


def _dtype_name(arr):
    dt = arr.dtype
    return dt if isinstance(dt, str) else np.dtype(dt).name


class _Interface:
    """Hands numpy an ``__array_interface__`` already read (reading it from
    the array costs a call into the engine)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, face):
        self.__array_interface__ = face


def _host_view(arr):
    """A writable numpy view of ``arr``'s memory, or None where there is none
    (GPU, strided, read-only, or a dtype MPI cannot sum)."""
    try:
        face = arr.__array_interface__
    except Exception:  # pylint: disable=broad-except  (a GPU array, a dtype numpy lacks)
        return None
    if face["typestr"] not in _NATIVE or face["strides"] is not None or face["data"][1]:
        return None
    return np.asarray(_Interface(face))


class _Work:
    """One array on its way through a collective: the numpy buffer MPI
    reads and writes, and how the result returns to the array."""

    __slots__ = ("array", "buf", "copied")

    def __init__(self, array):
        self.array = array
        view = _host_view(array)
        self.copied = view is None
        if view is None:
            name = _dtype_name(array)
            wide = "float32" if name in ("float16", "bfloat16") else None
            src = array.astype(wide) if wide else array
            view = np.ascontiguousarray(src.asnumpy())
        self.buf = view

    def finish(self):
        if self.copied:
            from .. import ndarray as nd  # pylint: disable=import-outside-toplevel
            self.array[:] = nd.array(self.buf, ctx=self.array.context, dtype=self.buf.dtype)


def _scale(buf, factor):
    if factor != 1.0:
        np.multiply(buf, factor, out=buf, casting="unsafe")


class MPICommunicator(Communicator):
    """Collectives over ``MPI.COMM_WORLD``."""

    kind = "mpi"

    def __init__(self):
        self._mpi = _load_mpi()
        mpi = self._mpi
        self._comm = mpi.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        local = self._comm.Split_type(mpi.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = local.Get_rank()
        self.local_size = local.Get_size()
        local.Free()
        self.thread_multiple = mpi.Query_thread() >= mpi.THREAD_MULTIPLE
        self._fusion = {}  # dtype -> the reused fusion buffer
        self._last_agreed = None  # (value, digest) of the last agree: a training loop repeats it
        self._install_abort_on_error()

    def duplicate(self):
        """A communicator over the same ranks with its own MPI communicator
        (``MPI_Comm_dup``: a collective, every rank calls it together) and
        fusion buffers: a communication thread's collectives on it never
        match the main thread's."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._comm = self._comm.Dup()
        other._fusion = {}
        other._last_agreed = None
        return other

    def _install_abort_on_error(self):
        previous = sys.excepthook
        comm, rank, size = self._comm, self.rank, self.size

        def abort_job(kind, value, tb):
            sys.stderr.write(f"oxnet: rank {rank} of {size} failed with the error below; aborting every rank\n")
            previous(kind, value, tb)
            sys.stderr.flush()
            comm.Abort(1)

        sys.excepthook = abort_job

    # ------------------------------------------------------------------
    # arrays

    def allreduce_(self, arrays, average=False, prescale=1.0, postscale=1.0):
        arrays = list(arrays)
        if not arrays:
            return
        post = float(postscale) / self.size if average else float(postscale)
        if self._allreduce_packed(arrays, float(prescale), post):
            return
        work = [_Work(a) for a in arrays]
        for w in work:
            _scale(w.buf, float(prescale))
        for bucket in self._buckets(work):
            self._allreduce_bucket(bucket)
        for w in work:
            _scale(w.buf, post)
            w.finish()

    def allreduce_into(self, sources, outs):
        """Large arrays (:data:`OWN_MEMORY_ELEMENTS` and more) go from their
        source to their output in one MPI call each (no copies); the others
        travel packed in the fusion buffer."""
        sources, outs = list(sources), list(outs)
        if len(sources) != len(outs):
            raise MXNetError(f"allreduce_into: {len(sources)} sources for {len(outs)} outputs")
        small_sources, small_outs = [], []
        for src, dst in zip(sources, outs):
            if src.size >= OWN_MEMORY_ELEMENTS:
                send, recv = _host_view(src), _host_view(dst)
                if send is not None and recv is not None and send.dtype == recv.dtype and send.shape == recv.shape:
                    self._comm.Allreduce(send, recv, op=self._mpi.SUM)
                    continue
            small_sources.append(src)
            small_outs.append(dst)
        if not small_sources or self._allreduce_packed(small_sources, 1.0, 1.0, outs=small_outs):
            return
        super().allreduce_into(small_sources, small_outs)

    def _allreduce_packed(self, arrays, prescale, post, outs=None):
        """The common case in one pass through the engine: every array a
        contiguous host array of the first one's dtype (one MPI sums), all
        together within the fusion threshold. Packs them into the fusion
        buffer, reduces, unpacks (into ``outs`` when given, which must match
        the arrays); False (nothing done) otherwise."""
        try:
            typestr = arrays[0].__array_interface__["typestr"]
        except Exception:  # pylint: disable=broad-except  (a GPU array, a dtype numpy lacks)
            return False
        if typestr not in _NATIVE or len(arrays) < 2:
            return False
        nbytes = _oxnet.packed_size(arrays, typestr)
        if nbytes is None or nbytes > fusion_threshold():
            return False
        if outs is not None and _oxnet.packed_size(outs, typestr) != nbytes:
            return False
        dtype = np.dtype(typestr)
        buf = self._fusion_buffer(dtype, nbytes // dtype.itemsize)
        address = buf.__array_interface__["data"][0]
        _oxnet.pack_host(arrays, typestr, address, nbytes, False)
        _scale(buf, prescale)
        self._comm.Allreduce(self._mpi.IN_PLACE, buf, op=self._mpi.SUM)
        _scale(buf, post)
        _oxnet.pack_host(arrays if outs is None else outs, typestr, address, nbytes, True)
        return True

    def _buckets(self, work):
        """Groups of same-dtype buffers, each at most the fusion threshold
        in bytes (a larger buffer goes alone)."""
        limit = fusion_threshold()
        open_buckets = {}
        for w in work:
            key = w.buf.dtype
            bucket, size = open_buckets.get(key, ([], 0))
            if bucket and (limit == 0 or size + w.buf.nbytes > limit):
                yield bucket
                bucket, size = [], 0
            bucket.append(w)
            open_buckets[key] = (bucket, size + w.buf.nbytes)
        for bucket, _ in open_buckets.values():
            if bucket:
                yield bucket

    def _allreduce_bucket(self, bucket):
        mpi = self._mpi
        if len(bucket) == 1:
            self._comm.Allreduce(mpi.IN_PLACE, bucket[0].buf, op=mpi.SUM)
            return
        total = sum(w.buf.size for w in bucket)
        packed = self._fusion_buffer(bucket[0].buf.dtype, total)
        offset = 0
        for w in bucket:
            packed[offset:offset + w.buf.size] = w.buf.reshape(-1)
            offset += w.buf.size
        self._comm.Allreduce(mpi.IN_PLACE, packed, op=mpi.SUM)
        offset = 0
        for w in bucket:
            n = w.buf.size
            w.buf.reshape(-1)[...] = packed[offset:offset + n]
            offset += n

    def _fusion_buffer(self, dtype, n):
        """A reused buffer of at least ``n`` elements of ``dtype`` (MPI moves a
        buffer it has seen before several times faster than a fresh one)."""
        buf = self._fusion.get(dtype)
        if buf is None or buf.size < n:
            buf = np.empty(max(n, 1024), dtype=dtype)
            self._fusion[dtype] = buf
        return buf[:n]

    def broadcast_(self, arrays, root=0):
        _check_root(root, self.size)
        for a in arrays:
            w = _Work(a)
            self._comm.Bcast(w.buf, root=root)
            w.finish()

    def allgather(self, array):
        from .. import ndarray as nd  # pylint: disable=import-outside-toplevel
        shape = tuple(array.shape)
        meta = self._comm.allgather((shape[1:], _dtype_name(array), shape[0] if shape else 1))
        rest, dtype = meta[0][0], meta[0][1]
        for r, (other_rest, other_dtype, _) in enumerate(meta):
            if (other_rest, other_dtype) != (rest, dtype):
                raise MXNetError(f"allgather: rank {r} gives shape (*, {other_rest}) {other_dtype}, rank 0 "
                                 f"(*, {rest}) {dtype}; all but the first dimension must agree")
        w = _Work(array)
        src = w.buf.reshape(-1)
        per_row = int(np.prod(rest)) if rest else 1
        counts = [n * per_row for _, _, n in meta]
        out = np.empty(sum(counts), dtype=src.dtype)
        self._comm.Allgatherv(src, [out, counts])
        rows = sum(n for _, _, n in meta)
        result = out.reshape((rows,) + tuple(rest)) if shape else out
        return nd.array(result, ctx=array.context, dtype=dtype)

    def agree(self, what, value):
        digest = self._digest(value)
        mine = np.frombuffer(digest, dtype=np.int64) >> 1  # halved: negating cannot overflow
        signs = np.concatenate([mine, -mine])
        self._comm.Allreduce(self._mpi.IN_PLACE, signs, op=self._mpi.MAX)
        if (signs[:2] != mine).any() or (-signs[2:] != mine).any():
            self.check_same(what, value)  # every rank saw the mismatch: name it
            raise MXNetError(f"{what} differs between ranks")  # equal values, unequal pickles

    def _digest(self, value):
        """A 16-byte hash of ``value``; the last one is kept, since a
        training loop checks the same description every step (comparing
        it costs less than pickling and hashing it again)."""
        last = self._last_agreed
        try:
            if last is not None and type(last[0]) is type(value) and last[0] == value:
                return last[1]
        except Exception:  # pylint: disable=broad-except  (a value whose == is not a plain bool)
            pass
        digest = hashlib.blake2b(pickle.dumps(value, protocol=4), digest_size=16).digest()
        self._last_agreed = (value, digest)
        return digest

    # ------------------------------------------------------------------
    # objects and control

    def allgather_object(self, obj):
        return self._comm.allgather(obj)

    def broadcast_object(self, obj, root=0):
        _check_root(root, self.size)
        return self._comm.bcast(obj, root=root)

    def barrier(self):
        self._comm.Barrier()

    def abort(self, code=1):
        self._comm.Abort(code)
