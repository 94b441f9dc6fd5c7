"""Contributed layers: ``Concurrent`` and ``HybridConcurrent`` (children
run side by side on one input, outputs concatenated), ``Identity`` and
the pixel shuffles (sub-pixel upsampling: channel groups become spatial
positions).

``SyncBatchNorm`` lives in :mod:`.sync_batch_norm` (re-exported here, where
MXNet defines it). MXNet's ``SparseEmbedding`` is not provided: oxnet has
dense storage only.
"""

from .... import ndarray as nd
from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential

from .sync_batch_norm import SyncBatchNorm  # noqa: E402  (defined beside, exported here as in MXNet)

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D",
           "SyncBatchNorm"]


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs
    along ``axis`` (default -1): ``Concurrent(axis=-1, prefix=None,
    params=None)``, children added with ``add``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """:class:`Concurrent` of HybridBlocks; hybridizes into one graph."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input (a branch of a Concurrent block that passes the
    input through)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


def _factors(factor, ndim, cls_name):
    """``factor`` as ``ndim`` ints (a number is repeated)."""
    try:
        return (int(factor),) * ndim
    except TypeError:
        factors = tuple(int(f) for f in factor)
        if len(factors) != ndim:
            raise ValueError(f"{cls_name}: factor must be a number or {ndim} ints, got {factor!r}") from None
        return factors


class SparseEmbedding(Block):
    """An embedding table (``input_dim`` rows of ``output_dim``) looked up by
    integer indices: ``(x1, ..., xk)`` gives ``(x1, ..., xk, output_dim)``.

    MXNet keeps this block's weight and gradient row-sparse, for very large
    vocabularies in distributed training. oxnet stores arrays densely: the
    weight and its gradient are dense, so results and updates equal MXNet's
    standard (non-lazy) ones, at the memory of a dense gradient.

    Parameters
    ----------
    input_dim : int
        Vocabulary size (largest index + 1).
    output_dim : int
        Length of each embedding vector.
    dtype : str or numpy.dtype, default 'float32'
        The weight's and output's dtype.
    weight_initializer : Initializer, optional
        Initializer of the table.
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer, dtype=dtype)

    def forward(self, x):
        """Looks the indices ``x`` up in the table."""
        return nd.Embedding(x, self.weight.data(x.context), **self._kwargs)

    def __repr__(self):
        return "{name}({input_dim} -> {output_dim}, {dtype})".format(name=type(self).__name__, **self._kwargs)


class PixelShuffle1D(HybridBlock):
    """``(N, C * f, W) → (N, C, W * f)``: output position ``w * f + i`` of
    channel ``c`` is input channel ``c * f + i`` at ``w``."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))  # N, C, f, W
        x = F.transpose(x, (0, 1, 3, 2))  # N, C, W, f
        return F.reshape(x, (0, 0, -3))

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """``(N, C * f1 * f2, H, W) → (N, C, H * f1, W * f2)``; ``factor`` is a
    number or a pair. Output ``(h * f1 + i, w * f2 + j)`` of channel ``c``
    is input channel ``(c * f1 + i) * f2 + j`` at ``(h, w)``."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2, "PixelShuffle2D")

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))  # N, C, f1*f2, H, W
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))  # N, C, f1, f2, H, W
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))  # N, C, H, f1, W, f2
        return F.reshape(x, (0, 0, -3, -3))

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """``(N, C * f1 * f2 * f3, D, H, W) → (N, C, D * f1, H * f2, W * f3)``;
    ``factor`` is a number or a triple. Output ``(d * f1 + i, h * f2 + j,
    w * f3 + k)`` of channel ``c`` is input channel ``((c * f1 + i) * f2 +
    j) * f3 + k`` at ``(d, h, w)``."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3, "PixelShuffle3D")

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        # split the channel axis into (C, f1, f2, f3), one factor at a time
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))
        x = F.reshape(x, (0, 0, -4, f1, -1, 0, 0, 0))
        x = F.reshape(x, (0, 0, 0, -4, f2, f3, 0, 0, 0))  # N, C, f1, f2, f3, D, H, W
        # pair each spatial axis with its factor, then merge the pairs
        x = F.transpose(x, (0, 1, 5, 2, 6, 3, 7, 4))  # N, C, D, f1, H, f2, W, f3
        return F.reshape(x, (0, 0, -3, -3, -3))

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factors})"
