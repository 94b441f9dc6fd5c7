"""The operator lists of ``mx.contrib.amp``: which operators run in the low
precision, which in float32, which in the widest dtype of their inputs."""

from . import symbol_bf16, symbol_fp16

__all__ = ["symbol_fp16", "symbol_bf16"]
