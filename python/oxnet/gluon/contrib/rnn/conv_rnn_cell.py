"""Convolutional recurrent cells (``mx.gluon.contrib.rnn``): the Elman,
LSTM and GRU cells of :mod:`oxnet.gluon.rnn` with their two matrix
products replaced by convolutions, for inputs with 1, 2 or 3 spatial axes
(Shi et al., 2015, https://arxiv.org/abs/1506.04214).

Every cell is built for one per-sample input shape ``input_shape`` (without
the batch axis; ``(C, W)``, ``(C, H, W)`` or ``(C, D, H, W)`` in the default
channel-first layouts). The input convolution (``i2h``) has stride 1 and the
given kernel, padding and dilation; the recurrent convolution (``h2h``) has
an odd kernel and the padding that keeps the state's extents, which are
those of the input convolution's output. Weights are ``i2h_weight``
``(gates·hidden_channels, C, *i2h_kernel)``, ``h2h_weight``
``(gates·hidden_channels, hidden_channels, *h2h_kernel)`` (the channel axis
last in channel-last layouts) and the biases ``i2h_bias`` and ``h2h_bias``
``(gates·hidden_channels,)``. ``unroll``, ``begin_state`` and the rest come
from :class:`~oxnet.gluon.rnn.HybridRecurrentCell`.
"""

from ....base import numeric_types
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _conv_out_size(extents, kernel, pad, dilate):
    """The extents of a stride-1 convolution's output (0 stays 0)."""
    return tuple(x + 2 * p - d * (k - 1) if x else 0 for x, k, p, d in zip(extents, kernel, pad, dilate))


def _per_axis(cls_name, name, value, dims):
    """``value`` as a tuple of ``dims`` ints (an int is repeated)."""
    if isinstance(value, numeric_types):
        return (int(value),) * dims
    try:
        value = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{cls_name}: {name} must be an int or a tuple of {dims} ints, got {value!r}") from None
    if len(value) != dims:
        raise ValueError(f"{cls_name}: for a {dims}-d convolution {name} must be an int or a tuple of {dims} "
                         f"ints, got {value!r}")
    return value


class _BaseConvRNNCell(HybridRecurrentCell):
    """Shared set-up of the convolutional cells: per-axis settings, the
    weights' and state's shapes, and the two convolutions of a step."""

    _gate_names = ("",)

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate, h2h_dilate,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 dims, conv_layout, activation, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        cls = self.__class__.__name__
        if conv_layout not in _LAYOUTS[dims]:
            raise ValueError(f"{cls}: conv_layout must be one of {_LAYOUTS[dims]} for a {dims}-d cell, got "
                             f"{conv_layout!r}")
        try:
            input_shape = tuple(int(v) for v in input_shape)
        except TypeError:
            raise TypeError(f"{cls}: input_shape must be a tuple of ints (the per-sample input shape without "
                            f"the batch axis), got {input_shape!r}") from None
        if len(input_shape) != dims + 1:
            raise ValueError(f"{cls}: input_shape must have {dims + 1} entries (channels and {dims} spatial "
                             f"extents in layout {conv_layout} without N), got {input_shape}")
        if not isinstance(hidden_channels, numeric_types) or int(hidden_channels) < 1:
            raise ValueError(f"{cls}: hidden_channels must be a positive int, got {hidden_channels!r}")
        self._hidden_channels = int(hidden_channels)
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _per_axis(cls, "i2h_kernel", i2h_kernel, dims)
        self._i2h_pad = _per_axis(cls, "i2h_pad", i2h_pad, dims)
        self._i2h_dilate = _per_axis(cls, "i2h_dilate", i2h_dilate, dims)
        self._h2h_kernel = _per_axis(cls, "h2h_kernel", h2h_kernel, dims)
        self._h2h_dilate = _per_axis(cls, "h2h_dilate", h2h_dilate, dims)
        if not all(k % 2 == 1 for k in self._h2h_kernel):
            raise ValueError(f"{cls}: h2h_kernel must be odd on every axis (the state keeps its extents), got "
                             f"{h2h_kernel!r}")
        self._stride = (1,) * dims
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))

        self._channel_axis = conv_layout.find("C")
        channel_first = self._channel_axis == 1
        self._in_channels = input_shape[self._channel_axis - 1]
        extents = input_shape[1:] if channel_first else input_shape[:-1]
        out = _conv_out_size(extents, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        if any(e < 1 for e, x in zip(out, extents) if x):
            raise ValueError(f"{cls}: i2h_kernel {self._i2h_kernel} with i2h_dilate {self._i2h_dilate} does not "
                             f"fit into the input extents {extents} padded by {self._i2h_pad}")
        rows = self._hidden_channels * self._num_gates
        hid = self._hidden_channels
        if channel_first:
            i2h_shape = (rows, self._in_channels) + self._i2h_kernel
            h2h_shape = (rows, hid) + self._h2h_kernel
            self._state_shape = (hid,) + out
        else:
            i2h_shape = (rows,) + self._i2h_kernel + (self._in_channels,)
            h2h_shape = (rows,) + self._h2h_kernel + (hid,)
            self._state_shape = out + (hid,)

        self.i2h_weight = self.params.get("i2h_weight", shape=i2h_shape, init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=h2h_shape, init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def state_info(self, batch_size=0):
        """One state (two for the LSTM cells): ``(batch_size,) +
        state_shape`` in the cell's layout."""
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}]

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        mapping = f"{in_channels if in_channels else None} -> {shape[0]}"
        return f"{self.__class__.__name__}({mapping}, {self._activation}, {self._conv_layout})"

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias, tag):
        """The input and recurrent convolutions of one step."""
        rows = self._hidden_channels * self._num_gates
        i2h = F.Convolution(data=inputs, weight=i2h_weight, bias=i2h_bias, num_filter=rows,
                            kernel=self._i2h_kernel, stride=self._stride, pad=self._i2h_pad,
                            dilate=self._i2h_dilate, layout=self._conv_layout, name=tag + "i2h")
        h2h = F.Convolution(data=states[0], weight=h2h_weight, bias=h2h_bias, num_filter=rows,
                            kernel=self._h2h_kernel, stride=self._stride, pad=self._h2h_pad,
                            dilate=self._h2h_dilate, layout=self._conv_layout, name=tag + "h2h")
        return i2h, h2h

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """One step; the concrete cells define it."""
        raise NotImplementedError(f"{self.__class__.__name__} is abstract: use a Conv*RNNCell, Conv*LSTMCell or "
                                  "Conv*GRUCell")


class _ConvRNNCell(_BaseConvRNNCell):
    """``h_t = activation(conv(x_t, W_i2h) + b_i2h + conv(h_{t-1}, W_h2h) + b_h2h)``."""

    _gate_names = ("",)

    def _alias(self):
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """One step: returns ``(h_t, [h_t])``."""
        tag = f"t{self._counter}_"
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias, tag)
        output = self._get_activation(F, i2h + h2h, self._activation, name=tag + "out")
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    """The LSTM step over convolutions: gates input, forget, candidate,
    output (in that order along the channel axis)::

        c_t = sigmoid(a_f) * c_{t-1} + sigmoid(a_i) * activation(a_c)
        h_t = sigmoid(a_o) * activation(c_t)
    """

    _gate_names = ("_i", "_f", "_c", "_o")

    def _alias(self):
        return "conv_lstm"

    def state_info(self, batch_size=0):
        """Two states, ``[h, c]``, each ``(batch_size,) + state_shape``."""
        info = {"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}
        return [dict(info), dict(info)]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """One step: returns ``(h_t, [h_t, c_t])``."""
        tag = f"t{self._counter}_"
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias, tag)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, axis=self._channel_axis, name=tag + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=tag + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=tag + "f")
        candidate = self._get_activation(F, gates[2], self._activation, name=tag + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=tag + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=tag + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation), name=tag + "out")
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    """The GRU step over convolutions: gates reset, update, new (in that
    order along the channel axis), the reset gate scaling the recurrent
    convolution::

        n_t = activation(i_n + sigmoid(i_r + h_r) * h_n)
        h_t = (1 - sigmoid(i_z + h_z)) * n_t + sigmoid(i_z + h_z) * h_{t-1}
    """

    _gate_names = ("_r", "_z", "_o")

    def _alias(self):
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """One step: returns ``(h_t, [h_t])``."""
        tag = f"t{self._counter}_"
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias, tag)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, axis=self._channel_axis, name=tag + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, axis=self._channel_axis, name=tag + "h2h_slice")
        reset_gate = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=tag + "r_act")
        update_gate = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=tag + "z_act")
        candidate = self._get_activation(F, i2h + reset_gate * h2h, self._activation, name=tag + "h_act")
        next_h = F.elemwise_add((1. - update_gate) * candidate, update_gate * states[0], name=tag + "out")
        return next_h, [next_h]


_ARGS_DOC = """

    Parameters: ``input_shape`` (the per-sample input shape without the
    batch axis, in ``conv_layout``), ``hidden_channels`` (channels of the
    state), ``i2h_kernel`` and ``h2h_kernel`` (ints or per-axis tuples; the
    latter odd), ``i2h_pad``, ``i2h_dilate``, ``h2h_dilate``, the
    initializers ``i2h_weight_initializer``, ``h2h_weight_initializer``
    (default: the one given to ``initialize``), ``i2h_bias_initializer``,
    ``h2h_bias_initializer`` (default zeros), ``conv_layout`` (channel
    first by default, or channel last), ``activation`` (a name, a
    ``LeakyReLU`` block or a callable; default ``'tanh'``), and ``prefix``
    / ``params`` as for any Block.
    """


def _make(name, base, dims, summary):
    """A public cell class: ``base`` with the defaults of a ``dims``-d cell."""
    layout = _LAYOUTS[dims][0]

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=(0,) * dims,
                 i2h_dilate=(1,) * dims, h2h_dilate=(1,) * dims, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 conv_layout=layout, activation="tanh", prefix=None, params=None):
        base.__init__(self, input_shape=input_shape, hidden_channels=hidden_channels, i2h_kernel=i2h_kernel,
                      h2h_kernel=h2h_kernel, i2h_pad=i2h_pad, i2h_dilate=i2h_dilate, h2h_dilate=h2h_dilate,
                      i2h_weight_initializer=i2h_weight_initializer,
                      h2h_weight_initializer=h2h_weight_initializer,
                      i2h_bias_initializer=i2h_bias_initializer, h2h_bias_initializer=h2h_bias_initializer,
                      dims=dims, conv_layout=conv_layout, activation=activation, prefix=prefix, params=params)

    __init__.__doc__ = f"Builds the cell; the default layout is {layout!r}."
    doc = f"{summary} (default layout {layout!r}, alternative {_LAYOUTS[dims][1]!r}).{_ARGS_DOC}"
    cls = type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})
    cls.__qualname__ = name
    return cls


Conv1DRNNCell = _make("Conv1DRNNCell", _ConvRNNCell, 1,
                      "1-d convolutional Elman cell: h_t = activation(W_i * x_t + R_i * h_{t-1} + b_i)")
Conv2DRNNCell = _make("Conv2DRNNCell", _ConvRNNCell, 2,
                      "2-d convolutional Elman cell: h_t = activation(W_i * x_t + R_i * h_{t-1} + b_i)")
Conv3DRNNCell = _make("Conv3DRNNCell", _ConvRNNCell, 3,
                      "3-d convolutional Elman cell: h_t = activation(W_i * x_t + R_i * h_{t-1} + b_i)")
Conv1DLSTMCell = _make("Conv1DLSTMCell", _ConvLSTMCell, 1,
                       "1-d convolutional LSTM cell; states [h, c]")
Conv2DLSTMCell = _make("Conv2DLSTMCell", _ConvLSTMCell, 2,
                       "2-d convolutional LSTM cell; states [h, c]")
Conv3DLSTMCell = _make("Conv3DLSTMCell", _ConvLSTMCell, 3,
                       "3-d convolutional LSTM cell; states [h, c]")
Conv1DGRUCell = _make("Conv1DGRUCell", _ConvGRUCell, 1,
                      "1-d convolutional GRU cell; one state h")
Conv2DGRUCell = _make("Conv2DGRUCell", _ConvGRUCell, 2,
                      "2-d convolutional GRU cell; one state h")
Conv3DGRUCell = _make("Conv3DGRUCell", _ConvGRUCell, 3,
                      "3-d convolutional GRU cell; one state h")
