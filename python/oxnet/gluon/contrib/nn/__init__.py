"""Contributed layers (``mx.gluon.contrib.nn``): the concurrent
containers, ``Identity``, ``SparseEmbedding`` (dense here), the pixel
shuffles and ``SyncBatchNorm``."""

from . import basic_layers
from .basic_layers import (Concurrent, HybridConcurrent, Identity, PixelShuffle1D, PixelShuffle2D, PixelShuffle3D,
                           SparseEmbedding)
from .sync_batch_norm import SyncBatchNorm

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D",
           "SparseEmbedding", "SyncBatchNorm"]
