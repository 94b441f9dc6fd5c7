"""Recurrent cells (``mx.gluon.rnn``): one time step of a recurrent network
as a Block, plus ``unroll`` to run it over a whole sequence.

A cell is called as ``output, new_states = cell(x_t, states)`` with ``x_t``
of shape ``(batch, features)`` and ``states`` a list of arrays (their
shapes come from :meth:`RecurrentCell.state_info`; :meth:`begin_state`
makes the first ones). ``unroll`` loops the cell over the time axis of a
``(batch, time, features)`` (layout ``'NTC'``) or ``(time, batch,
features)`` (``'TNC'``) input, or over a list of per-step arrays, and can
mask padded steps with ``valid_length``. The cells that derive from
:class:`HybridRecurrentCell` run with ``F = mx.nd`` or ``mx.sym`` and can
be hybridized, stepped inside another HybridBlock's ``hybrid_forward``,
or unrolled there on Symbols.

The arithmetic, the parameter names (``i2h_weight``, ``h2h_weight``,
``i2h_bias``, ``h2h_bias`` under the cell's prefix) and the gate order
(LSTM: input, forget, candidate, output; GRU: reset, update, new) are
MXNet 1.x's, so weights move between the two unchanged.
"""

from ... import ndarray, symbol
from ...base import MXNetError, numeric_types, string_types
from ..block import Block, HybridBlock
from ..nn import LeakyReLU
from ..parameter import tensor_types

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]


# -- helpers shared by the cells (and by gluon.contrib.rnn) -----------------

def _indent(text, spaces):
    """``text`` with every line after the first shifted right by ``spaces``."""
    pad = " " * spaces
    return text.replace("\n", "\n" + pad)


def _as_steps(parts):
    """The result of a ``split`` (one array, a list, or a multi-output
    Symbol) as a Python list of per-step arrays or Symbols."""
    if isinstance(parts, (list, tuple)):
        return list(parts)
    if isinstance(parts, symbol.Symbol):
        return list(parts)
    return [parts]


def _split_steps(F, data, axis, count):
    """Cuts ``data`` into ``count`` pieces along ``axis`` (dropping that axis)."""
    return _as_steps(F.split(data, axis=axis, num_outputs=count, squeeze_axis=True))


def _cells_state_info(cells, batch_size):
    """The state descriptions of several cells, one after the other."""
    infos = []
    for cell in cells:
        infos.extend(cell.state_info(batch_size))
    return infos


def _cells_begin_state(cells, **kwargs):
    """The begin states of several cells, one after the other."""
    states = []
    for cell in cells:
        states.extend(cell.begin_state(**kwargs))
    return states


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """``begin_state`` if given, else zeros from ``cell.begin_state`` (made
    on the inputs' device for NDArrays)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        first = inputs if isinstance(inputs, tensor_types) else inputs[0]
        with first.context:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Brings a sequence into the form ``unroll`` works with.

    ``inputs`` is one tensor (time axis where ``in_layout`` (default
    ``layout``) has its ``T``) or a list of per-step tensors. ``merge``
    False gives a list of steps, True one tensor with the time axis where
    ``layout`` puts it, None leaves the form as it is. Returns
    ``(inputs, time_axis, F, batch_size)``; ``batch_size`` is 0 for Symbols.
    """
    if inputs is None:
        raise MXNetError("unroll needs inputs: create the input Symbols or NDArrays before calling unroll "
                         "(unroll(inputs=None) is not supported)")
    axis = layout.find("T")
    batch_axis = layout.find("N")
    in_axis = axis if in_layout is None else in_layout.find("T")
    batch_size = 0
    if isinstance(inputs, symbol.Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError("unroll does not take a grouped Symbol as inputs: pass list(inputs) or one "
                                 "Symbol that unroll can split into steps")
            inputs = _split_steps(F, inputs, in_axis, length)
    elif isinstance(inputs, ndarray.NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            steps = inputs.shape[in_axis]
            if length is not None and length != steps:
                raise MXNetError(f"unroll: length is {length} but the inputs have {steps} steps along axis "
                                 f"{in_axis} (layout {in_layout or layout}, shape {inputs.shape})")
            inputs = _split_steps(F, inputs, in_axis, steps)
    else:
        inputs = list(inputs)
        if not inputs:
            raise MXNetError("unroll: the list of inputs is empty")
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll: length is {length} but {len(inputs)} input steps were given")
        if isinstance(inputs[0], symbol.Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zeroes the steps of ``data`` past each sequence's ``valid_length``;
    returns one tensor if ``merge`` else a list of ``length`` steps."""
    if not isinstance(data, tensor_types):
        data = F.stack(*data, axis=time_axis)
    masked = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if merge:
        return masked
    return _split_steps(F, masked, time_axis, length)


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """A list of steps in reverse time order; with ``valid_length`` only
    each sequence's valid part is reversed (padding stays at the end)."""
    if valid_length is None:
        return list(reversed(list(sequences)))
    F = symbol if isinstance(sequences[0], symbol.Symbol) else ndarray
    flipped = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                                use_sequence_length=True)
    return _split_steps(F, flipped, 0, unroll_step)


def _is_dunder(key):
    return key.startswith("__") and key.endswith("__")


def _make_state(func, name, spec):
    """Calls a begin-state function ``func(name=..., **spec)``.

    ``spec`` carries hints such as ``__layout__``. MXNet's generated
    functions accept any ``__key__`` keyword (a Symbol keeps it as a node
    attribute, an NDArray drops it); oxnet's operators take only their own
    attributes, so for them the hints go to ``attr=`` (Symbols) or are left
    out (NDArrays). ``sym.var`` and user functions get everything.
    """
    hints = {k: v for k, v in spec.items() if _is_dunder(k)}
    if not hints or func is symbol.var or func is symbol.Variable:
        return func(name=name, **spec)
    module = getattr(func, "__module__", None) or ""
    plain = {k: v for k, v in spec.items() if k not in hints}
    if module.startswith("oxnet.symbol"):
        attr = dict(plain.pop("attr", None) or {})
        attr.update({k: str(v) for k, v in hints.items()})
        return func(name=name, attr=attr, **plain)
    if module.startswith("oxnet.ndarray"):
        return func(name=name, **plain)
    return func(name=name, **spec)


def _check_states(cell, inputs, states):
    """Raises a clear error when NDArray ``states`` do not match what the
    cell's ``state_info`` describes for the batch of ``inputs`` (a wrong
    count or shape); other cases are left to the operators."""
    if not isinstance(inputs, ndarray.NDArray) or inputs.ndim < 1 or not isinstance(states, (list, tuple)):
        return
    if not all(isinstance(s, ndarray.NDArray) for s in states):
        return
    batch = inputs.shape[0]
    try:
        infos = cell.state_info(batch)
    except NotImplementedError:
        return
    if not infos:
        return  # a cell without states of its own (DropoutCell) passes any states along
    expected = [tuple(i["shape"]) if isinstance(i, dict) and "shape" in i else None for i in infos]
    if len(states) != len(infos):
        raise MXNetError(f"{cell.name}: expected {len(infos)} state(s) of shape(s) {expected} for a batch of "
                         f"{batch}, but got {len(states)} state(s) of shape(s) {[s.shape for s in states]}")
    for i, (state, want) in enumerate(zip(states, expected)):
        if want is None:
            continue
        if len(want) != state.ndim or any(w and w != g for w, g in zip(want, state.shape)):
            raise MXNetError(f"{cell.name}: state {i} has shape {state.shape}, but the cell expects {want} for "
                             f"a batch of {batch} (see state_info(); begin_state(batch_size={batch}) makes "
                             "matching states)")


def _check_modifiable(cell):
    if cell._modified:
        raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
                             "directly. Call the modifier cell instead.")


# -- base classes ---------------------------------------------------------

class RecurrentCell(Block):
    """Base class of the recurrent cells.

    A subclass describes its states with :meth:`state_info` and computes
    one step in ``forward(inputs, states)`` (returning ``(output,
    new_states)``); :meth:`unroll` runs that step over a sequence.
    ``prefix`` and ``params`` are those of :class:`Block` (``params``
    shares another cell's weights).
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Restarts the step and begin-state counters (and those of the
        child cells); ``unroll`` calls it before each sequence."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size=0):
        """A list with one dict per state: its ``shape`` (with
        ``batch_size`` in the batch position) and ``__layout__``."""
        raise NotImplementedError(f"{self.__class__.__name__} must implement state_info")

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The states for the first step, one per :meth:`state_info` entry,
        each made by ``func(name=..., shape=..., **kwargs)``.

        ``func`` is ``mx.nd.zeros`` by default; ``mx.nd.ones``, random
        samplers, or ``mx.sym.zeros`` / ``mx.sym.var`` (to build a graph
        whose begin states are inputs) work too. ``kwargs`` (``dtype``,
        ``ctx``, ``low``/``high``...) go to every call of ``func``.
        """
        _check_modifiable(self)
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            spec = dict(kwargs) if info is None else {**info, **kwargs}
            states.append(_make_state(func, f"{self._prefix}begin_state_{self._init_counter}", spec))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the cell over ``length`` time steps.

        ``inputs`` is one tensor (``(batch, length, ...)`` for layout
        ``'NTC'``, ``(length, batch, ...)`` for ``'TNC'``) or a list of
        ``length`` tensors of shape ``(batch, ...)``; NDArrays or Symbols.
        ``begin_state`` defaults to :meth:`begin_state` zeros.
        ``merge_outputs`` True returns the outputs stacked into one tensor
        in ``layout``, False a list of per-step outputs, None whichever is
        at hand. ``valid_length`` (shape ``(batch,)``) gives each sequence's
        true length: outputs past it are zero and the returned states are
        those of each sequence's last valid step.

        Returns ``(outputs, states)``.
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs = []
        history = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
            if valid_length is not None:
                history.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*per_step, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for per_step in zip(*history)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """Applies ``activation``: a name (``'tanh'``, ``'relu'``,
        ``'sigmoid'``, ``'softsign'`` or any ``Activation`` act_type), a
        ``LeakyReLU`` block, or any other callable."""
        if isinstance(activation, string_types):
            direct = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}
            if activation in direct:
                return direct[activation](inputs, **kwargs)
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        if isinstance(activation, Block):
            return activation(inputs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One time step: ``(output, new_states)`` for ``inputs`` of shape
        ``(batch, features)`` and the previous ``states``."""
        self._counter += 1
        _check_states(self, inputs, states)
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell written as ``hybrid_forward(F, inputs, states,
    **params)`` returning ``(output, new_states)``; it can be hybridized
    and used inside other HybridBlocks."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """One step with ``F`` = ``mx.nd`` or ``mx.sym``; subclasses override it."""
        raise NotImplementedError(f"{self.__class__.__name__} must implement hybrid_forward")


def _describe_mapping(weight):
    """``in -> out`` from a weight of shape (out, in); an unknown in is None."""
    shape = weight.shape or (0, 0)
    return f"{shape[1] if len(shape) > 1 and shape[1] else None} -> {shape[0]}"


# -- the basic cells ------------------------------------------------------

class RNNCell(HybridRecurrentCell):
    r"""An Elman recurrent cell:
    ``h_t = activation(W_i2h x_t + b_i2h + W_h2h h_{t-1} + b_h2h)``.

    ``hidden_size`` is the number of units; ``activation`` is
    ``'tanh'`` (default), another activation name, a ``LeakyReLU``
    block or a callable. The ``*_initializer`` arguments set how the
    weights (default: the one given to ``initialize``) and biases
    (default zeros) start; ``input_size`` 0 infers the input width on
    the first call. One state of shape ``(batch, hidden_size)``; the
    output is the new state.
    """

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._activation = activation
        self._input_size = input_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(hidden_size, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(hidden_size, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(hidden_size,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(hidden_size,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "rnn"

    def __repr__(self):
        return f"{self.__class__.__name__}({_describe_mapping(self.i2h_weight)}, {self._activation})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        tag = f"t{self._counter}_"
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=self._hidden_size,
                               name=tag + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=self._hidden_size,
                               name=tag + "h2h")
        total = F.elemwise_add(i2h, h2h, name=tag + "plus0")
        output = self._get_activation(F, total, self._activation, name=tag + "out")
        return output, [output]


class LSTMCell(HybridRecurrentCell):
    r"""A long short-term memory cell.

    With ``a = W_i2h x_t + b_i2h + W_h2h h_{t-1} + b_h2h`` cut into four
    equal blocks in the order input, forget, candidate, output
    (``a_i, a_f, a_g, a_o``)::

        c_t = rec(a_f) * c_{t-1} + rec(a_i) * act(a_g)
        h_t = rec(a_o) * act(c_t)

    where ``act`` is ``activation`` (``'tanh'``) and ``rec`` is
    ``recurrent_activation`` (``'sigmoid'``). Two states, ``[h, c]``,
    each ``(batch, hidden_size)``; the output is ``h_t``. The weights
    have ``4 * hidden_size`` rows. Initializer and ``input_size``
    arguments are as for :class:`RNNCell`.
    """

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstm"

    def __repr__(self):
        return f"{self.__class__.__name__}({_describe_mapping(self.i2h_weight)})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        tag = f"t{self._counter}_"
        units = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=units, name=tag + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=units,
                               name=tag + "h2h")
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=tag + "plus0"), num_outputs=4, name=tag + "slice")
        rec, act = self._recurrent_activation, self._activation
        in_gate = self._get_activation(F, gates[0], rec, name=tag + "i")
        forget_gate = self._get_activation(F, gates[1], rec, name=tag + "f")
        candidate = self._get_activation(F, gates[2], act, name=tag + "c")
        out_gate = self._get_activation(F, gates[3], rec, name=tag + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=tag + "mul0"),
                                F.elemwise_mul(in_gate, candidate, name=tag + "mul1"), name=tag + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act, name=tag + "activation0"),
                                name=tag + "out")
        return next_h, [next_h, next_c]


class GRUCell(HybridRecurrentCell):
    r"""A gated recurrent unit (the cuDNN variant: the reset gate scales
    the recurrent projection after the matrix product).

    With ``i = W_i2h x_t + b_i2h`` and ``h = W_h2h h_{t-1} + b_h2h`` each
    cut into reset, update and new blocks (``r, z, n``)::

        r = sigmoid(i_r + h_r)
        z = sigmoid(i_z + h_z)
        n = tanh(i_n + r * h_n)
        h_t = (1 - z) * n + z * h_{t-1}

    One state of shape ``(batch, hidden_size)``; the output is ``h_t``.
    The weights have ``3 * hidden_size`` rows. Initializer and
    ``input_size`` arguments are as for :class:`RNNCell`.
    """

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = 3 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "gru"

    def __repr__(self):
        return f"{self.__class__.__name__}({_describe_mapping(self.i2h_weight)})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        tag = f"t{self._counter}_"
        units = 3 * self._hidden_size
        prev_h = states[0]
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=units, name=tag + "i2h")
        h2h = F.FullyConnected(data=prev_h, weight=h2h_weight, bias=h2h_bias, num_hidden=units, name=tag + "h2h")
        i_r, i_z, i_n = _as_steps(F.SliceChannel(i2h, num_outputs=3, name=tag + "i2h_slice"))
        h_r, h_z, h_n = _as_steps(F.SliceChannel(h2h, num_outputs=3, name=tag + "h2h_slice"))
        reset = F.Activation(F.elemwise_add(i_r, h_r, name=tag + "plus0"), act_type="sigmoid",
                             name=tag + "r_act")
        update = F.Activation(F.elemwise_add(i_z, h_z, name=tag + "plus1"), act_type="sigmoid",
                              name=tag + "z_act")
        new = F.Activation(F.elemwise_add(i_n, F.elemwise_mul(reset, h_n, name=tag + "mul0"), name=tag + "plus2"),
                           act_type="tanh", name=tag + "h_act")
        keep_new = F.elemwise_sub(F.ones_like(update, name=tag + "ones_like0"), update, name=tag + "minus0")
        next_h = F.elemwise_add(F.elemwise_mul(keep_new, new, name=tag + "mul1"),
                                F.elemwise_mul(update, prev_h, name=tag + "mul20"), name=tag + "out")
        return next_h, [next_h]


# -- stacks ---------------------------------------------------------------

def _step_stack(owner, inputs, states):
    """One step through each child cell in turn, each taking its own slice
    of ``states``; returns ``(output, all new states)``."""
    owner._counter += 1
    cells = list(owner._children.values())
    if any(isinstance(c, BidirectionalCell) for c in cells):
        raise MXNetError(f"{owner.name}: a stack with a BidirectionalCell cannot be stepped; use unroll")
    new_states = []
    start = 0
    for cell in cells:
        count = len(cell.state_info())
        inputs, cell_states = cell(inputs, states[start:start + count])
        start += count
        new_states.extend(cell_states)
    return inputs, new_states


def _unroll_stack(owner, length, inputs, begin_state, layout, merge_outputs, valid_length):
    """Unrolls each child cell over the whole sequence in turn (the outputs
    of one are the inputs of the next)."""
    owner.reset()
    inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
    begin_state = _get_begin_state(owner, F, begin_state, inputs, batch_size)
    cells = list(owner._children.values())
    start = 0
    final_states = []
    for index, cell in enumerate(cells):
        count = len(cell.state_info())
        last = index == len(cells) - 1
        inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[start:start + count],
                                     layout=layout, merge_outputs=merge_outputs if last else None,
                                     valid_length=valid_length)
        start += count
        final_states.extend(states)
    return inputs, final_states


def _repr_stack(owner):
    body = "\n".join(f"({key}): {_indent(repr(cell), 2)}" for key, cell in owner._children.items())
    return f"{owner.__class__.__name__}(\n{body}\n)"


class _CellStack:
    """What the two stacks share: cells added in order, the output of each
    the input of the next, the states the cells' states concatenated."""

    @property
    def _bidirectional(self):
        return any(isinstance(c, BidirectionalCell) for c in self._children.values())

    def __repr__(self):
        return _repr_stack(self)

    def add(self, cell):
        """Appends ``cell`` to the top of the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        """The begin states of all cells in the stack, in order (arguments
        as for :meth:`RecurrentCell.begin_state`)."""
        _check_modifiable(self)
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        return _step_stack(self, inputs, states)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        return _unroll_stack(self, length, inputs, begin_state, layout, merge_outputs, valid_length)

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_CellStack, RecurrentCell):
    """A stack of recurrent cells (any kind): the output of each is the
    input of the next, and the states are the cells' states concatenated
    in order. ``unroll`` runs each layer over the whole sequence before
    the next."""

    def hybrid_forward(self, *args, **kwargs):
        """Not used: a SequentialRNNCell steps through ``__call__``."""
        raise NotImplementedError


class HybridSequentialRNNCell(_CellStack, HybridRecurrentCell):
    """A stack of hybridizable recurrent cells, as
    :class:`SequentialRNNCell`; ``hybridize()`` hybridizes each cell."""

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


# -- dropout and modifiers --------------------------------------------------

class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs as a stateless cell (to put between the layers
    of a stack): in training each element is zeroed with probability
    ``rate`` and the rest scaled by ``1 / (1 - rate)``; ``axes`` are the
    axes along which the mask is shared. States pass through unchanged.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise AssertionError("rate must be a number")
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return f"{self.__class__.__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, tensor_types):
            # the whole sequence in one go (valid_length is not applied)
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of the cells that wrap another cell and change what it
    does (zoneout, residual connections, variational dropout).

    The wrapped ``base_cell`` keeps its parameters (``params`` is the base
    cell's) and is marked as modified: from then on call the modifier, not
    the base cell (a cell can be modified only once).
    """

    def __init__(self, base_cell):
        if base_cell._modified:
            raise AssertionError(f"Cell {base_cell.name} is already modified. One cell cannot be modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        """The base cell's ParameterDict."""
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The base cell's begin states (note: ``func`` defaults to
        ``mx.sym.zeros`` here, as in MXNet; ``unroll`` passes its own)."""
        _check_modifiable(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError(f"{self.__class__.__name__} must implement hybrid_forward")

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al., 2016) around ``base_cell``: in training each
    element of the output (of the states) keeps its previous step's value
    with probability ``zoneout_outputs`` (``zoneout_states``) instead of
    taking the new one. Outside training, or with both rates 0, it is the
    base cell. The previous output starts at zero after :meth:`reset`.
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't support step. "
                                 "Please add ZoneoutCell to the cells underneath instead.")
        if isinstance(base_cell, (SequentialRNNCell, HybridSequentialRNNCell)) and base_cell._bidirectional:
            raise AssertionError("Bidirectional SequentialRNNCell doesn't support zoneout. "
                                 "Please add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"{self.__class__.__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        new_output, new_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            # nonzero where the new value is taken (Dropout is the identity outside training)
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(new_output)
        output = new_output
        if self.zoneout_outputs != 0.:
            output = F.where(keep_new(self.zoneout_outputs, new_output), new_output, prev_output)
        if self.zoneout_states != 0.:
            new_states = [F.where(keep_new(self.zoneout_states, new), new, old)
                          for new, old in zip(new_states, states)]
        self._prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """Adds the input to the output of ``base_cell`` (a residual
    connection, Wu et al., 2016); the input and output widths must agree.
    """

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time over the same
    sequence and joins their outputs along the feature axis (left first).
    It can only be unrolled, not stepped. With ``valid_length`` the
    backward cell reads each sequence's valid part reversed. The states are
    ``l_cell``'s followed by ``r_cell``'s; ``output_prefix`` names the
    joined outputs in a graph.
    """

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return (f"{self.__class__.__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        """The begin states of the forward cell, then the backward cell's."""
        _check_modifiable(self)
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        split = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:split], layout=layout,
                                            merge_outputs=merge_outputs, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=begin_state[split:],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, tensor_types)
        if merge_outputs:
            l_outputs, _, _, _ = _format_sequence(length, l_outputs, layout, True)
            r_merged = F.stack(*r_outputs, axis=axis)
            outputs = F.concat(l_outputs, r_merged, dim=2, name=f"{self._output_prefix}out")
        else:
            l_outputs, _, _, _ = _format_sequence(length, l_outputs, layout, False)
            outputs = [F.concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
