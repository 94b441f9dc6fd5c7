"""Image augmenters of ``mx.image`` (MXNet 1.9.1's classes and
``CreateAugmenter``): callables from a (height, width, channels) image
NDArray to another, drawing their randomness from Python's ``random``
(and numpy's, for the lighting noise) as MXNet's do, so a seeded run
draws the same crops, flips and jitters."""

import json
import random

import numpy as np

from .image import _get_interp_method, center_crop, color_normalize, imresize, random_crop, random_size_crop, \
    resize_short

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug", "RandomSizedCropAug",
           "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug", "ContrastJitterAug", "SaturationJitterAug",
           "HueJitterAug", "ColorJitterAug", "LightingAug", "ColorNormalizeAug", "RandomGrayAug",
           "HorizontalFlipAug", "CastAug", "CreateAugmenter"]


def _nd():
    from .. import ndarray
    return ndarray


# the luma weights MXNet's jitters use (ITU-R BT.601)
_LUMA = (0.299, 0.587, 0.114)


class Augmenter:
    """The base class: keeps its arguments for :meth:`dumps`; subclasses
    define ``__call__(src)``."""

    def __init__(self, **kwargs):
        nd = _nd()
        self._kwargs = {}
        for key, value in kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            self._kwargs[key] = value.tolist() if isinstance(value, np.ndarray) else value

    def dumps(self):
        """The augmenter as JSON: ``[class name in lower case, arguments]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Runs the augmenters ``ts`` one after another."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for t in self.ts:
            src = t(src)
        return src


class RandomOrderAug(SequentialAug):
    """Runs the augmenters ``ts`` in a random order (shuffled in place)."""

    def __call__(self, src):
        random.shuffle(self.ts)
        return super().__call__(src)


class ResizeAug(Augmenter):
    """Resizes the shorter side to ``size`` (see ``resize_short``)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resizes to ``size`` (w, h), whatever the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        method = _get_interp_method(self.interp, (src.shape[0], src.shape[1], self.size[1], self.size[0]))
        return imresize(src, *self.size, interp=method)


class RandomCropAug(Augmenter):
    """A crop of ``size`` (w, h) at a random place."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A random crop of a random area fraction and aspect ratio, resized to
    ``size`` (see ``random_size_crop``)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp
        if "min_area" in kwargs:
            self.area = kwargs.pop("min_area")
        assert not kwargs, "unexpected keyword arguments for `RandomSizedCropAug`."

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """The central crop of ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scales the image by 1 + u, u uniform in ±``brightness``."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        src *= 1.0 + random.uniform(-self.brightness, self.brightness)
        return src


class ContrastJitterAug(Augmenter):
    """Blends the image with its mean grey level: ``a·src + (1 - a)·mean
    grey``, a = 1 + u, u uniform in ±``contrast``."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = _nd().array([[_LUMA]])

    def __call__(self, src):
        nd = _nd()
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        grey = src * self.coef
        # 3 × the mean over all elements: the mean luma of a pixel
        mean_grey = (3.0 * (1.0 - alpha) / grey.size) * nd.sum(grey)
        src *= alpha
        src += mean_grey
        return src


class SaturationJitterAug(Augmenter):
    """Blends each pixel with its own grey level: ``a·src + (1 - a)·grey``,
    a = 1 + u, u uniform in ±``saturation``."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = _nd().array([[_LUMA]])

    def __call__(self, src):
        nd = _nd()
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        grey = nd.sum(src * self.coef, axis=2, keepdims=True)
        grey *= 1.0 - alpha
        src *= alpha
        src += grey
        return src


class HueJitterAug(Augmenter):
    """Rotates the hue by u·π, u uniform in ±``hue``, in YIQ space."""

    _RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _YIQ_TO_RGB = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        angle = random.uniform(-self.hue, self.hue) * np.pi
        rotate = np.array([[1.0, 0.0, 0.0],
                           [0.0, np.cos(angle), -np.sin(angle)],
                           [0.0, np.sin(angle), np.cos(angle)]])
        transform = (self._YIQ_TO_RGB @ rotate @ self._RGB_TO_YIQ).T
        return _nd().dot(src, _nd().array(transform))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters (those not 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = [cls(amount) for cls, amount in ((BrightnessJitterAug, brightness), (ContrastJitterAug, contrast),
                                              (SaturationJitterAug, saturation)) if amount > 0]
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: adds ``eigvec · (α ⊙ eigval)``, α
    normal with deviation ``alphastd`` (numpy's generator)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, eigval, eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        src += _nd().array(np.dot(self.eigvec * alpha, self.eigval))
        return src


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std`` (either may be None)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        nd = _nd()
        as_nd = lambda v: v if v is None or isinstance(v, nd.NDArray) else nd.array(v)  # noqa: E731
        self.mean, self.std = as_nd(mean), as_nd(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replaces every channel by the grey level."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = _nd().array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = _nd().dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirrors the image left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = _nd().flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Casts to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


# ImageNet's RGB statistics and lighting PCA, as MXNet's CreateAugmenter has them
_IMAGENET_MEAN = (123.68, 116.28, 103.53)
_IMAGENET_STD = (58.395, 57.12, 57.375)
_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False, mean=None,
                    std=None, brightness=0, contrast=0, saturation=0, hue=0, pca_noise=0, rand_gray=0,
                    inter_method=2):
    """MXNet's standard augmenter list for images of ``data_shape`` (c, h,
    w): resize the shorter side, crop (random-sized, random or central),
    mirror, cast to float32, colour jitters, hue, PCA noise, random grey,
    then normalisation (``mean``/``std`` True: ImageNet's)."""
    nd = _nd()
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        assert rand_crop
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    else:
        augs.append((RandomCropAug if rand_crop else CenterCropAug)(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    for name, value, default in (("mean", mean, _IMAGENET_MEAN), ("std", std, _IMAGENET_STD)):
        if value is True:
            value = nd.array(default)
        elif value is not None:
            assert isinstance(value, (np.ndarray, nd.NDArray)) and value.shape[0] in [1, 3], \
                f"{name} must be True, None, or an array of 1 or 3 values"
        if name == "mean":
            mean = value
        else:
            std = value
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
