"""Attribute scopes (``mx.AttrScope``): string attributes attached to every
symbol created inside a ``with`` block::

    with mx.AttrScope(ctx_group="stage1"):
        fc = mx.sym.FullyConnected(data, num_hidden=10, name="fc")
    fc.attr("ctx_group")   # 'stage1'

The keys MXNet keeps hidden (``ctx_group``, ``lr_mult``, ``wd_mult``,
``force_mirroring``, ``mirror_stage``, ``profiler_scope``) are stored as
``__key__``, as MXNet stores them, and read back under either name.
"""

from collections import defaultdict

from .base import ScopedClassMeta, ThreadScope

__all__ = ["AttrScope", "HIDDEN_KEYS", "stored_key"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def stored_key(key):
    """The key under which attribute ``key`` is stored on a node."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class AttrScope(metaclass=ScopedClassMeta):
    """Attributes for the symbols created in its ``with`` block; scopes nest."""

    # how many bodies of each name control flow has built (MXNet's counter,
    # which numbers them: ``cond_then0``, ``cond_then1``, ...)
    _subgraph_names = defaultdict(int)

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
        self._old_scope = _CURRENT.enter(self)
        merged = dict(self._old_scope._attr)  # pylint: disable=protected-access
        merged.update(self._attr)
        self._attr = merged
        return self

    def __exit__(self, *exc):
        _CURRENT.exit(self._old_scope)
        return False


_CURRENT = ThreadScope(AttrScope)
AttrScope.current = _CURRENT
