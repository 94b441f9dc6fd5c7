"""ResNet v1 (He et al., "Deep Residual Learning for Image Recognition",
2015) and v2 (He et al., "Identity Mappings in Deep Residual Networks",
2016) with 18, 34, 50, 101 and 152 layers, as MXNet 1.9.1's model zoo
builds them (same blocks, parameter names and ``save_parameters`` keys)."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    """A bias-free 3x3 convolution with padding 1."""
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """The v1 projection shortcut: 1x1 convolution (no bias) then BatchNorm."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels))
    seq.add(nn.BatchNorm())
    return seq


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm, added to the (projected) input,
    then ReLU: the residual block of ResNet-18/34 v1.

    ``channels``: output channels; ``stride``: the first convolution's
    stride; ``downsample``: project the input with a strided 1x1
    convolution; ``in_channels``: input channels (0: inferred).
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample is not None else x
        return F.Activation(shortcut + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 (reduce to ``channels // 4``), 3x3 and 1x1 (expand) convolutions
    with BatchNorm, added to the (projected) input, then ReLU: the residual
    block of ResNet-50/101/152 v1. Arguments as :class:`BasicBlockV1`; the
    stride is on the first 1x1 convolution, and the two 1x1 convolutions
    carry a bias (as in MXNet's model zoo).
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        width = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(width, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(width, 1, width), nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample is not None else x
        return F.Activation(self.body(x) + shortcut, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation residual block of ResNet-18/34 v2: BatchNorm, ReLU,
    3x3 convolution, twice, added to the input (or to a strided 1x1
    projection of the first activation). Arguments as :class:`BasicBlockV1`.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        act = F.Activation(self.bn1(x), act_type="relu")
        shortcut = self.downsample(act) if self.downsample is not None else x
        out = self.conv1(act)
        out = self.conv2(F.Activation(self.bn2(out), act_type="relu"))
        return out + shortcut


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck of ResNet-50/101/152 v2: (BatchNorm, ReLU,
    convolution) with 1x1, 3x3 (strided) and 1x1 kernels, added to the
    input (or to a strided 1x1 projection of the first activation).
    Arguments as :class:`BasicBlockV1`.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        width = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(width, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(width, stride, width)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        act = F.Activation(self.bn1(x), act_type="relu")
        shortcut = self.downsample(act) if self.downsample is not None else x
        out = self.conv1(act)
        out = self.conv2(F.Activation(self.bn2(out), act_type="relu"))
        out = self.conv3(F.Activation(self.bn3(out), act_type="relu"))
        return out + shortcut


def _stage(block, num_blocks, channels, stride, index, in_channels):
    """Stage ``index`` (prefix ``stage<index>_``): ``num_blocks`` residual
    blocks, the first strided and projecting when the width changes."""
    stage = nn.HybridSequential(prefix=f"stage{index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet v1: a 7x7/2 convolution, BatchNorm, ReLU and 3x3/2 max pooling
    (or, with ``thumbnail``, one 3x3 convolution for small images), four
    stages of residual blocks, global average pooling and a Dense
    classifier (``output``).

    ``block``: :class:`BasicBlockV1` or :class:`BottleneckV1`; ``layers``:
    blocks per stage; ``channels``: the stem's width then each stage's (one
    more entry than ``layers``); ``classes``: outputs (default 1000).
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            for i, num_blocks in enumerate(layers):
                self.features.add(_stage(block, num_blocks, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                         in_channels=channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet v2 (pre-activation): an input BatchNorm without scale or
    shift, the stem of :class:`ResNetV1`, four stages of pre-activation
    blocks, then BatchNorm, ReLU, global average pooling, Flatten and a
    Dense classifier (``output``). Arguments as :class:`ResNetV1`, with
    ``block`` :class:`BasicBlockV2` or :class:`BottleneckV2`.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_blocks in enumerate(layers):
                self.features.add(_stage(block, num_blocks, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                         in_channels=in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (block kind, blocks per stage, stem width then stage widths)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}

resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"),
               **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` layers (18, 34, 50,
    101 or 152). Other keyword arguments (``classes``, ``thumbnail``,
    ``prefix``, ...) go to :class:`ResNetV1` / :class:`ResNetV2`.

    ``pretrained``: load ``resnet<N>_v<V>-<hash>.params`` from ``root``
    (default ``$MXNET_HOME/models``; never downloaded, see
    :func:`~oxnet.gluon.model_zoo.model_store.get_model_file`) onto ``ctx``.
    """
    assert num_layers in resnet_spec, f"Invalid number of layers: {num_layers}. Options are {resnet_spec.keys()}"
    assert 1 <= version <= 2, f"Invalid resnet version: {version}. Options are 1 and 2."
    kind, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][kind], layers, channels, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, f"resnet{num_layers}_v{version}", root, ctx)
    return net


def _constructor(version, num_layers):
    def make(**kwargs):
        return get_resnet(version, num_layers, **kwargs)

    make.__name__ = make.__qualname__ = f"resnet{num_layers}_v{version}"
    make.__doc__ = (f"ResNet-{num_layers} v{version}: ``get_resnet({version}, {num_layers}, **kwargs)``.\n\n"
                    "    Keyword arguments: ``pretrained`` (default False), ``ctx`` (default ``cpu()``), ``root``\n"
                    "    (default ``$MXNET_HOME/models``), ``classes`` (default 1000), ``thumbnail``.\n    ")
    return make


resnet18_v1 = _constructor(1, 18)
resnet34_v1 = _constructor(1, 34)
resnet50_v1 = _constructor(1, 50)
resnet101_v1 = _constructor(1, 101)
resnet152_v1 = _constructor(1, 152)
resnet18_v2 = _constructor(2, 18)
resnet34_v2 = _constructor(2, 34)
resnet50_v2 = _constructor(2, 50)
resnet101_v2 = _constructor(2, 101)
resnet152_v2 = _constructor(2, 152)
