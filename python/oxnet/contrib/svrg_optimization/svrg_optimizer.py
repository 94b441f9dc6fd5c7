"""The two optimizers behind :class:`SVRGModule` (MXNet 1.x's
``mx.contrib.svrg_optimization.svrg_optimizer``).

``_SVRGOptimizer`` holds the optimizer the user asked for and an
``_AssignmentOptimizer``; it sends each update to one of them by the
parameter's name: names ending in ``_full`` (the ``<param>_full`` keys
where a kvstore sums the full gradients) are assigned, every other
parameter gets the user's optimizer. (MXNet 1.9.1 tests for ``full``
anywhere in the name, which also catches weights such as
``fullyconnected0_weight``.) Both are registered, as in MXNet
(``mx.optimizer.create('_svrgoptimizer', default_optimizer='sgd')``), and
meant for ``SVRGModule`` only.
"""

from ... import optimizer as opt
from ...base import MXNetError

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

# the keyword arguments of mx.optimizer.Optimizer itself
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate", "lr_scheduler",
                "sym", "begin_num_update", "multi_precision", "param_dict")


@opt.register
class _AssignmentOptimizer(opt.Optimizer):
    """An "optimizer" that copies the gradient into the weight (``weight[:] =
    grad``): with it set on a kvstore, a push stores the sum of what the
    devices (and workers) pushed, which is how ``SVRGModule`` adds up the
    full gradients. It has no state."""

    def create_state(self, index, weight):
        """No state: returns None."""
        return None

    def update(self, index, weight, grad, state):
        """Assigns ``grad`` to ``weight`` in place (``index`` and ``state`` are unused)."""
        del index, state
        weight[:] = grad


@opt.register
class _SVRGOptimizer(opt.Optimizer):
    """Sends each update either to the user's optimizer or to an
    :class:`_AssignmentOptimizer`, by parameter name (see the module).

    Parameters
    ----------
    default_optimizer : str or Optimizer
        The optimizer of the ordinary parameters. A name is created with all
        the keyword arguments given here (its own hyper-parameters such as
        ``momentum`` included); an ``Optimizer`` is used as it is.
    **kwargs
        ``Optimizer``'s own arguments (``learning_rate``, ``rescale_grad``,
        ``param_idx2name``, ...) set this wrapper; they and any others go to
        a ``default_optimizer`` given by name.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = opt.create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, opt.Optimizer):
            self.default_opt = default_optimizer
        else:
            raise TypeError(f"_SVRGOptimizer: default_optimizer must be an optimizer name or an "
                            f"mx.optimizer.Optimizer, got {type(default_optimizer).__name__}")
        self.aux_opt = opt.create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The subset of ``kwargs`` that ``mx.optimizer.Optimizer`` itself takes."""
        return {key: value for key, value in kwargs.items() if key in _BASE_PARAMS}

    def _check_index(self, index):
        """The parameter name of ``index`` (an index of ``idx2name``, or a name itself)."""
        if isinstance(index, str):
            return index
        if isinstance(index, bytes):
            return index.decode("utf-8")
        try:
            return self.idx2name[index]
        except KeyError:
            raise MXNetError(f"_SVRGOptimizer: parameter index {index!r} has no name in param_idx2name "
                             f"({sorted(self.idx2name)}); SVRGModule.init_optimizer sets the names") from None

    def _target(self, index):
        """The optimizer that updates parameter ``index``."""
        return self.aux_opt if self._check_index(index).endswith("_full") else self.default_opt

    def create_state(self, index, weight):
        """The state of ``weight``, made by the optimizer that will update it."""
        return self._target(index).create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        """Like :meth:`create_state`, through that optimizer's multi-precision path."""
        return self._target(index).create_state_multi_precision(index, weight)

    def update(self, index, weight, grad, state):
        """Updates ``weight``: assigns ``grad`` for a ``*_full`` key,
        otherwise runs the default optimizer's update."""
        self._target(index).update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """Like :meth:`update`, through that optimizer's multi-precision path."""
        self._target(index).update_multi_precision(index, weight, grad, state)

    def _set_current_context(self, device_id):
        super()._set_current_context(device_id)
        self.default_opt._set_current_context(device_id)
        self.aux_opt._set_current_context(device_id)
