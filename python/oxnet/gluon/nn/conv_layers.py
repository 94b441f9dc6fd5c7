"""Convolution layers (``Conv1D``/``2D``/``3D`` and their transposes) and
``ReflectionPad2D``; the pooling layers live in :mod:`.pooling_layers` and
are importable from here too, as in MXNet.

A convolution's weight is ``(channels, in_channels / groups, *kernel)``
(channel-first layouts) or ``(channels, *kernel, in_channels / groups)``
(channel-last); a transposed convolution's is ``(in_channels,
channels / groups, *kernel)``. With ``in_channels=0`` the input-channel
dimension is inferred from the first input (deferred initialization).
"""

from ...base import MXNetError, numeric_types
from ..block import HybridBlock
from .activations import Activation
from .pooling_layers import (_LAYOUTS, MaxPool1D, MaxPool2D, MaxPool3D, AvgPool1D, AvgPool2D, AvgPool3D,
                             GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D, GlobalAvgPool1D, GlobalAvgPool2D,
                             GlobalAvgPool3D)

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "MaxPool1D",
           "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


def _per_axis(value, ndim, what):
    """``value`` as one entry per spatial axis: a number is repeated, a
    tuple or list is kept as given (its length is checked)."""
    if isinstance(value, numeric_types):
        return (int(value),) * ndim
    if not isinstance(value, (tuple, list)) or len(value) != ndim:
        raise ValueError(f"{what} must be a number or a list of {ndim} ints, got {value!r}")
    return value


def _check_layout(cls_name, layout, ndim, allowed):
    if layout not in allowed:
        raise ValueError(f"{cls_name}: layout {layout!r} is not valid for {ndim}D data; "
                         f"use {' or '.join(repr(a) for a in allowed)}")


class _Conv(HybridBlock):
    """What the six convolution layers share: the operator's attributes,
    the weight and bias parameters, the optional activation and the
    ``__repr__``. ``op_name`` is ``Convolution`` or ``Deconvolution``
    (then ``adj`` is the output padding)."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        ndim = len(kernel_size)
        strides = _per_axis(strides, ndim, "strides")
        padding = _per_axis(padding, ndim, "padding")
        dilation = _per_axis(dilation, ndim, "dilation")
        if channels % groups:
            raise MXNetError(f"{self.__class__.__name__}: channels ({channels}) must be a multiple of groups "
                             f"({groups})")
        if in_channels % groups:
            raise MXNetError(f"{self.__class__.__name__}: in_channels ({in_channels}) must be a multiple of "
                             f"groups ({groups})")
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                            "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                            "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
                self.outpad = adj
            wshape = self._weight_shape(channels, in_channels, tuple(kernel_size), groups, layout,
                                        op_name == "Deconvolution")
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    @staticmethod
    def _weight_shape(channels, in_channels, kernel, groups, layout, transpose):
        """The weight's shape as the operator infers it (0 where
        ``in_channels`` is still unknown)."""
        if transpose:
            outer, inner = in_channels, channels // groups
        else:
            outer, inner = channels, in_channels // groups
        if layout.index("C") == 1:
            return (outer, inner) + kernel
        return (outer,) + kernel + (inner,)

    def _alias(self):
        return "conv"

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        kw = self._kwargs
        ndim = len(kw["kernel"])
        shape = self.weight.shape
        text = (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
                f"kernel_size={kw['kernel']}, stride={kw['stride']}")
        if kw["pad"] != (0,) * ndim:
            text += f", padding={kw['pad']}"
        if kw["dilate"] != (1,) * ndim:
            text += f", dilation={kw['dilate']}"
        # MXNet 1.9.1 never prints output_padding (it looks for an attribute
        # its transposed layers do not set); neither does oxnet.
        if kw["num_group"] != 1:
            text += f", groups={kw['num_group']}"
        if self.bias is None:
            text += ", bias=False"
        if self.act:
            text += f", {self.act}"
        return text + ")"


def _conv_setup(block, ndim, kernel_size, layout, kwargs, output_padding=None):
    """Checks the arguments every convolution layer shares; returns
    ``(kernel_size, op_name, adj)`` for :class:`_Conv` (a transposed
    convolution when ``output_padding`` is given). ``kwargs`` may name
    another ``op_name``, as in MXNet."""
    _check_layout(type(block).__name__, layout, ndim, _LAYOUTS[ndim][:1] if ndim == 1 else _LAYOUTS[ndim])
    kernel_size = _per_axis(kernel_size, ndim, "kernel_size")
    if output_padding is None:
        return kernel_size, kwargs.pop("op_name", "Convolution"), None
    return kernel_size, kwargs.pop("op_name", "Deconvolution"), _per_axis(output_padding, ndim, "output_padding")


class Conv1D(_Conv):
    """1-D convolution over ``(batch, in_channels, width)`` (layout NCW).

    ``Conv1D(channels, kernel_size, strides=1, padding=0, dilation=1,
    groups=1, layout='NCW', activation=None, use_bias=True,
    weight_initializer=None, bias_initializer='zeros', in_channels=0)``:
    ``channels`` output channels; ``groups`` splits input and output
    channels into that many independent convolutions; ``activation`` names
    an ``Activation`` applied to the output.
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 1, kernel_size, layout, kwargs)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over ``(batch, in_channels, height, width)``
    (layout NCHW, or NHWC: channels last, weight ``(channels, kh, kw,
    in_channels / groups)``).

    Arguments as :class:`Conv1D`, with ``kernel_size``, ``strides``,
    ``padding`` and ``dilation`` a number or a pair.
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 2, kernel_size, layout, kwargs)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over ``(batch, in_channels, depth, height, width)``
    (layout NCDHW, or NDHWC: channels last). Arguments as
    :class:`Conv2D`, with triples."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1,
                 layout="NCDHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 3, kernel_size, layout, kwargs)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class Conv1DTranspose(_Conv):
    """Transposed 1-D convolution (the gradient of :class:`Conv1D`, also
    called deconvolution): output width ``(w - 1) * stride - 2 * padding +
    dilation * (kernel - 1) + 1 + output_padding``. Weight shape
    ``(in_channels, channels / groups, kernel)``."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 1, kernel_size, layout, kwargs, output_padding)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution; arguments as :class:`Conv1DTranspose`
    with pairs (layout NCHW, or NHWC: channels last)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), output_padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 2, kernel_size, layout, kwargs, output_padding)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class Conv3DTranspose(_Conv):
    """Transposed 3-D convolution; arguments as :class:`Conv1DTranspose`
    with triples (layout NCDHW, or NDHWC: channels last)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), output_padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        kernel_size, op_name, adj = _conv_setup(self, 3, kernel_size, layout, kwargs, output_padding)
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, op_name=op_name, adj=adj, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two last axes of 4-D data by mirroring it (the edge value
    is not repeated). ``padding`` is a number (the same on all four sides)
    or MXNet's 8-entry ``pad_width`` (before/after for each of the 4 axes;
    the first four must be 0)."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise ValueError(f"ReflectionPad2D: padding must be a number or 8 ints, got {padding!r}")
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
