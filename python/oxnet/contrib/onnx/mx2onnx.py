"""``mx.contrib.onnx.mx2onnx``: the exporter of :mod:`oxnet.onnx` under its older path."""

from ...onnx.mx2onnx import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
