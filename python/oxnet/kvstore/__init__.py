"""``mx.kv`` / ``mx.kvstore``: key-value stores that sum values pushed from
several devices and keep the parameters they update (MXNet 1.x's KVStore).

``create('local')``, ``create('device')`` and the other single-machine
names give a :class:`KVStore`; the distributed types (``dist_sync``,
``dist_device_sync``, ``dist``, ``horovod``) a :class:`DistKVStore` over
every worker of an MPI job (see :mod:`oxnet.kvstore.dist`). Stores written
in Python join through :meth:`KVStoreBase.register`.
"""

from .base import KVStoreBase, TestStore, create
from .kvstore import KVStore
from .dist import DistKVStore

__all__ = ["create", "KVStoreBase", "KVStore", "DistKVStore"]

from . import kvstore_server  # noqa: E402  (MXNet's module; its server is not offered)


def __getattr__(name):
    if name == "KVStoreServer":
        return kvstore_server.KVStoreServer  # raises: oxnet has no parameter servers
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
