"""How the Gluon Estimator trains or evaluates one batch."""

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor(object):
    """Trains (:meth:`fit_batch`) or evaluates (:meth:`evaluate_batch`) the
    estimator's network on one batch.

    A batch is ``(data, label, ...)``; data and label are split along
    ``batch_axis`` over ``estimator.context`` with
    ``gluon.utils.split_and_load``. Subclass and override either method (or
    pass any object with both methods as ``Estimator(batch_processor=...)``)
    to customise a step; both return ``(data, label, pred, loss)`` as lists
    with one entry per context.
    """

    def __init__(self):
        pass

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """Splits ``batch[0]`` and ``batch[1]`` over the contexts ``ctx``."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Runs ``estimator.val_net`` and ``estimator.val_loss`` on a
        validation batch (no gradients).

        Parameters
        ----------
        estimator : Estimator
            The estimator whose validation network and loss are used.
        val_batch : tuple
            ``(data, label)`` from the validation DataLoader.
        batch_axis : int, default 0
            The axis split over the contexts.

        Returns
        -------
        (data, label, pred, loss), each a list with one NDArray per context.
        """
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(p, y) for p, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Runs ``estimator.net`` and ``estimator.loss`` on a training batch
        under ``autograd.record()`` and back-propagates each loss; the
        parameter update is left to ``GradientUpdateHandler``.

        Parameters
        ----------
        estimator : Estimator
            The estimator whose network and loss are trained.
        train_batch : tuple
            ``(data, label)`` from the training DataLoader.
        batch_axis : int, default 0
            The axis split over the contexts.

        Returns
        -------
        (data, label, pred, loss), each a list with one NDArray per context.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(p, y) for p, y in zip(pred, label)]
        for value in loss:
            value.backward()
        return data, label, pred, loss
