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

from ..base import MXNetError
from .. import distributed
from .. import optimizer as opt
from .kvstore import KVStore

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
        self._type = name
        self._on_device = "device" in name

    def _init_pairs(self, pairs):
        super()._init_pairs(pairs)
        self._check_keys("init", [k for k, _ in pairs])
        self._comm.broadcast_([self._store[k] for k, _ in pairs], root=0)

    def _check_keys(self, op, keys):
        """Every worker gives the same keys (shapes, dtypes) in this call, or
        an error names the difference (MPI would hang or truncate)."""
        if self._comm.size > 1:
            layout = tuple((k, tuple(self._store[k].shape), str(self._store[k].dtype)) for k in keys)
            self._comm.agree(f"{op}: the keys (with shapes and dtypes) of this call", layout)

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
