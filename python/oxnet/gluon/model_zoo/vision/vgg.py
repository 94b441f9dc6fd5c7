"""VGG 11/13/16/19 (Simonyan & Zisserman, "Very Deep Convolutional
Networks for Large-Scale Image Recognition", 2014), with or without
BatchNorm, as MXNet 1.9.1's model zoo builds them."""

import os

from .... import base
from ....context import cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """VGG: groups of 3x3 convolutions (each followed by BatchNorm when
    ``batch_norm``, and ReLU) separated by 2x2 max pooling, then two Dense
    4096 + ReLU + Dropout(0.5) layers (in ``features``) and a Dense
    classifier (``output``).

    ``layers``: convolutions per group; ``filters``: each group's width
    (same length as ``layers``); ``classes``: outputs (default 1000).
    Convolutions are initialized with Xavier (gaussian, fan-out,
    magnitude 2), Dense weights with a normal distribution, biases with 0.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters)
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        features = nn.HybridSequential(prefix="")
        for count, width in zip(layers, filters):
            for _ in range(count):
                features.add(nn.Conv2D(width, kernel_size=3, padding=1,
                                       weight_initializer=Xavier(rnd_type="gaussian", factor_type="out", magnitude=2),
                                       bias_initializer="zeros"))
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per group, group widths)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """VGG with ``num_layers`` layers (11, 13, 16 or 19); ``batch_norm=True``
    adds BatchNorm after each convolution. Other keyword arguments
    (``classes``, ``prefix``, ...) go to :class:`VGG`.

    ``pretrained``: load ``vgg<N>[_bn]-<hash>.params`` from ``root``
    (default ``$MXNET_HOME/models``; never downloaded) onto ``ctx``.
    """
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        _load_pretrained(net, f"vgg{num_layers}{suffix}", root, ctx)
    return net


def _constructor(num_layers, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(num_layers, **kwargs)

    make.__name__ = make.__qualname__ = f"vgg{num_layers}" + ("_bn" if batch_norm else "")
    make.__doc__ = (f"VGG-{num_layers}{' with BatchNorm' if batch_norm else ''}: ``get_vgg({num_layers}"
                    f"{', batch_norm=True' if batch_norm else ''}, **kwargs)``.\n\n"
                    "    Keyword arguments: ``pretrained`` (default False), ``ctx`` (default ``cpu()``), ``root``\n"
                    "    (default ``$MXNET_HOME/models``), ``classes`` (default 1000).\n    ")
    return make


vgg11 = _constructor(11, False)
vgg13 = _constructor(13, False)
vgg16 = _constructor(16, False)
vgg19 = _constructor(19, False)
vgg11_bn = _constructor(11, True)
vgg13_bn = _constructor(13, True)
vgg16_bn = _constructor(16, True)
vgg19_bn = _constructor(19, True)
