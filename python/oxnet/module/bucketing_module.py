"""``BucketingModule``: one ``Module`` per bucket key (e.g. a sequence
length), all sharing the default bucket's parameters, as MXNet 1.x's."""

import logging
import warnings

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, _check_input_names
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Runs a network whose symbol depends on a bucket key.

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``; every
        bucket's symbol must have the same parameters.
    default_bucket_key : hashable
        The key of the largest bucket: it is bound first and owns the
        parameter memory the other buckets share.
    logger, context, work_load_list, fixed_param_names, state_names, group2ctxs, compression_params
        As for :class:`Module`.

    A batch selects its bucket with ``bucket_key`` and gives its shapes with
    ``provide_data``/``provide_label``.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=ctx.cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        # a fresh name manager per call, so every bucket's symbol gets the same automatic names
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    def _require_ready(self, what, optimizer=False):
        if not (self.binded and self.params_initialized):
            raise MXNetError(f"BucketingModule: {what} needs bind() and init_params() first")
        if optimizer and not self.optimizer_initialized:
            raise MXNetError(f"BucketingModule: {what} needs init_optimizer() first")

    @property
    def default_bucket_key(self):
        """The default bucket's key."""
        return self._default_bucket_key

    @property
    def data_names(self):
        """Data names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        """Output names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    def _require_bound(self, what):
        if not self.binded:
            raise MXNetError(f"BucketingModule: {what} needs a bound module; call bind() first")

    @property
    def data_shapes(self):
        """Data shapes of the current bucket."""
        self._require_bound("data_shapes")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        """Label shapes of the current bucket."""
        self._require_bound("label_shapes")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        """Output shapes of the current bucket."""
        self._require_bound("output_shapes")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's symbol."""
        self._require_bound("symbol")
        return self._curr_module.symbol

    def get_params(self):
        """``(arg_params, aux_params)``, shared by all buckets."""
        if not self.params_initialized:
            raise MXNetError("BucketingModule: get_params needs initialized parameters")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Sets the shared parameters."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                                     allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initializes the shared parameters (see ``Module.init_params``)."""
        if self.params_initialized and not force_init:
            return
        self._require_bound("init_params")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init,
                                      allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        """The current bucket's state inputs."""
        self._require_ready("get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Sets the current bucket's state inputs."""
        self._require_ready("set_states")
        self._curr_module.set_states(states, value)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds the default bucket for ``data_shapes``/``label_shapes``
        (``shared_module`` is not supported, as in MXNet)."""
        arg_params = aux_params = None
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("bind: shared_module for BucketingModule is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized and arg_params is not None:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes ``bucket_key`` current, binding its module (sharing the
        default bucket's parameters) the first time."""
        self._require_bound("switch_bucket")
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            if module is None:
                symbol, data_names, label_names = self._call_sym_gen(bucket_key)
                module = self._new_module(symbol, data_names, label_names)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Sets up the optimizer on the current bucket; the others borrow it."""
        self._require_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Binds the batch's bucket if needed, then comes back to the current one."""
        self._require_ready("prepare")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        """Switches to the batch's bucket and runs forward."""
        self._require_ready("forward")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        """Backward on the current bucket."""
        self._require_ready("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        """Updates the shared parameters from the current bucket's gradients."""
        self._require_ready("update", optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        """The current bucket's outputs."""
        self._require_ready("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The current bucket's input gradients."""
        self._require_ready("get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with the current bucket's outputs."""
        self._require_ready("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Installs ``mon`` on every bucket (also those bound later)."""
        self._require_bound("install_monitor")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes ``prefix-%04d.params``, ``prefix-<key>-symbol.json`` per
        bucket and ``prefix.buckets`` (the keys, as int32)."""
        if not self._buckets:
            raise MXNetError("Empty BucketingModule cannot be saved")
        self.save_params("%s-%04d.params" % (prefix, epoch))
        for bucket_key in self._buckets:
            symbol, _, _ = self._call_sym_gen(bucket_key)
            symbol.save(f"{prefix}-{bucket_key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A bucketing module from ``save_checkpoint``'s files (``sym_gen`` and
        ``default_bucket_key`` are required; ``kwargs`` go to the modules)."""
        if sym_gen is None:
            raise ValueError("sym_gen is required for loading BucketingModule")
        if default_bucket_key is None:
            raise ValueError("default_bucket_key is required for loading BucketingModule")
        buckets = nd.load(f"{prefix}.buckets")
        keys = [int(k) for k in buckets[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            mod._buckets[key] = Module(sym.load(f"{prefix}-{key}-symbol.json"), data_names, label_names,
                                       **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise MXNetError(f"BucketingModule.load: default bucket {default_bucket_key!r} is not among the "
                             f"saved buckets {keys}")
        arg_params, aux_params = load_params(prefix, epoch)
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None, aux_params=None,
                  **kwargs):
        """A bucketing module from symbols by bucket key and parameter dicts."""
        for value, what in ((sym_dict, "sym_dict"), (arg_params, "arg_params"), (aux_params, "aux_params"),
                            (default_bucket_key, "default_bucket_key")):
            if value is None:
                raise ValueError(f"{what} needs to be provided for BucketingModule.load_dict")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key, loaded in sym_dict.items():
            _, data_names, label_names = sym_gen(default_bucket_key)
            mod._buckets[key] = Module(loaded, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise MXNetError(f"BucketingModule.load_dict: no symbol for the default bucket {default_bucket_key!r}")
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
