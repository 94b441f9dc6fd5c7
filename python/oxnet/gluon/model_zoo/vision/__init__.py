"""Image-classification networks of MXNet 1.9.1's model zoo
(``mx.gluon.model_zoo.vision``): AlexNet, DenseNet-BC, Inception v3,
ResNet v1 and v2, SqueezeNet, VGG, MobileNet and MobileNetV2.

Each constructor (``vision.resnet18_v1()``, ``vision.get_model('vgg16')``)
builds the network with MXNet's blocks, parameter names and
``save_parameters`` keys, so parameter files written by MXNet (its
published pretrained files included) load unchanged. ``pretrained=True``
loads ``<name>-<short sha1>.params`` from ``root`` (default
``$MXNET_HOME/models``, i.e. ``~/.mxnet/models``); oxnet never downloads,
see :mod:`~oxnet.gluon.model_zoo.model_store`.

The pretrained networks expect RGB images scaled to [0, 1] and normalized
with mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225), in batches
of shape (N, 3, H, W) with H and W at least 224 (299 for Inception v3).
"""

from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403

_MODELS = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "densenet121": densenet121, "densenet161": densenet161,
    "densenet169": densenet169, "densenet201": densenet201,
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,
    "inceptionv3": inception_v3,
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,
}


def get_model(name, **kwargs):
    """The model ``name`` (case-insensitive: ``'resnet50_v1'``,
    ``'vgg16_bn'``, ``'squeezenet1.1'``, ``'inceptionv3'``,
    ``'mobilenetv2_0.5'``, ...), built by its constructor with ``kwargs``:
    ``pretrained`` (default False), ``classes`` (default 1000), ``ctx``
    (where pretrained weights go, default ``cpu()``) and ``root`` (where
    the pretrained file is looked for, default ``$MXNET_HOME/models``).

    An unknown name raises ``ValueError`` listing the available models.
    """
    key = name.lower()
    if key not in _MODELS:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (key, "\n\t".join(sorted(_MODELS))))
    return _MODELS[key](**kwargs)
