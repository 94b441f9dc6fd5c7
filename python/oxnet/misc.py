"""``mx.misc``: MXNet's oldest learning-rate schedulers (called with the
iteration number). New code uses :mod:`oxnet.lr_scheduler`."""

import logging
import math

__all__ = ["LearningRateScheduler", "FactorScheduler"]


class LearningRateScheduler:
    """Base class: ``scheduler(iteration)`` gives the learning rate;
    ``base_lr`` is the rate at iteration 0 (set by the user)."""

    def __init__(self):
        self.base_lr = 0.01

    def __call__(self, iteration):
        raise NotImplementedError("a LearningRateScheduler subclass must define __call__(iteration)")


class FactorScheduler(LearningRateScheduler):
    """``base_lr * factor ** floor(iteration / step)``, logging each change."""

    def __init__(self, step, factor=0.1):
        super().__init__()
        if step < 1:
            raise ValueError(f"FactorScheduler: step must be at least 1, got {step}")
        if factor >= 1.0:
            raise ValueError(f"FactorScheduler: factor must be below 1 to decrease the rate, got {factor}")
        self.step = step
        self.factor = factor
        self.old_lr = self.base_lr
        self.init = False

    def __call__(self, iteration):
        if not self.init:
            self.init = True
            self.old_lr = self.base_lr
        lr = self.base_lr * math.pow(self.factor, int(iteration / self.step))
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("Iteration %d: learning rate now %.5f", iteration, lr)
        return lr
