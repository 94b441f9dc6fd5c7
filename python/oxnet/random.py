"""Random numbers: one global, seedable generator shared by all operators."""

from . import _oxnet
from .ndarray.random import uniform, normal

__all__ = ["seed", "uniform", "normal"]


def seed(seed_state, ctx="all"):
    """Seeds oxnet's global generator (``ctx`` is accepted for compatibility)."""
    del ctx
    _oxnet.seed(int(seed_state))
