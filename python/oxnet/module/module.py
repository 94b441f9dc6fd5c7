"""``Module``: a symbol with its parameters, bound and trained on one
or several contexts (data-parallel), as MXNet 1.x's ``mx.mod.Module``."""

import logging
import warnings

from .. import context as ctx
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import load_checkpoint
from . import _kv
from .executor_group import DataParallelExecutorGroup
from .base_module import BaseModule, _check_input_names, _parse_data_desc

__all__ = ["Module"]


class Module(BaseModule):
    """A symbol bound with its parameters, trained through ``fit`` or the
    per-batch ``forward``/``backward``/``update`` calls.

    Parameters
    ----------
    symbol : Symbol
        The network.
    data_names, label_names : list of str
        The data and label inputs of the symbol (labels may be absent).
    logger : logging.Logger or module
        Where progress is logged.
    context : Context or list of Context
        Where to run. With several, each context computes its share of every
        batch on its own copy of the parameters (data parallelism, as
        MXNet's): the kvstore (``'local'`` by default) sums the gradients,
        outputs and input gradients are joined along the batch axis.
    work_load_list : list of number, optional
        The share of the batch per context (equal by default).
    fixed_param_names : list of str, optional
        Parameters that are not updated (their ``grad_req`` is ``null``).
    state_names : list of str, optional
        Inputs that keep their value between batches (set by ``set_states``).
    group2ctxs : dict or list of dict, optional
        Model-parallel placement: arguments declared in
        ``AttrScope(ctx_group=name)`` get their arrays on
        ``group2ctxs[name]`` (host contexts; see ``symbol.simple_bind``).
    compression_params : dict, optional
        Passed to the kvstore's ``set_gradient_compression``.

    Without a kvstore (the default on one device: ``kvstore='local'`` means
    none, as in MXNet), ``update`` applies the optimizer's updater
    (``mx.optimizer.get_updater``) to each parameter directly, which is what
    MXNet's single-device local path amounts to. A ``KVStore`` object (or a
    ``dist`` name, when ``mx.kv`` exists) is used as MXNet uses it.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=ctx.cpu(), work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        context = list(context)
        if not context:
            raise MXNetError("Module: context is an empty list")
        self._context = context
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError(f"Module: work_load_list has {len(work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol

        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)

        arg_names = symbol.list_arguments()
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in arg_names if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # --------------------------------------------------------- checkpoints
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A module from the checkpoint ``prefix-symbol.json`` and
        ``prefix-%04d.params`` % epoch; with ``load_optimizer_states`` the
        optimizer states of ``prefix-%04d.states`` are loaded by
        ``init_optimizer``. ``kwargs`` go to ``Module(...)``."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Writes ``prefix-symbol.json``, ``prefix-%04d.params`` % epoch and,
        with ``save_optimizer_states``, ``prefix-%04d.states`` % epoch."""
        self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # ------------------------------------------------------------- names
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @property
    def data_names(self):
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self):
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self):
        """Names of the outputs."""
        return self._output_names

    @property
    def fixed_param_names(self):
        """Parameters not updated by training."""
        return self._fixed_param_names

    @property
    def state_names(self):
        """State inputs."""
        return self._state_names

    def _require_bound(self, what):
        if not self.binded:
            raise MXNetError(f"Module: {what} needs a bound module; call bind() first")

    @property
    def data_shapes(self):
        """``DataDesc`` of the data inputs (bound modules only)."""
        self._require_bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self):
        """``DataDesc`` of the labels, or None (bound modules only)."""
        self._require_bound("label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        """``(name, shape)`` of the outputs (bound modules only)."""
        self._require_bound("output_shapes")
        return self._exec_group.get_output_shapes()

    # -------------------------------------------------------- parameters
    def get_params(self):
        """``(arg_params, aux_params)``: dicts of name to NDArray, synced from the device."""
        if not self.params_initialized:
            raise MXNetError("Module: get_params needs initialized parameters; call init_params() first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initializes the parameters: from ``arg_params``/``aux_params``
        where given, else with ``initializer`` (called per parameter, in
        sorted name order, with an ``InitDesc`` carrying the symbol's
        attributes, so a variable's own ``init`` wins).

        Parameters
        ----------
        initializer : Initializer
            For parameters not given (or all, when no dicts are given).
        arg_params, aux_params : dict of str to NDArray, optional
            Values to copy in.
        allow_missing : bool
            Initialize parameters missing from the dicts instead of failing.
        force_init : bool
            Re-initialize even if already initialized.
        allow_extra : bool
            Accept names in the dicts that the symbol lacks.
        """
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        self._require_bound("init_params")

        def _impl(name, arr, cache):
            if cache is not None:
                if name in cache:
                    if cache[name] is not arr:
                        cache[name].copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError(f"{name} is not presented")
                if initializer is not None:
                    initializer(name, arr)
            else:
                if initializer is None:
                    raise MXNetError(f"init_params: no initializer and no value for {name!r}")
                initializer(name, arr)

        attrs = self._symbol.attr_dict()
        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Sets the parameters from dicts of name to NDArray (see ``init_params``)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -------------------------------------------------------------- bind
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocates the executor for the given input shapes.

        Parameters
        ----------
        data_shapes : list of DataDesc or (name, shape)
            The data inputs (typically ``data_iter.provide_data``).
        label_shapes : list of DataDesc or (name, shape), optional
            The labels (typically ``data_iter.provide_label``).
        for_training : bool
            Allocate gradients (otherwise the module only predicts).
        inputs_need_grad : bool
            Also compute the gradients of the data inputs.
        force_rebind : bool
            Rebind even if already bound.
        shared_module : Module, optional
            A bound, initialized module whose parameter memory this one uses.
        grad_req : str, list or dict
            ``write``, ``add`` or ``null``, for all parameters or per argument.
        """
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(self.data_names, self.label_names, data_shapes,
                                                                 label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise MXNetError("bind: shared_module must be a bound Module with initialized parameters")
            shared_group = shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group=shared_group,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, state_names=self._state_names,
            group2ctxs=self._group2ctxs)
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # parameters came from Module.load or an earlier bind
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            if self._arg_params is not None or self._aux_params is not None:
                raise MXNetError("bind: parameters exist but are not marked initialized")
            self._arg_params = {name: nd.zeros(a[0].shape, dtype=a[0].dtype)
                                for name, a in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {name: nd.zeros(a[0].shape, dtype=a[0].dtype)
                                for name, a in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Rebinds for new input shapes (e.g. another batch size), keeping the parameters."""
        self._require_bound("reshape")
        self._data_shapes, self._label_shapes = _parse_data_desc(self.data_names, self.label_names, data_shapes,
                                                                 label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # --------------------------------------------------------- optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Creates the optimizer (a name with ``optimizer_params``, where
        ``rescale_grad`` defaults to ``1 / batch_size`` as in MXNet, or an
        ``Optimizer``), its updater, and the kvstore if any."""
        if not (self.binded and self.params_initialized):
            raise MXNetError("init_optimizer: bind() and init_params() first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore = _kv.create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv and "dist" in getattr(kv, "type", "") and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        n = len(self._context)
        if update_on_kvstore:
            idx2name = dict(enumerate(self._exec_group.param_names))
        else:
            idx2name = {i * n + k: name for k in range(n) for i, name in enumerate(self._exec_group.param_names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            if "rescale_grad" not in optimizer_params:
                optimizer_params["rescale_grad"] = rescale_grad
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError(f"init_optimizer: optimizer must be a name or an Optimizer, got "
                                f"{type(optimizer).__name__}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is not normalized to "
                              f"1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. {rescale_grad}). "
                              "Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kv:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kv.set_optimizer(self._optimizer)
            _kv.initialize_kvstore(kv, self._exec_group.param_arrays, self._arg_params, self._param_names,
                                   update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Uses ``shared_module``'s optimizer, kvstore and updater."""
        if not shared_module.optimizer_initialized:
            raise MXNetError("borrow_optimizer: the shared module's optimizer is not initialized")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        """Writes the optimizer states (the updater's ``get_states()`` bytes) to ``fname``."""
        if not self.optimizer_initialized:
            raise MXNetError("save_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Reads optimizer states written by ``save_optimizer_states``."""
        if not self.optimizer_initialized:
            raise MXNetError("load_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as fin:
                self._updater.set_states(fin.read())

    # ----------------------------------------------------------- running
    def _require_ready(self, what):
        if not (self.binded and self.params_initialized):
            raise MXNetError(f"Module: {what} needs bind() and init_params() first")

    def forward(self, data_batch, is_train=None):
        """Runs forward on ``data_batch`` (``is_train`` None: as bound). A
        batch whose data shapes differ from the bound ones reshapes the module
        first (from the batch's ``provide_data``/``provide_label`` if given)."""
        self._require_ready("forward")
        curr_data_shapes = tuple(tuple(i.shape) for i in self._data_shapes)
        if isinstance(data_batch, list):
            new_data_shapes, new_label_shapes = _list_batch_shapes(data_batch)
            provided_data = provided_label = None
        else:
            new_data_shapes = tuple(tuple(i.shape) for i in data_batch.data)
            new_label_shapes = [tuple(j.shape) for j in data_batch.label] if getattr(data_batch, "label", None) \
                else None
            provided_data = getattr(data_batch, "provide_data", None)
            provided_label = getattr(data_batch, "provide_label", None)
        if curr_data_shapes != new_data_shapes:
            new_dshape = provided_data or [DataDesc(i.name, shape, i.dtype, i.layout)
                                           for i, shape in zip(self._data_shapes, new_data_shapes)]
            if provided_label:
                new_lshape = provided_label
            elif new_label_shapes and self._label_shapes:
                new_lshape = [DataDesc(i.name, shape, i.dtype, i.layout)
                              for i, shape in zip(self._label_shapes, new_label_shapes)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Back-propagates from the last forward (``out_grads``: head gradients, None for ones)."""
        self._require_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Applies the optimizer to every parameter with a gradient."""
        if not (self.binded and self.params_initialized and self.optimizer_initialized):
            raise MXNetError("Module: update needs bind(), init_params() and init_optimizer() first")
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _kv.update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore, group.param_names)
        else:
            _kv.update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                              num_device=len(self._context), kvstore=self._kvstore, param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (a list of NDArray)."""
        self._require_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (needs ``inputs_need_grad=True`` at bind)."""
        self._require_ready("get_input_grads")
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """The values of the state inputs."""
        self._require_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Sets the state inputs from ``states`` or fills them with ``value``."""
        self._require_ready("set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with the last outputs and ``labels``, once
        per context as MXNet does (``pre_sliced``: one label list per context)."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Installs a monitor on the executor."""
        self._require_bound("install_monitor")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares for ``data_batch``; oxnet has no row-sparse parameters to pull."""
        self._require_bound("prepare")
        del data_batch
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("Parameters are not updated in the KVStore. No need to call "
                                      "sparse_row_id_fn."))


def _list_batch_shapes(batches):
    """The whole-batch data and label shapes of a list of batches (one per
    context, MXNet's pre-sliced form), joined along axis 0."""
    if not batches:
        raise MXNetError("forward: empty list of data batches")

    def joined(field):
        first = getattr(batches[0], field, None) or []
        shapes = []
        for i, arr in enumerate(first):
            shape = tuple(arr.shape)
            for b in batches:
                if tuple(getattr(b, field)[i].shape) != shape:
                    raise MXNetError(f"forward: the batches of a list must have one shape; {field}[{i}] has "
                                     f"{shape} and {tuple(getattr(b, field)[i].shape)}")
            shapes.append((len(batches) * shape[0],) + shape[1:])
        return tuple(shapes)

    return joined("data"), (list(joined("label")) if getattr(batches[0], "label", None) else None)
