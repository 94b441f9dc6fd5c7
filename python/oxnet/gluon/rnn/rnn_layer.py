"""Recurrent layers (``mx.gluon.rnn.RNN``, ``LSTM``, ``GRU``): whole
sequences through stacked, optionally bidirectional recurrent layers in one
call of the fused ``RNN`` operator.

The parameters are registered per layer and direction with MXNet 1.x's
names (``l0_i2h_weight``, ``l0_h2h_bias``, ``r1_i2h_weight``, and
``l0_h2r_weight`` for an LSTM with a projection); each call flattens them
into the operator's single parameter vector in MXNet's order, so weights
trained by MXNet load unchanged (``load_parameters``) and a hybridized layer
exports a graph of the same shape (the joined parameters feeding ``RNN``)
that MXNet 1.9.1 loads.

Beyond MXNet 1.9.1's CPU operator, ``projection_size``, the LSTM state
clipping and ``use_sequence_length`` run on the CPU too.
"""

import re

from ... import ndarray, symbol
from ...base import MXNetError
from ..block import HybridBlock
from ..parameter import tensor_types
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    """The machinery shared by :class:`RNN`, :class:`LSTM` and :class:`GRU`."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 mode, projection_size, h2r_weight_initializer, lstm_state_clip_min, lstm_state_clip_max,
                 lstm_state_clip_nan, dtype, use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise MXNetError(f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = _GATES[mode]

        ng, nh = self._gates, hidden_size
        nout = self._projection_size or hidden_size
        ni = input_size
        for i in range(num_layers):
            for j in ["l", "r"][:self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, nout), h2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param(f"{j}{i}_h2r_weight", (nout, nh), h2r_weight_initializer, dtype)
            ni = nout * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = "{name}({mapping}, {_layout}"
        if self._num_layers != 1:
            s += ", num_layers={_num_layers}"
        if self._dropout != 0:
            s += ", dropout={_dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        mapping = "{0} -> {1}".format(shape[1] if shape[1] else None, shape[0] // self._gates)
        return s.format(name=self.__class__.__name__, mapping=mapping, **self.__dict__)

    def _collect_params_with_prefix(self, prefix=""):
        # MXNet 1.x saves a fused layer's parameters under the names of the
        # stack of cells it replaced (``_unfused.0.l_cell.i2h_weight``)
        if prefix:
            prefix += "."
        pattern = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")
        bidirectional = any(pattern.match(k).group(1) == "r" for k in self._reg_params)

        def key(name):
            d, l, g, t = pattern.match(name).groups()
            if bidirectional:
                return f"_unfused.{l}.{d}_cell.{g}_{t}"
            return f"_unfused.{l}.{g}_{t}"

        ret = {prefix + key(k): v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """The same network as a stack of cells (sharing these parameters)."""
        if self._projection_size:
            raise MXNetError("_unfuse does not support a projection layer")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise MXNetError("_unfuse does not support state clipping")

        def make(**kwargs):
            if self._mode == "lstm":
                return rnn_cell.LSTMCell(self._hidden_size, **kwargs)
            if self._mode == "gru":
                return rnn_cell.GRUCell(self._hidden_size, **kwargs)
            return rnn_cell.RNNCell(self._hidden_size, activation=self._mode[4:], **kwargs)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kwargs = {"input_size": ni,
                          "i2h_weight_initializer": self._i2h_weight_initializer,
                          "h2h_weight_initializer": self._h2h_weight_initializer,
                          "i2h_bias_initializer": self._i2h_bias_initializer,
                          "h2h_bias_initializer": self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix=f"l{i}_", **kwargs),
                                                         make(prefix=f"r{i}_", **kwargs)))
                else:
                    stack.add(make(prefix=f"l{i}_", **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states, one per :meth:`state_info` entry, each made
        by ``func(name=..., shape=..., **kwargs)`` (``mx.nd.zeros`` by
        default; ``mx.sym.zeros`` or ``mx.sym.var`` for a graph)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            spec = dict(kwargs) if info is None else {**info, **kwargs}
            states.append(rnn_cell._make_state(func, f"{self.prefix}h0_{i}", spec))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, tensor_types):
            states = [states]
        if self._use_sequence_length:
            if sequence_length is None:
                raise MXNetError(f"{self.name}: use_sequence_length is set, so sequence_length must be given")
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def infer_shape(self, inputs, *args):
        """Sets the first layer's input size from the inputs' last axis."""
        size = inputs.shape[2]
        for d in ["l", "r"][:self._dir]:
            p = getattr(self, f"{d}0_i2h_weight")
            p.shape = (p.shape[0], size)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find("N")]
            infos = self.state_info(batch_size)
            if len(states) != len(infos):
                raise MXNetError(f"{self.name}: expected {len(infos)} state(s), got {len(states)}")
            for state, info in zip(states, infos):
                if state.shape != info["shape"]:
                    raise ValueError("Invalid recurrent state shape. Expecting %s, got %s."
                                     % (str(info["shape"]), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        # out is (output, states)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        """The fused operator on the flattened parameters."""
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        kinds = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        params = [kwargs[f"{d}{l}_{g}_{t}"].reshape(-1)
                  for t in ["weight", "bias"]
                  for l in range(self._num_layers)
                  for d in ["l", "r"][:self._dir]
                  for g in kinds
                  if g != "h2r" or t != "bias"]
        params = F._internal._rnn_param_concat(*params, dim=0)
        args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        rnn = F.RNN(inputs, params, *args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2, p=self._dropout,
                    state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


class RNN(_RNNLayer):
    r"""A multi-layer Elman RNN with ``tanh`` or ``relu`` non-linearity:
    each layer computes :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh}
    h_{t-1} + b_{hh})` over the sequence.

    Parameters: ``hidden_size``; ``num_layers`` (1); ``activation``
    ('relu' or 'tanh'); ``layout`` ('TNC' or 'NTC'); ``dropout`` between
    layers (0); ``bidirectional`` (False); the four initializers;
    ``input_size`` (0: inferred on first use); ``dtype``.

    Called as ``out = layer(x)`` or ``out, states = layer(x, states)``,
    with ``x`` in ``layout`` and ``states`` of shape
    ``(num_layers * directions, batch, hidden_size)``.
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        """One state: ``(num_layers * directions, batch, hidden_size)``."""
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]


class LSTM(_RNNLayer):
    r"""A multi-layer long short-term memory network: gates
    :math:`i, f, g, o` from the input and the previous state,
    :math:`c_t = f c_{t-1} + i g`, :math:`h_t = o \tanh(c_t)` (projected to
    ``projection_size`` when given).

    Parameters as :class:`RNN` (without ``activation``), plus
    ``projection_size`` and ``h2r_weight_initializer``, and
    ``state_clip_min``/``state_clip_max``/``state_clip_nan`` to clip the cell
    state. Two states: ``h`` of ``(num_layers * directions, batch,
    projection_size or hidden_size)`` and ``c`` of ``(..., hidden_size)``.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None, h2r_weight_initializer=None,
                 state_clip_min=None, state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        """Two states: the hidden state and the cell state."""
        out = self._projection_size or self._hidden_size
        return [{"shape": (self._num_layers * self._dir, batch_size, out), "__layout__": "LNC",
                 "dtype": self._dtype},
                {"shape": (self._num_layers * self._dir, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]


class GRU(_RNNLayer):
    r"""A multi-layer gated recurrent unit network (MXNet's and cuDNN's
    form): :math:`n_t = \tanh(W_{in} x_t + b_{in} + r_t (W_{hn} h_{t-1} +
    b_{hn}))`, :math:`h_t = (1 - z_t) n_t + z_t h_{t-1}`.

    Parameters as :class:`RNN` (without ``activation``); one state of
    ``(num_layers * directions, batch, hidden_size)``.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        """One state: ``(num_layers * directions, batch, hidden_size)``."""
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]
