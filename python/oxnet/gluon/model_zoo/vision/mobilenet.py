"""MobileNet (Howard et al., "MobileNets: Efficient Convolutional Neural
Networks for Mobile Vision Applications", 2017) and MobileNetV2 (Sandler et
al., "Inverted Residuals and Linear Bottlenecks", 2018) with width
multipliers 1.0, 0.75, 0.5 and 0.25, as MXNet 1.9.1's model zoo builds them."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75", "mobilenet_v2_0_75",
           "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25", "mobilenet_v2_0_25", "get_mobilenet",
           "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """ReLU6: ``min(max(x, 0), 6)`` (MobileNetV2's activation)."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1, active=True, relu6=False):
    """Appends a bias-free convolution, BatchNorm and (when ``active``)
    ReLU or ReLU6 to the sequential ``out``."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out, dw_channels, channels, stride, relu6=False):
    """Appends a depthwise 3x3 convolution then a pointwise 1x1 one (each
    with BatchNorm and activation)."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion (``in_channels * t``),
    depthwise 3x3 (``stride``) and linear 1x1 projection to ``channels``,
    added to the input when the stride is 1 and the width is unchanged.
    """

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            expanded = in_channels * t
            _add_conv(self.out, expanded, relu6=True)
            _add_conv(self.out, expanded, kernel=3, stride=stride, pad=1, num_group=expanded, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 convolution then 13 depthwise-separable
    convolutions, global average pooling and Flatten (``features``), and a
    Dense classifier (``output``). ``multiplier`` scales every width
    (``int(width * multiplier)``; at least 0.25); ``classes`` (default 1000).
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
                dw_channels = [int(c * multiplier) for c in [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
                channels = [int(c * multiplier) for c in [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
                strides = [1, 2] * 3 + [1] * 5 + [2, 1]
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a 3x3/2 convolution, 17 :class:`LinearBottleneck`
    blocks, a 1x1 convolution to 1280 channels (more when ``multiplier`` >
    1) and global average pooling (``features``, prefix ``features_``),
    then a bias-free 1x1 convolution to ``classes`` and Flatten (``output``,
    prefix ``output_``). All activations are ReLU6.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
                in_channels = [int(c * multiplier)
                               for c in [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3]
                channels = [int(c * multiplier)
                            for c in [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320]]
                expansions = [1] + [6] * 16
                strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
                for in_c, c, t, s in zip(in_channels, channels, expansions, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t, stride=s))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _version_suffix(multiplier):
    """The model-store spelling of a multiplier: 1.0, 0.75, 0.5, 0.25."""
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """MobileNet with width ``multiplier``; other keyword arguments
    (``classes``, ``prefix``, ...) go to :class:`MobileNet`. ``pretrained``:
    load ``mobilenet<multiplier>-<hash>.params`` from ``root`` (default
    ``$MXNET_HOME/models``; never downloaded) onto ``ctx``.
    """
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, f"mobilenet{_version_suffix(multiplier)}", root, ctx)
    return net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"),
                     **kwargs):
    """MobileNetV2 with width ``multiplier``; other keyword arguments
    (``classes``, ``prefix``, ...) go to :class:`MobileNetV2`.
    ``pretrained``: load ``mobilenetv2_<multiplier>-<hash>.params`` from
    ``root`` (default ``$MXNET_HOME/models``; never downloaded) onto ``ctx``.
    """
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, f"mobilenetv2_{_version_suffix(multiplier)}", root, ctx)
    return net


def _constructor(getter, multiplier, name, title):
    def make(**kwargs):
        return getter(multiplier, **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"{title} with width multiplier {multiplier}: ``{getter.__name__}({multiplier}, **kwargs)``.\n\n"
                    "    Keyword arguments: ``pretrained`` (default False), ``ctx`` (default ``cpu()``), ``root``\n"
                    "    (default ``$MXNET_HOME/models``), ``classes`` (default 1000).\n    ")
    return make


mobilenet1_0 = _constructor(get_mobilenet, 1.0, "mobilenet1_0", "MobileNet")
mobilenet0_75 = _constructor(get_mobilenet, 0.75, "mobilenet0_75", "MobileNet")
mobilenet0_5 = _constructor(get_mobilenet, 0.5, "mobilenet0_5", "MobileNet")
mobilenet0_25 = _constructor(get_mobilenet, 0.25, "mobilenet0_25", "MobileNet")
mobilenet_v2_1_0 = _constructor(get_mobilenet_v2, 1.0, "mobilenet_v2_1_0", "MobileNetV2")
mobilenet_v2_0_75 = _constructor(get_mobilenet_v2, 0.75, "mobilenet_v2_0_75", "MobileNetV2")
mobilenet_v2_0_5 = _constructor(get_mobilenet_v2, 0.5, "mobilenet_v2_0_5", "MobileNetV2")
mobilenet_v2_0_25 = _constructor(get_mobilenet_v2, 0.25, "mobilenet_v2_0_25", "MobileNetV2")
