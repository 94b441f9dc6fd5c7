"""``DistKVStore``: the distributed key-value store (MXNet's ``dist_sync``,
``dist_sync_device``, ``dist_device_sync``, ``dist``; ``horovod`` as MXNet 2
names it), on oxnet's communication layer (:mod:`oxnet.distributed`, MPI).

MXNet kept the values on parameter servers; here every worker keeps a full
copy and the copies stay equal: ``init`` and ``broadcast`` take rank 0's
value, ``push`` sums the arrays given for a key over this worker's devices
and then over all workers (one fused all-reduce per call), and either
overwrites the stored value with the sum or, with an optimizer, applies the
same update on every worker, which is what MXNet's servers computed.
Every worker must push the same keys in the same order (as MXNet's
synchronous mode needs); each call checks that with one 32-byte all-reduce
of a hash and names the difference instead of hanging. A call with many
keys travels as one fused all-reduce (``gluon.Trainer`` pushes all its
parameters in one call).

``dist_async`` is not offered: asynchronous updates need a server that
applies each worker's gradient as it arrives, which MPI's collectives do
not give; ``dist_sync`` trains to the same result as one process on the
whole batch.
"""

import numpy as np

from .. import _oxnet
from .. import distributed
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from .kvstore import KVStore
from .overlap import GradientOverlap, overlap_enabled

__all__ = ["DistKVStore", "DIST_TYPES"]

#: the distributed type names oxnet answers to
DIST_TYPES = ("dist", "dist_sync", "dist_sync_device", "dist_device_sync", "horovod")


class DistKVStore(KVStore):
    """A key-value store over every worker of the job (see the module).

    Made by ``mx.kv.create('dist_sync')`` and the other names of
    :data:`DIST_TYPES`; a type holding ``device`` keeps each value on the
    context of the array ``init`` gave, the others on the CPU. Started
    without a launcher, the job is one worker and the store behaves as a
    local one.
    """

    def __init__(self, kvstore_type="dist_sync"):
        name = kvstore_type.lower()
        if "async" in name:
            raise MXNetError(
                f"kvstore {name!r}: asynchronous training is not offered by oxnet. MXNet's dist_async applied each "
                "worker's gradient on a parameter server as it arrived; oxnet's distributed store runs on MPI "
                "collectives, which are synchronous. Use 'dist_sync' (or 'dist_device_sync'): it trains to the "
                "same parameters as one process on the whole batch")
        if name not in DIST_TYPES:
            raise MXNetError(f"kvstore {name!r}: unknown distributed type; oxnet has {', '.join(DIST_TYPES)}")
        self._comm = distributed.world()
        super().__init__("local")
        self._plan = None  # the steady path's last plan (see pushpull)
        self._type = name
        self._on_device = "device" in name

    def _init_pairs(self, pairs):
        super()._init_pairs(pairs)
        self._check_keys("init", [k for k, _ in pairs])
        self._comm.broadcast_([self._store[k] for k, _ in pairs], root=0)

    def _check_keys(self, op, keys, mode="checked per call"):
        """Every worker gives the same keys (shapes, dtypes) in this call, or
        an error names the difference (MPI would hang or truncate). ``mode``
        is part of what is compared: a worker on the steady path (checked
        once) and one checking every call would stop agreeing."""
        if self._comm.size > 1:
            layout = tuple((k, tuple(self._store[k].shape), str(self._store[k].dtype)) for k in keys) + (mode,)
            self._comm.agree(f"{op}: the keys (with shapes and dtypes) of this call", layout)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` (see :class:`KVStore`). The call a
        ``gluon.Trainer`` makes every step (all its keys, one array per key
        on this worker, an optimizer on the store) takes a steady path after
        its first time: the same key list and the same arrays are not parsed
        or checked again, the gradients are packed straight into the fused
        all-reduce and the sums unpacked into buffers the store keeps."""
        plan = self._steady_plan(key, value, out)
        if plan is None:
            super().pushpull(key, value, out=out, priority=priority)
            return
        if plan.overlap is not None:
            plan.overlap.finish()  # most buckets were summed during backward
        else:
            self._comm.allreduce_into(plan.grads, plan.sums)
        self._updater(plan.updater_keys, plan.sums, plan.weights)
        plan.copy_weights_out()

    def _steady_plan(self, key, value, out):
        """The steady path's plan for this call, or None for the general path."""
        if not (type(key) is list and type(value) is list and type(out) is list) \
                or self._compression is not None or not isinstance(self._updater, opt.Updater):
            return None
        plan = self._plan
        if plan is not None and plan.matches(key, value, out):
            return plan
        self._drop_plan()
        if not (len(value) == len(key) == len(out)
                and all(type(v) is list and len(v) == 1 and type(o) is list and len(o) == 1
                        for v, o in zip(value, out))):
            return None
        # the general checks, once
        vpairs = self._pairs("pushpull", key, value, "value")
        opairs = self._pairs("pushpull", key, out, "out")
        self._check_kind("pushpull", vpairs + opairs)
        if len(set(key)) != len(key):
            return None
        stored = [self._stored("pushpull", k) for k in key]
        shapes = self._shapes()
        self._check_shapes("pushpull", vpairs, shapes, "the value pushed")
        self._check_shapes("pushpull", opairs, shapes, "out")
        for (_, g), (_, o), w in zip(vpairs, opairs, stored):
            if g.dtype != w.dtype or o.dtype != w.dtype or g.context != w.context:
                return None
        plan = _StepPlan(key, [g for _, g in vpairs], [o for _, o in opairs], stored,
                         [self._updater_key(k) for k in key])
        # (gradients that fit one bucket gain nothing: it is summed at the step)
        layout = GradientOverlap.layout(plan.grads) if overlap_enabled(self._comm) else ()
        overlap = len(layout) > 1
        mode = ("checked once (steady)", overlap and layout)
        self._check_keys("push", list(key), mode=mode)
        if overlap:
            # the outs are the parameters (update on the store): their
            # gradients are announced by backward and summed as they come
            plan.overlap = GradientOverlap(self._comm, plan.outs, plan.grads, plan.sums)
        self._plan = plan
        return plan

    def _drop_plan(self):
        if self._plan is not None and self._plan.overlap is not None:
            self._plan.overlap.close()
        self._plan = None

    def _push_groups(self, groups):
        keys = list(groups)
        self._check_keys("push", keys)
        merged = [self._merge(k, groups[k], self._store[k]) for k in keys]
        self._comm.allreduce_(merged)
        if isinstance(self._updater, opt.Updater):
            # one call for every key: built-in optimizers update them all in
            # one pass through the engine (per key, the Python round trips
            # cost more than the all-reduce of a small network's gradients)
            self._updater([self._updater_key(k) for k in keys], merged, [self._store[k] for k in keys])
            return
        for key, total in zip(keys, merged):
            stored = self._store[key]
            if self._updater is None:
                self._store[key] = total
            else:
                self._updater(self._updater_key(key), total, stored)

    def _barrier(self):
        """Waits until every worker reaches this point (MXNet's name)."""
        self._comm.barrier()

    def barrier(self):
        """Waits until every worker reaches this point."""
        self._comm.barrier()

    @property
    def rank(self):
        """This worker's rank, in ``[0, num_workers)``."""
        return self._comm.rank

    @property
    def num_workers(self):
        """How many workers train together."""
        return self._comm.size

    def __repr__(self):
        return f"<DistKVStore {self._type!r}: worker {self.rank} of {self.num_workers}, {len(self._store)} keys>"


class _StepPlan:
    """What the steady path of :meth:`DistKVStore.pushpull` reuses between
    calls: the keys, the arrays of the call (by identity), the stored
    weights, one buffer per key for the summed gradient, the updater's keys,
    and a scratch buffer through which the small weights are copied out."""

    #: weights of at least this many elements are copied out one by one (one
    #: memory copy each); smaller ones together through the scratch buffer
    #: (two engine calls for all of them)
    LARGE = 65536

    def __init__(self, keys, grads, outs, weights, updater_keys):
        self.keys = list(keys)
        self.grads = grads
        self.outs = outs
        self.weights = weights
        self.sums = [nd.zeros(w.shape, ctx=w.context, dtype=w.dtype) for w in weights]
        self.updater_keys = updater_keys
        self.large = [(w, o) for w, o in zip(weights, outs) if w.size >= self.LARGE]
        small = [(w, o) for w, o in zip(weights, outs) if w.size < self.LARGE]
        self.small_weights = [w for w, _ in small]
        self.small_outs = [o for _, o in small]
        self.overlap = None  # a GradientOverlap summing the gradients while backward runs
        self.packed = None  # (typestr, scratch, address, nbytes) once the small ones are known to pack
        if len(small) > 1:
            try:
                typestr = self.small_weights[0].__array_interface__["typestr"]
            except Exception:  # pylint: disable=broad-except  (a GPU array, a dtype numpy lacks)
                typestr = None
            nbytes = _oxnet.packed_size(self.small_weights, typestr) if typestr else None
            if nbytes is not None and _oxnet.packed_size(self.small_outs, typestr) == nbytes:
                scratch = np.empty(nbytes, dtype=np.uint8)
                self.packed = (typestr, scratch, scratch.__array_interface__["data"][0], nbytes)

    def matches(self, key, value, out):
        """Whether a call passes the same keys and the very same arrays."""
        if key != self.keys or len(value) != len(self.grads) or len(out) != len(self.outs):
            return False
        for v, g in zip(value, self.grads):
            if type(v) is not list or len(v) != 1 or v[0] is not g:
                return False
        for o, a in zip(out, self.outs):
            if type(o) is not list or len(o) != 1 or o[0] is not a:
                return False
        return True

    def copy_weights_out(self):
        """Copies every stored weight into the array the call pulls it to."""
        for w, o in self.large:
            w.copyto(o)
        if self.packed is not None:
            typestr, _, address, nbytes = self.packed
            _oxnet.pack_host(self.small_weights, typestr, address, nbytes, False)
            _oxnet.pack_host(self.small_outs, typestr, address, nbytes, True)
        else:
            for w, o in zip(self.small_weights, self.small_outs):
                w.copyto(o)
