"""``mx.io.ImageRecordIter``: batches of images from a RecordIO file,
decoded and augmented in Rust on background threads
(``oxnet_io::image_record_iter``, ``oxnet_io::augment``) while the model
trains.

The arguments are MXNet 1.9.1's, with its order of operations: the shorter
side resized (``resize``); an affine warp about the centre when asked for
(``max_rotate_angle`` or a fixed ``rotate``, ``max_shear_ratio``,
``min_random_scale``/``max_random_scale``, ``min_aspect_ratio``/
``max_aspect_ratio``, ``min_img_size``/``max_img_size``; new pixels are
``fill_value``; ``rotate_list``, angles of which each image takes one drawn
uniformly, overrides both angles); ``pad`` pixels of ``fill_value`` on
every side; a crop
(``random_resized_crop`` with ``min_random_area``/``max_random_area`` and
the aspect ratio range; or a square of ``min_crop_size`` to
``max_crop_size`` resized to the output; or the output's size, random with
``rand_crop``, else central); colour jitter (``brightness``, ``contrast``,
``saturation``, in a random order), HSL jitter (``random_h``/``random_s``/
``random_l``) and PCA lighting noise (``pca_noise``); mirroring
(``rand_mirror``, ``mirror``); then the output type: ``dtype='float32'``
(default) ``(pixel - mean) * scale * (1 ± max_random_contrast) / std +
(± max_random_illumination) * scale / std`` with ``mean_r/g/b/a`` and
``std_r/g/b/a`` or a mean image ``mean_img`` (an ``.nd`` file; when it does
not exist, the mean of one pass is computed and saved there, as MXNet
does); ``'uint8'`` the pixels as they are; ``'int8'`` the pixels less the
rounded mean, saturated. ``path_imglist`` (a ``.lst``) replaces the
records' labels with the list's, by image index. Also ``path_imgrec``,
``data_shape`` (c, h, w; c 1, 3 or 4), ``batch_size``, ``label_width``,
``shuffle``, ``seed``, ``preprocess_threads``, ``prefetch_buffer``,
``round_batch``, ``inter_method`` (OpenCV's numbers; resizes and warps
come out bit for bit as MXNet's OpenCV 3.4.2), ``part_index``/
``num_parts``, ``data_name``, ``label_name``, and accepted without effect
``path_imgidx`` (record offsets are found by scanning the headers),
``verbose``, ``shuffle_chunk_size``, ``shuffle_chunk_seed`` and ``ctx``.

Random draws come from a generator per image seeded by ``seed``, the epoch
and the image's position, so a run is repeatable for any number of
threads; the draws are not MXNet's (whose depend on its threads), but
their distributions are. Bad values (a negative range, a minimum above
its maximum, an unknown ``dtype``) are errors naming the argument.
"""

import os

import numpy as np

from .base import DataDesc
from .pipeline_iter import PipelineIter
from .. import _oxnet

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1"]

# MXNet's options passed on to the Rust pipeline by name, with their defaults
_OPTIONS = {
    "path_imglist": "", "mean_img": "", "max_rotate_angle": 0, "max_aspect_ratio": 0.0, "min_aspect_ratio": None,
    "max_shear_ratio": 0.0, "max_crop_size": -1, "min_crop_size": -1, "max_random_scale": 1.0,
    "min_random_scale": 1.0, "max_random_area": 1.0, "min_random_area": 1.0, "max_img_size": 1e10,
    "min_img_size": 0.0, "brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "pca_noise": 0.0, "random_h": 0,
    "random_s": 0, "random_l": 0, "rotate": -1, "fill_value": 255, "pad": 0, "random_resized_crop": False,
    "max_random_contrast": 0.0, "max_random_illumination": 0.0, "dtype": "float32", "rotate_list": None,
}
_INTS = {"max_rotate_angle", "max_crop_size", "min_crop_size", "random_h", "random_s", "random_l", "rotate",
         "fill_value", "pad"}
_ACCEPTED = {"path_imgidx", "verbose", "shuffle_chunk_size", "shuffle_chunk_seed", "ctx"}


def _options(kwargs):
    """The pipeline's options from the keyword arguments, checked and typed."""
    options = dict(_OPTIONS)
    for key, value in kwargs.items():
        if key in _OPTIONS:
            options[key] = value
        elif key not in _ACCEPTED:
            raise TypeError(f"ImageRecordIter got an unexpected argument {key!r}")
    for key in _INTS:
        value = options[key]
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"ImageRecordIter: {key} must be a whole number, got {value!r}")
        options[key] = int(value)
    if options["pad"] < 0:
        raise ValueError(f"ImageRecordIter: pad must be non-negative, got {options['pad']}")
    dtype = options["dtype"]
    options["dtype"] = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    options["random_resized_crop"] = bool(options["random_resized_crop"])
    for key in ("path_imglist", "mean_img"):
        options[key] = os.fspath(options[key]) if options[key] else ""
    options["rotate_list"] = _rotate_list(options["rotate_list"])
    return options


def _rotate_list(value):
    """``rotate_list`` as a list of whole degrees: a sequence of numbers, or
    MXNet's string of comma-separated integers (``"0,90,180"``). MXNet reads
    the string of a Python list, ``"[90, 180]"``, with ``atoi`` on each piece
    and so takes ``[0, 180]``; the angles here are the numbers as written."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        text = value.decode() if isinstance(value, bytes) else value
        pieces = [p.strip().strip("[]() ") for p in text.split(",")]
        if pieces == [""]:
            return []
        try:
            return [int(p) for p in pieces]
        except ValueError:
            raise ValueError(f"ImageRecordIter: rotate_list must be whole degrees separated by commas, got {value!r}") \
                from None
    values = [value] if np.isscalar(value) else list(value)
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or float(v) != int(v):
            raise ValueError(f"ImageRecordIter: rotate_list must hold whole degrees, got {value!r}")
        out.append(int(v))
    return out


def _mean_image(make, path, shape, name="ImageRecordIter"):
    """The mean image of ``path`` (an ``.nd`` file with one array), or when
    the file does not exist the mean of one pass of ``make()``'s pipeline
    (its ``mean_image()``), saved there under the name ``mean_img`` as MXNet
    does; ``name`` is the iterator's, for errors."""
    from .. import ndarray as nd
    if os.path.exists(path):
        loaded = nd.load(path)
        arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
        if len(arrays) != 1:
            raise ValueError(f"{name}: mean_img `{path}` holds {len(arrays)} arrays, not one")
        mean = arrays[0].asnumpy().astype(np.float32)
        if mean.shape != tuple(shape):
            raise ValueError(f"{name}: mean_img `{path}` has shape {mean.shape}, the output {tuple(shape)}")
        return mean
    mean = np.asarray(make().mean_image(), dtype=np.float32).reshape(shape)
    nd.save(path, {"mean_img": nd.array(mean, dtype="float32")})
    return mean


class ImageRecordIter(PipelineIter):
    """Batches (``DataBatch``) of ``batch_size`` images of ``data_shape``
    (c, h, w) from the RecordIO file ``path_imgrec``, each decoded,
    augmented by MXNet's default augmenter and normalised as the module
    documentation says, RGB, channels first. With ``round_batch`` the last
    batch of an epoch is filled from the start and its ``pad`` says how
    many; without it the rest is zeros (and ``pad`` still says how many,
    where MXNet says 0)."""

    def __init__(self, path_imgrec, data_shape, batch_size, label_width=1, shuffle=False, seed=0,
                 preprocess_threads=4, prefetch_buffer=4, round_batch=True, resize=-1, rand_crop=False,
                 rand_mirror=False, mirror=False, mean_r=0.0, mean_g=0.0, mean_b=0.0, std_r=1.0, std_g=1.0,
                 std_b=1.0, scale=1.0, inter_method=1, part_index=0, num_parts=1, data_name="data",
                 label_name="softmax_label", mean_a=0.0, std_a=1.0, **kwargs):
        super().__init__(batch_size)
        options = _options(kwargs)
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3:
            raise ValueError(f"ImageRecordIter: data_shape must be (channels, height, width), got {data_shape}")
        mean_img = options.pop("mean_img")
        args = (str(path_imgrec), int(batch_size), data_shape, int(label_width), bool(shuffle), int(seed),
                max(1, int(preprocess_threads)), max(1, int(prefetch_buffer)), bool(round_batch),
                max(0, int(resize)), bool(rand_crop), bool(rand_mirror), bool(mirror),
                [float(mean_r), float(mean_g), float(mean_b), float(mean_a)],
                [float(std_r), float(std_g), float(std_b), float(std_a)], float(scale), int(inter_method),
                int(part_index), int(num_parts))
        # MXNet reads (or makes) no mean image for uint8 output
        if mean_img and options["dtype"] != "uint8":
            make = lambda: _oxnet.ImageRecordPipeline(*args, dict(options, dtype="float32"))  # noqa: E731
            options["mean_img"] = _mean_image(make, mean_img, data_shape).ravel().tolist()
        self._pipeline = _oxnet.ImageRecordPipeline(*args, options)
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, dtype=np.dtype(options["dtype"]).type)]
        self.provide_label = [DataDesc(label_name, label_shape)]
        self._batch = None


def ImageRecordUInt8Iter(*args, **kwargs):  # pylint: disable=invalid-name
    """MXNet's ``ImageRecordUInt8Iter``: ``ImageRecordIter`` giving uint8 pixels (``dtype='uint8'``)."""
    kwargs["dtype"] = "uint8"
    return ImageRecordIter(*args, **kwargs)


def ImageRecordInt8Iter(*args, **kwargs):  # pylint: disable=invalid-name
    """MXNet's ``ImageRecordInt8Iter``: ``ImageRecordIter`` giving int8 pixels (``dtype='int8'``)."""
    kwargs["dtype"] = "int8"
    return ImageRecordIter(*args, **kwargs)


# MXNet's first implementation under its old names: the same iterator here
ImageRecordIter_v1 = ImageRecordIter
ImageRecordUInt8Iter_v1 = ImageRecordUInt8Iter
