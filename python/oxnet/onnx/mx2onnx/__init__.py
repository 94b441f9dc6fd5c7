"""The oxnet → ONNX exporter: :func:`export_model` and :func:`get_operator_support`."""

from ._export_model import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
