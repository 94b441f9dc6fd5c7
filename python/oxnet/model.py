"""``mx.model``: checkpoint files of symbolic models, as MXNet 1.x writes them.

A checkpoint is two files: ``<prefix>-symbol.json`` (the graph) and
``<prefix>-<epoch:04d>.params`` (an ``nd.save`` dict whose keys are
``arg:<name>`` for arguments and ``aux:<name>`` for auxiliary states).
MXNet's deprecated ``FeedForward`` trainer is here too (it trains through
``mx.mod.Module``, which new code should use).
"""

import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params", "FeedForward"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = """What batch-end callbacks receive: ``epoch``, ``nbatch`` (the batch
number in the epoch), ``eval_metric`` and ``locals`` (the caller's local variables)."""


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes ``prefix-symbol.json`` (unless ``symbol`` is None) and
    ``prefix-%04d.params`` % epoch with the parameters under ``arg:``/``aux:`` keys.

    Parameters
    ----------
    prefix : str
        Path prefix of the files.
    epoch : int
        The epoch number in the parameter file's name.
    symbol : Symbol or None
        The network.
    arg_params, aux_params : dict of str to NDArray
        Argument and auxiliary-state values.
    remove_amp_cast : bool
        Passed to ``Symbol.save``.
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = "%s-%04d.params" % (prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def _split_params(save_dict, fname):
    if not isinstance(save_dict, dict):
        raise MXNetError(f"{fname}: expected a parameter file holding a dict of named arrays")
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise MXNetError(f"{fname}: invalid parameter name {key!r} (expected 'arg:<name>' or 'aux:<name>')")
    return arg_params, aux_params


def load_params(prefix, epoch):
    """Reads ``prefix-%04d.params`` % epoch; returns ``(arg_params, aux_params)``."""
    fname = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(fname)
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return {}, {}
    return _split_params(save_dict, fname)


def load_checkpoint(prefix, epoch):
    """Reads a checkpoint written by :func:`save_checkpoint`.

    Returns
    -------
    symbol : Symbol
        The network from ``prefix-symbol.json``.
    arg_params, aux_params : dict of str to NDArray
        The parameters from ``prefix-%04d.params`` % epoch.
    """
    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


from .feedforward import FeedForward  # noqa: E402  (it uses the functions above)
from .callback import LogValidationMetricsCallback  # noqa: E402,F401  (MXNet's mx.model has it too)


def __getattr__(name):
    if name == "DataParallelExecutorManager":  # MXNet's mx.model imports it from executor_manager
        from .executor_manager import DataParallelExecutorManager
        return DataParallelExecutorManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
