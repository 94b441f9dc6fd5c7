"""``mx.contrib.svrg_optimization``: stochastic variance-reduced gradient
(SVRG, Johnson & Zhang 2013) training of symbolic modules, as MXNet 1.x's
package of that name.

:class:`~.svrg_module.SVRGModule` is an ``mx.mod.Module`` that keeps a
second module holding a snapshot of the weights; every ``update_freq``
epochs it computes the full gradient over the training data at the
snapshot, and each update then uses ``g(w) - g(w_snapshot) + full_grad``
in place of the mini-batch gradient ``g(w)``.
"""

from . import svrg_module
from . import svrg_optimizer
from .svrg_module import SVRGModule
from .svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer

__all__ = ["svrg_module", "svrg_optimizer", "SVRGModule"]
