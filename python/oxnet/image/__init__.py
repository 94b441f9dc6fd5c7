"""``mx.image``: image decoding, resizing, crops, augmenters and
``ImageIter`` (MXNet 1.9.1's functions and names)."""

from . import image
from .image import *  # noqa: F401,F403
from .augmenters import *  # noqa: F401,F403
from .image_iter import ImageIter  # noqa: F401
