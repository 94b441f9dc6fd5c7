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
