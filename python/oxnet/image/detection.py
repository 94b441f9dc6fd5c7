"""``mx.image.detection``: images with bounding boxes, for object detection
(MXNet 1.9.1's augmenters, ``CreateDetAugmenter`` and ``ImageDetIter``).

A detection label is a flat list of numbers::

    [header_width, object_width, <header_width - 2 more header values>,
     cls, xmin, ymin, xmax, ymax, <object_width - 5 extra values>,
     cls, xmin, ymin, ...]

with box corners normalised to [0, 1] of the image's width and height.
The augmenters here take and return ``(image, label)``, ``label`` being the
parsed (objects, object_width) numpy array, and move, crop, drop or
mirror the boxes with the image. Their randomness comes from Python's
``random`` in the same order as MXNet's draws, so that a seeded run gives
MXNet's crops, pads and flips.
"""

import json
import logging
import math
import random
import warnings

import numpy as np

from ..base import numeric_types
from .augmenters import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug, HueJitterAug,
                         LightingAug, RandomGrayAug, ResizeAug)
from .image import copyMakeBorder, fixed_crop
from .image_iter import ImageIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomCropAug",
           "DetRandomPadAug", "CreateMultiRandCropAugmenter", "CreateDetAugmenter", "ImageDetIter"]


def _nd():
    from .. import ndarray
    return ndarray


def _range_pair(value, name, owner):
    """``value`` as a (low, high) pair: a number stands for (value, value);
    anything else must be a list or tuple of two numbers."""
    if isinstance(value, numeric_types) and not isinstance(value, bool):
        logging.info("Using fixed %s: %s in %s", name, value, owner)
        return (value, value)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{owner}: {name} must be a number or a (low, high) pair, got {value!r}")
    if len(value) != 2 or not all(isinstance(v, numeric_types) for v in value):
        raise ValueError(f"{owner}: {name} must be a (low, high) pair of numbers, got {value!r}")
    return value


def _probability(value, name, owner):
    """Checks that ``value`` is a number (a probability or a skip chance)."""
    if not isinstance(value, numeric_types):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    return value


def _areas(boxes):
    """Areas of the (n, 4+) boxes ``[xmin, ymin, xmax, ymax, ...]``; an
    inverted box has area 0."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


class DetAugmenter:
    """The base class of the detection augmenters: a callable from
    ``(image, label)`` to ``(image, label)``, ``image`` an (h, w, c) NDArray
    and ``label`` an (objects, object_width) numpy array of
    ``[cls, xmin, ymin, xmax, ymax, ...]`` rows. Keeps its keyword
    arguments for :meth:`dumps`."""

    def __init__(self, **kwargs):
        nd = _nd()
        self._kwargs = dict(kwargs)
        for key, value in kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                self._kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string: ``[class name in lower case, its
        arguments]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        """Applies the augmentation; subclasses define it."""
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Runs an image-only :class:`mx.image.Augmenter` (resize, colour
    jitter, cast, normalisation...) on the image and passes the label
    through unchanged: for augmenters that do not move pixels.

    Parameters
    ----------
    augmenter : mx.image.Augmenter
        The classification augmenter to borrow.
    """

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError(f"DetBorrowAug: augmenter must be an mx.image.Augmenter, got "
                            f"{type(augmenter).__name__} (Borrowing from invalid Augmenter)")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[class name, the borrowed augmenter's dumps()]`` (a list, as MXNet's)."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        """The borrowed augmenter applied to ``src``; ``label`` unchanged."""
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Applies one of ``aug_list``, chosen at random, or (with probability
    ``skip_prob``) none of them.

    Parameters
    ----------
    aug_list : DetAugmenter or list of DetAugmenter
        The candidates; an empty list always skips.
    skip_prob : float, default 0
        Chance of returning the input unchanged.

    The choice is made as MXNet's: ``random.random() < skip_prob`` skips;
    otherwise the list is shuffled in place and its first entry applied.
    """

    def __init__(self, aug_list, skip_prob=0):
        _probability(skip_prob, "skip_prob", "DetRandomSelectAug")
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError(f"DetRandomSelectAug: aug_list takes DetAugmenter objects only, got "
                                 f"{type(aug).__name__} (Allow DetAugmenter in list only)")
        self.aug_list = aug_list
        self.skip_prob = 1 if not aug_list else skip_prob

    def dumps(self):
        """``[class name, [each candidate's dumps()]]``."""
        return [self.__class__.__name__.lower(), [aug.dumps() for aug in self.aug_list]]

    def __call__(self, src, label):
        """One randomly chosen candidate applied, or the input unchanged."""
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability ``p``, mirrors the image left to right and the
    boxes with it (``xmin, xmax = 1 - xmax, 1 - xmin``, in place).

    Parameters
    ----------
    p : float
        Chance in [0, 1] of flipping.
    """

    def __init__(self, p):
        _probability(p, "p", "DetHorizontalFlipAug")
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        """The image and label, flipped with probability ``p``."""
        if random.random() < self.p:
            src = _nd().flip(src, axis=1)
            self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label):
        """Mirrors the boxes of ``label`` in place."""
        new_xmin = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - label[:, 1]
        label[:, 1] = new_xmin


class DetRandomCropAug(DetAugmenter):
    """A random crop that keeps enough of the objects.

    Up to ``max_attempts`` times, a crop is drawn: aspect ratio (w / h)
    uniform in ``aspect_ratio_range``, height uniform among the integers
    giving an area within ``area_range`` (fractions of the image's area),
    position uniform. A crop is taken when every object it overlaps keeps
    more than ``min_object_covered`` of its area inside it; boxes are then
    clipped to the crop, and those keeping no more than
    ``min_eject_coverage`` of their area are dropped (a crop that would
    drop all of them is refused). If no attempt succeeds, the input is
    returned unchanged.

    Parameters
    ----------
    min_object_covered : float, default 0.1
        Least fraction of each overlapped object the crop must contain.
    aspect_ratio_range : (float, float) or float, default (0.75, 1.33)
        Range of the crop's width / height; a number fixes it.
    area_range : (float, float) or float, default (0.05, 1.0)
        Range of the crop's area as a fraction of the image's.
    min_eject_coverage : float, default 0.3
        Objects keeping no more than this fraction of their area are dropped.
    max_attempts : int, default 50
        Number of crops drawn before giving up.
    """

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                 min_eject_coverage=0.3, max_attempts=50):
        owner = "DetRandomCropAug"
        aspect_ratio_range = _range_pair(aspect_ratio_range, "aspect_ratio_range", owner)
        area_range = _range_pair(area_range, "area_range", owner)
        for name, value in (("min_object_covered", min_object_covered),
                            ("min_eject_coverage", min_eject_coverage), ("max_attempts", max_attempts)):
            if not isinstance(value, numeric_types):
                raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
        super().__init__(min_object_covered=min_object_covered, aspect_ratio_range=aspect_ratio_range,
                         area_range=area_range, min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            raise ValueError(f"{owner}: invalid area_range {tuple(area_range)}: needs 0 < high and low <= high")
        if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            raise ValueError(f"{owner}: invalid aspect_ratio_range {tuple(aspect_ratio_range)}: "
                             "needs 0 < low <= high")
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = True

    def __call__(self, src, label):
        """The cropped image and its relabelled objects (or the input)."""
        proposal = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if proposal:
            x, y, w, h, label = proposal
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _covered_fractions(self, boxes, crop):
        """For each (n, 4) box, the fraction of its area inside the
        normalised ``crop`` (x1, y1, x2, y2); 0 where they do not overlap."""
        x1, y1, x2, y2 = crop
        inter = boxes.copy()
        inter[:, 0] = np.maximum(boxes[:, 0], x1)
        inter[:, 1] = np.maximum(boxes[:, 1], y1)
        inter[:, 2] = np.minimum(boxes[:, 2], x2)
        inter[:, 3] = np.minimum(boxes[:, 3], y2)
        apart = (inter[:, 0] >= inter[:, 2]) | (inter[:, 1] >= inter[:, 3])
        inter[apart, :] = 0
        return _areas(inter) / _areas(boxes)

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        """Whether the pixel crop (xmin, ymin)-(xmax, ymax) of a ``width`` ×
        ``height`` image covers more than ``min_object_covered`` of every
        object (of more than 2 pixels) it overlaps, and overlaps one."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        crop = (float(xmin) / width, float(ymin) / height, float(xmax) / width, float(ymax) / height)
        boxes = label[:, 1:]
        sizable = _areas(boxes) * width * height > 2
        if not sizable.any():
            return False
        covered = self._covered_fractions(boxes[sizable], crop)
        covered = covered[covered > 0]
        return covered.size > 0 and covered.min() > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """The objects of ``label`` in the coordinates of the pixel crop
        ``crop_box`` (x, y, w, h), clipped to it; those inverted or keeping
        no more than ``min_eject_coverage`` of their area are dropped.
        None when none is left."""
        x0 = float(crop_box[0]) / width
        y0 = float(crop_box[1]) / height
        cw = float(crop_box[2]) / width
        ch = float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] -= x0
        out[:, (2, 4)] -= y0
        out[:, (1, 3)] /= cw
        out[:, (2, 4)] /= ch
        out[:, 1:5] = np.maximum(0, out[:, 1:5])
        out[:, 1:5] = np.minimum(1, out[:, 1:5])
        kept_fraction = _areas(out[:, 1:]) * cw * ch / _areas(label[:, 1:])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (kept_fraction > self.min_eject_coverage)
        if not keep.any():
            return None
        return out[np.flatnonzero(keep), :]

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new label) of an accepted crop, or () after
        ``max_attempts`` refusals."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                # the tallest crop whose rounded width still fits
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if w > width:
                raise AssertionError(f"crop width {w} exceeds image width {width}")
            # rounding may leave the area just outside the range: one step back in
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random zoom-out: places the image at a random spot of a larger
    canvas filled with ``pad_val`` and rescales the boxes to the canvas.

    Up to ``max_attempts`` times, a canvas is drawn: aspect ratio uniform
    in ``aspect_ratio_range``, height uniform among those at least the
    image's (and wide enough to hold it) whose area is at most
    ``area_range[1]`` times the image's; a canvas adding fewer than 2
    pixels on either axis is refused. If no attempt succeeds, the input is
    returned unchanged.

    Parameters
    ----------
    aspect_ratio_range : (float, float) or float, default (0.75, 1.33)
        Range of the canvas's width / height; a number fixes it.
    area_range : (float, float) or float, default (1.0, 3.0)
        Range of the canvas's area as a multiple of the image's; the high
        end must exceed 1.
    max_attempts : int, default 50
        Number of canvases drawn before giving up.
    pad_val : number or tuple of numbers, default (128, 128, 128)
        The canvas colour (per channel, in the image's own values).
    """

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0), max_attempts=50,
                 pad_val=(128, 128, 128)):
        owner = "DetRandomPadAug"
        if not isinstance(pad_val, (list, tuple)) and not isinstance(pad_val, numeric_types):
            raise TypeError(f"{owner}: pad_val must be a number or a tuple of numbers, got {pad_val!r}")
        aspect_ratio_range = _range_pair(aspect_ratio_range, "aspect_ratio_range", owner)
        area_range = _range_pair(area_range, "area_range", owner)
        if not isinstance(max_attempts, numeric_types):
            raise TypeError(f"{owner}: max_attempts must be a number, got {max_attempts!r}")
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range, max_attempts=max_attempts,
                         pad_val=pad_val)
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            raise ValueError(f"{owner}: invalid area_range {tuple(area_range)}: needs high > 1 and low <= high")
        if aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            raise ValueError(f"{owner}: invalid aspect_ratio_range {tuple(aspect_ratio_range)}: "
                             "needs 0 < low <= high")
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = True

    def __call__(self, src, label):
        """The padded image and its relabelled objects (or the input)."""
        height, width, _ = src.shape
        proposal = self._random_pad_proposal(label, height, width)
        if proposal:
            x, y, w, h, label = proposal
            if isinstance(self.pad_val, (list, tuple)):
                src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=tuple(self.pad_val))
            else:
                src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, value=float(self.pad_val))
        return src, label

    def _update_labels(self, label, pad_box, height, width):
        """The boxes of ``label`` moved onto the canvas ``pad_box`` (x, y, w, h)."""
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new label) of an accepted canvas, or ()."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                # the shortest canvas wide enough for the image
                h = int((width + 0.499999) / ratio)
            h = max(h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # too little padding to matter
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                 min_eject_coverage=0.3, max_attempts=50, skip_prob=0):
    """Several :class:`DetRandomCropAug`, one picked at random per image (a
    :class:`DetRandomSelectAug` skipping with ``skip_prob``).

    Each argument is either one value, shared by all the croppers, or a
    *list* of values, one per cropper (lists given must have the same
    length; a tuple is one value, e.g. one ``(low, high)`` range).

    Parameters
    ----------
    min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts
        As for :class:`DetRandomCropAug`, or lists of them.
    skip_prob : float, default 0
        Chance of cropping nothing.

    Examples
    --------
    >>> aug = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5, 0.9],
    ...                                             area_range=(0.3, 1.0))
    >>> len(aug.aug_list)
    3
    """
    names = ("min_object_covered", "aspect_ratio_range", "area_range", "min_eject_coverage", "max_attempts")
    values = [v if isinstance(v, list) else [v]
              for v in (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)]
    count = max(len(v) for v in values)
    if any(len(v) not in (1, count) for v in values):
        lengths = ", ".join(f"{name} has {len(v)}" for name, v in zip(names, values) if len(v) > 1)
        raise ValueError(f"CreateMultiRandCropAugmenter: lists of values per cropper must have the same length: "
                         f"{lengths}")
    columns = [v * count if len(v) == 1 else v for v in values]
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*columns)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


_IMAGENET_MEAN = (123.68, 116.28, 103.53)
_IMAGENET_STD = (58.395, 57.12, 57.375)
_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def _stat(value, name, default):
    """``mean``/``std`` as CreateDetAugmenter takes them: True for
    ImageNet's, None, or an array of 1 or 3 values."""
    if value is True:
        return np.array(default)
    if value is None or value is False:
        return None
    nd = _nd()
    if not isinstance(value, (np.ndarray, nd.NDArray)) or value.shape[0] not in (1, 3):
        raise ValueError(f"CreateDetAugmenter: {name} must be True, None or an array of 1 or 3 values, "
                         f"got {value!r}")
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0, rand_mirror=False, mean=None,
                       std=None, brightness=0, contrast=0, saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """MXNet's standard list of detection augmenters for images of
    ``data_shape`` (c, h, w), in this order: resize the shorter side to
    ``resize``; random crop with probability ``rand_crop`` (one cropper per
    entry of any list among the crop arguments, see
    :func:`CreateMultiRandCropAugmenter`); mirror with probability 0.5 when
    ``rand_mirror``; random pad with probability ``rand_pad`` (canvas area
    up to ``area_range[1]``, colour ``pad_val``); resize to (w, h) whatever
    the aspect ratio; cast to float32; brightness/contrast/saturation
    jitter; hue jitter; PCA lighting noise; random grey with probability
    ``rand_gray``; normalisation by ``mean``/``std`` (True: ImageNet's).

    ``inter_method`` is the interpolation of every resize (OpenCV's codes;
    9 chosen by size, 10 random). Returns a list of :class:`DetAugmenter`.

    Examples
    --------
    >>> augs = mx.image.CreateDetAugmenter((3, 300, 300), rand_crop=0.5, rand_pad=0.5,
    ...                                    rand_mirror=True, mean=True, std=True)
    >>> [aug.dumps()[0] if isinstance(aug.dumps(), list) else aug.dumps() for aug in augs][:2]
    """
    if len(data_shape) != 3:
        raise ValueError(f"CreateDetAugmenter: data_shape must be (channels, height, width), got {data_shape!r}")
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range, area_range,
                                                 min_eject_coverage, max_attempts, skip_prob=(1 - rand_crop)))
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    # padding late: the larger canvas costs more in every later step
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _stat(mean, "mean", _IMAGENET_MEAN)
    std = _stat(std, "std", _IMAGENET_STD)
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs


class ImageDetIter(ImageIter):
    """Batches of images and their object boxes, for detection training.

    Reads like :class:`mx.image.ImageIter` (``path_imgrec`` with or without
    ``path_imgidx``, ``path_imglist`` under ``path_root``, or ``imglist``:
    a list of ``[label numbers..., path]`` or ``[label list, path]``), each
    label in the detection format (see the module's documentation). Each
    image goes through ``aug_list`` (``CreateDetAugmenter(data_shape,
    **kwargs)`` by default) with its boxes; the batch's label has shape
    (batch_size, max objects, object_width), rows past an image's objects
    filled with -1. The maximum number of objects is found by reading every
    label once at construction (:attr:`label_shape`); :meth:`reshape` and
    :meth:`sync_label_shape` can enlarge it.

    Parameters
    ----------
    batch_size : int
        Images per batch.
    data_shape : tuple
        (3, height, width) of the batch's images.
    path_imgrec, path_imglist, path_root, path_imgidx, imglist
        Where the images and labels come from, as for ImageIter.
    shuffle : bool
        Reshuffle at every epoch (needs an index or a list).
    part_index, num_parts : int
        Read part ``part_index`` of ``num_parts`` (distributed training).
    aug_list : list of DetAugmenter or None
        The augmenters; None builds ``CreateDetAugmenter(data_shape, **kwargs)``.
    data_name, label_name : str
        Names in ``provide_data``/``provide_label``.
    last_batch_handle : str
        ``'pad'`` (fill the last batch from the start), ``'discard'`` or
        ``'roll_over'`` (carry the rest into the next epoch).
    kwargs
        Arguments of :func:`CreateDetAugmenter`.
    """

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None, path_root=None,
                 path_imgidx=None, shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="label", last_batch_handle="pad", **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx, shuffle=shuffle,
                         part_index=part_index, num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name, last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """Raises RuntimeError unless ``label`` is (objects, 5+) with at
        least one object of class >= 0 and positive size."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError("Label with shape (1+, 5+) required, %s received." % str(label))
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """(largest number of valid objects in any label, object width),
        reading every sample once."""
        most, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                most, width = max(most, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise RuntimeError("ImageDetIter: no images to read, so no label shape")
        return (most, width)

    def _parse_label(self, label):
        """The raw label (flat: header then objects, see the module's
        documentation) as an (objects, object_width) float array, objects
        with xmax <= xmin or ymax <= ymin removed. RuntimeError when it is
        too short, inconsistent with its object width, or has no valid
        object."""
        nd = _nd()
        if isinstance(label, nd.NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError("Label shape is invalid: " + str(raw.shape))
        header_width, obj_width = int(raw[0]), int(raw[1])
        if header_width < 2 or obj_width < 5:
            raise RuntimeError(f"Label header is invalid: header width {header_width} (needs >= 2), "
                               f"object width {obj_width} (needs >= 5)")
        if header_width > raw.size or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError("Label shape %s inconsistent with annotation width %d." % (str(raw.shape), obj_width))
        objects = raw[header_width:].reshape(-1, obj_width)
        valid = np.flatnonzero((objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2]))
        if valid.size < 1:
            raise RuntimeError("Encounter sample with no valid label.")
        return objects[valid, :]

    def reshape(self, data_shape=None, label_shape=None):
        """Changes the batch's ``data_shape`` (3, h, w) and/or
        ``label_shape`` (objects, object_width); the object count may only
        grow and the width must stay."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def check_label_shape(self, label_shape):
        """Raises ValueError unless ``label_shape`` is (objects, width) with
        at least the current objects and the same width."""
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError("Attempts to reduce label count from %d to %d, not allowed."
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError("label_shape object width inconsistent: %d vs %d."
                             % (self.provide_label[0][1][2], label_shape[1]))

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """``(data, label)`` through every augmenter of :attr:`auglist`."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _batchify(self, batch_data, batch_label, start=0):
        """Fills ``batch_data``/``batch_label`` from position ``start``;
        returns the count filled (StopIteration when none)."""
        nd = _nd()
        filled = start
        rows, width = batch_label.shape[1], batch_label.shape[2]
        try:
            while filled < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                if label.shape[0] > rows or label.shape[1] != width:
                    raise ValueError(f"ImageDetIter: a label of shape {label.shape} does not fit the batch's "
                                     f"label shape ({rows}, {width}); see reshape()")
                batch_data[filled] = self.postprocess_data(data)
                padded = np.full((rows, width), -1, dtype=np.float32)
                padded[:label.shape[0]] = label
                batch_label[filled] = nd.array(padded)
                filled += 1
        except StopIteration:
            if not filled:
                raise
        return filled

    def _new_label_batch(self):
        """Label rows start as -1 (no object), MXNet's padding; ``next``
        (ImageIter's) fills them: data (batch, 3, h, w), label (batch,
        objects, object_width), ``pad`` the images repeated (``'pad'``) or
        carried (``'roll_over'``)."""
        label = _nd().empty(self.provide_label[0][1])
        label[:] = -1
        return label

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True, waitKey=None,
                  window_name="draw_next", id2labels=None):
        """Yields the next images (uint8, (h, w, 3), BGR as OpenCV shows
        them) after augmentation, with their boxes drawn.

        Parameters
        ----------
        color : tuple or None
            Box colour (RGB); None: a random colour per box (numpy's generator).
        thickness : int
            Box line width in pixels.
        mean, std : True, numpy.ndarray or None
            Undo the normalisation (True: ImageNet's values).
        clip : bool
            Clip to [0, 255] before converting to uint8.
        waitKey : int or None
            Show each image in an OpenCV window for ``waitKey`` ms (None: do not show).
        window_name : str
            The window's name.
        id2labels : dict or None
            Class id to name, written beside each box (needs OpenCV).

        Boxes are drawn with OpenCV when it is installed, else with numpy
        (same rectangles, without class names, and no window).
        """
        try:
            import cv2
        except ImportError:
            cv2 = None
            if waitKey is not None or id2labels is not None:
                warnings.warn("draw_next: OpenCV (cv2) is not installed: images are not shown and class "
                              "names are not written")
        if std is True:
            std = np.array(_IMAGENET_STD)
        elif std is not None and not (isinstance(std, np.ndarray) and std.shape[0] in (1, 3)):
            raise ValueError("draw_next: std must be True, None or a numpy array of 1 or 3 values")
        if mean is True:
            mean = np.array(_IMAGENET_MEAN)
        elif mean is not None and not (isinstance(mean, np.ndarray) and mean.shape[0] in (1, 3)):
            raise ValueError("draw_next: mean must be True, None or a numpy array of 1 or 3 values")
        if color:
            color = tuple(color)[::-1]
        while True:
            try:
                label, encoded = self.next_sample()
            except StopIteration:
                return
            data = self.imdecode(encoded)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
            except RuntimeError as e:
                logging.debug("Invalid image, skipping:  %s", str(e))
                continue
            data, label = self.augmentation_transform(data, label)
            image = data.asnumpy()
            # in place, as MXNet: the image keeps its float32 type
            if std is not None:
                image *= std
            if mean is not None:
                image += mean
            image = image[:, :, (2, 1, 0)]
            if clip:
                image = np.maximum(0, np.minimum(255, image))
            image = np.ascontiguousarray(image.astype(np.uint8))
            height, width, _ = image.shape
            for row in label:
                # in double precision, as MXNet (with numpy 1.x) computes them
                x1 = int(float(row[1]) * width)
                if x1 < 0:
                    continue
                y1, x2, y2 = int(float(row[2]) * height), int(float(row[3]) * width), int(float(row[4]) * height)
                box_color = np.random.rand(3) * 255 if not color else color
                if cv2 is not None:
                    cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
                    if id2labels is not None and int(row[0]) in id2labels:
                        text = "{:s}".format(id2labels[int(row[0])])
                        font = cv2.FONT_HERSHEY_SIMPLEX
                        text_height = cv2.getTextSize(text, font, 0.5, 2)[0][1]
                        cv2.putText(image, text, (x1 + 5, y1 + text_height + 5), font, 0.5, (255, 255, 255), 2)
                else:
                    _draw_rectangle(image, x1, y1, x2, y2, box_color, thickness)
            if cv2 is not None and waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image

    def sync_label_shape(self, it, verbose=False):
        """Gives this iterator and ``it`` (another ImageDetIter, e.g. the
        validation one) the same label shape: the larger object count of
        the two. Returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise TypeError(f"sync_label_shape: it must be an ImageDetIter, got {type(it).__name__}")
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise ValueError(f"sync_label_shape: object width mismatch: {mine[1]} vs {theirs[1]}")
        most = max(mine[0], theirs[0])
        if most > mine[0]:
            self.reshape(None, (most, mine[1]))
        if most > theirs[0]:
            it.reshape(None, (most, theirs[1]))
        if verbose and most > min(mine[0], theirs[0]):
            logging.info("Resized label_shape to (%d, %d).", most, mine[1])
        return it


def _draw_rectangle(image, x1, y1, x2, y2, color, thickness):
    """Draws the outline of the rectangle (x1, y1)-(x2, y2) on the uint8
    ``image`` in place, with the pixels OpenCV's ``cv2.rectangle`` paints
    for small widths: 1-pixel lines for ``thickness`` 1; for more, bands
    ``(thickness + 1) // 2`` pixels either side of each edge, with corners
    rounded by discs of that radius; a negative ``thickness`` fills it."""
    height, width = image.shape[:2]
    value = np.clip(np.round(np.asarray(color, dtype=np.float64)[:image.shape[2]]), 0, 255).astype(np.uint8)
    left, right = min(x1, x2), max(x1, x2)
    top, bottom = min(y1, y2), max(y1, y2)
    ys, xs = np.mgrid[0:height, 0:width]
    if thickness < 0:
        mask = (xs >= left) & (xs <= right) & (ys >= top) & (ys <= bottom)
    elif thickness == 0:
        return
    else:
        reach = 0 if thickness == 1 else (thickness + 1) // 2
        in_x = (xs >= left) & (xs <= right)
        in_y = (ys >= top) & (ys <= bottom)
        mask = (in_x & ((np.abs(ys - top) <= reach) | (np.abs(ys - bottom) <= reach))) | \
               (in_y & ((np.abs(xs - left) <= reach) | (np.abs(xs - right) <= reach)))
        for cx, cy in ((left, top), (right, top), (left, bottom), (right, bottom)):
            mask |= (xs - cx) ** 2 + (ys - cy) ** 2 <= reach * reach
    image[mask] = value


def __getattr__(name):
    # names MXNet's mx.image.detection imports from mx.image.image
    if name == "RandomOrderAug":
        from .augmenters import RandomOrderAug
        return RandomOrderAug
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
