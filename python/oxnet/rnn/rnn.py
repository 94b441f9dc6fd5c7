"""Checkpoints of networks built from ``mx.rnn`` cells: the weights are
saved unpacked (per gate, readable by step-wise cells) and packed again
when loaded."""

import warnings

from ..model import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _cell_list(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix='', layout='NTC'):
    """Deprecated: call ``cell.unroll(length, inputs, begin_state, layout)``
    (``input_prefix`` is ignored)."""
    warnings.warn('rnn_unroll is deprecated; call cell.unroll directly', DeprecationWarning, stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """``mx.model.save_checkpoint`` after unpacking the weights of ``cells``.

    Parameters
    ----------
    cells : BaseRNNCell or list of BaseRNNCell
        The cells whose weights are in ``arg_params``.
    prefix : str
        Path prefix of the files.
    epoch : int
        Epoch number in the parameter file's name.
    symbol : Symbol
        The network.
    arg_params, aux_params : dict of str to NDArray
        The parameters.
    """
    for cell in _cell_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """``mx.model.load_checkpoint`` followed by packing the weights of
    ``cells``; returns ``(symbol, arg_params, aux_params)``."""
    sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    for cell in _cell_list(cells):
        arg_params = cell.pack_weights(arg_params)
    return sym, arg_params, aux_params


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback (for ``Module.fit``) that saves an RNN checkpoint
    every ``period`` epochs with :func:`save_rnn_checkpoint`."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
