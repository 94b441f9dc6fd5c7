"""Dynamic loss scaling for ``mx.contrib.amp`` (MXNet 1.9.1's rules)."""

import logging

from ... import autograd
from ... import ndarray as nd

__all__ = ["LossScaler"]

# how many gradients one multi_all_finite call checks
_CHUNK = 200


class LossScaler:
    """Dynamic loss scaler, as MXNet 1.9.1's.

    The scale starts at ``2**16``. :meth:`has_overflow` checks the gradients
    of one step: an inf or NaN halves the scale for the next step (the step
    is then skipped by the trainer); 2000 clean steps in a row double it, up
    to ``2**24``.

    Properties
    ----------
    loss_scale : float
        The scale in effect for the current step.
    """

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        """The scale the loss is multiplied by in this step."""
        return self._loss_scale

    def has_overflow(self, params):
        """Whether any gradient of ``params`` (Gluon Parameters) holds an inf
        or NaN; updates the scale for the next step as described above."""
        grads = []
        for p in params:
            if getattr(p, "grad_req", "write") == "null":
                continue
            try:
                grads.extend(p.list_grad())
            except Exception:  # pylint: disable=broad-except
                continue  # a parameter not initialized or without gradient
        finite = True
        if grads:
            with autograd.pause():
                flag = nd.ones((1,), ctx=grads[0].context)
                for start in range(0, len(grads), _CHUNK):
                    chunk = grads[start:start + _CHUNK]
                    nd.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False, out=flag)
                finite = bool(flag.asnumpy()[0])
        overflow = not finite
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return overflow
