"""Gluon Estimator (``mx.gluon.contrib.estimator``): a training loop for
Gluon networks driven by event handlers, as in MXNet 1.9.1.

``Estimator(net, loss, ...)`` runs ``fit`` and ``evaluate``; the handlers
in :mod:`.event_handler` (metrics, validation, logging, checkpoints, early
stopping, gradient updates) hook into its train/epoch/batch begin and end
events; a :class:`BatchProcessor` says how one batch is trained or
evaluated.
"""

from . import estimator
from . import event_handler
from . import batch_processor
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
from .batch_processor import *  # noqa: F401,F403

__all__ = (["estimator", "event_handler", "batch_processor"] + estimator.__all__
           + event_handler.__all__ + batch_processor.__all__)
