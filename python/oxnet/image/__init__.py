"""``mx.image``: image decoding, resizing, crops, augmenters,
``ImageIter``, and the detection augmenters and ``ImageDetIter`` of
``mx.image.detection`` (also ``mx.image.det``), with MXNet 1.9.1's
functions and names."""

from . import image
from .image import *  # noqa: F401,F403
from .augmenters import *  # noqa: F401,F403
from .image_iter import ImageIter  # noqa: F401
from . import detection
from . import detection as det  # noqa: F401
from .detection import *  # noqa: F401,F403
