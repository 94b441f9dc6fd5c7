"""``mx.executor_manager``: MXNet's pre-Module helper for data-parallel
training (``DataParallelExecutorManager``), on the executor group that
``mx.mod.Module`` uses (:mod:`oxnet.module.executor_group`)."""

import logging

from .base import MXNetError
from .module.executor_group import DataParallelExecutorGroup, split_input_slice

__all__ = ["DataParallelExecutorManager"]

_split_input_slice = split_input_slice


def _check_arguments(symbol):
    """Raises an MXNetError when ``symbol`` has two arguments or two
    auxiliary states of one name."""
    for kind, names in (("argument", symbol.list_arguments()), ("auxiliary state", symbol.list_auxiliary_states())):
        seen = set()
        for name in names:
            if name in seen:
                raise MXNetError(f"Find duplicated {kind} name \"{name}\"; please give each a different name "
                                 f"(the {kind}s are {names})")
            seen.add(name)


class DataParallelExecutorManager:
    """Executors of ``symbol`` on each context of ``ctx``, each computing its
    share (``work_load_list``) of the batches of ``train_data``.

    Parameters
    ----------
    symbol : Symbol
        The network (its outputs are the losses or predictions).
    ctx : list of Context
        The contexts.
    train_data : DataIter
        Gives the batch size and the input descriptions.
    arg_names, param_names, aux_names : list of str
        The symbol's arguments, the trained ones among them, its aux states.
    work_load_list : list of number, optional
        Share of each batch per context (equal by default).
    logger : logging.Logger, optional
        Where the start is logged.
    sym_gen : callable, optional
        ``sym_gen(bucket_key)`` gives the symbol of a bucket (batches with a
        ``bucket_key``); buckets share the default bucket's parameters.
    """

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names, work_load_list=None,
                 logger=None, sym_gen=None):
        (logger or logging).info("Start training with %s", str(ctx))
        self.ctx = list(ctx)
        if work_load_list is None:
            work_load_list = [1] * len(self.ctx)
        if not isinstance(work_load_list, list) or len(work_load_list) != len(self.ctx):
            raise MXNetError(f"work_load_list must be a list of {len(self.ctx)} numbers, got {work_load_list!r}")
        self.work_load_list = work_load_list
        self.slices = split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names = arg_names
        self.param_names = param_names
        self.aux_names = aux_names
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.execgrp = self._group(symbol, train_data.provide_data, train_data.provide_label)
        self.curr_execgrp = None
        self._batch = None
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def _group(self, symbol, data_shapes, label_shapes, shared=None):
        _check_arguments(symbol)
        return DataParallelExecutorGroup(symbol, self.ctx, self.work_load_list, data_shapes, label_shapes,
                                         self.param_names, for_training=True, inputs_need_grad=False,
                                         shared_group=shared)

    def install_monitor(self, monitor):
        """Installs ``monitor`` on every executor (not with buckets)."""
        if self.sym_gen is not None:
            raise NotImplementedError("install_monitor: monitoring is not implemented for bucketing")
        self.execgrp.install_monitor(monitor)

    def set_params(self, arg_params, aux_params):
        """Copies the parameter and aux values into every executor."""
        self.execgrp.set_params(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params):
        """Writes into the dicts' arrays each parameter and aux state averaged
        over the contexts."""
        self.execgrp.get_params(arg_params, aux_params)

    @property
    def param_arrays(self):
        """``[[param on each context]]`` (shared by every bucket)."""
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        """``[[gradient on each context]]`` (shared by every bucket)."""
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        """``[[aux state on each context]]`` (shared by every bucket)."""
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch):
        """Chooses the batch's bucket (making it on first sight) and keeps the
        batch for :meth:`forward`."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = self._group(self.sym_gen(key), data_batch.provide_data,
                                                       data_batch.provide_label, shared=self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        else:
            self.curr_execgrp = self.execgrp
        self._batch = data_batch

    def forward(self, is_train=False):
        """Runs forward on the loaded batch."""
        if self._batch is None:
            raise MXNetError("forward: call load_data_batch first")
        self.curr_execgrp.forward(self._batch, is_train=is_train)

    def backward(self):
        """Runs backward on the current executors."""
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """Updates ``metric`` with the current outputs, per context."""
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)
