"""``mx.onnx``: export oxnet (MXNet 1.x) models to the ONNX format, as in MXNet 1.9.1.

``export_model(sym, params, in_shapes, ...)`` writes an ONNX file (opset 13) from a
Symbol (or a ``-symbol.json`` file) and its parameters; ``get_operator_support()``
lists the oxnet operators it converts. The ``onnx`` package is imported only when
these functions run (``pip install onnx``). Importing ONNX models is
``mx.contrib.onnx.import_model``."""

from .mx2onnx import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
