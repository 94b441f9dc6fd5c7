"""``mx.optimizer.contrib``: contributed optimizers (MXNet 1.x's
``mxnet.optimizer.contrib``), registered with ``mx.optimizer`` like the
built-in ones: ``mx.optimizer.create('groupadagrad')``."""

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray
from .optimizer import Optimizer

register = Optimizer.register  # pylint: disable=invalid-name

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one adaptive learning rate per row of a 2-D weight
    (e.g. per embedding vector) instead of one per element (Duchi et al.,
    *Adaptive Subgradient Methods*, with the history shared by a row)::

        grad = clip(grad * rescale_grad, -clip_gradient, clip_gradient)
        history += mean(square(grad), axis=1, keepdims=True)
        weight -= lr * grad / sqrt(history + eps)

    The state is ``history``, of shape ``(rows, 1)``, starting at zero.
    Weight decay is not supported (``wd`` must be 0). oxnet has no
    row-sparse arrays, so every update is the dense one (MXNet's lazy
    row-sparse update gives the same values for the rows a sparse gradient
    holds).

    Parameters
    ----------
    eps : float, default 1e-5
        Added to the history under the square root, against division by 0.
    **kwargs
        The arguments of :class:`Optimizer` (``learning_rate``,
        ``rescale_grad``, ``clip_gradient``, ...).
    """

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = float(eps)

    def create_state(self, index, weight):
        """The zero history of shape ``(rows, 1)`` of a 2-D ``weight``."""
        if len(weight.shape) != 2:
            raise ValueError(f"GroupAdaGrad: the weight must be 2-D (one learning rate per row), got shape "
                             f"{tuple(weight.shape)} for parameter {index!r}")
        return nd.zeros((weight.shape[0], 1), ctx=weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        """One GroupAdaGrad step on ``weight`` (in place) with ``grad``; ``state`` is the history."""
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise TypeError("GroupAdaGrad.update takes NDArray weight and grad")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if wd != 0:
            raise MXNetError(f"GroupAdaGrad: weight decay is not supported, got wd={wd} for parameter {index!r} "
                             "(create the optimizer with wd=0)")
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        state[:] += nd.mean(nd.square(grad), axis=1, keepdims=True)
        weight[:] -= lr * grad / nd.sqrt(state + self.float_stable_eps)
