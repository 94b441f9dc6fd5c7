"""Predefined models (``mx.gluon.model_zoo``): ``vision`` holds MXNet
1.9.1's image-classification networks, ``model_store`` finds their
pretrained parameter files on the local disk (oxnet never downloads)."""

from . import model_store
from . import vision

__all__ = ["model_store", "vision"]
