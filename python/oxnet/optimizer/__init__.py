"""``mx.optimizer``: optimizers, their registry and updaters (MXNet 1.x API).

The built-in optimizers (``SGD``, ``NAG``, ``Adam``, ``AdamW``, ``AdaGrad``,
``AdaDelta``, ``RMSProp``, ``Adamax``, ``Nadam``, ``Ftrl``, ``FTML``,
``Signum``, ``LAMB``, ``LARS``, and ``ccSGD``, MXNet's deprecated name of
``SGD``) run in Rust through core update operators; ``SGLD``, ``DCASGD``
and ``LBSGD`` are written in Python on top of them. Subclass
:class:`Optimizer` and decorate with :func:`register` to write one in Python::

    opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    updater(0, grad, weight)
"""

from .optimizer import (Optimizer, register, create, SGD, NAG, Adam, AdamW, AdaGrad, AdaDelta, RMSProp,
                        Adamax, Nadam, Ftrl, FTML, Signum, SignSGD, LAMB, LARS, SGLD, DCASGD,
                        LBSGD, ccSGD)
from .updater import Updater, get_updater
from . import contrib  # noqa: E402  (registers GroupAdaGrad)

__all__ = [
    "Optimizer", "register", "create", "get_updater", "Updater", "SGD", "NAG", "Adam", "AdamW", "AdaGrad",
    "AdaDelta", "RMSProp", "Adamax", "Nadam", "Ftrl", "FTML", "Signum", "SignSGD", "LAMB", "LARS",
    "SGLD", "DCASGD", "LBSGD", "ccSGD", "contrib",
]
