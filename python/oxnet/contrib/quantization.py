"""``mx.contrib.quantization``: MXNet's INT8 quantization of models
(``quantize_model``, ``quantize_net``, calibration), which needs quantized
operators that oxnet does not have: every name raises an MXNetError."""

from .._absent import not_provided

__getattr__ = not_provided(__name__, "oxnet has no quantized (int8) operators, so models cannot be quantized; "
                                     "mixed precision (float16/bfloat16) is in mx.contrib.amp")
