"""Contributed recurrent cells (``mx.gluon.contrib.rnn``):
``VariationalDropoutCell`` (one dropout mask for all time steps) and
``LSTMPCell`` (an LSTM whose recurrent state is a projection of its
hidden state); and ``dynamic_unroll``, which runs a cell over a sequence
with ``F.contrib.foreach`` instead of one call per step written out."""

from .... import ndarray
from ....base import _as_list
from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, HybridSequentialRNNCell, ModifierCell,
                             SequentialRNNCell, _describe_mapping, _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length)
from ...parameter import tensor_types

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal and Ghahramani, 2016) around ``base_cell``:
    one dropout mask is drawn per sequence and reused at every time step.

    ``drop_inputs``, ``drop_states`` and ``drop_outputs`` are the rates for
    the inputs, the first state (``h``) fed to the base cell, and the
    outputs; 0 turns that dropout off. Each has its own mask. When stepping
    the cell by hand the masks are drawn on the first step and kept until
    :meth:`reset` (``unroll`` resets by itself), so call ``reset()``
    between sequences. Outside training the cell is the base cell.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support variational state dropout. "
                                 "Please add VariationalDropoutCell to the cells underneath instead.")
        if (drop_states and isinstance(base_cell, (SequentialRNNCell, HybridSequentialRNNCell))
                and base_cell._bidirectional):
            raise AssertionError("Bidirectional SequentialRNNCell doesn't support variational state dropout. "
                                 "Please add VariationalDropoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        """Forgets the masks (the next step draws new ones) and resets the
        counters."""
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    @staticmethod
    def _mask(F, like, rate):
        # ones, dropped out: 0 or 1/(1-rate) in training, all ones otherwise
        return F.Dropout(F.ones_like(like), p=rate)

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = self._mask(F, states[0], self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = self._mask(F, inputs, self.drop_inputs)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask  # only h, the first state, is dropped
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, new_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = self._mask(F, output, self.drop_outputs)
            output = output * self.drop_outputs_mask
        return output, new_states

    def __repr__(self):
        return f"{self.__class__.__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Unrolls as :meth:`RecurrentCell.unroll`. Without state dropout the
        input and output dropout apply to the whole sequence at once, with
        the mask shared along the time axis."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    r"""An LSTM cell with a projection (Sak et al., 2014): the LSTM of
    :class:`~oxnet.gluon.rnn.LSTMCell` (gates input, forget, candidate,
    output; sigmoid and tanh) whose recurrent input is
    ``r_{t-1} = W_h2r h_{t-1}`` instead of ``h_{t-1}``.

    ``hidden_size`` is the size of the cell state ``c``; ``projection_size``
    the size of ``r``, which is also the output. States: ``[r, c]`` with
    shapes ``(batch, projection_size)`` and ``(batch, hidden_size)``.
    Parameters ``i2h_weight`` (4 * hidden_size, input), ``h2h_weight``
    (4 * hidden_size, projection_size), ``h2r_weight`` (projection_size,
    hidden_size, no bias), ``i2h_bias`` and ``h2h_bias``.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 h2r_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, projection_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        proj = self.h2r_weight.shape
        return f"{self.__class__.__name__}({_describe_mapping(self.i2h_weight)} -> {proj[0]})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        tag = f"t{self._counter}_"
        units = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=units, name=tag + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=units,
                               name=tag + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=tag + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=tag + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=tag + "f")
        candidate = F.Activation(gates[2], act_type="tanh", name=tag + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=tag + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=tag + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=tag + "hidden")
        next_r = F.FullyConnected(data=hidden, weight=h2r_weight, num_hidden=self._projection_size, no_bias=True,
                                  name=tag + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC", valid_length=None):
    """Runs ``cell`` over the time steps of ``inputs`` with
    ``F.contrib.foreach`` (a loop over the time axis rather than the
    per-step calls :meth:`~oxnet.gluon.rnn.RecurrentCell.unroll` writes out).

    ``inputs`` is one tensor of shape ``(length, batch, ...)`` for layout
    ``'TNC'`` (the faster one) or ``(batch, length, ...)`` for ``'NTC'``,
    or a list of per-step ``(batch, ...)`` tensors. ``begin_state`` is the
    list of first states (None: the cell's zero states).
    ``drop_inputs`` and ``drop_outputs`` are dropout rates for the inputs
    and the outputs, with one mask shared by all time steps; 0 turns them
    off. ``valid_length`` (shape ``(batch,)``, at most ``length``) gives
    each sequence's true length: outputs past it are zero and the states
    returned are those of each sequence's last valid step.

    Returns ``(outputs, states)``: the outputs as one tensor in ``layout``
    and the final states (a list, as the cell returns them).

    On Symbols (inside a hybridized block) the loop is one ``_foreach``
    node whose body is the cell's step, for sequences of any length.
    """
    inputs, axis, F, batch_size = _format_sequence(None, inputs, layout, True)
    foreach = F.contrib.foreach
    if axis != 0:
        inputs = F.swapaxes(inputs, dim1=0, dim2=axis)
    cell.reset()
    states = _get_begin_state(cell, F, begin_state, inputs, batch_size)

    # after the swap the time axis is 0: masks of shape (1, batch, ...) are shared by all steps
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))

    if valid_length is None:
        def loop_body(step_inputs, step_states):
            return cell(step_inputs, step_states)
    else:
        # the step number rides along as an extra state; a sequence whose
        # valid_length is reached keeps its states from then on
        if F is ndarray:
            step_no = F.zeros((1,), ctx=valid_length.context, dtype=valid_length.dtype)
        else:
            step_no = F.zeros((1,))
        states = list(_as_list(states)) + [step_no]

        def loop_body(step_inputs, step_states):
            cell_states = step_states[:-1]
            number = step_states[-1]
            output, new_states = cell(step_inputs, cell_states)
            new_states = list(_as_list(new_states))
            running = F.broadcast_greater(valid_length, number)
            for i, old in enumerate(cell_states):
                new_states[i] = F.where(running, new_states[i], old)
            return output, new_states + [number + 1]

    outputs, states = foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if axis != 0:
        outputs = F.swapaxes(outputs, dim1=0, dim2=axis)
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True, axis=axis)
        states = states[:-1]
    return outputs, states
