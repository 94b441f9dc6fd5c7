"""How a module updates its parameters: with a kvstore or with the
optimizer's updater directly, following MXNet 1.x's rules."""

import os

import numpy as np

from ..base import MXNetError

__all__ = ["create_kvstore", "initialize_kvstore", "update_params", "update_params_on_kvstore"]


def _is_store(obj):
    kvs = _kvstore_module()
    if kvs is not None and isinstance(obj, kvs.KVStoreBase):
        return True
    return hasattr(obj, "init") and hasattr(obj, "pull") and (hasattr(obj, "pushpull") or hasattr(obj, "push"))


def _kvstore_module():
    try:
        from .. import kvstore as kvs  # written alongside; absent in older trees
    except ImportError:
        return None
    return kvs


def create_kvstore(kvstore, num_device, arg_params):
    """``(kv, update_on_kvstore)`` for ``kvstore`` (None, a name or a KVStore).

    As in MXNet, a name with one device and no ``dist`` means no kvstore at
    all: the module then updates its parameters with the optimizer's updater
    directly, which is what MXNet's single-device local path amounts to.
    ``MXNET_UPDATE_ON_KVSTORE=0`` keeps the optimizer off the kvstore.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kvs = _kvstore_module()
            if kvs is None:
                raise MXNetError(f"kvstore {kvstore!r}: oxnet has no mx.kv in this build")
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    elif _is_store(kvstore):
        kv = kvstore  # a KVStoreBase, or any object with a KVStore's init/push/pull methods
    else:
        raise TypeError(f"kvstore must be KVStore, str or None, got {type(kvstore).__name__}")
    if kv is None:
        update_on_kvstore = False
    elif hasattr(kv, "is_capable"):
        update_on_kvstore = update_on_kvstore and bool(kv.is_capable("optimizer"))
    return kv, update_on_kvstore


def initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Puts every parameter's initial value into ``kvstore`` (and, when the
    kvstore updates, pulls it back into the executor's arrays)."""
    for idx, (arrays, name) in enumerate(zip(param_arrays, param_names)):
        kvstore.init(name, arg_params[name])
        if update_on_kvstore:
            kvstore.pull(name, arrays, priority=-idx)


def _pushpull(kvstore, name, grads, out, priority):
    if hasattr(kvstore, "pushpull"):
        kvstore.pushpull(name, grads, out=out, priority=priority)
    else:
        kvstore.push(name, grads, priority=priority)
        kvstore.pull(name, out=out, priority=priority)


def update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Pushes the gradients; the kvstore's optimizer updates; pulls the weights."""
    for index, (args, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        _pushpull(kvstore, param_names[index], grads, args, -index)


def update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None, param_names=None):
    """Updates the weights with ``updater`` (gradients summed through
    ``kvstore`` first when there is one); parameter ``i`` on device ``k`` has
    index ``i * num_device + k``, as in MXNet."""
    updates = [[] for _ in range(num_device)]
    for index, (args, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        if kvstore:
            _pushpull(kvstore, param_names[index], grads, grads, -index)
        for k, (w, g) in enumerate(zip(args, grads)):
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            idx, grads, weights = zip(*dev_updates)
            updater(list(idx), list(grads), list(weights))
