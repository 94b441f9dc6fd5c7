"""``mx.contrib.amp``: automatic mixed precision (float16 or bfloat16 with
float32), MXNet 1.9.1's API. See :mod:`oxnet.contrib.amp.amp`."""

from . import lists
from .amp import *  # noqa: F401,F403  pylint: disable=wildcard-import
from .amp import __all__ as _amp_all
from .loss_scaler import LossScaler

__all__ = list(_amp_all) + ["LossScaler", "lists"]
