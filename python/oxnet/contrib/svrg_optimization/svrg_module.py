"""``SVRGModule``: a ``Module`` trained with stochastic variance-reduced
gradients (MXNet 1.x's ``mx.contrib.svrg_optimization.svrg_module``).

The module keeps a second ``Module`` on the same symbol, ``_mod_aux``,
holding a snapshot of the weights. ``update_full_grads(train_data)`` copies
the current weights into the snapshot and averages the gradients of every
batch of ``train_data`` at them (per context: ``_param_dict[ctx][name]``).
Each training step then runs the batch through both modules and replaces
the gradient of every parameter with the SVRG estimate::

    g = g(w, batch) - g(w_snapshot, batch) + mean over all batches of g(w_snapshot, .)

before the optimizer applies it. ``fit`` recomputes the full gradients at
the start of every ``update_freq``-th epoch.
"""

import logging

from ... import context as ctx
from ... import ndarray as nd
from ... import optimizer as opt
from ...base import MXNetError
from ...initializer import Uniform
from ...model import load_checkpoint
from ...module import Module
from ...module import _kv
from .svrg_optimizer import _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A ``Module`` whose updates use SVRG gradients (see the module text).

    Parameters
    ----------
    symbol : Symbol
        The network.
    data_names, label_names : list of str
        The data and label inputs of the symbol.
    logger : logging.Logger or module
        Where progress is logged.
    context : Context or list of Context
        Where to run (several: data parallel, as ``Module``).
    work_load_list : list of number, optional
        The share of each context.
    fixed_param_names : list of str, optional
        Parameters that are not updated.
    state_names : list of str, optional
        State inputs (see ``Module``).
    group2ctxs : dict or list of dict, optional
        Model-parallel placement (see ``Module``).
    compression_params : dict, optional
        Gradient compression of the kvstore (see ``Module``).
    update_freq : int
        Recompute the full gradients every ``update_freq`` epochs (a
        positive int; required). A non-int is a TypeError, a value below 1
        a ValueError.

    Examples
    --------
    >>> mod = SVRGModule(symbol=lro, data_names=['data'], label_names=['lin_reg_label'], update_freq=2)
    >>> mod.fit(di, eval_metric='mse', optimizer='sgd', optimizer_params=(('learning_rate', 0.025),),
    ...         num_epoch=10)
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=ctx.cpu(), work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None, update_freq=None):
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger, context=context,
                         work_load_list=work_load_list, fixed_param_names=fixed_param_names,
                         state_names=state_names, group2ctxs=group2ctxs, compression_params=compression_params)
        if not isinstance(update_freq, int):
            raise TypeError("SVRGModule: update_freq must be an int, the number of epochs between two "
                            f"computations of the full gradients; got {update_freq!r}")
        if update_freq <= 0:
            raise ValueError(f"SVRGModule: update_freq must be a positive int (epochs between two computations "
                             f"of the full gradients), got {update_freq}")
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, data_names, label_names, logger, context, work_load_list,
                               fixed_param_names, state_names, group2ctxs, compression_params)
        self._param_dict = None
        self._ctx_len = len(self._context)

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, update_freq=None, **kwargs):
        """A module from the checkpoint ``prefix-symbol.json`` /
        ``prefix-%04d.params`` (see ``Module.load``). As in MXNet, without
        ``update_freq`` this is ``Module.load`` and gives a plain ``Module``
        (which cannot read the optimizer states an ``SVRGModule`` saved);
        with ``update_freq`` (an oxnet addition) it gives an ``SVRGModule``,
        whose ``init_optimizer`` then restores such states."""
        if update_freq is None:
            return Module.load(prefix, epoch, load_optimizer_states=load_optimizer_states, **kwargs)
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = SVRGModule(symbol=sym, update_freq=update_freq, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    # ------------------------------------------------------------ binding
    def _reset_bind(self):
        """Unbinds this module and the snapshot module."""
        super()._reset_bind()
        if hasattr(self, "_mod_aux"):
            self._mod_aux._reset_bind()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds this module (as ``Module.bind``) and, when ``for_training``,
        the snapshot module with the same arguments."""
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind, shared_module,
                     grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                               shared_module, grad_req)

    def reshape(self, data_shapes, label_shapes=None):
        """Reshapes both modules for new input shapes."""
        super().reshape(data_shapes, label_shapes=label_shapes)
        if self._mod_aux.binded:
            self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    # ---------------------------------------------------------- optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Installs an ``_SVRGOptimizer`` around ``optimizer`` (a name, with
        ``optimizer_params``, or an ``Optimizer``) and zeroes the full
        gradients. With a kvstore, one more key per parameter,
        ``<name>_full``, is created to sum the full gradients of the
        devices (and workers)."""
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if not (self.binded and self.params_initialized):
            raise MXNetError("SVRGModule.init_optimizer: bind() and init_params() first")
        arg_params = self.get_params()[0]
        self._param_dict = [{name: nd.zeros(value.shape, ctx=self._context[i], dtype=value.dtype)
                             for name, value in arg_params.items()} for i in range(self._ctx_len)]
        svrg_optimizer = self._create_optimizer(_SVRGOptimizer.__name__, default_opt=optimizer, kvstore=kvstore,
                                                optimizer_params=optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=svrg_optimizer, optimizer_params=optimizer_params,
                               force_init=force_init)
        if self._kvstore:
            for name in self._exec_group.param_names:
                self._kvstore.init(name + "_full", nd.zeros(self._arg_params[name].shape,
                                                            dtype=self._arg_params[name].dtype))

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The ``_SVRGOptimizer`` (registered name ``optimizer``) around
        ``default_opt``, with ``rescale_grad`` 1/batch size unless given and
        the parameter names by index, the ``<name>_full`` keys included
        (after the parameters' own indices, as the kvstore numbers them)."""
        batch_size = self._exec_group.batch_size
        kv, update_on_kvstore = _kv.create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv and "dist" in getattr(kv, "type", "") and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * self._ctx_len + k: name for k in range(self._ctx_len) for i, name in enumerate(names)}
        next_index = max(idx2name) + 1 if idx2name else 0
        for offset, name in enumerate(names):
            idx2name[next_index + offset] = name + "_full"
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", rescale_grad)
        params["default_optimizer"] = default_opt
        params["param_idx2name"] = idx2name
        return opt.create(optimizer, **params)

    # ----------------------------------------------------------- running
    def forward(self, data_batch, is_train=None):
        """Runs forward on this module and, when ``is_train`` is True, on
        the snapshot module too (``forward_backward`` passes True)."""
        super().forward(data_batch, is_train)
        if is_train:
            if not self._mod_aux.params_initialized:
                raise MXNetError("SVRGModule.forward(is_train=True): the snapshot module has no weights yet; "
                                 "call update_full_grads(train_data) first (fit does it every update_freq "
                                 "epochs)")
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Back-propagates through this module and the snapshot module."""
        super().backward(out_grads)
        if self._mod_aux.binded and self._mod_aux.params_initialized:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Replaces every gradient with its SVRG estimate, then applies the
        optimizer (as ``Module.update``)."""
        if not (self.binded and self.params_initialized and self.optimizer_initialized):
            raise MXNetError("SVRGModule.update needs bind(), init_params() and init_optimizer() first")
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data):
        """Copies the current weights into the snapshot module and sets the
        full gradients to the mean over the batches of ``train_data`` (reset
        first) of the snapshot's gradients, per context; a last batch with
        ``pad`` padded examples counts as ``1 - pad / batch_size`` of one.
        With a kvstore the full gradients of the devices and workers are
        summed there and shared out again."""
        if self._param_dict is None:
            raise MXNetError("SVRGModule.update_full_grads: call init_optimizer() first")
        if not self._mod_aux.binded:
            raise MXNetError("SVRGModule.update_full_grads: the module must be bound for training")
        param_names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        # start from zero: MXNet 1.9.1 keeps adding to the previous full gradients
        for per_ctx in self._param_dict:
            for value in per_ctx.values():
                value[:] = 0
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            grad_arrays = self._mod_aux._exec_group.grad_arrays
            for k in range(self._ctx_len):
                for index, name in enumerate(param_names):
                    grad = grad_arrays[index][k]
                    if grad is not None:
                        self._param_dict[k][name] += grad.as_in_context(self._param_dict[k][name].context)
            padding = getattr(batch, "pad", 0) or 0
        if nbatch == 0:
            raise MXNetError("SVRGModule.update_full_grads: train_data gave no batch")
        batch_size = getattr(train_data, "batch_size", None) or self._exec_group.batch_size
        true_num_batch = nbatch - padding / batch_size
        for name in param_names:
            grad_list = []
            for k in range(self._ctx_len):
                self._param_dict[k][name] /= true_num_batch
                grad_list.append(self._param_dict[k][name])
            if self._kvstore:
                self._accumulate_kvstore(name, grad_list)

    def _accumulate_kvstore(self, key, value):
        """Sums the full gradients ``value`` (one per device) of parameter
        ``key`` over devices and workers in the kvstore key ``<key>_full``
        and shares the sum out (divided by the number of devices)."""
        self._kvstore.push(key + "_full", value)
        self._kvstore._barrier()
        self._kvstore.pull(key + "_full", value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        """Sets each device's full gradient of ``key`` to ``value[i]`` divided by the number of devices."""
        for i in range(self._ctx_len):
            self._param_dict[i][key] = value[i] / self._ctx_len

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """The SVRG gradient ``g_curr_batch_curr_weight -
        g_curr_batch_special_weight + g_special_weight_all_batch``, written
        into the first argument (an NDArray or a list of them), which is
        returned."""
        if isinstance(g_curr_batch_curr_weight, (list, tuple)):
            for grad, special, full in zip(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                           g_special_weight_all_batch):
                grad -= special
                grad += full
        else:
            g_curr_batch_curr_weight -= g_curr_batch_special_weight
            g_curr_batch_curr_weight += g_special_weight_all_batch
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        """Writes the SVRG gradient into every context's gradient arrays."""
        param_names = self._exec_group.param_names
        grads = self._exec_group.grad_arrays
        aux_grads = self._mod_aux._exec_group.grad_arrays
        for k in range(self._ctx_len):
            for index, name in enumerate(param_names):
                g_curr = grads[index][k]
                if g_curr is None:
                    continue
                full = self._param_dict[k][name]
                self._svrg_grads_update_rule(g_curr, aux_grads[index][k], full.as_in_context(g_curr.context))

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
            eval_end_callback=None, eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Trains as ``Module.fit`` (same arguments), computing the full
        gradients with :meth:`update_full_grads` at the start of every epoch
        whose number is a multiple of ``update_freq``. The metric logged per
        epoch is the last batch's ``get_name_value()``, as MXNet's SVRG
        ``fit`` logs it."""
        if num_epoch is None:
            raise ValueError("SVRGModule.fit: please specify number of epochs (num_epoch)")
        super().fit(train_data, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                    batch_end_callback=batch_end_callback, kvstore=kvstore, optimizer=optimizer,
                    optimizer_params=optimizer_params, eval_end_callback=eval_end_callback,
                    eval_batch_end_callback=eval_batch_end_callback, initializer=initializer, arg_params=arg_params,
                    aux_params=aux_params, allow_missing=allow_missing, force_rebind=force_rebind,
                    force_init=force_init, begin_epoch=begin_epoch, num_epoch=num_epoch,
                    validation_metric=validation_metric, monitor=monitor, sparse_row_id_fn=sparse_row_id_fn)

    def _fit_epoch_begin(self, epoch, train_data):
        # MXNet's SVRG fit: the full gradients first, then the data rewound
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
        train_data.reset()

    def _fit_train_metric(self, eval_metric):
        return eval_metric.get_name_value()

    def _fit_epoch_end(self, train_data):
        pass  # rewound at the next epoch's start

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares both modules for ``data_batch`` (see ``Module.prepare``)."""
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        if self._mod_aux.binded:
            self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

