"""The ONNX → oxnet importer (:func:`import_model`, :func:`import_to_gluon`,
:func:`get_model_metadata`)."""

from .import_model import import_model, get_model_metadata
from .import_to_gluon import import_to_gluon

__all__ = ["import_model", "get_model_metadata", "import_to_gluon"]
