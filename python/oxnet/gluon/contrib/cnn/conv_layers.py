"""Deformable convolution layers: a 2-d convolution whose taps read the
input at fractional offsets from the regular grid, the offsets (and, for
v2, a per-tap mask) coming from a second, ordinary convolution of the same
input that the layer owns and trains.

Parameters, as MXNet 1.9.1 names them: ``offset_weight`` and
``offset_bias`` (the offset convolution: ``2·kh·kw·num_deformable_group``
output channels for v1, ``3·kh·kw·num_deformable_group`` for v2, zeros by
default so that training starts from a plain convolution), and
``deformable_conv_weight`` ``(channels, in_channels/groups, kh, kw)`` and
``deformable_conv_bias`` ``(channels,)``. The input channels may be left to
the first call (``in_channels=0``); ``deformable_conv_weight``'s are always
inferred then, as in MXNet.
"""

from .... import symbol
from ....base import numeric_types
from ...block import HybridBlock
from ...nn import Activation

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(cls_name, name, value, n=2):
    """``value`` as a tuple of ``n`` ints (an int is repeated)."""
    if isinstance(value, numeric_types):
        return (int(value),) * n
    try:
        value = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{cls_name}: {name} must be an int or a tuple of {n} ints, got {value!r}") from None
    return value


class _DeformableBase(HybridBlock):
    """The set-up both deformable layers share. ``offset_per_tap`` is the
    number of offset-convolution channels per tap and deformable group (2
    for v1, 3 for v2)."""

    _offset_per_tap = 2

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                 use_bias, in_channels, activation, weight_initializer, bias_initializer,
                 offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj, prefix,
                 params, conv_first):
        super().__init__(prefix=prefix, params=params)
        cls = self.__class__.__name__
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            if layout not in ("NCHW", "NHWC"):
                raise ValueError(f"{cls}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
            kernel_size = _pair(cls, "kernel_size", kernel_size)
            if len(kernel_size) != 2:
                raise ValueError(f"{cls}: kernel_size must be an int or a tuple of 2 ints, got {kernel_size!r}")
            strides = _pair(cls, "strides", strides, len(kernel_size))
            padding = _pair(cls, "padding", padding, len(kernel_size))
            dilation = _pair(cls, "dilation", dilation, len(kernel_size))
            self._op_name = op_name
            taps = kernel_size[0] * kernel_size[1]
            offset_channels = self._offset_per_tap * taps * num_deformable_group
            self._offset_split_index = 2 * taps * num_deformable_group
            self._kwargs_offset = {
                "kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": offset_channels, "num_group": groups, "no_bias": not offset_use_bias,
                "layout": layout}
            self._kwargs_deformable_conv = {
                "kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": channels, "num_group": groups, "num_deformable_group": num_deformable_group,
                "no_bias": not use_bias, "layout": layout}
            if adj:
                self._kwargs_offset["adj"] = adj
                self._kwargs_deformable_conv["adj"] = adj

            # the offset convolution's parameter shapes, as Convolution infers them
            dshape = [0] * (len(kernel_size) + 2)
            dshape[layout.find("N")] = 1
            dshape[layout.find("C")] = in_channels
            offset = symbol.Convolution(symbol.var("data", shape=tuple(dshape)), **self._kwargs_offset)
            offset_shapes = offset.infer_shape_partial()[0]

            def offset_params():
                self.offset_weight = self.params.get("offset_weight", shape=offset_shapes[1],
                                                     init=offset_weight_initializer, allow_deferred_init=True)
                if offset_use_bias:
                    self.offset_bias = self.params.get("offset_bias", shape=offset_shapes[2],
                                                       init=offset_bias_initializer, allow_deferred_init=True)
                else:
                    self.offset_bias = None

            def conv_params():
                shape = (channels, 0) + tuple(kernel_size)
                self.deformable_conv_weight = self.params.get("deformable_conv_weight", shape=shape,
                                                              init=weight_initializer, allow_deferred_init=True)
                if use_bias:
                    self.deformable_conv_bias = self.params.get("deformable_conv_bias", shape=(channels,),
                                                                init=bias_initializer, allow_deferred_init=True)
                else:
                    self.deformable_conv_bias = None

            # MXNet registers them in this order (it decides collect_params' order)
            for make in ((conv_params, offset_params) if conv_first else (offset_params, conv_params)):
                make()
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        """The offset convolution of ``x``."""
        if offset_bias is None:
            return F.Convolution(x, offset_weight, cudnn_off=True, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, cudnn_off=True, **self._kwargs_offset)

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        n = len(kw["kernel"])
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if kw["pad"] != (0,) * n:
            s += ", padding={pad}"
        if kw["dilate"] != (1,) * n:
            s += ", dilation={dilate}"
        if kw["num_group"] != 1:
            s += ", groups={num_group}"
        if self.deformable_conv_bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        s += ")"
        shape = self.deformable_conv_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return s.format(name=self.__class__.__name__, mapping=mapping, **kw)


class DeformableConvolution(_DeformableBase):
    """2-d deformable convolution, v1 (Dai et al., 2017,
    https://arxiv.org/abs/1703.06211).

    An ordinary convolution of the input (``offset_weight``,
    ``offset_bias``) with the layer's kernel, strides, padding, dilation
    and groups yields ``2·kh·kw·num_deformable_group`` offset channels; the
    layer's output is ``contrib.DeformableConvolution`` of the input at
    those offsets with ``deformable_conv_weight`` and
    ``deformable_conv_bias``, then ``activation`` if given.

    Arguments (MXNet's): ``channels``; ``kernel_size``, ``strides``,
    ``padding``, ``dilation`` (ints or pairs; defaults 1, 1, 0, 1);
    ``groups`` (1); ``num_deformable_group`` (1); ``layout`` (``'NCHW'``; the
    operator computes in NCHW only); ``use_bias`` (True); ``in_channels``
    (0: inferred on the first call); ``activation`` (an ``Activation``
    name or None); ``weight_initializer`` (None: the one given to
    ``initialize``), ``bias_initializer`` ('zeros'),
    ``offset_weight_initializer`` ('zeros'), ``offset_bias_initializer``
    ('zeros'), ``offset_use_bias`` (True); ``op_name`` and ``adj``
    (accepted as MXNet does; ``adj`` goes to both convolutions, which
    reject it); ``prefix`` and ``params``.

    Input ``(batch, in_channels, height, width)``; output ``(batch,
    channels, out_height, out_width)`` with Convolution's extents.
    """

    _offset_per_tap = 2

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 num_deformable_group=1, layout="NCHW", use_bias=True, in_channels=0, activation=None,
                 weight_initializer=None, bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name="DeformableConvolution", adj=None,
                 prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                         use_bias, in_channels, activation, weight_initializer, bias_initializer,
                         offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj, prefix,
                         params, conv_first=False)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        """The offsets of ``x``, then the deformable convolution at them."""
        offset = self._offsets(F, x, offset_weight, offset_bias)
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        out = F.contrib.DeformableConvolution(data=x, offset=offset, weight=deformable_conv_weight, name="fwd",
                                              **extra, **self._kwargs_deformable_conv)
        return self.act(out) if self.act else out

    def _alias(self):
        return "deformable_conv"


class ModulatedDeformableConvolution(_DeformableBase):
    """2-d modulated deformable convolution, v2 (Zhu et al., 2018,
    https://arxiv.org/abs/1811.11168).

    An ordinary convolution of the input (``offset_weight``,
    ``offset_bias``) yields ``3·kh·kw·num_deformable_group`` channels: the
    first two thirds are the offsets, the last third passes through
    ``2·sigmoid`` to become the mask (so a zero-initialised offset
    convolution starts with every mask at 1). The output is
    ``contrib.ModulatedDeformableConvolution`` of the input with those
    offsets and mask, ``deformable_conv_weight`` and
    ``deformable_conv_bias``, then ``activation`` if given.

    Arguments as :class:`DeformableConvolution`. The offset convolution has
    ``groups`` groups too, so ``3·kh·kw·num_deformable_group`` must be a
    multiple of ``groups`` (MXNet raises otherwise, at construction).
    """

    _offset_per_tap = 3
    __repr__ = HybridBlock.__repr__  # MXNet gives this layer the plain Block form

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 num_deformable_group=1, layout="NCHW", use_bias=True, in_channels=0, activation=None,
                 weight_initializer=None, bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name="ModulatedDeformableConvolution",
                 adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                         use_bias, in_channels, activation, weight_initializer, bias_initializer,
                         offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj, prefix,
                         params, conv_first=True)

    @property
    def offset_split_index(self):
        """Channels of the offset convolution's output that are offsets
        (the rest are the mask's): ``2·kh·kw·num_deformable_group``."""
        return self._offset_split_index

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        """The offsets and mask of ``x``, then the modulated deformable
        convolution with them."""
        both = self._offsets(F, x, offset_weight, offset_bias)
        offset = F.slice_axis(both, axis=1, begin=0, end=self._offset_split_index)
        mask = F.sigmoid(F.slice_axis(both, axis=1, begin=self._offset_split_index, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        out = F.contrib.ModulatedDeformableConvolution(data=x, offset=offset, mask=mask,
                                                       weight=deformable_conv_weight, name="fwd", **extra,
                                                       **self._kwargs_deformable_conv)
        return self.act(out) if self.act else out

    def _alias(self):
        return "modulated_deformable_conv"
