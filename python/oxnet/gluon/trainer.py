"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

``step(batch_size)`` scales gradients by ``1/batch_size``, sums them over
contexts, and updates every parameter in one call into the Rust optimizer
(built-in optimizers update all parameters at once).
"""

from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import MXNetError
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class Trainer:
    """``Trainer(params, optimizer, optimizer_params=None)``.

    ``params``: a ParameterDict (``net.collect_params()``), a dict or a
    list of Parameters; ``optimizer``: a registered name (``'sgd'``,
    ``'adam'``, ...) or an ``mx.optimizer.Optimizer``; ``optimizer_params``:
    its keyword arguments (``learning_rate``, ``momentum``, ``wd``, ...).
    ``kvstore`` is None, a kvstore type name (``'device'``, ``'local'``,
    ...) or an ``mx.kv`` store, and ``update_on_kvstore`` is accepted: oxnet
    sums gradients over a process's contexts itself, which is what a
    single-process store does. A distributed type (``'dist_sync'``, ...)
    raises, as ``mx.kv.create`` does: oxnet has no distributed store yet;
    any other kvstore value is a TypeError.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[k] for k in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise MXNetError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise MXNetError(f"First argument must be a list or dict of Parameters, got list of "
                                 f"{type(param)}.")
            if param.name in self._param2idx:
                raise MXNetError(f"Trainer: Parameter '{param.name}' is given twice")
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
        if isinstance(kvstore, str) and kvstore.lower() not in kvs.KVStoreBase.kv_registry:
            kvs.create(kvstore)  # a distributed type (or nccl) says why it cannot be used
        elif kvstore is not None and not isinstance(kvstore, kvs.KVStoreBase):
            raise TypeError(f"kvstore must be KVStore, str or None, got {type(kvstore).__name__}")
        self._kvstore_kind = kvstore
        self._compression_params = compression_params
        self._update_on_kvstore = update_on_kvstore
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise MXNetError("optimizer_params must be None if optimizer is an instance of Optimizer "
                                 "instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        # one updater (with its own states) per context, as in MXNet
        self._updaters = [opt.get_updater(self._optimizer)]

    @property
    def optimizer(self):
        """The optimizer."""
        return self._optimizer

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Sets the learning rate (an error when a scheduler owns it)."""
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients are scaled by ``1/batch_size``, summed over
        contexts, then applied. A parameter whose gradient no backward pass
        wrote since the last step is an error naming it (or is skipped with
        ``ignore_stale_grad=True``); the error comes before any update."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self.allreduce_grads()
        self._update(ignore_stale_grad)

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer without summing over contexts (after a
        manual :meth:`allreduce_grads`)."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sums each parameter's gradients over its contexts (every context
        then holds the sum)."""
        for param in self._params:
            if param.grad_req == "null" or len(param._grad or ()) < 2:
                continue  # nothing to sum (or not initialised: the update says so)
            grads = param.list_grad()
            total = grads[0].copy()
            for g in grads[1:]:
                total += g.as_in_context(total.context)
            for g in grads:
                g[:] = total.as_in_context(g.context)

    def _update(self, ignore_stale_grad=False):
        work = [([], [], [])]  # (indices, grads, weights) for each context position
        for i, param in enumerate(self._params):
            if param._grad_req == "null":
                continue
            data, pgrads = param._data, param._grad
            if data is None:  # not initialised: the error names the parameter
                data, pgrads = param.list_data(), param.list_grad()
            for k, (arr, grad) in enumerate(zip(data, pgrads)):
                if arr._fresh_grad:
                    while len(work) <= k:
                        work.append(([], [], []))
                    work[k][0].append(i)
                    work[k][1].append(grad)
                    work[k][2].append(arr)
                elif not ignore_stale_grad:
                    raise MXNetError(
                        f"Gradient of Parameter `{param.name}` on context {arr.context} has not been updated "
                        "by backward since last `step`. This could mean a bug in your model that made it only "
                        "use a subset of the Parameters (Blocks) for this iteration. If you are intentionally "
                        "only using a subset, call step with ignore_stale_grad=True to suppress this warning "
                        "and skip updating of Parameters with stale gradient")
        for k, (indices, grads, weights) in enumerate(work):
            for arr in weights:
                arr._fresh_grad = False
            if indices:
                while len(self._updaters) <= k:
                    self._updaters.append(opt.get_updater(self._optimizer))
                self._updaters[k].update_multi(indices, grads, weights)

    def save_states(self, fname):
        """Saves the optimizer's states (momenta, update counts) to ``fname``."""
        with open(fname, "wb") as f:
            f.write(self._updaters[0].get_states(dump_optimizer=False))

    def load_states(self, fname):
        """Restores states saved by :meth:`save_states` (an error naming the
        file leaves the current states unchanged)."""
        try:
            with open(fname, "rb") as f:
                blob = f.read()
        except OSError as e:
            raise MXNetError(f"cannot read trainer states {fname}: {e}") from e
        try:
            for updater in self._updaters:
                updater.set_states(blob)
        except Exception as e:
            raise MXNetError(f"{fname}: {e}") from e
