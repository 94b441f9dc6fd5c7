"""``mx.io.ImageDetRecordIter``: batches of images with detection labels
from a RecordIO file, decoded and augmented in Rust on background threads
(``oxnet_io::det_record_iter``, ``oxnet_io::augment::det``).

The arguments are MXNet 1.9.1's (keyword arguments only), with its order
of operations: the shorter side resized (``resize``); colour jitter, each
part with its probability (``max_random_hue``/``random_hue_prob``,
``max_random_saturation``/``random_saturation_prob``,
``max_random_illumination``/``random_illumination_prob`` in OpenCV's HLS,
``max_random_contrast``/``random_contrast_prob`` as a factor); a
horizontal flip (``rand_mirror_prob``); random padding (``rand_pad_prob``,
up to ``max_pad_scale`` times the size, new pixels ``fill_value``); a
random crop (``rand_crop_prob``) from ``num_crop_sampler`` samplers, each
with its scale and aspect ratio ranges and its constraints on some object
(``min/max_crop_overlaps`` IoU, ``min/max_crop_sample_coverages``
intersection over the crop, ``min/max_crop_object_coverages``
intersection over the object) and ``max_crop_trials``, one value for every
sampler or one each; a crop keeps the objects whose centre it holds
(``crop_emit_mode='center'``) or whose covered fraction exceeds
``emit_overlap_thresh`` (``'overlap'``); then the output size
(``resize_mode``: ``'force'`` to ``data_shape``, ``'shrink'`` only if
larger, ``'fit'`` aspect ratio kept; the image sits top-left, zeros
elsewhere) with ``inter_method``; and ``(pixel - mean) / std * scale``
(``mean_r/g/b/a`` subtracted when any is positive, else the mean image
``mean_img`` when given; ``std_r/g/b/a`` divided by where positive).
``mean_img`` is an ``.nd`` file holding one (channels, height, width)
array; when it does not exist, the mean of one pass over the records,
normalised as above without it, is computed and saved there, as MXNet
does.

Labels are MXNet's detection format (``[header_width, object_width, extra
header..., (class, xmin, ymin, xmax, ymax, extra...) per object]``), from
the records or from ``path_imglist`` (``label_width=-1``: every value
between the index and the path). Each label row is ``[channels, height,
width, number of values, values..., label_pad_value...]``: ``4 +
label_pad_width`` values, ``label_pad_width=0`` the widest label (of the
list, or of this part's records). Boxes the augmentation leaves empty are
dropped. Also ``shuffle``, ``seed``, ``preprocess_threads``,
``prefetch_buffer``, ``round_batch``, ``part_index``/``num_parts``,
``data_name``, ``label_name``, and accepted without effect ``verbose``,
``shuffle_chunk_size``, ``shuffle_chunk_seed``, ``ctx``, ``aug_seq``
(``'det_aug_default'`` only) and ``dtype`` (``float32`` only).

Random draws come from a generator per image seeded by ``seed``, the epoch
and the image's position, so a run is repeatable for any number of
threads; the draws are not MXNet's (whose depend on its threads), their
distributions are. Bad values are errors naming the argument; unknown
arguments a TypeError.
"""

import os

import numpy as np

from .base import DataDesc
from .image_record_iter import _mean_image
from .pipeline_iter import PipelineIter
from .. import _oxnet

__all__ = ["ImageDetRecordIter"]

_SAMPLER_TUPLES = {
    "min_crop_scales": (0.0,), "max_crop_scales": (1.0,), "min_crop_aspect_ratios": (1.0,),
    "max_crop_aspect_ratios": (1.0,), "min_crop_overlaps": (0.0,), "max_crop_overlaps": (1.0,),
    "min_crop_sample_coverages": (0.0,), "max_crop_sample_coverages": (1.0,),
    "min_crop_object_coverages": (0.0,), "max_crop_object_coverages": (1.0,), "max_crop_trials": (25,),
}
_FLOATS = {
    "label_pad_value": -1.0, "rand_crop_prob": 0.0, "emit_overlap_thresh": 0.3, "rand_pad_prob": 0.0,
    "max_pad_scale": 1.0, "random_hue_prob": 0.0, "random_saturation_prob": 0.0, "random_illumination_prob": 0.0,
    "max_random_contrast": 0.0, "random_contrast_prob": 0.0, "rand_mirror_prob": 0.0, "mean_r": 0.0,
    "mean_g": 0.0, "mean_b": 0.0, "mean_a": 0.0, "std_r": 0.0, "std_g": 0.0, "std_b": 0.0, "std_a": 0.0,
    "scale": 1.0,
}
_INTS = {
    "label_width": -1, "label_pad_width": 0, "seed": 0, "preprocess_threads": 4, "prefetch_buffer": 4,
    "part_index": 0, "num_parts": 1, "resize": -1, "num_crop_sampler": 1, "max_random_hue": 0,
    "max_random_saturation": 0, "max_random_illumination": 0, "fill_value": 127, "inter_method": 1,
}
_BOOLS = {"shuffle": False, "round_batch": True}
_STRINGS = {"path_imglist": "", "crop_emit_mode": "center", "resize_mode": "force"}
_ACCEPTED = {"verbose", "shuffle_chunk_size", "shuffle_chunk_seed", "ctx"}


def _bad(name, msg):
    return ValueError(f"ImageDetRecordIter: {name} {msg}")


def _int(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"ImageDetRecordIter: {name} must be a whole number, got {value!r}")
    if float(value) != int(value):
        raise _bad(name, f"must be a whole number, got {value!r}")
    return int(value)


def _float(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"ImageDetRecordIter: {name} must be a number, got {value!r}") from None


def _tuple(name, value):
    """A per-sampler tuple: one number or a sequence of them."""
    values = [value] if np.isscalar(value) else list(value)
    if not values:
        raise _bad(name, "is empty")
    if name == "max_crop_trials":
        return [_int(name, v) for v in values]
    return [_float(name, v) for v in values]


def _options(kwargs):
    """The pipeline's options from the keyword arguments, checked and typed."""
    options = {}
    for key, value in kwargs.items():
        if key in _FLOATS:
            options[key] = _float(key, value)
        elif key in _INTS:
            options[key] = _int(key, value)
        elif key in _BOOLS:
            options[key] = bool(value)
        elif key in _SAMPLER_TUPLES:
            options[key] = _tuple(key, value)
        elif key in _STRINGS:
            options[key] = os.fspath(value) if value else ""
        elif key == "aug_seq":
            if value != "det_aug_default":
                raise _bad("aug_seq", f"only 'det_aug_default' exists, got {value!r}")
        elif key == "dtype":
            if value is not None and np.dtype(value) != np.float32:
                raise _bad("dtype", f"must be float32, got {value!r}")
        elif key == "mean_img":
            options[key] = os.fspath(value) if value else ""
        elif key not in _ACCEPTED:
            raise TypeError(f"ImageDetRecordIter got an unexpected argument {key!r}")
    return options


class ImageDetRecordIter(PipelineIter):
    """Batches (``DataBatch``) of ``batch_size`` images of ``data_shape``
    (c, h, w; c 1, 3 or 4) with their detection labels from the RecordIO
    file ``path_imgrec``, augmented by MXNet's detection augmenter as the
    module documentation says, RGB, channels first. ``provide_label`` is
    ``(batch_size, 4 + label_pad_width)`` as in MXNet. With ``round_batch``
    the last batch of an epoch is filled from the start and its ``pad``
    says how many; without it the rest is zeros."""

    def __init__(self, *args, path_imgrec="./data/imgrec.rec", data_shape=None, batch_size=None,
                 data_name="data", label_name="softmax_label", **kwargs):
        if args:
            raise TypeError("ImageDetRecordIter can only accept keyword arguments")
        if data_shape is None or batch_size is None:
            raise TypeError("ImageDetRecordIter needs data_shape and batch_size")
        batch_size = _int("batch_size", batch_size)
        if batch_size <= 0:
            raise _bad("batch_size", f"must be positive, got {batch_size}")
        data_shape = tuple(_int("data_shape", d) for d in data_shape)
        if len(data_shape) != 3 or min(data_shape) <= 0:
            raise _bad("data_shape", f"must be (channels, height, width), got {data_shape}")
        super().__init__(batch_size)
        options = _options(kwargs)
        for key in ("preprocess_threads", "prefetch_buffer"):
            if options.get(key, 1) < 1:
                raise _bad(key, f"must be positive, got {options[key]}")
        for key in ("part_index", "num_parts", "seed"):
            if options.get(key, 0) < 0:
                raise _bad(key, f"must be non-negative, got {options[key]}")
        path_imgrec = os.fspath(path_imgrec)
        mean_img = options.pop("mean_img", "")
        if mean_img:
            make = lambda: _oxnet.DetRecordPipeline(path_imgrec, batch_size, data_shape, options)  # noqa: E731
            mean = _mean_image(make, mean_img, data_shape, "ImageDetRecordIter")
            options["mean_img"] = mean.ravel().tolist()
        self._pipeline = _oxnet.DetRecordPipeline(path_imgrec, batch_size, data_shape, options)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, dtype=np.float32)]
        self.provide_label = [DataDesc(label_name, (batch_size, self._pipeline.label_width), dtype=np.float32)]
        self._batch = None
