"""``Updater``: an optimizer plus the states of the parameters it updates
(MXNet's ``mx.optimizer.Updater`` / ``get_updater``).

For the built-in optimizers the states live in Rust and a whole list of
parameters is updated in one call (``update_multi``); for optimizers
written in Python the updater calls their ``create_state`` and ``update``.
Either way ``get_states`` / ``set_states`` save and restore the states and
the update counts in oxnet's optimizer-states format; a corrupt blob raises
an error and leaves the updater as it was.
"""

import json

from .. import _oxnet
from ..base import MXNetError
from ..ndarray import NDArray
from .. import ndarray as nd
from .optimizer import _uses_core

__all__ = ["Updater", "get_updater"]

_PY_FORMAT = "oxnet-python-optimizer-states"


class Updater:
    """Applies ``optimizer`` to parameters by index, keeping their states."""

    def __init__(self, optimizer):
        self._optimizer = optimizer
        self._core = _oxnet.UpdaterCore(optimizer._core)
        self._py_states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    @property
    def optimizer(self):
        """The optimizer."""
        return self._optimizer

    @optimizer.setter
    def optimizer(self, optimizer):
        core = _oxnet.UpdaterCore(optimizer._core)
        same_kind = optimizer._core.name == self._optimizer._core.name
        if same_kind and _uses_core(self._optimizer) and _uses_core(optimizer) and self._core.states():
            core.set_states(self._core.get_states(False))  # the states move to the new optimizer
        self._optimizer, self._core = optimizer, core

    @property
    def states(self):
        """The states by parameter index (MXNet's shapes: None, an array or a tuple)."""
        if _uses_core(self._optimizer):
            opt = self._optimizer
            # a multi-precision state holds one array more: the float32 master copy
            base = len(opt._core.create_state(0, nd.zeros((1,)), False))
            return {i: opt._to_mxnet(s, len(s) == base + 1) for i, s in self._core.states().items()}
        return self._py_states

    def __call__(self, index, grad, weight):
        """Updates ``weight`` from ``grad`` for parameter ``index`` (or lists of them)."""
        if isinstance(index, (list, tuple)):
            self.update_multi(index, grad, weight)
        else:
            self.update_multi([index], [grad], [weight])

    def update_multi(self, indices, grads, weights):
        """Updates every ``weights[k]`` from ``grads[k]`` for parameter ``indices[k]``.

        Built-in optimizers do it in one call into Rust (one fused operator
        for SGD); optimizers written in Python are called once per parameter.
        """
        indices = list(indices)
        if len(indices) != len(grads) or len(indices) != len(weights):
            raise MXNetError(f"update_multi: {len(indices)} indices, {len(grads)} gradients and {len(weights)} "
                             "weights must be as many")
        opt = self._optimizer
        if weights:
            opt._set_current_context(weights[0].context.device_id)
        if _uses_core(opt):
            self._core.update_multi(indices, list(grads), list(weights), opt._mults(indices))
            return
        for idx, weight in zip(indices, weights):
            if idx not in self._py_states:
                self._py_states[idx] = opt.create_state_multi_precision(idx, weight)
                self.states_synced[idx] = True
        for idx, grad, weight in zip(indices, grads, weights):
            opt.update_multi_precision(idx, weight, grad, self._py_states[idx])

    def sync_state_context(self, state, context):
        """Accepted for compatibility: states live where their weights do."""
        del context
        return state

    def get_states(self, dump_optimizer=False):
        """The states and update counts as bytes (with ``dump_optimizer``, also the
        optimizer's hyper-parameters)."""
        if _uses_core(self._optimizer):
            return self._core.get_states(bool(dump_optimizer))
        arrays = []
        entries = []
        for key, state in self._py_states.items():
            entries.append([key, _encode(state, f"{len(entries)}", arrays)])
        num_update, per_index = self._optimizer._core.counts()
        meta = {
            "format": _PY_FORMAT,
            "optimizer": type(self._optimizer).__name__,
            "states": entries,
            "counts": {"num_update": num_update, "per_index": [[i, n] for i, n in per_index.items()]},
        }
        if dump_optimizer:
            meta["hyper"] = {
                "params": self._optimizer._core.param_texts(),
                "attrs": {k: v for k, v in self._optimizer.__dict__.items()
                          if not k.startswith("_") and isinstance(v, (int, float, str, bool, type(None)))},
            }
        return _oxnet.encode_states(arrays, json.dumps(meta))

    def set_states(self, states):
        """Restores what :meth:`get_states` saved (states and update counts, and the
        hyper-parameters when they were dumped). A bad blob raises and changes nothing."""
        if not isinstance(states, (bytes, bytearray, memoryview)):
            raise TypeError(f"set_states takes the bytes get_states returned, got {type(states).__name__}")
        if _uses_core(self._optimizer):
            self._core.set_states(bytes(states))
            return
        arrays, meta = _oxnet.decode_states(bytes(states))
        meta = json.loads(meta)
        if not isinstance(meta, dict) or meta.get("format") != _PY_FORMAT:
            raise MXNetError("optimizer states: they were saved by a built-in optimizer "
                             f"`{meta.get('optimizer') if isinstance(meta, dict) else '?'}`, this updater's "
                             f"optimizer `{type(self._optimizer).__name__}` is written in Python")
        if meta.get("optimizer") != type(self._optimizer).__name__:
            raise MXNetError(f"optimizer states: they were saved by optimizer `{meta.get('optimizer')}`, this "
                             f"updater's is `{type(self._optimizer).__name__}`")
        by_name = dict(arrays)
        try:
            restored = {_key(k): _decode(s, by_name) for k, s in meta["states"]}
            counts = meta["counts"]
            num_update = int(counts["num_update"])
            per_index = {int(i): int(n) for i, n in counts["per_index"]}
            hyper = meta.get("hyper")
        except (KeyError, TypeError, ValueError) as e:
            raise MXNetError(f"optimizer states: malformed description ({e!r})") from e
        if hyper:
            params = [(str(k), str(v)) for k, v in hyper.get("params", [])]
            _oxnet.OptimizerCore(self._optimizer._core_name, params)  # checks every value first
            for key, text in params:
                self._optimizer._core.set_param(key, text)
            for key, value in hyper.get("attrs", {}).items():
                setattr(self._optimizer, key, value)
        self._optimizer._core.set_counts(num_update, per_index)
        self._py_states = restored
        self.states_synced = dict.fromkeys(restored, True)


def _encode(state, path, arrays):
    """A JSON description of a Python state; its arrays are appended to ``arrays``."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        name = f"{path}"
        arrays.append((name, state))
        return {"a": name}
    if isinstance(state, (tuple, list)):
        kind = "t" if isinstance(state, tuple) else "l"
        return {kind: [_encode(s, f"{path}.{i}", arrays) for i, s in enumerate(state)]}
    if isinstance(state, (int, float, str, bool)):
        return {"v": state}
    raise MXNetError(f"optimizer states: cannot save a state of type {type(state).__name__}")


def _decode(desc, arrays):
    """Rebuilds a state from :func:`_encode`'s description."""
    if desc is None:
        return None
    if "a" in desc:
        if desc["a"] not in arrays:
            raise ValueError(f"array {desc['a']} is missing")
        return arrays[desc["a"]]
    if "t" in desc:
        return tuple(_decode(d, arrays) for d in desc["t"])
    if "l" in desc:
        return [_decode(d, arrays) for d in desc["l"]]
    return desc["v"]


def _key(k):
    """A state key as saved (JSON keeps ints and strings apart)."""
    if isinstance(k, (int, str)):
        return k
    raise ValueError(f"bad state key {k!r}")


def get_updater(optimizer):
    """An :class:`Updater` of ``optimizer``."""
    return Updater(optimizer)
