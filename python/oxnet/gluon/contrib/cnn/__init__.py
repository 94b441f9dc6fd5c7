"""Contributed convolution layers (``mx.gluon.contrib.cnn``): the
deformable convolutions ``DeformableConvolution`` (v1, learned offsets) and
``ModulatedDeformableConvolution`` (v2, learned offsets and mask)."""

from . import conv_layers
from .conv_layers import *  # noqa: F401,F403

__all__ = conv_layers.__all__
