"""``gluon.data.vision.transforms``: image transforms as Blocks, MXNet
1.9.1's names and arguments. ``Cast``, ``ToTensor``, ``Normalize``,
``Resize``, ``CropResize``, ``RandomFlipLeftRight`` and
``RandomFlipTopBottom`` and the colour jitters (``RandomBrightness``,
``RandomContrast``, ``RandomSaturation``, ``RandomHue``,
``RandomColorJitter``, ``RandomLighting``) are HybridBlocks on the
``_image_*`` operators, so a ``Compose`` of them hybridizes into one graph.
The crops drawn at random and the rotations run imperatively (Blocks), as
in MXNet.

Images are (height, width, channels) NDArrays, or batches of them, until
``ToTensor`` makes them (channels, height, width) float32 in [0, 1].
"""

import random

import numpy as np

from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential
from .... import image, ndarray as nd
from ....base import numeric_types

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "RandomResizedCrop", "CropResize", "CenterCrop", "Resize",
           "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness", "RandomContrast", "RandomSaturation",
           "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply", "HybridRandomApply", "Rotate",
           "RandomRotation"]


class Compose(Sequential):
    """Runs ``transforms`` in order; runs of consecutive HybridBlocks are
    grouped into hybridized HybridSequentials, as MXNet groups them."""

    def __init__(self, transforms):
        super().__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                group = HybridSequential()
                for h in hybrid:
                    group.add(h)
                group.hybridize()
                self.add(group)
            hybrid = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Casts to ``dtype``."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) or (N, H, W, C), any dtype, to float32 (C, H, W) or
    (N, C, H, W) divided by 255."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean) / std`` per channel of a (C, H, W) tensor or batch;
    ``mean`` and ``std``: one number, or one per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean if isinstance(mean, (tuple, list)) else (mean,)
        self._std = std if isinstance(std, (tuple, list)) else (std,)

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, mean=self._mean, std=self._std)


class Rotate(Block):
    """Rotates float32 (C, H, W) images or (N, C, H, W) batches by
    ``rotation_degrees`` counter-clockwise, keeping their shape
    (:func:`mx.image.imrotate`; ``zoom_in``: no border shows, ``zoom_out``:
    all of the image shows). Place it after ``ToTensor``."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """With probability ``rotate_with_proba``, rotates float32 (C, H, W)
    images or (N, C, H, W) batches by an angle drawn uniformly from
    ``angle_limits`` (low, high) degrees, one per image
    (:func:`mx.image.random_rotate`); otherwise returns them unchanged."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError(f"RandomRotation: angle_limits must be (low, high) with low < high, got {angle_limits}")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError(f"RandomRotation: rotate_with_proba must be within [0, 1], got {rotate_with_proba}")
        self._args = ((lower, upper), zoom_in, zoom_out)
        self._proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._proba:
            return x
        return image.random_rotate(x, *self._args)


class RandomResizedCrop(Block):
    """A random crop of area fraction ``scale`` and aspect ratio ``ratio``,
    resized to ``size`` (one number or (w, h)); see ``mx.image.random_size_crop``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """The ``width × height`` region at (``x``, ``y``), resized to ``size``
    when given (one number or (w, h)) with ``interpolation``."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = (size, size) if isinstance(size, numeric_types) else size
        self._interpolation = 1 if interpolation is None else interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, x=self._x, y=self._y, width=self._width, height=self._height)
        if self._size:
            out = F.image.resize(out, size=self._size, keep_ratio=False, interp=self._interpolation)
        return out


class CenterCrop(Block):
    """The central crop of ``size`` (one number or (w, h)), enlarged first
    if the image is smaller; see ``mx.image.center_crop``."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resizes to ``size`` ((w, h), or one number: both sides, or with
    ``keep_ratio`` the shorter side) with ``interpolation``."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size if isinstance(size, (tuple, list)) else (size,)
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, size=self._size, keep_ratio=self._keep, interp=self._interpolation)


class RandomFlipLeftRight(HybridBlock):
    """Mirrors left to right with probability 1/2."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flips top to bottom with probability 1/2."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


def _factor_range(amount, what):
    if amount < 0:
        raise ValueError(f"{what} must not be negative, got {amount}")
    return max(0.0, 1.0 - amount), 1.0 + amount


class RandomBrightness(HybridBlock):
    """Scales each image by a factor drawn from [max(0, 1 - b), 1 + b]
    (``_image_random_brightness``)."""

    def __init__(self, brightness):
        super().__init__()
        self._args = _factor_range(brightness, "RandomBrightness: brightness")

    def hybrid_forward(self, F, x):
        return F.image.random_brightness(x, *self._args)


class RandomContrast(HybridBlock):
    """Blends each image with its mean grey level by a factor drawn from
    [max(0, 1 - c), 1 + c] (``_image_random_contrast``)."""

    def __init__(self, contrast):
        super().__init__()
        self._args = _factor_range(contrast, "RandomContrast: contrast")

    def hybrid_forward(self, F, x):
        return F.image.random_contrast(x, *self._args)


class RandomSaturation(HybridBlock):
    """Blends each pixel with its grey level by a factor drawn from
    [max(0, 1 - s), 1 + s] (``_image_random_saturation``; MXNet's operator
    takes the blue channel's share of the grey level alone, this the whole)."""

    def __init__(self, saturation):
        super().__init__()
        self._args = _factor_range(saturation, "RandomSaturation: saturation")

    def hybrid_forward(self, F, x):
        return F.image.random_saturation(x, *self._args)


class RandomHue(HybridBlock):
    """Turns the hue by a fraction of the colour circle drawn from [-h, h]
    (``_image_random_hue``, in HLS space)."""

    def __init__(self, hue):
        super().__init__()
        if hue < 0:
            raise ValueError(f"RandomHue: hue must not be negative, got {hue}")
        self._args = (-hue, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_hue(x, *self._args)


class RandomColorJitter(HybridBlock):
    """Brightness, contrast, saturation and hue jitters (those not 0) in a
    random order (``_image_random_color_jitter``)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        for name, v in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation),
                        ("hue", hue)):
            if v < 0:
                raise ValueError(f"RandomColorJitter: {name} must not be negative, got {v}")
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet's PCA lighting noise, alphas drawn from N(0, alpha²)
    (``_image_random_lighting``)."""

    def __init__(self, alpha):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"RandomLighting: alpha must not be negative, got {alpha}")
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Applies ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)


class HybridRandomApply(RandomApply):
    """:class:`RandomApply` (imperative here: the draw is Python's)."""
