"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for
Computer Vision", 2015), as MXNet 1.9.1's model zoo builds it. It needs
inputs of at least 299x299 (its last 8x8 average pooling)."""

import os

from .... import base
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent

__all__ = ["Inception3", "inception_v3"]

_CONV_ARGS = ("channels", "kernel_size", "strides", "padding")


def _conv_bn_relu(**kwargs):
    """A bias-free convolution (``kwargs`` as :class:`~oxnet.gluon.nn.Conv2D`),
    BatchNorm (epsilon 0.001) and ReLU."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return seq


def _branch(pool, *convs):
    """One branch: an optional pooling (``'avg'``: 3x3/1 padded average,
    ``'max'``: 3x3/2 max) then a conv-BN-ReLU per entry of ``convs``, each
    ``(channels, kernel_size, strides, padding)`` with None for the default."""
    seq = nn.HybridSequential(prefix="")
    if pool == "avg":
        seq.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        seq.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        seq.add(_conv_bn_relu(**{k: v for k, v in zip(_CONV_ARGS, setting) if v is not None}))
    return seq


def _concurrent(prefix, *branches):
    """Branches made (by the callables ``branches``) inside a
    HybridConcurrent named ``prefix``, concatenated on channels."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _make_A(pool_features, prefix):
    """35x35 module: 1x1, 5x5, double 3x3 and pooled 1x1 branches."""
    return _concurrent(
        prefix,
        lambda: _branch(None, (64, 1, None, None)),
        lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        lambda: _branch("avg", (pool_features, 1, None, None)))


def _make_B(prefix):
    """Grid reduction 35 -> 17: strided 3x3, strided double 3x3, max pooling."""
    return _concurrent(
        prefix,
        lambda: _branch(None, (384, 3, 2, None)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        lambda: _branch("max"))


def _make_C(channels_7x7, prefix):
    """17x17 module with factorized 7x7 convolutions (1x7 and 7x1)."""
    c = channels_7x7
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None)),
        lambda: _branch(None, (c, 1, None, None), (c, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0))),
        lambda: _branch(None, (c, 1, None, None), (c, (7, 1), None, (3, 0)), (c, (1, 7), None, (0, 3)),
                        (c, (7, 1), None, (3, 0)), (192, (1, 7), None, (0, 3))),
        lambda: _branch("avg", (192, 1, None, None)))


def _make_D(prefix):
    """Grid reduction 17 -> 8: strided 3x3 after 1x1, strided 3x3 after
    factorized 7x7, max pooling."""
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0)),
                        (192, 3, 2, None)),
        lambda: _branch("max"))


def _split_3x3():
    """1x3 and 3x1 convolutions (384 each) side by side."""
    split = HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))))
    split.add(_branch(None, (384, (3, 1), None, (1, 0))))
    return split


def _make_E(prefix):
    """8x8 module with expanded filter banks (split 1x3 / 3x1 outputs)."""

    def plain_3x3():
        seq = nn.HybridSequential(prefix="")
        seq.add(_branch(None, (384, 1, None, None)))
        seq.add(_split_3x3())
        return seq

    def double_3x3():
        seq = nn.HybridSequential(prefix="")
        seq.add(_branch(None, (448, 1, None, None), (384, 3, None, 1)))
        seq.add(_split_3x3())
        return seq

    return _concurrent(
        prefix,
        lambda: _branch(None, (320, 1, None, None)),
        plain_3x3,
        double_3x3,
        lambda: _branch("avg", (192, 1, None, None)))


def make_aux(classes):
    """The auxiliary classifier head (5x5/3 average pooling, 1x1 and 5x5
    conv-BN-ReLU, Flatten, Dense); MXNet's model zoo defines it but
    :class:`Inception3` does not use it."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.AvgPool2D(pool_size=5, strides=3))
    out.add(_conv_bn_relu(channels=128, kernel_size=1))
    out.add(_conv_bn_relu(channels=768, kernel_size=5))
    out.add(nn.Flatten())
    out.add(nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception v3: a stem of conv-BN-ReLU layers and max poolings, three
    A modules, a B reduction, four C modules, a D reduction, two E modules,
    8x8 average pooling and Dropout(0.5) (``features``), then a Dense
    classifier (``output``). ``classes``: outputs (default 1000). Inputs
    must be at least 299x299.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            add = self.features.add
            add(_conv_bn_relu(channels=32, kernel_size=3, strides=2))
            add(_conv_bn_relu(channels=32, kernel_size=3))
            add(_conv_bn_relu(channels=64, kernel_size=3, padding=1))
            add(nn.MaxPool2D(pool_size=3, strides=2))
            add(_conv_bn_relu(channels=80, kernel_size=1))
            add(_conv_bn_relu(channels=192, kernel_size=3))
            add(nn.MaxPool2D(pool_size=3, strides=2))
            add(_make_A(32, "A1_"), _make_A(64, "A2_"), _make_A(64, "A3_"))
            add(_make_B("B_"))
            add(_make_C(128, "C1_"), _make_C(160, "C2_"), _make_C(160, "C3_"), _make_C(192, "C4_"))
            add(_make_D("D_"))
            add(_make_E("E1_"), _make_E("E2_"))
            add(nn.AvgPool2D(pool_size=8))
            add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=cpu(), root=os.path.join(base.data_dir(), "models"), **kwargs):
    """Inception v3; keyword arguments (``classes``, ``prefix``, ...) go to
    :class:`Inception3`. ``pretrained``: load ``inceptionv3-<hash>.params``
    from ``root`` (default ``$MXNET_HOME/models``; never downloaded) onto
    ``ctx``.
    """
    net = Inception3(**kwargs)
    if pretrained:
        from ..model_store import _load_pretrained
        _load_pretrained(net, "inceptionv3", root, ctx)
    return net
