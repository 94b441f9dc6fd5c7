"""``mx.image``: image decoding, resizing, crops and augmentation (MXNet
1.9.1's functions and names)."""

from . import image
from .image import *  # noqa: F401,F403
