"""``gluon.data.vision``: image datasets (MNIST, Fashion-MNIST, CIFAR-10/100
from MXNet's files; RecordIO, folders and lists of images) and
``transforms``."""

from .datasets import *  # noqa: F401,F403
from . import transforms  # noqa: F401
