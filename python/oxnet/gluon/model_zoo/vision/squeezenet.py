"""SqueezeNet 1.0 (Iandola et al., "SqueezeNet: AlexNet-level accuracy
with 50x fewer parameters and <0.5MB model size", 2016) and 1.1 (the
authors' lighter revision), as MXNet 1.9.1's model zoo builds them."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _conv_relu(channels, kernel_size, padding=0):
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return seq


def _fire(squeeze, expand1x1, expand3x3):
    """A fire module: a 1x1 squeeze convolution, then 1x1 and 3x3 expand
    convolutions side by side, concatenated on channels (all with ReLU)."""
    fire = nn.HybridSequential(prefix="")
    fire.add(_conv_relu(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_conv_relu(expand1x1, 1))
    expand.add(_conv_relu(expand3x3, 3, 1))
    fire.add(expand)
    return fire


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1': a strided convolution, fire
    modules between 3x3/2 max poolings (ceil mode) and Dropout(0.5)
    (``features``), then a 1x1 convolution to ``classes`` channels, ReLU,
    13x13 average pooling and Flatten (``output``).
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        assert version in ["1.0", "1.1"], f"Unsupported SqueezeNet version {version}:1.0 or 1.1 expected"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            add = self.features.add

            def pool():
                return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)

            if version == "1.0":
                add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"), pool())
                add(_fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128), pool())
                add(_fire(32, 128, 128), _fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256), pool())
                add(_fire(64, 256, 256))
            else:
                add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"), pool())
                add(_fire(16, 64, 64), _fire(16, 64, 64), pool())
                add(_fire(32, 128, 128), _fire(32, 128, 128), pool())
                add(_fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256), _fire(64, 256, 256))
            add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13),
                            nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """SqueezeNet ``version`` ('1.0' or '1.1'); other keyword arguments
    (``classes``, ``prefix``, ...) go to :class:`SqueezeNet`.
    ``pretrained``: load ``squeezenet<version>-<hash>.params`` from ``root``
    (default ``$MXNET_HOME/models``; never downloaded) onto ``ctx``.
    """
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, f"squeezenet{version}", root, ctx)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0: ``get_squeezenet('1.0', **kwargs)`` (``pretrained``,
    ``ctx``, ``root``, ``classes``)."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1 (about 2.4x less computation than 1.0, as accurate):
    ``get_squeezenet('1.1', **kwargs)`` (``pretrained``, ``ctx``, ``root``,
    ``classes``)."""
    return get_squeezenet("1.1", **kwargs)
