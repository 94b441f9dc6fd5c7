"""``mx.lr_scheduler``: learning-rate schedules (MXNet 1.x API).

:class:`FactorScheduler`, :class:`MultiFactorScheduler`,
:class:`PolyScheduler` and :class:`CosineScheduler` run in Rust (the
optimizer that uses one calls it without crossing into Python); subclass
:class:`LRScheduler` and override ``__call__`` to write a schedule in Python.
Each takes a warm-up: ``warmup_steps`` updates starting from
``warmup_begin_lr``, rising linearly to ``base_lr`` (``warmup_mode='linear'``)
or staying there (``'constant'``)::

    sched = mx.lr_scheduler.FactorScheduler(step=100, factor=0.5, base_lr=0.1)
    opt = mx.optimizer.create('sgd', lr_scheduler=sched)
"""

from . import _oxnet

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]


class LRScheduler:
    """The base class of learning-rate schedules.

    Parameters
    ----------
    base_lr : float, default 0.01
        The initial learning rate.
    warmup_steps : int, default 0
        Number of warm-up updates before the schedule starts.
    warmup_begin_lr : float, default 0
        The rate warm-up starts from.
    warmup_mode : {'linear', 'constant'}, default 'linear'
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        assert isinstance(warmup_steps, int)
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ["linear", "constant"]:
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The warm-up rate at ``num_update`` (< ``warmup_steps``)."""
        assert num_update < self.warmup_steps
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update):
        """The learning rate after ``num_update`` updates (the largest count of any weight)."""
        raise NotImplementedError("must override this")


class _RustScheduler(LRScheduler):
    """A schedule computed by an ``oxnet-nn`` scheduler (``self._core``)."""

    _core = None

    def _init_warmup(self, base_lr, warmup_steps, warmup_begin_lr, warmup_mode):
        if not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_final_lr = base_lr
        self.warmup_mode = warmup_mode

    def _value(self, name):
        return dict(self._core.describe())[name]

    @property
    def base_lr(self):
        """The current base learning rate."""
        return self._core.base_lr

    @base_lr.setter
    def base_lr(self, value):
        self._core.base_lr = float(value)

    def __call__(self, num_update):
        return self._core(int(num_update))

    def __getstate__(self):
        raise TypeError(f"{type(self).__name__} keeps its state in Rust and cannot be pickled")


class FactorScheduler(_RustScheduler):
    """Multiplies the rate by ``factor`` every ``step`` updates, not below ``stop_factor_lr``:
    ``base_lr * factor**floor((num_update - 1) / step)``."""

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        self._core = _oxnet.SchedulerCore.factor(int(step), float(factor), float(stop_factor_lr), float(base_lr),
                                                 warmup_steps, float(warmup_begin_lr), warmup_mode)
        self._init_warmup(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr

    @property
    def count(self):
        """The update count of the last decay."""
        return int(self._value("count"))


class MultiFactorScheduler(_RustScheduler):
    """Multiplies the rate by ``factor`` each time ``num_update`` passes one of the increasing ``step``."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        if not isinstance(step, (list, tuple)) or len(step) < 1:
            raise ValueError("step must be a non-empty list of update counts")
        self._core = _oxnet.SchedulerCore.multifactor([int(s) for s in step], float(factor), float(base_lr),
                                                      warmup_steps, float(warmup_begin_lr), warmup_mode)
        self._init_warmup(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.step = list(step)
        self.factor = factor

    @property
    def cur_step_ind(self):
        """How many steps have been passed."""
        return int(self._value("cur_step_ind"))

    @property
    def count(self):
        """The step last passed."""
        return int(self._value("count"))


class PolyScheduler(_RustScheduler):
    """Polynomial decay to ``final_lr`` at ``max_update``:
    ``final_lr + (base_lr - final_lr) * (1 - nup/max_nup)**pwr`` after warm-up."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        if not isinstance(max_update, int):
            raise TypeError(f"max_update must be an int, got {max_update!r}")
        self._core = _oxnet.SchedulerCore.poly(max_update, float(base_lr), float(pwr), float(final_lr),
                                               warmup_steps, float(warmup_begin_lr), warmup_mode)
        self._init_warmup(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - warmup_steps


class CosineScheduler(_RustScheduler):
    """Cosine decay to ``final_lr`` at ``max_update``:
    ``final_lr + (base_lr - final_lr) * (1 + cos(pi * nup/max_nup)) / 2`` after warm-up."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        if not isinstance(max_update, int):
            raise TypeError(f"max_update must be an int, got {max_update!r}")
        self._core = _oxnet.SchedulerCore.cosine(max_update, float(base_lr), float(final_lr), warmup_steps,
                                                 float(warmup_begin_lr), warmup_mode)
        self._init_warmup(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - warmup_steps
