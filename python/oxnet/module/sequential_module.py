"""``SequentialModule``: modules chained so that each one's outputs are
the next one's data, as MXNet 1.x's."""

import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A chain of modules trained as one.

    ``add(module, take_labels=True)`` marks a module that receives the
    labels (and feeds the metric); ``auto_wiring=True`` renames the previous
    module's outputs to this module's data names when binding.
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Appends ``module`` (options: ``take_labels``, ``auto_wiring``);
        returns ``self`` so calls chain. The chain must be bound again."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise ValueError(f'Unknown meta "{key}", a typo? (known: {", ".join(sorted(self._meta_keys))})')
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _require(self, binded=True, params=True, what="this call"):
        if binded and not self.binded:
            raise MXNetError(f"SequentialModule: {what} needs a bound module; call bind() first")
        if params and not self.params_initialized:
            raise MXNetError(f"SequentialModule: {what} needs initialized parameters; call init_params() first")

    @property
    def data_names(self):
        """The first module's data names."""
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        """The last module's output names."""
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        """The first module's data shapes."""
        self._require(params=False, what="data_shapes")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes (None when no module takes labels)."""
        self._require(params=False, what="label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        """The last module's output shapes."""
        self._require(params=False, what="output_shapes")
        return self._modules[-1].output_shapes

    def get_params(self):
        """All modules' parameters in one pair of dicts."""
        self._require(what="get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initializes every module; parameter names must not repeat across modules."""
        if self.params_initialized and not force_init:
            return
        self._require(params=False, what="init_params")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                               allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        seen_args, seen_aux = {}, {}
        for i, module in enumerate(self._modules):
            args, auxs = module.get_params()
            for seen, names in ((seen_args, args), (seen_aux, auxs)):
                for name in names:
                    if name in seen:
                        raise MXNetError(f'Duplicated parameter names: name "{name}" in layer {i} '
                                         f"({type(module).__name__}) is already used in layer {seen[name]} "
                                         f"({type(self._modules[seen[name]]).__name__}).")
                    seen[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds each module on the previous one's output shapes; modules
        after the first get input gradients (for the chain's backward)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise MXNetError("bind: shared_module is not supported by SequentialModule")
        if not self._modules:
            raise MXNetError("Attempting to bind an empty SequentialModule")
        self.binded = True
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_needs_label = False
        for i, module in enumerate(self._modules):
            meta = self._metas[i]
            if meta.get(self.META_TAKE_LABELS, False):
                my_label_shapes = label_shapes
                anybody_needs_label = True
            else:
                my_label_shapes = None
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i > 0))
            if meta.get(self.META_AUTO_WIRING, False):
                data_names = module.data_names
                if len(data_names) != len(my_data_shapes):
                    raise MXNetError(f"bind: layer {i} takes {len(data_names)} inputs, the previous layer gives "
                                     f"{len(my_data_shapes)}")
                my_data_shapes = [(new, shape) for new, (_, shape) in zip(data_names, my_data_shapes)]
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes, for_training=for_training,
                        inputs_need_grad=my_inputs_need_grad, force_rebind=force_rebind, shared_module=None,
                        grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Sets up the optimizer of every module."""
        self._require(what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params,
                                  force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        """Runs each module on the previous one's outputs."""
        self._require(what="forward")
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(name, x.shape) for name, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        """Back-propagates through the chain, last module first."""
        self._require(what="backward")
        for i in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        """Updates every module's parameters."""
        self._require(what="update")
        if not self.optimizer_initialized:
            raise MXNetError("SequentialModule: update needs init_optimizer() first")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The last module's outputs."""
        self._require(what="get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The first module's input gradients (bind with ``inputs_need_grad``)."""
        self._require(what="get_input_grads")
        if not self.inputs_need_grad and not self._modules[0].inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` from the modules that take labels."""
        self._require(what="update_metric")
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Installs ``mon`` on every module."""
        self._require(params=False, what="install_monitor")
        for module in self._modules:
            module.install_monitor(mon)
