"""Recurrent cells that build symbolic graphs (MXNet 1.x's legacy ``mx.rnn``).

A cell makes the symbols of one time step (``cell(inputs, states)``) or of a
whole sequence (``cell.unroll(length, inputs)``). Its weights are variables
held in an :class:`RNNParams` container, named ``<prefix>i2h_weight``,
``<prefix>h2h_bias`` and so on, so that cells can share them::

    import oxnet as mx
    cell = mx.rnn.LSTMCell(32, prefix='lstm_')
    outputs, states = cell.unroll(5, mx.sym.var('data'), layout='NTC', merge_outputs=True)

:class:`FusedRNNCell` runs the whole stack with the ``RNN`` operator on one
flat parameter vector; ``unpack_weights``/``pack_weights`` turn that vector
into per-gate matrices (``l0_i2h_f_weight``, ...) and back, and ``unfuse()``
gives the equivalent stack of step-wise cells.
"""

import warnings

from .. import ndarray, symbol
from .. import initializer as _initializer
from ..base import numeric_types, string_types

__all__ = [
    "RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
    "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
    "BidirectionalCell",
]


def _is_symbol(x):
    return isinstance(x, symbol.Symbol)


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """Brings a sequence into the form a cell wants.

    ``inputs`` is one symbol holding the time axis (where ``in_layout``, or
    else ``layout``, puts ``T``) or a list of per-step symbols. ``merge``:
    True gives one symbol with the time axis where ``layout`` puts it, False
    a list of per-step symbols, None whichever ``inputs`` already is.
    Returns ``(inputs, time_axis)``.
    """
    if inputs is None:
        raise ValueError("unroll(inputs=None) is not supported: create the input "
                         "symbols yourself and pass them in")
    axis = layout.find('T')
    if axis < 0:
        raise ValueError("layout %r has no time axis 'T'" % (layout,))
    src_axis = axis if in_layout is None else in_layout.find('T')
    if _is_symbol(inputs):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll takes a single-output symbol as its sequence; "
                                 "pass a grouped symbol as list(inputs) instead")
            inputs = list(symbol.split(inputs, axis=src_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError("expected a sequence of %d steps, got %d" % (length, len(inputs)))
        if merge is True:
            steps = [symbol.expand_dims(x, axis=axis) for x in inputs]
            inputs = symbol.Concat(*steps, dim=axis)
            src_axis = axis
    if _is_symbol(inputs) and src_axis != axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=src_axis)
    return inputs, axis


class RNNParams(object):
    """A container of weight variables, so that cells can share weights.

    Parameters
    ----------
    prefix : str
        Put in front of every name asked for.
    """

    def __init__(self, prefix=''):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The variable ``prefix + name``: the one made before, or a new
        ``symbol.Variable`` (``kwargs`` such as ``init`` go to it)."""
        full = self._prefix + name
        var = self._params.get(full)
        if var is None:
            var = symbol.Variable(full, **kwargs)
            self._params[full] = var
        return var


class BaseRNNCell(object):
    """The base class of recurrent cells.

    Parameters
    ----------
    prefix : str
        Put in front of the names of the cell's nodes and (when it makes its
        own ``params``) of its weights.
    params : RNNParams, optional
        A container to take the weights from (shared with other cells); a
        new one with ``prefix`` if None.
    """

    def __init__(self, prefix='', params=None):
        self._own_params = params is None
        self._params = RNNParams(prefix) if params is None else params
        self._prefix = prefix
        self._modified = False
        self.reset()

    def reset(self):
        """Restarts the step and state counters (done by ``unroll``), here and in child cells."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, '_cells', ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: ``inputs`` (batch, features) and the ``states`` of the
        previous step (or ``begin_state()``) give ``(output, new_states)``."""
        raise NotImplementedError()

    @property
    def params(self):
        """The cell's :class:`RNNParams` (once handed out, a parent cell may not replace it)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """One dict per state: ``shape`` (0 where the batch size goes) and ``__layout__``."""
        raise NotImplementedError()

    @property
    def state_shape(self):
        """The shapes of the states."""
        return [info['shape'] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def _check_not_modified(self):
        if self._modified:
            raise AssertionError("this cell is wrapped by a modifier cell (DropoutCell, ZoneoutCell, ...): "
                                 "use the modifier cell instead of calling this one directly")

    def begin_state(self, func=symbol.zeros, **kwargs):
        """Symbols for the states before the first step.

        Parameters
        ----------
        func : callable
            Makes one state from ``name=``, the state's ``shape`` and
            ``__layout__`` and ``kwargs``: ``symbol.zeros`` (the default),
            ``symbol.Variable`` to feed the states in, ``symbol.uniform``, ...
        **kwargs
            Passed to ``func`` (``dtype``, ...).

        Returns
        -------
        list of Symbol
        """
        self._check_not_modified()
        states = []
        for info in self.state_info:
            self._init_counter += 1
            args = dict(kwargs)
            if info is not None:
                args.update(info)
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter), **args))
        return states

    def unpack_weights(self, args):
        """Splits the cell's stacked ``i2h``/``h2h`` weights and biases into one
        array per gate.

        Parameters
        ----------
        args : dict of str to NDArray
            Parameters as ``Module.get_params()[0]`` gives them.

        Returns
        -------
        dict of str to NDArray
            A new dict: ``<prefix>i2h_weight`` is replaced by
            ``<prefix>i2h<gate>_weight`` for each gate (``_i``, ``_f``, ``_c``,
            ``_o`` for an LSTM; ``_r``, ``_z``, ``_o`` for a GRU), and so on.
        """
        out = dict(args)
        gates = self._gate_names
        if not gates:
            return out
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                whole = out.pop('%s%s_%s' % (self._prefix, group, kind))
                for j, gate in enumerate(gates):
                    out['%s%s%s_%s' % (self._prefix, group, gate, kind)] = whole[j * h:(j + 1) * h].copy()
        return out

    def pack_weights(self, args):
        """The inverse of :meth:`unpack_weights`: stacks the per-gate arrays
        back into ``<prefix>i2h_weight`` and so on (a new dict)."""
        out = dict(args)
        gates = self._gate_names
        if not gates:
            return out
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                parts = [out.pop('%s%s%s_%s' % (self._prefix, group, gate, kind)) for gate in gates]
                out['%s%s_%s' % (self._prefix, group, kind)] = ndarray.concatenate(parts)
        return out

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        """Builds the graph of ``length`` time steps.

        Parameters
        ----------
        length : int
            Number of steps.
        inputs : Symbol or list of Symbol
            One symbol of shape (batch, length, ...) for ``layout='NTC'`` or
            (length, batch, ...) for ``'TNC'``, or a list of ``length``
            symbols of shape (batch, ...).
        begin_state : list of Symbol, optional
            The states before the first step (``begin_state()`` if None).
        layout : str
            Where the time axis is in a single-symbol ``inputs`` (and in merged outputs).
        merge_outputs : bool, optional
            True: the outputs as one symbol with a time axis; False: a list
            of per-step symbols; None: whichever is cheaper.

        Returns
        -------
        outputs : Symbol or list of Symbol
        states : list of Symbol
            The states after the last step.
        """
        self.reset()
        steps, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            out, states = self(steps[t], states)
            outputs.append(out)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        """``activation`` applied to ``inputs``: an ``Activation`` act_type
        name, or a callable taking a symbol (and ``name=``)."""
        if isinstance(activation, string_types):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class RNNCell(BaseRNNCell):
    """An Elman cell: ``h' = activation(W_i x + b_i + W_h h + b_h)``.

    Parameters
    ----------
    num_hidden : int
        Size of the output and the state.
    activation : str or callable
        ``'tanh'`` (default), ``'relu'`` or another ``Activation`` type, or a function of a symbol.
    prefix : str
        Default ``'rnn_'``.
    params : RNNParams, optional
        Shared weights.
    """

    def __init__(self, num_hidden, activation='tanh', prefix='rnn_', params=None):
        super(RNNCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self._params.get('i2h_weight')
        self._iB = self._params.get('i2h_bias')
        self._hW = self._params.get('h2h_weight')
        self._hB = self._params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name=step + 'i2h')
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name=step + 'h2h')
        out = self._get_activation(i2h + h2h, self._activation, name=step + 'out')
        return out, [out]


class LSTMCell(BaseRNNCell):
    """A long short-term memory cell; its states are ``[h, c]``.

    The gates are stacked in the order input, forget, cell candidate, output.

    Parameters
    ----------
    num_hidden : int
        Size of the output and of each state.
    prefix : str
        Default ``'lstm_'``.
    params : RNNParams, optional
        Shared weights.
    forget_bias : float
        The initial bias of the forget gate (``i2h_bias`` is initialized
        with ``mx.init.LSTMBias``), default 1.0.
    """

    def __init__(self, num_hidden, prefix='lstm_', params=None, forget_bias=1.0):
        super(LSTMCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self._params.get('i2h_weight')
        self._hW = self._params.get('h2h_weight')
        self._iB = self._params.get('i2h_bias', init=_initializer.LSTMBias(forget_bias=forget_bias))
        self._hB = self._params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'},
                {'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        h = self._num_hidden
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=4 * h, name=step + 'i2h')
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=4 * h, name=step + 'h2h')
        parts = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=step + 'slice')
        gate_i = symbol.Activation(parts[0], act_type='sigmoid', name=step + 'i')
        gate_f = symbol.Activation(parts[1], act_type='sigmoid', name=step + 'f')
        cand = symbol.Activation(parts[2], act_type='tanh', name=step + 'c')
        gate_o = symbol.Activation(parts[3], act_type='sigmoid', name=step + 'o')
        next_c = symbol._internal._plus(gate_f * states[1], gate_i * cand, name=step + 'state')
        next_h = symbol._internal._mul(gate_o, symbol.Activation(next_c, act_type='tanh'),
                                       name=step + 'out')
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """A gated recurrent unit in cuDNN's form (the reset gate scales
    ``W_h h + b_h``); gates stacked as reset, update, candidate.

    Parameters
    ----------
    num_hidden : int
        Size of the output and the state.
    prefix : str
        Default ``'gru_'``.
    params : RNNParams, optional
        Shared weights.
    """

    def __init__(self, num_hidden, prefix='gru_', params=None):
        super(GRUCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self._params.get('i2h_weight')
        self._iB = self._params.get('i2h_bias')
        self._hW = self._params.get('h2h_weight')
        self._hB = self._params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        h_prev = states[0]
        h = self._num_hidden
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=3 * h, name=step + '_i2h')
        h2h = symbol.FullyConnected(data=h_prev, weight=self._hW, bias=self._hB,
                                    num_hidden=3 * h, name=step + '_h2h')
        i_r, i_z, i_n = list(symbol.SliceChannel(i2h, num_outputs=3, name=step + '_i2h_slice'))
        h_r, h_z, h_n = list(symbol.SliceChannel(h2h, num_outputs=3, name=step + '_h2h_slice'))
        reset = symbol.Activation(i_r + h_r, act_type='sigmoid', name=step + '_r_act')
        update = symbol.Activation(i_z + h_z, act_type='sigmoid', name=step + '_z_act')
        cand = symbol.Activation(i_n + reset * h_n, act_type='tanh', name=step + '_h_act')
        next_h = symbol._internal._plus((1. - update) * cand, update * h_prev, name=step + 'out')
        return next_h, [next_h]


_FUSED_GATES = {
    'rnn_relu': ('',),
    'rnn_tanh': ('',),
    'lstm': ('_i', '_f', '_c', '_o'),
    'gru': ('_r', '_z', '_o'),
}


class FusedRNNCell(BaseRNNCell):
    """A stack of recurrent layers run across all time steps by the ``RNN``
    operator, with all weights in one flat vector ``<prefix>parameters``.

    The vector is laid out as MXNet's (and cuDNN's): for each layer and
    direction the input-to-hidden weight of every gate, then the
    hidden-to-hidden weights; after all weights, the biases in the same
    order. ``unpack_weights`` names the pieces
    ``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>``.

    Parameters
    ----------
    num_hidden : int
        Hidden size of each layer.
    num_layers : int
        Number of layers (default 1).
    mode : str
        ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` (default) or ``'gru'``.
    bidirectional : bool
        Run each layer both ways (the output size doubles).
    dropout : float
        Dropout between layers while training.
    get_next_state : bool
        Also return the final states from ``unroll``.
    forget_bias : float
        Initial bias of an LSTM's forget gate (default 1.0).
    prefix : str, optional
        Default ``'<mode>_'``.
    params : RNNParams, optional
        Shared weights.
    """

    def __init__(self, num_hidden, num_layers=1, mode='lstm', bidirectional=False,
                 dropout=0., get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _FUSED_GATES:
            raise ValueError("FusedRNNCell: mode must be one of %s, got %r" % (sorted(_FUSED_GATES), mode))
        if prefix is None:
            prefix = '%s_' % mode
        super(FusedRNNCell, self).__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bool(bidirectional)
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._forget_bias = forget_bias
        self._directions = ['l', 'r'] if bidirectional else ['l']
        init = _initializer.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self._params.get('parameters', init=init)

    @property
    def state_info(self):
        shape = ((2 if self._bidirectional else 1) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == 'lstm' else 1
        return [{'shape': shape, '__layout__': 'LNC'} for _ in range(count)]

    @property
    def _gate_names(self):
        return list(_FUSED_GATES[self._mode])

    @property
    def _num_gates(self):
        return len(_FUSED_GATES[self._mode])

    def _param_size(self, num_input):
        """The length of the flat vector for input size ``num_input``."""
        d = len(self._directions)
        g = self._num_gates
        h = self._num_hidden
        first = g * h * (num_input + h + 2)
        rest = g * h * (d * h + h + 2)
        return d * (first + (self._num_layers - 1) * rest)

    def _slice_weights(self, arr, num_input, h):
        """Views into the flat vector ``arr``, keyed by their unpacked names."""
        gates = self._gate_names
        d = len(self._directions)
        views = {}
        pos = 0
        for layer in range(self._num_layers):
            in_size = num_input if layer == 0 else d * h
            for direction in self._directions:
                for group, cols in (('i2h', in_size), ('h2h', h)):
                    for gate in gates:
                        key = '%s%s%d_%s%s_weight' % (self._prefix, direction, layer, group, gate)
                        views[key] = arr[pos:pos + h * cols].reshape((h, cols))
                        pos += h * cols
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ('i2h', 'h2h'):
                    for gate in gates:
                        key = '%s%s%d_%s%s_bias' % (self._prefix, direction, layer, group, gate)
                        views[key] = arr[pos:pos + h]
                        pos += h
        if pos != arr.size:
            raise ValueError("FusedRNNCell: the parameter vector has %d elements, the layout needs %d"
                             % (arr.size, pos))
        return views

    def _num_input(self, size):
        """The input size that a flat vector of ``size`` elements implies."""
        d = len(self._directions)
        g = self._num_gates
        h = self._num_hidden
        first = size - d * (self._num_layers - 1) * g * h * (d * h + h + 2)
        num_input = first // (d * g * h) - h - 2
        if num_input <= 0 or self._param_size(num_input) != size:
            raise ValueError("FusedRNNCell: a parameter vector of %d elements does not fit %d %s layer(s) "
                             "of %d hidden units" % (size, self._num_layers, self._mode, h))
        return num_input

    def unpack_weights(self, args):
        out = dict(args)
        arr = out.pop(self._parameter.name)
        views = self._slice_weights(arr, self._num_input(arr.size), self._num_hidden)
        for key, view in views.items():
            out[key] = view.copy()
        return out

    def pack_weights(self, args):
        out = dict(args)
        first = out['%sl0_i2h%s_weight' % (self._prefix, self._gate_names[0])]
        num_input = first.shape[1]
        h = self._num_hidden
        flat = ndarray.zeros((self._param_size(num_input),), ctx=first.context, dtype=first.dtype)
        for key, view in self._slice_weights(flat, num_input, h).items():
            view[:] = out.pop(key)
        out[self._parameter.name] = flat
        return out

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped; use unroll (or unfuse() first)")

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        seq, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("FusedRNNCell: the NTC layout costs two transposes; TNC is faster")
            seq = symbol.swapaxes(seq, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError("FusedRNNCell: unsupported layout %s" % layout)
        if begin_state is None:
            begin_state = self.begin_state()
        named = {'state': begin_state[0]}
        if self._mode == 'lstm':
            named['state_cell'] = begin_state[1]
        rnn = symbol.RNN(data=seq, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + 'rnn', **named)
        if self._get_next_state:
            count = 2 if self._mode == 'lstm' else 1
            states = [rnn[k] for k in range(1, count + 1)]
            for s in states:
                s._set_attr(__layout__='LNC')
            outputs = rnn[0]
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a :class:`SequentialRNNCell` of step-wise cells
        (``BidirectionalCell`` pairs when bidirectional, ``DropoutCell``
        between layers when ``dropout`` > 0), named so that
        ``unpack_weights`` of this cell gives their weights."""
        def make(prefix):
            if self._mode == 'lstm':
                return LSTMCell(self._num_hidden, prefix=prefix, forget_bias=self._forget_bias)
            if self._mode == 'gru':
                return GRUCell(self._num_hidden, prefix=prefix)
            return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make('%sl%d_' % (self._prefix, layer)),
                                            make('%sr%d_' % (self._prefix, layer)),
                                            output_prefix='%sbi_l%d_' % (self._prefix, layer)))
            else:
                stack.add(make('%sl%d_' % (self._prefix, layer)))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix='%s_dropout%d_' % (self._prefix, layer)))
        return stack


def _states_of(cells):
    return [info for c in cells for info in c.state_info]


def _begin_states_of(cells, **kwargs):
    return [s for c in cells for s in c.begin_state(**kwargs)]


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked on each other: each one's output is the next one's input.

    Parameters
    ----------
    params : RNNParams, optional
        One container for the weights of all the cells added (then the cells
        must not be given their own).
    """

    def __init__(self, params=None):
        super(SequentialRNNCell, self).__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Puts ``cell`` on top of the stack."""
        if self._override_cell_params:
            if not cell._own_params:
                raise AssertionError("give params either to SequentialRNNCell or to its cells, not both")
            cell._params._params.update(self._params._params)
        self._cells.append(cell)
        self._params._params.update(cell._params._params)

    @property
    def state_info(self):
        return _states_of(self._cells)

    def begin_state(self, **kwargs):  # pylint: disable=arguments-differ
        self._check_not_modified()
        return _begin_states_of(self._cells, **kwargs)

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        self._counter += 1
        new_states = []
        pos = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise AssertionError("a SequentialRNNCell holding a BidirectionalCell cannot be stepped; "
                                     "use unroll")
            n = len(cell.state_info)
            inputs, out_states = cell(inputs, states[pos:pos + n])
            pos += n
            new_states.extend(out_states)
        return inputs, new_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        if begin_state is None:
            begin_state = self.begin_state()
        pos = 0
        end_states = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[pos:pos + n],
                                         layout=layout, merge_outputs=merge_outputs if i == last else None)
            pos += n
            end_states.extend(states)
        return inputs, end_states


class DropoutCell(BaseRNNCell):
    """Dropout on the input (a stateless cell, usually between stacked cells).

    Parameters
    ----------
    dropout : float
        The fraction of elements dropped while training.
    prefix : str
        Default ``'dropout_'``.
    params : RNNParams, optional
        Unused (the cell has no weights).
    """

    def __init__(self, dropout, prefix='dropout_', params=None):
        super(DropoutCell, self).__init__(prefix, params)
        if not isinstance(dropout, numeric_types) or isinstance(dropout, bool):
            raise AssertionError("dropout probability must be a number")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if _is_symbol(inputs):
            return self(inputs, [])
        return super(DropoutCell, self).unroll(length, inputs, begin_state=begin_state, layout=layout,
                                               merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """The base class of cells that wrap another cell and change what it does
    (``ZoneoutCell``, ``ResidualCell``). The wrapped cell must then be used
    only through the wrapper.

    Parameters
    ----------
    base_cell : BaseRNNCell
        The cell to wrap.
    """

    def __init__(self, base_cell):
        super(ModifierCell, self).__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, func=symbol.zeros, **kwargs):  # pylint: disable=arguments-differ
        func = kwargs.pop('init_sym', func)
        self._check_not_modified()
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError()


def _has_bidirectional(cell):
    if isinstance(cell, BidirectionalCell):
        return True
    return any(_has_bidirectional(c) for c in getattr(cell, '_cells', ()))


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al., 2016): while training, each element of the
    output and of the states keeps its previous value with probability
    ``zoneout_outputs`` / ``zoneout_states``.

    Parameters
    ----------
    base_cell : BaseRNNCell
        A cell that can be stepped (not fused, not bidirectional).
    zoneout_outputs : float
        Probability of keeping an output element's previous value.
    zoneout_states : float
        Probability of keeping a state element's previous value.
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, FusedRNNCell):
            raise AssertionError("FusedRNNCell does not support zoneout; unfuse() it first")
        if _has_bidirectional(base_cell):
            raise AssertionError("bidirectional cells cannot be stepped, so do not support zoneout; "
                                 "wrap the cells inside them instead")
        super(ZoneoutCell, self).__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super(ZoneoutCell, self).reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        out, new_states = self.base_cell(inputs, states)

        def keep_mask(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        if self.zoneout_outputs != 0.:
            prev = self.prev_output if self.prev_output is not None else symbol.zeros_like(out)
            out = symbol.where(keep_mask(self.zoneout_outputs, out), out, prev)
        if self.zoneout_states != 0.:
            new_states = [symbol.where(keep_mask(self.zoneout_states, new), new, old)
                          for new, old in zip(new_states, states)]
        self.prev_output = out
        return out, new_states


class ResidualCell(ModifierCell):
    """Adds the input to the wrapped cell's output (Wu et al., 2016); the
    input and output sizes must match.

    Parameters
    ----------
    base_cell : BaseRNNCell
        The cell whose output gets the residual connection.
    """

    def __init__(self, base_cell):  # pylint: disable=useless-super-delegation
        super(ResidualCell, self).__init__(base_cell)

    def __call__(self, inputs, states):
        out, states = self.base_cell(inputs, states)
        out = symbol.elemwise_add(out, inputs, name='%s_plus_residual' % out.name)
        return out, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                    layout=layout, merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = _is_symbol(outputs)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs, name='%s_plus_residual' % outputs.name)
        else:
            outputs = [symbol.elemwise_add(o, x, name='%s_plus_residual' % o.name)
                       for o, x in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(BaseRNNCell):
    """Runs one cell forward and another backward over the sequence and
    concatenates their outputs at each step (it can only be unrolled).

    Parameters
    ----------
    l_cell : BaseRNNCell
        The forward cell.
    r_cell : BaseRNNCell
        The backward cell.
    params : RNNParams, optional
        One container for both cells' weights (then they must not have their own).
    output_prefix : str
        Prefix of the output nodes' names, default ``'bi_'``.
    """

    def __init__(self, l_cell, r_cell, params=None, output_prefix='bi_'):
        super(BidirectionalCell, self).__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise AssertionError("give params either to BidirectionalCell or to its cells, not both")
            l_cell._params._params.update(self._params._params)
            r_cell._params._params.update(self._params._params)
        self._params._params.update(l_cell._params._params)
        self._params._params.update(r_cell._params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    @property
    def state_info(self):
        return _states_of(self._cells)

    def begin_state(self, **kwargs):  # pylint: disable=arguments-differ
        self._check_not_modified()
        return _begin_states_of(self._cells, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        steps, axis = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=steps, begin_state=begin_state[:n_left],
                                        layout=layout, merge_outputs=merge_outputs)
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(steps)),
                                        begin_state=begin_state[n_left:],
                                        layout=layout, merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = _is_symbol(l_out) and _is_symbol(r_out)
            if not merge_outputs:
                if _is_symbol(l_out):
                    l_out = list(symbol.SliceChannel(l_out, axis=axis, num_outputs=length, squeeze_axis=1))
                if _is_symbol(r_out):
                    r_out = list(symbol.SliceChannel(r_out, axis=axis, num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            outputs = symbol.Concat(l_out, symbol.reverse(r_out, axis=axis), dim=2,
                                    name='%sout' % self._output_prefix)
        else:
            r_out = list(reversed(r_out))
            outputs = [symbol.Concat(lo, ro, dim=1, name='%st%d' % (self._output_prefix, t))
                       for t, (lo, ro) in enumerate(zip(l_out, r_out))]
        return outputs, [l_states, r_states]
