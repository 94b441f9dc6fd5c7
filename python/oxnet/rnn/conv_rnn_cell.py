"""Convolutional recurrent cells of the legacy symbolic ``mx.rnn``:
``i2h`` and ``h2h`` are convolutions and the state is an image
(``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``)."""

import functools

from .. import symbol
from .rnn_cell import BaseRNNCell, RNNParams

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]


class BaseConvRNNCell(BaseRNNCell):
    """The base class of convolutional recurrent cells: ``i2h`` and ``h2h``
    are convolutions, and the state has the shape of the ``i2h`` output.

    Parameters
    ----------
    input_shape : tuple of int
        Shape of the input of one step, batch included (e.g. ``(1, 3, 16, 16)``).
    num_hidden : int
        Channels of the state.
    h2h_kernel, h2h_dilate : tuple of int
        The state-to-state convolution (odd kernel sizes; padded to keep the size).
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int
        The input-to-state convolution.
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer
        Initializers of the weights (None: the global one).
    activation : str or callable
        Activation of the candidate state.
    prefix : str
        Prefix of names.
    params : RNNParams, optional
        Shared weights.
    conv_layout : str
        ``'NCHW'`` (default) or another layout of ``Convolution``.
    """

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix='', params=None,
                 conv_layout='NCHW'):
        super(BaseConvRNNCell, self).__init__(prefix=prefix, params=params)
        if any(k % 2 != 1 for k in h2h_kernel):
            raise AssertionError("h2h_kernel sizes must be odd, got %s" % (h2h_kernel,))
        self._h2h_kernel = tuple(h2h_kernel)
        self._h2h_dilate = tuple(h2h_dilate)
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel))
        self._i2h_kernel = tuple(i2h_kernel)
        self._i2h_stride = tuple(i2h_stride)
        self._i2h_pad = tuple(i2h_pad)
        self._i2h_dilate = tuple(i2h_dilate)
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                   kernel=self._i2h_kernel, stride=self._i2h_stride, pad=self._i2h_pad,
                                   dilate=self._i2h_dilate, layout=conv_layout)
        out_shape = probe.infer_shape(data=input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])
        self._iW = self._params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self._params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self._params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self._params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout},
                {'shape': self._state_shape, '__layout__': self._conv_layout}]

    def _conv_forward(self, inputs, states, name):
        filters = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs, num_filter=filters,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride, pad=self._i2h_pad,
                                 dilate=self._i2h_dilate, weight=self._iW, bias=self._iB,
                                 layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0], num_filter=filters,
                                 kernel=self._h2h_kernel, stride=(1, 1), pad=self._h2h_pad,
                                 dilate=self._h2h_dilate, weight=self._hW, bias=self._hB,
                                 layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract")


_LEAKY = functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)


class ConvRNNCell(BaseConvRNNCell):
    """A convolutional Elman cell (see :class:`BaseConvRNNCell` for the
    arguments; the default activation is a leaky ReLU of slope 0.2)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix='ConvRNN_', params=None, conv_layout='NCHW'):
        super(ConvRNNCell, self).__init__(
            input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad, i2h_dilate,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            activation, prefix=prefix, params=params, conv_layout=conv_layout)

    @property
    def _gate_names(self):
        return ('',)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, step)
        out = self._get_activation(i2h + h2h, self._activation, name=step + 'out')
        return out, [out]


class ConvLSTMCell(BaseConvRNNCell):
    """A convolutional LSTM cell (Shi et al., 2015); see :class:`BaseConvRNNCell`
    for the arguments."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix='ConvLSTM_', params=None, conv_layout='NCHW'):
        super(ConvLSTMCell, self).__init__(
            input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad, i2h_dilate,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            activation, prefix=prefix, params=params, conv_layout=conv_layout)

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, step)
        parts = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._conv_layout.find('C'),
                                    name=step + 'slice')
        gate_i = symbol.Activation(parts[0], act_type='sigmoid', name=step + 'i')
        gate_f = symbol.Activation(parts[1], act_type='sigmoid', name=step + 'f')
        cand = self._get_activation(parts[2], self._activation, name=step + 'c')
        gate_o = symbol.Activation(parts[3], act_type='sigmoid', name=step + 'o')
        next_c = symbol._internal._plus(gate_f * states[1], gate_i * cand, name=step + 'state')
        next_h = symbol._internal._mul(gate_o, self._get_activation(next_c, self._activation),
                                       name=step + 'out')
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """A convolutional GRU cell; see :class:`BaseConvRNNCell` for the arguments."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix='ConvGRU_', params=None, conv_layout='NCHW'):
        super(ConvGRUCell, self).__init__(
            input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride, i2h_pad, i2h_dilate,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
            activation, prefix=prefix, params=params, conv_layout=conv_layout)

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        step = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, step)
        channel = self._conv_layout.find('C')
        i_r, i_z, i_n = list(symbol.SliceChannel(i2h, num_outputs=3, axis=channel, name=step + '_i2h_slice'))
        h_r, h_z, h_n = list(symbol.SliceChannel(h2h, num_outputs=3, axis=channel, name=step + '_h2h_slice'))
        reset = symbol.Activation(i_r + h_r, act_type='sigmoid', name=step + '_r_act')
        update = symbol.Activation(i_z + h_z, act_type='sigmoid', name=step + '_z_act')
        cand = self._get_activation(i_n + reset * h_n, self._activation, name=step + '_h_act')
        next_h = symbol._internal._plus((1. - update) * cand, update * states[0], name=step + 'out')
        return next_h, [next_h]
