"""Optimizers with MXNet 1.x's API (``mx.optimizer``).

Every optimizer keeps its hyper-parameters, multipliers and update counts in
a Rust optimizer of ``oxnet-nn`` (``self._core``). The built-in classes
(:class:`SGD`, :class:`Adam`, ...) also leave the arithmetic to it: their
updates are core operators (``sgd_mom_update``, ``adam_update``, ...), and an
:class:`~oxnet.optimizer.Updater` updates a whole list of parameters in one
call. Subclass :class:`Optimizer` and override ``create_state`` and
``update`` to write an optimizer in Python, as with MXNet.
"""

import logging
import math
import os
import warnings

import numpy

from .. import _oxnet
from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray

__all__ = [
    "Optimizer", "register", "create", "SGD", "NAG", "Adam", "AdamW", "AdaGrad", "AdaDelta", "RMSProp",
    "Adamax", "Nadam", "Ftrl", "FTML", "Signum", "SignSGD", "LAMB", "LARS", "SGLD", "DCASGD", "LBSGD", "ccSGD",
]


def _text(value):
    """A hyper-parameter's text form, as the Rust optimizer parses it."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _state_py(arrays):
    """A Rust state (a list of arrays) as MXNet shapes states: None, one array or a tuple."""
    if not arrays:
        return None
    if len(arrays) == 1:
        return arrays[0]
    return tuple(arrays)


def _state_list(state):
    """The flat list of arrays of a state given as MXNet shapes it."""
    if state is None:
        return []
    if isinstance(state, NDArray):
        return [state]
    out = []
    for s in state:
        out.extend(_state_list(s))
    return out


def _scheduler_core(scheduler):
    """What the Rust optimizer runs: a built-in scheduler's own core, or the object to call back."""
    if scheduler is None:
        return None
    from ..lr_scheduler import _RustScheduler
    if isinstance(scheduler, _RustScheduler) and type(scheduler).__call__ is _RustScheduler.__call__:
        return scheduler._core
    if not callable(scheduler):
        raise TypeError(f"lr_scheduler must be an LRScheduler or a callable taking num_update, got {scheduler!r}")
    return scheduler


class Optimizer:
    """The base class of all optimizers (MXNet's ``mx.optimizer.Optimizer``).

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Multiplies every gradient first (the Trainer sets ``1/batch_size``).
    param_idx2name : dict of int to str, optional
        Parameter names by index; parameters whose names do not end in
        ``_weight`` or ``_gamma`` get no weight decay.
    wd : float, default 0.0
        Weight decay.
    clip_gradient : float, optional
        Clip gradients to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        The learning rate (0.01 when neither it nor ``lr_scheduler`` is given;
        when both are, it replaces the scheduler's ``base_lr``).
    lr_scheduler : LRScheduler, optional
        Gives the learning rate from the update count.
    sym : Symbol, optional
        Its ``__lr_mult__``/``__wd_mult__`` attributes set multipliers by name.
    begin_num_update : int, default 0
        The update count to start from.
    multi_precision : bool, default False
        Keep float32 master copies of float16 weights.
    param_dict : dict of int to Parameter, optional
        The gluon Parameters by index; their ``lr_mult``/``wd_mult`` are read
        at each update.
    """

    opt_registry = {}
    #: The Rust optimizer's registry name ("" for optimizers written in Python).
    _core_name = ""
    #: Hyper-parameters the Rust optimizer keeps beyond the shared ones.
    _own_params = ()
    #: Attribute names MXNet used for some hyper-parameters.
    _attr_alias = {}
    #: Whether an explicit learning rate replaces a scheduler's base rate.
    _lr_overrides_scheduler = True

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0, multi_precision=False, param_dict=None,
                 _own=None):
        params = [(k, _text(v)) for k, v in (_own or {}).items()]
        params += [
            ("rescale_grad", _text(float(rescale_grad))),
            ("wd", _text(float(wd))),
            ("clip_gradient", _text(None if clip_gradient is None else float(clip_gradient))),
            ("learning_rate", _text(None if learning_rate is None else float(learning_rate))),
            ("begin_num_update", _text(int(begin_num_update))),
            ("multi_precision", _text(bool(multi_precision))),
        ]
        object.__setattr__(self, "_core", _oxnet.OptimizerCore(self._core_name, params))
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.aggregate_num = 0
        self.allow_np_array = False
        if (lr_scheduler is not None and learning_rate is not None and self._lr_overrides_scheduler
                and getattr(lr_scheduler, "base_lr", learning_rate) != learning_rate):
            warnings.warn("learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in "
                          "optimizer.", UserWarning, stacklevel=2)
        self.lr_scheduler = lr_scheduler
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- hyper-parameters kept in Rust ------------------------------------

    def __getattr__(self, name):
        core = self.__dict__.get("_core")
        key = type(self)._attr_alias.get(name, name)
        if core is not None and key in type(self)._own_params:
            return core.get_param(key)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        key = type(self)._attr_alias.get(name, name)
        if key in type(self)._own_params:
            self._core.set_param(key, value)
        else:
            object.__setattr__(self, name, value)

    @property
    def learning_rate(self):
        """The learning rate now: the scheduler's at ``num_update``, or ``lr``."""
        return self._core.learning_rate

    @property
    def lr(self):
        """The fixed learning rate (used without a scheduler)."""
        return self._core.lr

    @lr.setter
    def lr(self, value):
        self._core.lr = value

    @property
    def wd(self):
        """Weight decay."""
        return self._core.wd

    @wd.setter
    def wd(self, value):
        self._core.wd = float(value)

    @property
    def rescale_grad(self):
        """The factor applied to every gradient first."""
        return self._core.rescale_grad

    @rescale_grad.setter
    def rescale_grad(self, value):
        self._core.rescale_grad = float(value)

    @property
    def clip_gradient(self):
        """Gradients are clipped to ``[-clip_gradient, clip_gradient]`` (None: off)."""
        return self._core.clip_gradient

    @clip_gradient.setter
    def clip_gradient(self, value):
        self._core.clip_gradient = None if value is None else float(value)

    @property
    def multi_precision(self):
        """Whether float16 weights get float32 master copies."""
        return self._core.multi_precision

    @multi_precision.setter
    def multi_precision(self, value):
        self._core.multi_precision = bool(value)

    @property
    def num_update(self):
        """The largest number of updates any parameter has received."""
        return self._core.num_update

    @num_update.setter
    def num_update(self, value):
        self._core.num_update = int(value)

    @property
    def begin_num_update(self):
        """The update count parameters start from."""
        return self._core.begin_num_update

    @begin_num_update.setter
    def begin_num_update(self, value):
        self._core.begin_num_update = int(value)

    @property
    def lr_scheduler(self):
        """The learning-rate scheduler (or None)."""
        return self.__dict__.get("_lr_scheduler")

    @lr_scheduler.setter
    def lr_scheduler(self, scheduler):
        self._core.set_lr_scheduler(_scheduler_core(scheduler))
        self.__dict__["_lr_scheduler"] = scheduler

    @property
    def idx2name(self):
        """Parameter names by index."""
        return self._core.idx2name()

    @idx2name.setter
    def idx2name(self, mapping):
        self._core.set_idx2name({int(k): str(v) for k, v in mapping.items()})

    @property
    def lr_mult(self):
        """Learning-rate multipliers by index or name (a copy; use :meth:`set_lr_mult`)."""
        return self._core.lr_mult()

    @lr_mult.setter
    def lr_mult(self, mult):
        self._core.set_lr_mult(dict(mult))

    @property
    def wd_mult(self):
        """Weight-decay multipliers by index or name (a copy; use :meth:`set_wd_mult`)."""
        return self._core.wd_mult()

    @wd_mult.setter
    def wd_mult(self, mult):
        self._core.set_wd_mult(dict(mult))

    @property
    def _index_update_count(self):
        """Updates per parameter index (a copy)."""
        return self._core.counts()[1]

    # -- MXNet's Optimizer API -----------------------------------------------

    @staticmethod
    def register(klass):
        """Registers an optimizer class under its lower-cased name (a decorator)."""
        assert isinstance(klass, type)
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
                          f"optimizer {Optimizer.opt_registry[name].__module__}."
                          f"{Optimizer.opt_registry[name].__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer by registered name (case-insensitive) with ``kwargs``."""
        key = name.lower() if isinstance(name, str) else name
        if key in Optimizer.opt_registry:
            return Optimizer.opt_registry[key](**kwargs)
        raise ValueError(f"Cannot find optimizer {name} (registered: {', '.join(sorted(Optimizer.opt_registry))})")

    def set_learning_rate(self, lr):
        """Sets the fixed learning rate; a UserWarning is raised while a scheduler owns it."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the optimizer "
                              "only when the LRScheduler of the optimizer is undefined.")
        self._core.set_learning_rate(float(lr))

    def set_lr_scale(self, args_lrscale):  # pylint: disable=unused-argument
        """[DEPRECATED] Use :meth:`set_lr_mult`."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Sets learning-rate multipliers by parameter index or name (with ``sym``'s ``__lr_mult__``)."""
        mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    mult[name] = float(attr[name]["__lr_mult__"])
        mult.update(args_lr_mult)
        self._core.set_lr_mult(mult)

    def set_wd_mult(self, args_wd_mult):
        """Sets weight-decay multipliers by parameter index or name; named parameters not
        ending in ``_weight`` or ``_gamma`` get 0 unless given."""
        mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    mult[name] = float(attr[name]["__wd_mult__"])
        mult.update(args_wd_mult)
        self._core.set_wd_mult(mult)

    def _set_current_context(self, device_id):
        """Makes the per-parameter update counts those of device
        ``device_id`` (each device counts its own updates, as in MXNet;
        ``num_update`` is the largest over all)."""
        self._core.set_current_context(int(device_id))

    def _mults(self, indices):
        """``(lr_mult, wd_mult)`` of each index's Parameter in ``param_dict`` (None where there is none)."""
        pd = self.param_dict
        if not pd:
            return [None] * len(indices)
        out = []
        for i in indices:
            p = pd.get(i)
            out.append(None if p is None else (float(p.lr_mult), float(p.wd_mult)))
        return out

    def _update_count(self, index):
        """Counts one update of ``index`` (or of each index of a list)."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        self._core.update_count([int(i) for i in index])

    def _get_lrs(self, indices):
        """Learning rates of ``indices`` (multipliers applied)."""
        indices = list(indices)
        return self._core.lrs(indices, self._mults(indices))

    def _get_lr(self, index):
        """Learning rate of ``index``."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """Weight decays of ``indices`` (multipliers applied)."""
        indices = list(indices)
        return self._core.wds(indices, self._mults(indices))

    def _get_wd(self, index):
        """Weight decay of ``index``."""
        return self._get_wds([index])[0]

    def _step_inputs(self, index, weight, grad):
        """What an update written in Python starts with: checks the arrays,
        counts the update, and returns (lr, wd, the rescaled and clipped
        gradient)."""
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise TypeError(f"{type(self).__name__}.update takes NDArray weight and grad")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        return lr, wd, grad

    def create_state(self, index, weight):
        """The auxiliary state of a new weight (override in subclasses)."""

    def create_state_multi_precision(self, index, weight):
        """Like :meth:`create_state`, with a float32 master copy for float16 weights."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            return (master,) + (self.create_state(index, master),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates ``weight`` in place from ``grad`` and ``state`` (override in subclasses)."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state):
        """Like :meth:`update`; with a float32 master copy the update runs on it and is cast back."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master, original = state[0], state[1]
            self.update(index, master, grad.astype(numpy.float32), original)
            nd.cast(master, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("_core", "param_dict")}
        state["_core_params"] = self._core.param_texts()
        state["_core_counts"] = self._core.counts()
        state["_core_mults"] = (self._core.lr_mult(), self._core.wd_mult(), self._core.idx2name())
        return state

    def __setstate__(self, state):
        params = state.pop("_core_params")
        num_update, per_index = state.pop("_core_counts")
        lr_mult, wd_mult, idx2name = state.pop("_core_mults")
        scheduler = state.pop("_lr_scheduler", None)
        object.__setattr__(self, "_core", _oxnet.OptimizerCore(self._core_name, list(params)))
        self.__dict__.update(state)
        self._core.set_idx2name(idx2name)
        self._core.set_lr_mult(lr_mult)
        self._core.set_wd_mult(wd_mult)
        self._core.set_counts(num_update, per_index)
        self.param_dict = {}
        self.__dict__["_lr_scheduler"] = scheduler
        self._core.set_lr_scheduler(_scheduler_core(scheduler))


register = Optimizer.register  # pylint: disable=invalid-name
create = Optimizer.create_optimizer  # pylint: disable=invalid-name


class _Builtin(Optimizer):
    """An optimizer whose states and updates the Rust optimizer implements.

    The Rust optimizer keeps a state as a flat list of arrays, with the
    float32 master copy last under multi-precision; here states take MXNet's
    shapes: ``None`` or one array (or, for ``_state_tuple`` optimizers, a
    tuple), and a multi-precision state is the pair ``(master, state)``, or
    ``(state, master)`` for the ``_master_last`` ones (SGD, NAG, LARS)."""

    _state_tuple = False
    _master_last = False

    def _is_mp(self, weight):
        return bool(self.multi_precision) and weight.dtype == numpy.float16

    def _to_mxnet(self, arrays, mp):
        """MXNet's shape of the Rust state ``arrays``."""
        inner = arrays[:-1] if mp else arrays
        if self._state_tuple:
            state = tuple(inner)
        else:
            state = _state_py(inner)
        if not mp:
            return state
        return (state, arrays[-1]) if self._master_last else (arrays[-1], state)

    def _from_mxnet(self, state, mp):
        """The Rust state (flat list, master copy last) of a state in MXNet's shape."""
        if not mp:
            return _state_list(state)
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise MXNetError(f"{type(self).__name__}: a multi-precision state is the pair "
                             f"{'(state, master copy)' if self._master_last else '(master copy, state)'}, "
                             f"got {state!r}")
        inner, master = (state[0], state[1]) if self._master_last else (state[1], state[0])
        return _state_list(inner) + [master]

    def create_state(self, index, weight):
        return self._to_mxnet(self._core.create_state(index, weight, False), False)

    def create_state_multi_precision(self, index, weight):
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer")
        return self._to_mxnet(self._core.create_state(index, weight, True), self._is_mp(weight))

    def update(self, index, weight, grad, state):
        self._core.update(index, weight, grad, self._from_mxnet(state, False), False, self._mults([index])[0])

    def update_multi_precision(self, index, weight, grad, state):
        mp = self._is_mp(weight)
        self._core.update(index, weight, grad, self._from_mxnet(state, mp), True, self._mults([index])[0])


def _uses_core(optimizer):
    """True when ``optimizer`` is a built-in whose states and updates nobody overrode in Python."""
    if not isinstance(optimizer, _Builtin):
        return False
    cls = type(optimizer)
    return all(getattr(cls, m) is getattr(_Builtin, m)
               for m in ("create_state", "create_state_multi_precision", "update", "update_multi_precision"))


@register
class SGD(_Builtin):
    """SGD with momentum and weight decay (fused ``sgd_mom_update``; many weights at once through
    ``multi_sgd_mom_update``)::

        rescaled_grad = lr * (rescale_grad * clip(grad, clip_gradient) + wd * weight)
        state = momentum * state + rescaled_grad
        weight = weight - state
    """
    _master_last = True
    _core_name = "sgd"
    _own_params = ("momentum", "lazy_update")

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(_own={"momentum": momentum, "lazy_update": lazy_update}, **kwargs)
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))


@register
class ccSGD(SGD):  # pylint: disable=invalid-name
    """[DEPRECATED] MXNet's old name of :class:`SGD`: the same optimizer, kept so that
    ``mx.optimizer.create('ccsgd', ...)`` and ``mx.optimizer.ccSGD(...)`` still work."""


@register
class NAG(_Builtin):
    """Nesterov accelerated gradient (fused ``nag_mom_update``)::

        state = momentum * state + grad + wd * weight
        weight = weight - (lr * (grad + momentum * state))
    """
    _master_last = True
    _core_name = "nag"
    _own_params = ("momentum",)

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(_own={"momentum": momentum}, **kwargs)


@register
class Signum(_Builtin):
    """Signum: the sign of the momentum (``signum_update``; ``signsgd_update`` with momentum 0)."""
    _core_name = "signum"
    _own_params = ("momentum", "wd_lh")

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={"momentum": momentum, "wd_lh": wd_lh}, **kwargs)


@register
class SignSGD(_Builtin):
    """signSGD: ``weight = (1 - lr*wd) * weight - lr * sign(grad)`` (``signsgd_update``)."""
    _core_name = "signsgd"

    def __init__(self, learning_rate=0.01, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)


@register
class LARS(_Builtin):
    """LARS: SGD with momentum and a layer-wise rate ``eta * |w| / (|g| + wd*|w| + eps)``; parameters
    named ``*gamma``, ``*beta``, ``*bias`` keep the plain rate."""
    _master_last = True
    _core_name = "lars"
    _own_params = ("momentum", "lazy_update", "eta", "eps", "momentum_correction")

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0, momentum_correction=True, **kwargs):
        super().__init__(_own={"momentum": momentum, "lazy_update": lazy_update, "eta": eta, "eps": eps,
                               "momentum_correction": momentum_correction}, **kwargs)


@register
class LAMB(_Builtin):
    """LAMB (``lamb_update_phase1`` / ``lamb_update_phase2``)."""
    _state_tuple = True
    _core_name = "lamb"
    _own_params = ("beta1", "beta2", "epsilon", "lower_bound", "upper_bound", "bias_correction")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
                 upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={
            "beta1": beta1, "beta2": beta2, "epsilon": epsilon, "lower_bound": lower_bound,
            "upper_bound": upper_bound, "bias_correction": bias_correction}, **kwargs)


@register
class Adam(_Builtin):
    """Adam (fused ``adam_update``; the rate is bias-corrected at each parameter's step ``t``)::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * rescaled_grad
        v = beta2 * v + (1 - beta2) * (rescaled_grad**2)
        lr = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        w = w - lr * m / (sqrt(v) + epsilon)
    """
    _state_tuple = True
    _core_name = "adam"
    _own_params = ("beta1", "beta2", "epsilon", "lazy_update")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={
            "beta1": beta1, "beta2": beta2, "epsilon": epsilon, "lazy_update": lazy_update}, **kwargs)


@register
class AdamW(_Builtin):
    """AdamW with decoupled weight decay (``_adamw_update``; MXNet 2.0's ``AdamW``)::

        lr = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)    # with correct_bias
        w = w - lr * (m / (sqrt(v) + epsilon) + wd * w)
    """
    _state_tuple = True
    _core_name = "adamw"
    _own_params = ("beta1", "beta2", "epsilon", "correct_bias", "use_fused_step")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True,
                 use_fused_step=True, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={
            "beta1": beta1, "beta2": beta2, "epsilon": epsilon, "correct_bias": correct_bias,
            "use_fused_step": use_fused_step}, **kwargs)


@register
class AdaGrad(_Builtin):
    """AdaGrad::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += square(grad)
        weight += (grad / sqrt(history + eps) + weight * wd) * -lr
    """
    _core_name = "adagrad"
    _own_params = ("eps",)
    _attr_alias = {"float_stable_eps": "eps"}

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(_own={"eps": eps}, **kwargs)


@register
class RMSProp(_Builtin):
    """RMSProp: Tieleman & Hinton's (``rmsprop_update``) or, with ``centered``, Graves'
    (``rmspropalex_update``)."""
    _state_tuple = True
    _core_name = "rmsprop"
    _own_params = ("gamma1", "gamma2", "epsilon", "centered", "clip_weights")

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
                 clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={
            "gamma1": gamma1, "gamma2": gamma2, "epsilon": epsilon, "centered": centered,
            "clip_weights": clip_weights}, **kwargs)


@register
class AdaDelta(_Builtin):
    """AdaDelta (no learning rate)::

        acc_grad = rho * acc_grad + (1 - rho) * grad * grad
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_grad + epsilon) * grad
        acc_delta = rho * acc_delta + (1 - rho) * delta * delta
        weight -= (delta + wd * weight)
    """
    _state_tuple = True
    _core_name = "adadelta"
    _own_params = ("rho", "epsilon")

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(_own={"rho": rho, "epsilon": epsilon}, **kwargs)


@register
class Ftrl(_Builtin):
    """FTRL-Proximal (``ftrl_update``)."""
    _state_tuple = True
    _core_name = "ftrl"
    _own_params = ("lamda1", "beta")
    _lr_overrides_scheduler = False

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={"lamda1": lamda1, "beta": beta}, **kwargs)


@register
class FTML(_Builtin):
    """FTML, "Follow the Moving Leader" (fused ``ftml_update`` at each parameter's step ``t``)::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * square(rescaled_grad)
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * rescaled_grad - (d_t - beta1 * d_(t-1)) * weight
        weight = - z / d_t

    The state is the tuple ``(d, v, z)``.
    """
    _state_tuple = True
    _core_name = "ftml"
    _own_params = ("beta1", "beta2", "epsilon")

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(_own={"beta1": beta1, "beta2": beta2, "epsilon": epsilon}, **kwargs)


@register
class Adamax(_Builtin):
    """AdaMax, Adam with the infinity norm::

        m = beta1 * m + (1 - beta1) * grad
        u = maximum(beta2 * u, abs(grad))
        weight -= lr / (1 - beta1**t) * m / u
    """
    _state_tuple = True
    _core_name = "adamax"
    _own_params = ("beta1", "beta2")

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, _own={"beta1": beta1, "beta2": beta2}, **kwargs)


@register
class Nadam(_Builtin):
    """Nadam: Adam with Nesterov momentum and a warming momentum schedule."""
    _state_tuple = True
    _core_name = "nadam"
    _own_params = ("beta1", "beta2", "epsilon", "schedule_decay")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, _own={
            "beta1": beta1, "beta2": beta2, "epsilon": epsilon, "schedule_decay": schedule_decay}, **kwargs)


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics: half a gradient step plus Gaussian noise whose
    variance is the learning rate (no state)::

        grad = clip(grad * rescale_grad, clip_gradient)
        weight += -lr / 2 * (grad + wd * weight) + normal(0, sqrt(lr))
    """

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        lr, wd, grad = self._step_inputs(index, weight, grad)
        weight[:] += -lr / 2 * (grad + wd * weight)
        weight[:] += nd.random.normal(0, lr ** 0.5, shape=weight.shape, dtype=weight.dtype, ctx=weight.context)


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016): the gradient
    is corrected for the weight having moved since it was computed, by
    ``lamda * grad² * (weight - previous weight)``; with ``momentum``::

        grad = clip(grad * rescale_grad, clip_gradient)
        step = -lr * (grad + wd * weight + lamda * grad * grad * (weight - previous))
        mom = momentum * mom + step          (mom = step without momentum)
        previous = weight;  weight += mom

    (MXNet 1.9.1's momentum branch tests the momentum array's truth, which
    fails for arrays of more than one element; here it works.)
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
        return mom, weight.copy()

    def update(self, index, weight, grad, state):
        lr, wd, grad = self._step_inputs(index, weight, grad)
        mom, previous = state
        step = -lr * (grad + wd * weight + self.lamda * grad * grad * (weight - previous))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
            step = mom
        previous[:] = weight
        weight[:] += step


@register
class LBSGD(Optimizer):
    """Large-batch SGD: gradients are accumulated over ``batch_scale`` calls
    of :meth:`update` for each parameter (the weight stays put in between),
    then their mean takes one SGD step (with ``momentum``, fused
    ``sgd_mom_update``, or ``sgd_update`` without) at a learning rate scaled
    by a warm-up multiplier::

        n = begin_epoch * updates_per_epoch + (calls for this parameter so far)
        at each n divisible by batch_scale:
            g = (sum of the gradients since the last step) / batch_scale
            lr' = lr * mult(n)
            state = momentum * state - lr' * (clip(rescale_grad * g, clip_gradient) + wd * weight)
            weight = weight + state

    With ``nwup = warmup_epochs * updates_per_epoch`` and ``B = batch_scale``,
    ``mult(n)`` is ``B`` once ``n >= nwup`` and before that ``1 + (B-1)*n/nwup``
    ('linear'), ``1 + (B-1)*(n/nwup)**2`` ('power2'), ``1 + (B-1)*sqrt(n/nwup)``
    ('sqrt'), or 1 for any other name. With 'lars' it is the layer-wise rate
    ``sqrt(|w|² / (|g|² + wd*|w|² + 1e-18))`` clipped to ``[0.01, 100]`` (squared
    L2 norms, ``g`` the averaged gradient before ``rescale_grad``).

    Parameters
    ----------
    momentum : float, default 0.0
        The momentum value.
    multi_precision : bool, default False
        Keep float32 master copies of float16 weights and update those.
    warmup_strategy : str, default 'linear'
        'linear', 'power2', 'sqrt' or 'lars' (see above).
    warmup_epochs : int, default 5
        Epochs of warm-up.
    batch_scale : int, default 1
        How many calls make one large batch (and the largest multiplier).
    updates_per_epoch : int, default 32
        Calls per epoch, to count the warm-up in calls.
    begin_epoch : int, default 0
        The epoch to start from: the count ``n`` starts at
        ``begin_epoch * updates_per_epoch``.
    num_epochs : int, default 60
        Kept as an attribute (unused, as in MXNet).

    The update follows MXNet 1.9.1's ``LBSGD`` but for one bug: MXNet keeps the
    first gradient of a parameter by reference, so when the caller reuses that
    gradient buffer (as ``Module`` and ``gluon.Trainer`` do: backward writes
    into it) the first gradient of the first large batch is lost and the next
    one counted twice. Here that gradient is copied.
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5,
                 batch_scale=1, updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs):
        super().__init__(multi_precision=multi_precision, **kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        """The momentum (None without momentum); for a float16 weight under
        ``multi_precision`` the pair ``(momentum, float32 master copy)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            master = weight.astype(numpy.float32)
            momentum = None
            if self.momentum != 0.0:
                momentum = nd.zeros(weight.shape, weight.context, dtype=numpy.float32)
            return (momentum, master)
        if weight.dtype == numpy.float16:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the SGD optimizer")
        if self.momentum != 0.0:
            return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
        return None

    def _get_lbmult(self, nup):
        """The warm-up multiplier of the learning rate at count ``nup``."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        top = float(self.batch_scale)
        if nup >= nwup:
            return top
        if nwup <= 1:
            return 1.0
        frac = nup / nwup
        if self.warmup_strategy == "linear":
            return 1.0 + (top - 1) * frac
        if self.warmup_strategy == "power2":
            return 1.0 + (top - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (top - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    def _get_lars(self, weight, g, wd):
        """The layer-wise ('lars') multiplier, clipped to [0.01, 100]."""
        w2 = self._l2norm(weight)
        g2 = self._l2norm(g)
        ratio = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(ratio, 0.01), 100.0)

    def _l2norm(self, v):
        """The squared L2 norm of ``v`` (summed in float64)."""
        a = v.asnumpy().astype(numpy.float64)
        return float(numpy.dot(a.ravel(), a.ravel()))

    def _reset_cum_gradient(self, index):
        """Starts a new large batch for ``index`` (the count goes on)."""
        self.cumgrads[index]["cum_grad"] = 0

    def _get_cum_gradient(self, index):
        """The accumulation record ``{'cum_grad', 'num_cums'}`` of ``index`` ({} when none)."""
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad):
        """Stores the accumulation record of ``index``."""
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index):
        """Adds ``grad`` to ``index``'s accumulated gradient and counts the call."""
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad["num_cums"] > 0:
            num_cums = cgrad["num_cums"] + 1
            prev = cgrad["cum_grad"]
            cum_grad = prev + grad if isinstance(prev, NDArray) else grad.copy()
        else:
            num_cums = self.init_updates + 1
            cum_grad = grad.copy()
        cgrad = {"cum_grad": cum_grad, "num_cums": num_cums}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        """Accumulates ``grad``; at the end of a large batch updates ``weight`` in place."""
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise TypeError("LBSGD.update takes NDArray weight and grad")
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            return  # inside a large batch: the weight stays put
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lbmult = self._get_lars(weight, grad, wd)
        else:
            lbmult = self._get_lbmult(cgrad["num_cums"])
        lr = lr * lbmult
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if isinstance(state, (list, tuple)):
            mom, master = state
            if mom is not None:
                nd.mp_sgd_mom_update(weight, grad, mom, master, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, master, out=weight, lr=lr, wd=wd, **kwargs)
        elif state is not None:
            nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        self._reset_cum_gradient(index)
