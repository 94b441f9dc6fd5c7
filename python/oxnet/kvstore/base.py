"""The key-value store interface (``KVStoreBase``), its registry of stores
written in Python, and :func:`create`."""

import warnings

from ..base import MXNetError
from ..ndarray import NDArray

__all__ = ["create", "KVStoreBase"]


class KVStoreBase:
    """The interface of a key-value store for data-parallel training.

    Subclasses implement the methods below; :meth:`register` makes one
    available to :func:`create` under its lower-cased class name.
    """

    #: the capability :meth:`is_capable` answers for: updating with an optimizer
    OPTIMIZER = "optimizer"

    #: registered stores, by lower-cased class name
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Stores ``value`` (rank 0's) under ``key`` and writes it into each of ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Sums ``value`` (one array per device) under ``key`` and writes the
        result into ``out`` (into ``value`` when ``out`` is None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Makes the store update its values with ``optimizer``."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (e.g. :attr:`OPTIMIZER`)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the optimizer's states to the file ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Reads optimizer states written by :meth:`save_optimizer_states`."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type name."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank, in ``[0, num_workers)``."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """How many workers share the store."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator: makes ``klass`` available as
        ``mx.kv.create(klass.__name__.lower())``. Registering a name again
        warns and replaces the earlier class."""
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register takes a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding existing "
                          f"kvstore {old.__module__}.{old.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store for tests, as in MXNet: ``pushpull`` sums the given arrays,
    ``broadcast`` copies; nothing is kept and there is no optimizer."""

    def broadcast(self, key, value, out, priority=0):
        """Copies ``value`` into each of ``out``."""
        for o in _as_list(out):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        """Writes the sum of ``value`` (an array or a list of arrays) into
        ``out``, or into every array of ``value`` when ``out`` is None."""
        if isinstance(value, NDArray):
            if out is not None:
                for o in _as_list(out):
                    o[:] = value
            return
        values = list(value)
        if not values:
            raise MXNetError(f"pushpull: no values given for key {key!r}")
        ctx = values[0].context
        total = values[0].copyto(ctx)
        for v in values[1:]:
            total += v.as_in_context(ctx)
        for o in (values if out is None else _as_list(out)):
            o[:] = total.as_in_context(o.context)

    @staticmethod
    def is_capable(capability):
        """False for :attr:`KVStoreBase.OPTIMIZER`; any other capability is a ValueError."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self):
        """``'teststore'``."""
        return "teststore"

    @property
    def rank(self):
        """0: one worker."""
        return 0

    @property
    def num_workers(self):
        """1: one worker."""
        return 1


def create(name="local"):
    """A new key-value store of type ``name`` (case does not matter).

    A name registered with :meth:`KVStoreBase.register` gives that class.
    Otherwise the store is a single-process :class:`~oxnet.kvstore.KVStore`:
    ``'local'`` keeps the values on the CPU, ``'device'`` (any name holding
    ``device``) next to the values pushed; ``local_allreduce_cpu``,
    ``local_allreduce_device`` and ``local_update_cpu`` are accepted as in
    MXNet, and any other name is a local store of that type, as MXNet does.

    Names holding ``dist`` (``dist_sync``, ``dist_device_sync``, ``dist``,
    ...) and ``horovod`` give a :class:`~oxnet.kvstore.dist.DistKVStore`
    over every worker of the job (MPI; a world of one without a launcher);
    ``dist_async`` raises an MXNetError saying why it is not offered.
    ``nccl`` raises too: oxnet has no NCCL. A name that is not a string is
    a TypeError.
    """
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if "dist" in name or name == "horovod":
        from .dist import DistKVStore
        return DistKVStore(name)
    if "nccl" in name:
        raise MXNetError(f"kvstore {name!r}: oxnet is built without NCCL; use 'device' or 'local'")
    from .kvstore import KVStore
    return KVStore(name)
