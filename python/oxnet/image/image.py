"""Image functions of ``mx.image``: decoding, reading, resizing, borders,
crops and normalisation of height × width × channels arrays, with MXNet
1.9.1's signatures and OpenCV's conventions (which MXNet calls).

Decoding and resizing run in Rust (``oxnet_io::image``,
``oxnet_io::resize``): JPEG and PNG; resizing with OpenCV's pixel centres
and kernels, within one grey level of OpenCV's fixed-point results.
"""

import random

import numpy as np

from .. import _oxnet
from ..base import MXNetError, numeric_types

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short", "fixed_crop",
           "random_crop", "center_crop", "color_normalize", "random_size_crop", "imrotate", "random_rotate"]


class _ImageFileError(MXNetError, OSError):
    """An image file that cannot be read: an MXNetError, as MXNet raises,
    and an OSError, as Python's file functions do."""


def _nd():
    from .. import ndarray
    return ndarray


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes the JPEG or PNG image in ``buf`` (bytes, bytearray, a uint8
    numpy array or NDArray) into a (height, width, channels) uint8 NDArray:
    ``flag`` 1 colour, 0 grey, -1 as stored; colour in RGB order, or
    OpenCV's BGR with ``to_rgb=0``."""
    nd = _nd()
    if isinstance(buf, nd.NDArray):
        data = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, (bytes, bytearray)):
        data = bytes(buf)
    elif isinstance(buf, np.ndarray):
        data = buf.astype(np.uint8, copy=False).tobytes()
    else:
        raise ValueError("buf must be of type bytes, bytearray or numpy.ndarray,"
                         "if you would like to input type str, please convert to bytes")
    img = _oxnet.image_decode(data, int(flag), not to_rgb)
    if out is not None:
        out[:] = img
        return out
    return img


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes the image file ``filename`` (see :func:`imdecode`)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise _ImageFileError(f"imread: cannot read {filename!r}: {e.strerror}") from e
    return imdecode(data, flag, to_rgb, out)


def imresize(src, w, h, interp=1, out=None):
    """``src`` (an image NDArray, (h, w) or (h, w, c); uint8, float32 or
    float64) resized to ``w`` × ``h`` with OpenCV's interpolation ``interp``
    (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto). uint8
    images follow OpenCV's fixed-point arithmetic bit for bit; float images
    are computed in float32."""
    nd = _nd()
    src = src if isinstance(src, nd.NDArray) else nd.array(src, dtype="uint8")
    if np.dtype(src.dtype) == np.uint8:
        img = _oxnet.image_resize(src, int(h), int(w), int(interp))
    else:
        # the registry operator handles the float types; it wants (h, w, c)
        grey = src.ndim == 2
        img = nd.image.resize(src.expand_dims(axis=2) if grey else src, size=(int(w), int(h)), interp=int(interp))
        if grey:
            img = img.reshape((int(h), int(w)))
    if out is not None:
        out[:] = img
        return out
    return img


def scale_down(src_size, size):
    """``size`` (w, h) shrunk, aspect ratio kept, until it fits in
    ``src_size`` (w, h); integers, rounded down."""
    want_w, want_h = size
    have_w, have_h = src_size
    if want_h > have_h:  # too tall: fit the height
        want_w, want_h = float(want_w * have_h) / want_h, have_h
    if want_w > have_w:  # still too wide: fit the width
        want_w, want_h = have_w, float(want_h * have_w) / want_w
    return int(want_w), int(want_h)


_BORDERS = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=()):  # pylint: disable=redefined-builtin
    """``src`` padded by ``top``, ``bot``, ``left`` and ``right`` pixels:
    OpenCV's border ``type`` 0 constant (``value``, or ``values`` per
    channel), 1 replicate, 2 reflect, 3 wrap, 4 reflect without the edge."""
    nd = _nd()
    if type not in _BORDERS:
        raise ValueError(f"unknown border type {type}: use 0 (constant), 1 (replicate), 2 (reflect), 3 (wrap) "
                         "or 4 (reflect_101)")
    arr = src.asnumpy() if isinstance(src, nd.NDArray) else np.asarray(src)
    pad = [(top, bot), (left, right)] + [(0, 0)] * (arr.ndim - 2)
    if type == 0:
        out = np.pad(arr, pad, mode="constant", constant_values=0)
        fill = np.asarray(values if len(values) else value, dtype=np.float64)
        mask = np.ones(arr.shape[:2], dtype=bool)
        mask = ~np.pad(mask, [(top, bot), (left, right)], mode="constant", constant_values=False)
        out[mask] = fill.astype(arr.dtype) if fill.ndim else fill.astype(arr.dtype).item()
    else:
        out = np.pad(arr, pad, mode=_BORDERS[type])
    return nd.array(out, dtype=arr.dtype)


def _get_interp_method(interp, sizes=()):
    """The interpolation to use for ``interp``: 0 to 4 as given; 9 chosen
    from ``sizes`` (old h, w, new h, w): bicubic to enlarge, area to
    shrink, bilinear otherwise (bicubic without sizes); 10 one of 0 to 4 at
    random."""
    if interp in (0, 1, 2, 3, 4):
        return interp
    if interp == 10:
        return random.randint(0, 4)
    if interp != 9:
        raise ValueError("Unknown interp method %d" % interp)
    if not sizes:
        return 2
    assert len(sizes) == 4
    old_h, old_w, new_h, new_w = sizes
    grows, shrinks = new_h > old_h and new_w > old_w, new_h < old_h and new_w < old_w
    return 2 if grows else 3 if shrinks else 1


def resize_short(src, size, interp=2):
    """``src`` resized so that its shorter side is ``size``, keeping its
    aspect ratio (the longer side rounded down)."""
    h, w, _ = src.shape
    short, long = (w, h) if h > w else (h, w)
    scaled = size * long // short
    new_h, new_w = (scaled, size) if h > w else (size, scaled)
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The ``w`` × ``h`` region of ``src`` whose top left corner is
    (``x0``, ``y0``), resized to ``size`` (w, h) when given and different."""
    region = src[y0:y0 + h, x0:x0 + w]
    if size is None or tuple(size) == (w, h):
        return region
    method = _get_interp_method(interp, (h, w, size[1], size[0]))
    return imresize(region, size[0], size[1], interp=method)


def _crop_at(src, size, interp, place):
    """A crop of ``size`` (w, h), scaled down to fit ``src``, whose corner
    ``place(spare_w, spare_h)`` gives; resized to ``size``. Returns it and
    (x0, y0, w, h)."""
    h, w, _ = src.shape
    crop_w, crop_h = scale_down((w, h), size)
    x0, y0 = place(w - crop_w, h - crop_h)
    return fixed_crop(src, x0, y0, crop_w, crop_h, size, interp), (x0, y0, crop_w, crop_h)


def random_crop(src, size, interp=2):
    """A crop of ``size`` (w, h) at a random place (scaled down to fit),
    resized to ``size``; returns it and (x0, y0, w, h)."""
    return _crop_at(src, size, interp, lambda dx, dy: (random.randint(0, dx), random.randint(0, dy)))


def center_crop(src, size, interp=2):
    """The central crop of ``size`` (w, h) (scaled down to fit), resized to
    ``size``; returns it and (x0, y0, w, h)."""
    return _crop_at(src, size, interp, lambda dx, dy: (int(dx / 2), int(dy / 2)))


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` in place (either may be None)."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A random crop covering a fraction ``area`` of ``src`` (a number: at
    least that; a pair: between the two) with an aspect ratio drawn
    log-uniformly from ``ratio``, resized to ``size`` (w, h). Ten draws are
    tried; if none fits, :func:`center_crop`. Returns the crop and
    (x0, y0, w, h)."""
    if "min_area" in kwargs:
        import warnings
        warnings.warn("`min_area` is deprecated. Please use `area` instead.", DeprecationWarning)
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    low, high = (area, 1.0) if isinstance(area, numeric_types) else area
    h, w, _ = src.shape
    log_low, log_high = np.log(ratio[0]), np.log(ratio[1])
    for _ in range(10):
        target = random.uniform(low, high) * h * w
        aspect = np.exp(random.uniform(log_low, log_high))
        crop_w, crop_h = int(round(np.sqrt(target * aspect))), int(round(np.sqrt(target / aspect)))
        if crop_w <= w and crop_h <= h:
            x0, y0 = random.randint(0, w - crop_w), random.randint(0, h - crop_h)
            return fixed_crop(src, x0, y0, crop_w, crop_h, size, interp), (x0, y0, crop_w, crop_h)
    return center_crop(src, size, interp)


def _rotation_grid(n, h, w, radians, zoom_in, zoom_out):
    """The sampling grid (n, 2, h, w) of ``BilinearSampler`` that rotates
    each of n images of h × w by its angle about the centre, in the
    sampler's coordinates (-1..1 across the image, x first)."""
    half_h, half_w = (h - 1) / 2.0, (w - 1) / 2.0
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float64) - half_h, np.arange(w, dtype=np.float64) - half_w,
                         indexing="ij")
    cos, sin = np.cos(radians)[:, None, None], np.sin(radians)[:, None, None]
    # normalise after rotating, so that the aspect ratio is kept
    gx = (xs * cos - ys * sin) / half_w
    gy = (xs * sin + ys * cos) / half_h
    if zoom_in or zoom_out:
        # extents of the rotated image's bounding box
        turn = np.abs(radians)
        reach_w = np.abs(w * np.cos(turn)) + np.abs(h * np.sin(turn))
        reach_h = np.abs(w * np.sin(turn)) + np.abs(h * np.cos(turn))
        if zoom_out:  # the whole rotated image fits
            scale = np.maximum(reach_w / w, reach_h / h)
        else:  # no border shows
            scale = np.minimum(w / reach_w, h / reach_h)
        gx, gy = gx * scale[:, None, None], gy * scale[:, None, None]
    return np.stack([gx, gy], axis=1).astype(np.float32)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates a float32 image (C, H, W) or batch (N, C, H, W) by
    ``rotation_degrees`` (a number; for a batch also one angle per image)
    counter-clockwise about its centre, keeping its shape, by bilinear
    sampling (outside the image: zeros). ``zoom_in`` enlarges so that no
    border shows; ``zoom_out`` shrinks so that the whole image shows.
    Differentiable with respect to ``src``."""
    nd = _nd()
    if zoom_in and zoom_out:
        raise ValueError("imrotate: `zoom_in` and `zoom_out` cannot be both True")
    if src.dtype != np.float32:
        raise TypeError(f"imrotate: only float32 images are supported, got {np.dtype(src.dtype).name} "
                        "(convert with ToTensor or astype('float32'))")
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, numeric_types):
            raise TypeError("imrotate: a single image takes one angle (a number)")
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError(f"imrotate: takes (C, H, W) or (N, C, H, W) images, got {src.ndim} dimensions")
    n, _, h, w = src.shape
    if isinstance(rotation_degrees, numeric_types):
        degrees = np.full(n, float(rotation_degrees))
    else:
        degrees = np.asarray(rotation_degrees.asnumpy() if hasattr(rotation_degrees, "asnumpy")
                             else rotation_degrees, dtype=np.float64).reshape(-1)
    if len(degrees) != n:
        raise ValueError(f"imrotate: {n} images need {n} angles, got {len(degrees)}")
    grid = nd.array(_rotation_grid(n, h, w, np.deg2rad(degrees), zoom_in, zoom_out), ctx=src.context)
    out = nd.BilinearSampler(src, grid)
    return out[0] if single else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """:func:`imrotate` by an angle drawn uniformly (numpy's generator)
    from ``angle_limits`` (low, high) degrees, one per image of a batch."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)


def __getattr__(name):
    # MXNet 1.9.1 defines the augmenters and ImageIter in mx.image.image;
    # oxnet keeps them in their own modules (``from mxnet.image.image import
    # ImageIter`` finds them here too)
    if name == "ImageIter":
        from .image_iter import ImageIter
        return ImageIter
    from . import augmenters
    if name in augmenters.__all__:
        return getattr(augmenters, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
