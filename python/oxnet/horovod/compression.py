"""Gradient compression for :class:`~oxnet.horovod.DistributedTrainer`
(Horovod's ``hvd.Compression``): a compressor turns a gradient into what
travels and back."""

import numpy as np

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]


class Compressor:
    """The interface: ``compress(tensor)`` gives ``(what travels, context)``,
    ``decompress(tensor, context)`` the gradient back."""

    @staticmethod
    def compress(tensor):
        """Returns ``(compressed tensor, context needed by decompress)``."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        """Returns the gradient from a compressed tensor and its context."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """No compression: the gradient travels as it is."""

    @staticmethod
    def compress(tensor):
        """Returns ``(tensor, None)``."""
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        """Returns ``tensor``."""
        del ctx
        return tensor


def _is_float(dtype):
    return np.dtype(dtype).kind == "f"


class FP16Compressor(Compressor):
    """Floating-point gradients travel as float16 (half the bytes, about
    three significant digits); other dtypes as they are."""

    @staticmethod
    def compress(tensor):
        """Returns ``(tensor as float16, its dtype)`` for a floating-point
        tensor, else ``(tensor, its dtype)``."""
        compressed = tensor.astype("float16", copy=False) if _is_float(tensor.dtype) else tensor
        return compressed, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        """Casts back to the dtype ``ctx`` that :meth:`compress` returned."""
        if _is_float(ctx):
            return tensor.astype(ctx, copy=False)
        return tensor


class Compression:
    """The compressors: ``Compression.none`` (the default) and
    ``Compression.fp16``."""

    #: no compression
    none = NoneCompressor
    #: floating-point gradients travel as float16
    fp16 = FP16Compressor
