"""Attribute scopes (``mx.AttrScope``): string attributes attached to every
symbol created inside a ``with`` block::

    with mx.AttrScope(ctx_group="stage1"):
        fc = mx.sym.FullyConnected(data, num_hidden=10, name="fc")
    fc.attr("ctx_group")   # 'stage1'

The keys MXNet keeps hidden (``ctx_group``, ``lr_mult``, ``wd_mult``,
``force_mirroring``, ``mirror_stage``, ``profiler_scope``) are stored as
``__key__``, as MXNet stores them, and read back under either name.
"""

import threading

__all__ = ["AttrScope", "HIDDEN_KEYS", "stored_key"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def stored_key(key):
    """The key under which attribute ``key`` is stored on a node."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class _Current(threading.local):
    value = None


class AttrScope:
    """Attributes for the symbols created in its ``with`` block; scopes nest."""

    _current = _Current()

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"attribute {key!r} must be a string, got {type(value).__name__}")
        self._attr = kwargs
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes updated with ``attr`` (a dict or None)."""
        if not self._attr:
            return dict(attr) if attr else {}
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self):
        self._old_scope = AttrScope.current
        merged = dict(self._old_scope._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old_scope
        return False


class _CurrentDescriptor:
    def __get__(self, obj, owner):
        cur = AttrScope._current.value
        if cur is None:
            cur = AttrScope._current.value = AttrScope()
        return cur


AttrScope.current = _CurrentDescriptor()
