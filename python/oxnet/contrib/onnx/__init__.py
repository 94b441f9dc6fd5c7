"""``mx.contrib.onnx``: MXNet 1.9.1's older ONNX entry points.

``import_model(path)`` turns an ONNX file (opset 11-13 operators) into an oxnet Symbol and
its ``arg_params``/``aux_params``; ``import_to_gluon(path, ctx)`` gives a Gluon
``SymbolBlock``; ``get_model_metadata(path)`` lists the inputs' and outputs' names and
shapes; ``export_model`` is :func:`oxnet.onnx.export_model`. The ``onnx`` package is
needed only when they run (``pip install onnx``)."""

from .onnx2mx.import_model import import_model, get_model_metadata
from .onnx2mx.import_to_gluon import import_to_gluon
from .mx2onnx import export_model

__all__ = ["import_model", "get_model_metadata", "import_to_gluon", "export_model"]
