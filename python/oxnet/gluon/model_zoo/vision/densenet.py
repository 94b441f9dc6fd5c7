"""DenseNet-BC 121/161/169/201 (Huang et al., "Densely Connected
Convolutional Networks", 2016), as MXNet 1.9.1's model zoo builds them."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent, Identity

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _dense_layer(growth_rate, bn_size, dropout):
    """One dense layer: the input concatenated (on channels) with
    BN-ReLU-1x1 conv (``bn_size * growth_rate``) - BN-ReLU-3x3 conv
    (``growth_rate``) [- Dropout] of it."""
    branch = nn.HybridSequential(prefix="")
    branch.add(nn.BatchNorm(), nn.Activation("relu"),
               nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
               nn.BatchNorm(), nn.Activation("relu"),
               nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        branch.add(nn.Dropout(dropout))
    layer = HybridConcurrent(axis=1, prefix="")
    layer.add(Identity())
    layer.add(branch)
    return layer


def _dense_block(num_layers, bn_size, growth_rate, dropout, index):
    """Dense block ``index`` (prefix ``stage<index>_``) of ``num_layers`` layers."""
    block = nn.HybridSequential(prefix=f"stage{index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels):
    """Between dense blocks: BN, ReLU, 1x1 conv to ``channels``, 2x2/2 average pooling."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(channels, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """DenseNet-BC: a 7x7/2 convolution, BN, ReLU and 3x3/2 max pooling,
    dense blocks joined by transitions that halve the channels, BN, ReLU,
    7x7 average pooling and Flatten (``features``), then a Dense classifier
    (``output``).

    ``num_init_features``: the first convolution's width; ``growth_rate``:
    channels each dense layer adds (k); ``block_config``: layers per dense
    block; ``bn_size``: bottleneck width factor (default 4); ``dropout``:
    rate after each dense layer (default 0); ``classes`` (default 1000).
    """

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0, classes=1000,
                 **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            channels = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                channels += num_layers * growth_rate
                if i != len(block_config) - 1:
                    channels //= 2
                    self.features.add(_transition(channels))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (first convolution's width, growth rate, layers per dense block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """DenseNet-BC with ``num_layers`` layers (121, 161, 169 or 201); other
    keyword arguments (``bn_size``, ``dropout``, ``classes``, ...) go to
    :class:`DenseNet`. ``pretrained``: load ``densenet<N>-<hash>.params``
    from ``root`` (default ``$MXNET_HOME/models``; never downloaded) onto
    ``ctx``.
    """
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, f"densenet{num_layers}", root, ctx)
    return net


def _constructor(num_layers):
    def make(**kwargs):
        return get_densenet(num_layers, **kwargs)

    make.__name__ = make.__qualname__ = f"densenet{num_layers}"
    make.__doc__ = (f"DenseNet-BC {num_layers}: ``get_densenet({num_layers}, **kwargs)``.\n\n"
                    "    Keyword arguments: ``pretrained`` (default False), ``ctx`` (default ``cpu()``), ``root``\n"
                    "    (default ``$MXNET_HOME/models``), ``classes`` (default 1000), ``bn_size``, ``dropout``.\n    ")
    return make


densenet121 = _constructor(121)
densenet161 = _constructor(161)
densenet169 = _constructor(169)
densenet201 = _constructor(201)
