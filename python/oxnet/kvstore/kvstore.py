"""``KVStore``: the single-process key-value store (MXNet's ``local`` and
``device`` types).

Each key holds one array, a copy of what ``init`` gave. ``push`` sums the
arrays given for a key (one per device) and either replaces the stored
value with the sum or, when an updater or optimizer is set, calls
``updater(key, summed, stored)`` to update it in place; ``pull`` copies the
stored value into every output array. A store takes either int keys or str
keys, never both.
"""

import numbers
from collections import OrderedDict

import numpy as np

from .. import optimizer as opt
from .._random_data import _SparseStorageNotSupported
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from .base import KVStoreBase

__all__ = ["KVStore"]


def _check_key(op, key):
    """``key`` as the store keeps it: an int or a str."""
    if isinstance(key, str):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return int(key)
    raise TypeError(f"{op}: a key must be an int or a str, got {type(key).__name__} {key!r}")


#: key types taken as they are, without :func:`_check_key`
_PLAIN_KEY_TYPES = (int, str)


def _group(pairs):
    """``{key: [arrays]}`` in the order the keys first appear."""
    groups = OrderedDict()
    for key, arr in pairs:
        groups.setdefault(key, []).append(arr)
    return groups


class KVStore(KVStoreBase):
    """A key-value store for one process, over any number of devices.

    Made by :func:`oxnet.kvstore.create`; ``kvstore_type`` is the type name
    it reports (``'local'``, ``'device'``, ...). A ``local`` store keeps its
    values on the CPU; a type holding ``device`` keeps each one on the
    context of the array ``init`` gave.
    """

    def __init__(self, kvstore_type="local"):
        if not isinstance(kvstore_type, str):
            raise TypeError(f"KVStore: kvstore_type must be a string, got {type(kvstore_type).__name__}")
        name = kvstore_type.lower()
        if "nccl" in name:
            from .base import create
            create(name)  # raises the error that says why
        self._type = name
        self._on_device = "device" in name
        self._store = {}
        self._key_kind = None  # "int" or "str" once a key was seen
        self._str_ids = {}  # str key -> int id, in the order keys were initialised
        self._updater = None
        self._compression = None  # {"type": "2bit", "threshold": float}
        self._residuals = {}  # (key, position) -> what 2-bit compression has not sent yet

    # ------------------------------------------------------------------
    # keys and values

    def _pairs(self, op, key, value, arg):
        """``[(key, NDArray)]`` for a key or list of keys and the matching
        arrays (an array or a list of arrays per key, one per device)."""
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"{op}: with a list of {len(key)} keys, {arg} must be a list with one entry per "
                                f"key, got {type(value).__name__}")
            if len(value) != len(key):
                raise MXNetError(f"{op}: {len(key)} keys but {len(value)} entries in {arg}; give one per key")
            pairs = []
            for k, v in zip(key, value):
                # the common entries inline (a Trainer passes every parameter each step)
                if type(k) in _PLAIN_KEY_TYPES and type(v) is list and all(type(a) is NDArray for a in v):
                    pairs += [(k, a) for a in v]
                else:
                    pairs += self._pairs(op, k, v, arg)
            kinds = {type(k) for k, _ in pairs}
            if len(kinds) > 1:
                raise MXNetError(f"{op}: inconsistent types of keys detected: {list(key)!r} mixes int and str keys")
            return pairs
        key = _check_key(op, key)
        if isinstance(value, NDArray):
            return [(key, value)]
        if isinstance(value, (list, tuple)):
            for v in value:
                if not isinstance(v, NDArray):
                    raise TypeError(f"{op}: {arg} for key {key!r} must be NDArrays, got {type(v).__name__}")
            return [(key, v) for v in value]
        raise TypeError(f"{op}: {arg} for key {key!r} must be an NDArray or a list of NDArrays (one per device), "
                        f"got {type(value).__name__}")

    def _check_kind(self, op, pairs):
        """One store takes int keys or str keys, not both (the first key decides)."""
        for key, _ in pairs:
            kind = "str" if isinstance(key, str) else "int"
            if self._key_kind is None:
                self._key_kind = kind
            elif kind != self._key_kind:
                raise MXNetError(f"{op}: key {key!r} is {'a str' if kind == 'str' else 'an int'} but this kvstore "
                                 f"holds {self._key_kind} keys; mixed key types are not allowed")

    def _stored(self, op, key):
        """The array stored under ``key``; an error when it was never initialised."""
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError(f"{op}: key {key!r} has not been inited; call init (or broadcast) for it "
                             "first") from None

    def _check_new(self, op, pairs):
        """Every key of ``pairs`` is new to the store and given once."""
        seen = set()
        for key, _ in pairs:
            if key in self._store or key in seen:
                raise MXNetError(f"{op}: duplicate init of key {key!r}. Please double check if you called kv.init "
                                 "or kv.broadcast with this key multiple times (one value per key)")
            seen.add(key)

    def _check_shapes(self, op, pairs, shapes, arg):
        """Each array of ``pairs`` has the shape its key holds."""
        for key, arr in pairs:
            if tuple(arr.shape) != shapes[key]:
                raise MXNetError(f"{op}: key {key!r} holds shape {shapes[key]}, but {arg} has an array of shape "
                                 f"{tuple(arr.shape)}")

    def _home(self, arr):
        """Where a stored value lives: the CPU for a local store, next to the
        initial array for a device store."""
        return arr.context if self._on_device else Context("cpu", 0)

    # ------------------------------------------------------------------
    # the work

    def _init_pairs(self, pairs):
        for key, arr in pairs:
            self._store[key] = arr.copyto(self._home(arr))
            if isinstance(key, str) and key not in self._str_ids:
                self._str_ids[key] = len(self._str_ids)

    def _quantize(self, key, pos, grad):
        """MXNet's 2-bit compression of one device's ``grad``: with the
        residual added, entries at or above the threshold send +threshold,
        at or below -threshold send -threshold, others send 0; what was not
        sent stays in the residual for the next push."""
        threshold = self._compression["threshold"]
        residual = self._residuals.get((key, pos))
        total = grad.copy() if residual is None else residual + grad
        sent = (total >= threshold) * threshold - (total <= -threshold) * threshold
        self._residuals[(key, pos)] = total - sent
        return sent

    def _merge(self, key, values, stored):
        """The sum of ``values``, as a new array with the stored value's dtype and context."""
        ctx, dtype = stored.context, stored.dtype
        if self._compression is not None:
            for v in values:
                if np.dtype(v.dtype) != np.float32 or np.dtype(dtype) != np.float32:
                    raise MXNetError(f"push: 2bit gradient compression works on float32 values; key {key!r} holds "
                                     f"{np.dtype(dtype).name} and was pushed {np.dtype(v.dtype).name}")
            parts = [self._quantize(key, i, v.as_in_context(ctx)) for i, v in enumerate(values)]
        else:
            parts = [v.copyto(ctx) if i == 0 else v.as_in_context(ctx) for i, v in enumerate(values)]
        total = parts[0] if parts[0].dtype == dtype else parts[0].astype(dtype)
        for part in parts[1:]:
            total += part if part.dtype == dtype else part.astype(dtype)
        return total

    def _updater_key(self, key):
        """The key the updater sees: an int key as it is; a str key as bytes
        for an updater function (as MXNet 1.9.1 passes it), or as its int id
        (the order keys were initialised in) for an optimizer's Updater,
        whose states are kept by int index."""
        if not isinstance(key, str):
            return key
        if isinstance(self._updater, opt.Updater):
            return self._str_ids[key]
        return key.encode("utf-8")

    def _push_groups(self, groups):
        for key, values in groups.items():
            stored = self._store[key]
            merged = self._merge(key, values, stored)
            if self._updater is None:
                self._store[key] = merged
            else:
                self._updater(self._updater_key(key), merged, stored)

    def _pull_pairs(self, pairs):
        for key, out in pairs:
            self._store[key].copyto(out)

    def _shapes(self):
        return {k: tuple(v.shape) for k, v in self._store.items()}

    # ------------------------------------------------------------------
    # the API

    def init(self, key, value):
        """Stores a copy of ``value`` under ``key`` (or of each value under
        each key of a list). A key is initialised once: a key the store
        already holds, or given twice, is an error. ``value`` is an NDArray
        (for a list of keys, a list with one NDArray per key)."""
        pairs = self._pairs("init", key, value, "value")
        self._check_kind("init", pairs)
        self._check_new("init", pairs)
        self._init_pairs(pairs)

    def push(self, key, value, priority=0):
        """Pushes ``value`` into the store under ``key``.

        ``value`` is an NDArray or a list of NDArrays (one per device) for a
        key; for a list of keys, one such entry per key. The arrays given
        for a key are summed (in the stored value's dtype, with 2-bit
        compression when it is set); the sum replaces the stored value, or,
        with an updater or optimizer set, ``updater(key, sum, stored)``
        updates the stored value. Every key must be initialised and every
        array must have its key's shape. ``priority`` is accepted for
        compatibility (oxnet runs the push at once).
        """
        del priority
        pairs = self._pairs("push", key, value, "value")
        self._check_kind("push", pairs)
        groups = _group(pairs)
        for k in groups:
            self._stored("push", k)
        self._check_shapes("push", pairs, self._shapes(), "the value pushed")
        self._push_groups(groups)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the value stored under ``key`` into ``out`` (an NDArray or
        a list of NDArrays, one per device; for a list of keys, one such
        entry per key). An out array of another dtype receives the value
        converted; one of another shape, or a key that was never
        initialised, is an error. ``priority`` and ``ignore_sparse`` are
        accepted for compatibility: oxnet arrays are dense."""
        del priority, ignore_sparse
        if out is None:
            raise MXNetError(f"pull: out is required: the array(s) to copy the value of key {key!r} into")
        pairs = self._pairs("pull", key, out, "out")
        self._check_kind("pull", pairs)
        for k, _ in pairs:
            self._stored("pull", k)
        self._check_shapes("pull", pairs, self._shapes(), "out")
        self._pull_pairs(pairs)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` of ``value`` then :meth:`pull` into ``out`` (into the
        arrays of ``value`` when ``out`` is None). Everything is checked
        before the store changes."""
        del priority
        vpairs = self._pairs("pushpull", key, value, "value")
        opairs = vpairs if out is None else self._pairs("pushpull", key, out, "out")
        self._check_kind("pushpull", vpairs + opairs)
        groups = _group(vpairs)
        for k in list(groups) + [k for k, _ in opairs]:
            self._stored("pushpull", k)
        shapes = self._shapes()
        self._check_shapes("pushpull", vpairs, shapes, "the value pushed")
        self._check_shapes("pushpull", opairs, shapes, "out")
        self._push_groups(groups)
        self._pull_pairs(opairs)

    def broadcast(self, key, value, out, priority=0):
        """Initialises ``key`` with ``value`` and copies it into ``out`` (an
        NDArray or a list of them; for a list of keys, one entry per key).
        As :meth:`init`, a key can be broadcast once."""
        del priority
        vpairs = self._pairs("broadcast", key, value, "value")
        opairs = self._pairs("broadcast", key, out, "out")
        self._check_kind("broadcast", vpairs + opairs)
        self._check_new("broadcast", vpairs)
        shapes = {k: tuple(v.shape) for k, v in vpairs}
        for k, _ in opairs:
            if k not in shapes:
                raise MXNetError(f"broadcast: out names key {k!r}, which is given no value")
        self._check_shapes("broadcast", opairs, shapes, "out")
        self._init_pairs(vpairs)
        self._pull_pairs(opairs)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Not available: pulling selected rows needs row_sparse arrays and
        oxnet has no sparse storage. Always raises an MXNetError (also a
        NotImplementedError); :meth:`pull` copies whole values."""
        raise _SparseStorageNotSupported(
            f"row_sparse_pull (key {key!r}): oxnet has no sparse storage (row_sparse arrays), only dense "
            "arrays; use pull to copy the whole value")

    def set_gradient_compression(self, compression_params):
        """Compresses what each device pushes, as MXNet does for ``device``
        stores: ``{'type': '2bit', 'threshold': t}`` (``t`` > 0, 0.5 by
        default) sends each entry as +t, -t or 0 and keeps the rest, per
        key and device position, for the next push. Only float32 values can
        be compressed. A ``local`` store raises (as MXNet); so do a missing
        or unknown ``type`` (MXNet 1.9.1 knows only ``'2bit'``) and a bad
        threshold. Other keys of the dict are ignored, as MXNet does."""
        if "device" not in self._type and "dist" not in self._type:
            raise MXNetError(f"Gradient compression is not supported for this type of kvstore ({self._type!r}); "
                             "use a 'device' kvstore")
        if not isinstance(compression_params, dict):
            raise TypeError("set_gradient_compression: compression_params must be a dict such as "
                            f"{{'type': '2bit', 'threshold': 0.5}}, got {type(compression_params).__name__}")
        if "type" not in compression_params:
            raise MXNetError("set_gradient_compression: Required parameter type of string is not presented")
        kind = str(compression_params["type"])
        if kind != "2bit":
            raise MXNetError(f"set_gradient_compression: Unknown type for gradient compression {kind} "
                             "(the type MXNet 1.9.1 has is '2bit')")
        raw = compression_params.get("threshold", 0.5)
        try:
            threshold = float(raw)
        except (TypeError, ValueError):
            raise MXNetError(f"set_gradient_compression: Invalid Parameter format for threshold expect float but "
                             f"value={raw!r}") from None
        if not threshold > 0:
            raise MXNetError(f"set_gradient_compression: threshold must be greater than 0, got {threshold}")
        self._compression = {"type": kind, "threshold": threshold}
        self._residuals = {}

    def set_optimizer(self, optimizer):
        """Makes :meth:`push` update the stored values with ``optimizer`` (an
        ``mx.optimizer.Optimizer``) through ``mx.optimizer.get_updater``."""
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError(f"set_optimizer: optimizer must be an mx.optimizer.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """Makes :meth:`push` call ``updater(key, summed, stored)``, which
        updates ``stored`` in place, instead of replacing the value. A str
        key reaches a plain function as bytes, as in MXNet 1.9.1."""
        if not callable(updater):
            raise TypeError(f"_set_updater: updater must be callable as updater(key, input, stored), got "
                            f"{type(updater).__name__}")
        self._updater = updater

    def _optimizer_updater(self, op):
        if self._updater is None:
            raise MXNetError(f"{op}: this kvstore has no optimizer; call set_optimizer first")
        if not (hasattr(self._updater, "get_states") and hasattr(self._updater, "set_states")):
            raise MXNetError(f"{op}: the updater of this kvstore is a function without optimizer states; "
                             "set_optimizer gives one that has them")
        return self._updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the optimizer's states (and update counts; with
        ``dump_optimizer``, the optimizer's settings too) to ``fname``."""
        updater = self._optimizer_updater("save_optimizer_states")
        with open(fname, "wb") as fout:
            fout.write(updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Restores optimizer states that :meth:`save_optimizer_states` wrote to ``fname``."""
        updater = self._optimizer_updater("load_optimizer_states")
        with open(fname, "rb") as fin:
            updater.set_states(fin.read())

    def is_capable(self, capability):
        """True for :attr:`KVStoreBase.OPTIMIZER` (this store can update with
        an optimizer); any other capability is a ValueError."""
        if not isinstance(capability, str):
            raise TypeError(f"is_capable: capability must be a string, got {type(capability).__name__}")
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def _barrier(self):
        """Waits for every worker: with one process there is nobody to wait for."""

    @property
    def type(self):
        """The type name given to :func:`create` (lower case)."""
        return self._type

    @property
    def rank(self):
        """0: the only worker."""
        return 0

    @property
    def num_workers(self):
        """1: one process."""
        return 1

    def __repr__(self):
        return f"<KVStore {self._type!r}: {len(self._store)} keys>"

