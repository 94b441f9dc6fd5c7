"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

``step(batch_size)`` scales gradients by ``1/batch_size``, reduces them over
contexts (and over workers with a distributed kvstore) and updates the
parameters. The kvstore decisions are MXNet 1.9.1's:

* no kvstore for one context in one process (``kvstore`` a single-machine
  name): the updates run directly, every parameter in one call into the Rust
  optimizer;
* several contexts, or a distributed type, or a store object: gradients go
  through the store's ``pushpull``; with ``update_on_kvstore`` (the default
  when the store can run an optimizer, unless ``MXNET_UPDATE_ON_KVSTORE=0``
  or, for ``'local'``, a parameter over 16M elements) the store applies the
  optimizer and the weights are pulled back, otherwise each context's
  updater applies it to the reduced gradients.

The store is created at the first ``step`` (or ``allreduce_grads``,
``update``, ``save_states``, ``load_states``) and each parameter is
broadcast into it once it is initialized.
"""

from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import MXNetError
from ..module._kv import create_kvstore
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class _StaleGradient(MXNetError, UserWarning):
    """A parameter's gradient was not written since the last step (MXNet
    raises a UserWarning; oxnet's error is both)."""


class _UpdatedOnKVStore(MXNetError, AssertionError):
    """``update``/``allreduce_grads`` while the store runs the optimizer
    (MXNet asserts; oxnet's error is both)."""


class Trainer:
    """``Trainer(params, optimizer, optimizer_params=None, kvstore='device',
    compression_params=None, update_on_kvstore=None)``.

    ``params``: a ParameterDict (``net.collect_params()``), a dict or a
    list of Parameters; ``optimizer``: a registered name (``'sgd'``,
    ``'adam'``, ...) or an ``mx.optimizer.Optimizer``; ``optimizer_params``:
    its keyword arguments (``learning_rate``, ``momentum``, ``wd``, ...).
    ``kvstore``: None, a type name (``'device'``, ``'local'``,
    ``'dist_sync'``, ...) or an ``mx.kv`` store; ``compression_params``:
    the store's gradient compression; ``update_on_kvstore``: whether the
    store runs the optimizer (None: MXNet's choice, see the module).
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
        if kvstore is not None and not isinstance(kvstore, (str, kvs.KVStoreBase)):
            raise TypeError(f"kvstore must be KVStore, str or None, got {type(kvstore).__name__}")
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()
        if (isinstance(kvstore, str) and "dist" in kvstore) or isinstance(kvstore, kvs.DistKVStore):
            # every worker starts from rank 0's values, before its first forward pass
            self._prepare()

    def _check_contexts(self):
        """The contexts every initialized parameter shares (an error naming
        the first parameter that lives elsewhere)."""
        contexts = None
        for param in self._params:
            try:
                ctx = param.list_ctx()
            except MXNetError:
                continue  # not initialized yet: the first step says so
            if contexts is not None and contexts != ctx:
                raise MXNetError(f"All Parameters must be initialized on the same set of contexts, but Parameter "
                                 f"{param.name} is initialized on {ctx} while previous Parameters are "
                                 f"initialized on {contexts}.")
            contexts = ctx
        return contexts or []

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
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts or [None]]

    # ------------------------------------------------------------------
    # the kvstore

    def _reset_kvstore(self):
        """Forgets the store; the next step creates it again (not for a
        distributed store, which the other workers still use)."""
        if self._kvstore is not None and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        """Creates the store and decides ``update_on_kvstore`` as MXNet does."""
        config = self._kvstore_params
        self._contexts = self._check_contexts()
        arrays = {p.name: p._data[0] for p in self._params if p._data is not None}
        kvstore, update_on_kvstore = create_kvstore(config["kvstore"], max(len(self._contexts), 1), arrays)
        self._distributed = kvstore is not None and "dist" in kvstore.type
        if self._distributed and "async" in kvstore.type:
            update_on_kvstore = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if kvstore is not None and update_on_kvstore and not kvstore.is_capable(kvs.KVStoreBase.OPTIMIZER):
            if config["update_on_kvstore"]:
                raise ValueError(f"Please set update_on_kvstore=False when training with {type(kvstore)}")
            update_on_kvstore = False
        if kvstore is not None:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        while len(self._updaters) < len(self._contexts):
            self._updaters.append(opt.get_updater(self._optimizer))
        self._kv_initialized = True

    def _init_params(self):
        """Broadcasts every parameter initialized since the last call into
        the store (rank 0's values win in a distributed store); deferred
        ones wait for their first forward pass."""
        waiting = []
        if self._kvstore is not None:
            for param in self._params_to_init:
                if param._data is None:
                    waiting.append(param)
                    continue
                arrays = param._data
                self._kvstore.broadcast(self._param2idx[param.name], arrays[0], arrays)
        self._params_to_init = waiting

    def _on_param_initialized(self, param):
        """A parameter just got its values (deferred initialisation, or
        ``initialize`` after the trainer was made): a distributed store
        takes rank 0's at once, before any worker computes with its own."""
        if self._distributed and param in self._params_to_init:
            self._init_params()

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # ------------------------------------------------------------------
    # the optimizer

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

    def _check_and_rescale_grad(self, scale):
        # MXNet refused a new batch size with update_on_kvstore on a
        # distributed store (its servers kept a pickled copy of the
        # optimizer); every oxnet worker runs this very optimizer, so the
        # new scale takes effect everywhere
        self._optimizer.rescale_grad = scale

    # ------------------------------------------------------------------
    # steps

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients are scaled by ``1/batch_size``, reduced over
        contexts (and workers), then applied. A parameter whose gradient no
        backward pass wrote since the last step is an error naming it (or is
        skipped with ``ignore_stale_grad=True``); the error comes before any
        gradient is reduced or applied."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare()
        if not ignore_stale_grad:
            self._check_fresh()
        self._allreduce_grads(skip_stale=ignore_stale_grad)
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Reduces each parameter's gradients over its contexts (and the
        workers of a distributed store); every context then holds the sum.
        Not available when the store runs the optimizer."""
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            raise _UpdatedOnKVStore("allreduce_grads() when parameters are updated on kvstore is not supported. Try "
                             "setting `update_on_kvstore` to False when creating trainer.")
        self._allreduce_grads()

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer to the (already reduced) gradients, after
        :meth:`allreduce_grads`. Not available when the store runs the
        optimizer."""
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            raise _UpdatedOnKVStore("update() when parameters are updated on kvstore is not supported. Try setting "
                             "`update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        if not ignore_stale_grad:
            self._check_fresh()
        self._update(ignore_stale_grad)

    def _allreduce_grads(self, skip_stale=False):
        """Reduces through the store. With ``skip_stale``, a parameter whose
        gradient is stale on a context is left out (MXNet pushed it anyway,
        so the store updated it with an old gradient); a distributed store
        still takes every parameter, since all workers must join each
        reduction."""
        if self._kvstore is None:
            return
        skip_stale = skip_stale and not self._distributed
        keys, grads, outs = [], [], []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if skip_stale and not all(arr._fresh_grad for arr in param.list_data()):
                continue
            keys.append(i)
            grads.append(param.list_grad())
            outs.append(param.list_data() if self._update_on_kvstore else None)
        if isinstance(self._kvstore, kvs.KVStore) and keys:
            # oxnet's own stores take every parameter in one call: one fused
            # all-reduce per step in a distributed store
            self._kvstore.pushpull(keys, grads, out=outs if self._update_on_kvstore else None)
            return
        for i, grad, out in zip(keys, grads, outs):
            self._kvstore.pushpull(i, grad, out=out, priority=-i)

    def _check_fresh(self):
        for param in self._params:
            if param.grad_req == "null":
                continue
            for arr in param.list_data():
                if not arr._fresh_grad:
                    raise _StaleGradient(
                        f"Gradient of Parameter `{param.name}` on context {arr.context} has not been updated "
                        "by backward since last `step`. This could mean a bug in your model that made it only "
                        "use a subset of the Parameters (Blocks) for this iteration. If you are intentionally "
                        "only using a subset, call step with ignore_stale_grad=True to suppress this warning "
                        "and skip updating of Parameters with stale gradient")

    def _update(self, ignore_stale_grad=False):
        on_store = self._kvstore is not None and self._update_on_kvstore
        work = [([], [], []) for _ in self._updaters]  # (indices, grads, weights) per context position
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            for k, (arr, grad) in enumerate(zip(param.list_data(), param.list_grad())):
                if arr._fresh_grad or not ignore_stale_grad:
                    arr._fresh_grad = False
                    if not on_store:
                        while len(work) <= k:
                            work.append(([], [], []))
                        work[k][0].append(i)
                        work[k][1].append(grad)
                        work[k][2].append(arr)
        for k, (indices, grads, weights) in enumerate(work):
            if indices:
                while len(self._updaters) <= k:
                    self._updaters.append(opt.get_updater(self._optimizer))
                self._updaters[k].update_multi(indices, grads, weights)

    # ------------------------------------------------------------------
    # states

    def save_states(self, fname):
        """Saves the optimizer's states (momenta, update counts) and its
        settings to ``fname``."""
        self._prepare()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise MXNetError("Cannot save trainer states when some parameters are not yet initialized in "
                                 "kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        with open(fname, "wb") as f:
            f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Restores states saved by :meth:`save_states` (an error naming the
        file leaves the current states unchanged)."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
            return
        try:
            with open(fname, "rb") as f:
                blob = f.read()
        except OSError as e:
            raise MXNetError(f"cannot read trainer states {fname}: {e}") from e
        try:
            for updater in self._updaters:
                updater.set_states(blob)
                updater.optimizer = self._updaters[0].optimizer
        except Exception as e:
            raise MXNetError(f"{fname}: {e}") from e
        self._optimizer = self._updaters[0].optimizer
