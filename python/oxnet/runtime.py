"""What this build of oxnet offers (MXNet 1.x's ``mxnet.runtime``).

``Features()`` is an ordered mapping from MXNet's feature names to
:class:`Feature` entries, the same object on every call::

    import oxnet as mx
    features = mx.runtime.Features()
    features.is_enabled("CUDA")      # True: the GPU backend is built in (CUDA is loaded at run time)
    features.is_enabled("CPU_AVX2")  # detected on this CPU at run time

The names are MXNet 1.9.1's, in its order, followed by oxnet's own
(``CPU_AVX512F``, ``CPU_FMA``). Asking for a name that is not listed raises
``RuntimeError``, as in MXNet.
"""

import collections

from . import _oxnet

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One feature: its ``name`` and whether it is ``enabled``."""

    __slots__ = ("name", "enabled")

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


def feature_list():
    """Every feature of this build, as a list of :class:`Feature`."""
    return [Feature(name, enabled) for name, enabled in _oxnet.runtime_features()]


class Features(collections.OrderedDict):
    """The features of this build by name (one shared instance)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super(Features, cls.instance).__init__([(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # the mapping is filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` is enabled; RuntimeError for an unknown name."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"feature '{feature_name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled
