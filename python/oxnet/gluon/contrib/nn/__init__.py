"""Contributed layers (``mx.gluon.contrib.nn``): the concurrent
containers, ``Identity`` and the pixel shuffles."""

from . import basic_layers
from .basic_layers import Concurrent, HybridConcurrent, Identity, PixelShuffle1D, PixelShuffle2D, PixelShuffle3D

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]
