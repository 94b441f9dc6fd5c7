"""Base definitions shared by the package: the engine's exception type."""

from ._oxnet import MXNetError

__all__ = ["MXNetError"]
