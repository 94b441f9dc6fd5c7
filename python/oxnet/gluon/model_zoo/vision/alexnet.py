"""AlexNet (Krizhevsky, "One weird trick for parallelizing convolutional
neural networks", 2014), as MXNet 1.9.1's model zoo builds it."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """AlexNet: five ReLU convolutions (11x11/4, 5x5, three 3x3) with three
    3x3/2 max poolings, Flatten, two Dense 4096 + ReLU + Dropout(0.5)
    layers (all in ``features``) and a Dense classifier (``output``).
    ``classes``: outputs (default 1000).
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                add = self.features.add
                add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"))
                add(nn.MaxPool2D(pool_size=3, strides=2))
                add(nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"))
                add(nn.MaxPool2D(pool_size=3, strides=2))
                add(nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"))
                add(nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"))
                add(nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"))
                add(nn.MaxPool2D(pool_size=3, strides=2))
                add(nn.Flatten())
                add(nn.Dense(4096, activation="relu"))
                add(nn.Dropout(0.5))
                add(nn.Dense(4096, activation="relu"))
                add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """AlexNet; keyword arguments (``classes``, ``prefix``, ...) go to
    :class:`AlexNet`. ``pretrained``: load ``alexnet-<hash>.params`` from
    ``root`` (default ``$MXNET_HOME/models``; never downloaded) onto ``ctx``.
    """
    net = AlexNet(**kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, "alexnet", root, ctx)
    return net
