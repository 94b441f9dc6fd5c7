"""``gluon.data.vision.transforms``: image transforms as Blocks, MXNet
1.9.1's names and arguments. ``Cast``, ``ToTensor``, ``Normalize``,
``Resize``, ``CropResize``, ``RandomFlipLeftRight`` and
``RandomFlipTopBottom`` are HybridBlocks on the ``_image_*`` operators, so
a ``Compose`` of them hybridizes into one graph. The crops drawn at random
and the colour jitters run imperatively (Blocks): MXNet makes the colour
jitters HybridBlocks on operators oxnet does not have yet.

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


_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _factor(amount):
    """A factor drawn uniformly from [max(0, 1 - amount), 1 + amount]."""
    return random.uniform(max(0.0, 1.0 - amount), 1.0 + amount)


def _as_float(x):
    return x if x.dtype == np.float32 else x.astype("float32")


def _like(out, x):
    """``out`` (float32) in ``x``'s dtype, saturated for uint8."""
    if x.dtype == np.uint8:
        return nd.clip(out, 0, 255).round().astype("uint8")
    return out.astype(x.dtype) if out.dtype != x.dtype else out


class RandomBrightness(Block):
    """Scales the image by a factor drawn from [max(0, 1 - b), 1 + b]."""

    def __init__(self, brightness):
        super().__init__()
        self._brightness = brightness

    def forward(self, x):
        return _like(_as_float(x) * _factor(self._brightness), x)


class RandomContrast(Block):
    """Blends the image with its mean grey level by a factor drawn from
    [max(0, 1 - c), 1 + c]."""

    def __init__(self, contrast):
        super().__init__()
        self._contrast = contrast

    def forward(self, x):
        alpha = _factor(self._contrast)
        f = _as_float(x)
        grey = nd.sum(f * nd.array(_LUMA), axis=-1, keepdims=True) if x.shape[-1] == 3 else f
        mean = nd.mean(grey, axis=(-3, -2, -1), keepdims=True)
        return _like(nd.broadcast_add(f * alpha, mean * (1 - alpha)), x)


class RandomSaturation(Block):
    """Blends each pixel with its grey level by a factor drawn from
    [max(0, 1 - s), 1 + s] (MXNet's operator takes the blue channel's share
    of the grey level alone; this uses the whole)."""

    def __init__(self, saturation):
        super().__init__()
        self._saturation = saturation

    def forward(self, x):
        alpha = _factor(self._saturation)
        if x.shape[-1] != 3:
            return x
        f = _as_float(x)
        grey = nd.sum(f * nd.array(_LUMA), axis=-1, keepdims=True)
        return _like(nd.broadcast_add(f * alpha, grey * (1 - alpha)), x)


def _rgb_to_hls(rgb):
    """Hue in degrees, lightness and saturation in [0, 1] of RGB in [0, 255] (OpenCV's HLS)."""
    rgb = rgb / 255.0
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    vmax, vmin = rgb.max(axis=-1), rgb.min(axis=-1)
    diff = vmax - vmin
    light = (vmax + vmin) / 2
    safe = np.where(diff > 1e-7, diff, 1.0)
    sat = np.where(diff > 1e-7, np.where(light < 0.5, diff / np.maximum(vmax + vmin, 1e-7),
                                         diff / np.maximum(2.0 - vmax - vmin, 1e-7)), 0.0)
    hue = np.where(vmax == r, (g - b) * 60 / safe,
                   np.where(vmax == g, (b - r) * 60 / safe + 120, (r - g) * 60 / safe + 240))
    hue = np.where(diff > 1e-7, hue % 360, 0.0)
    return hue, light, sat


def _hls_to_rgb(hue, light, sat):
    def channel(n):
        k = (n + hue / 30) % 12
        a = sat * np.minimum(light, 1 - light)
        return light - a * np.clip(np.minimum(k - 3, 9 - k), -1, 1)
    return np.stack([channel(0), channel(8), channel(4)], axis=-1) * 255.0


class RandomHue(Block):
    """Rotates the hue by a fraction of a turn drawn from [-h, h] (in HLS space)."""

    def __init__(self, hue):
        super().__init__()
        self._hue = hue

    def forward(self, x):
        alpha = random.uniform(-self._hue, self._hue)
        if x.shape[-1] != 3:
            return x
        h, l, s = _rgb_to_hls(x.asnumpy().astype(np.float64))
        out = nd.array(_hls_to_rgb((h + alpha * 360.0) % 360, l, s).astype(np.float32))
        return _like(out, x)


class RandomColorJitter(Block):
    """Brightness, contrast, saturation and hue jitters (those not 0) in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._jitters = [cls(v) for cls, v in ((RandomBrightness, brightness), (RandomContrast, contrast),
                                               (RandomSaturation, saturation), (RandomHue, hue)) if v]

    def forward(self, x):
        order = list(self._jitters)
        random.shuffle(order)
        for t in order:
            x = t(x)
        return x


# AlexNet's ImageNet PCA, as MXNet's lighting operator has it
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


class RandomLighting(Block):
    """AlexNet's PCA lighting noise with deviation ``alpha``."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def forward(self, x):
        a = np.random.normal(0, self._alpha, size=(3,))
        shift = nd.array(np.dot(_EIGVEC * a, _EIGVAL).astype(np.float32))
        return _like(nd.broadcast_add(_as_float(x), shift), x)


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
