"""``mx.kv`` / ``mx.kvstore``: key-value stores that sum values pushed from
several devices and keep the parameters they update (MXNet 1.x's KVStore).

One process only: ``create('local')``, ``create('device')`` and the other
single-machine names give a :class:`KVStore`; the distributed types
(``dist_sync``, ``dist_async``, ``dist_device_sync``, ...) raise an MXNetError
until oxnet's data-parallel work brings them. Stores written in Python join
through :meth:`KVStoreBase.register`.
"""

from .base import KVStoreBase, TestStore, create
from .kvstore import KVStore

__all__ = ["create", "KVStoreBase", "KVStore"]
