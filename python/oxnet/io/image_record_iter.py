"""``mx.io.ImageRecordIter``: batches of images from a RecordIO file,
decoded and augmented in Rust on background threads
(``oxnet_io::image_record_iter``) while the model trains.

The arguments are MXNet 1.9.1's. Supported: ``path_imgrec``,
``data_shape`` (c, h, w; c 1 or 3), ``batch_size``, ``label_width``,
``shuffle``, ``seed``, ``preprocess_threads``, ``prefetch_buffer``,
``round_batch``, ``resize``, ``rand_crop``, ``rand_mirror``, ``mirror``,
``mean_r/g/b``, ``std_r/g/b``, ``scale``, ``inter_method``,
``part_index``/``num_parts``, ``data_name``, ``label_name``,
``path_imgidx`` (accepted; record offsets are found by scanning the
headers) and ``verbose``. An augmentation oxnet does not perform yet
(``max_rotate_angle``, ``random_resized_crop``, colour jitters, ...)
given a value other than its default is an error naming it, rather than
silently not applied.
"""

from .base import DataBatch, DataDesc, DataIter
from .. import _oxnet

__all__ = ["ImageRecordIter"]

# MXNet's augmentations not performed here yet, with their defaults
_NOT_YET = {
    "path_imglist": "", "mean_img": "", "mean_a": 0.0, "std_a": 1.0, "max_rotate_angle": 0, "max_aspect_ratio": 0.0,
    "min_aspect_ratio": None, "max_shear_ratio": 0.0, "max_crop_size": -1, "min_crop_size": -1,
    "max_random_scale": 1.0, "min_random_scale": 1.0, "max_random_area": 1.0, "min_random_area": 1.0,
    "max_img_size": 1e10, "min_img_size": 0.0, "brightness": 0.0, "contrast": 0.0, "saturation": 0.0,
    "pca_noise": 0.0, "random_h": 0, "random_s": 0, "random_l": 0, "rotate": -1, "fill_value": 255, "pad": 0,
    "random_resized_crop": False, "max_random_contrast": 0.0, "max_random_illumination": 0.0,
}
_ACCEPTED = {"path_imgidx", "verbose", "shuffle_chunk_size", "shuffle_chunk_seed", "ctx", "dtype"}


class ImageRecordIter(DataIter):
    """Batches (``DataBatch``) of ``batch_size`` images of ``data_shape``
    (c, h, w) from the RecordIO file ``path_imgrec``: each decoded, its
    shorter side resized to ``resize``, enlarged if smaller than the
    output, cropped (at random with ``rand_crop``, else centrally), mirrored
    (``rand_mirror``: half at random; ``mirror``: all), then
    ``(pixel - mean) * scale / std`` per channel, RGB, channels first. With
    ``round_batch`` the last batch of an epoch is filled from the start and
    its ``pad`` says how many; without it the rest is zeros (and ``pad``
    still says how many, where MXNet says 0)."""

    def __init__(self, path_imgrec, data_shape, batch_size, label_width=1, shuffle=False, seed=0,
                 preprocess_threads=4, prefetch_buffer=4, round_batch=True, resize=-1, rand_crop=False,
                 rand_mirror=False, mirror=False, mean_r=0.0, mean_g=0.0, mean_b=0.0, std_r=1.0, std_g=1.0,
                 std_b=1.0, scale=1.0, inter_method=1, part_index=0, num_parts=1, data_name="data",
                 label_name="softmax_label", **kwargs):
        super().__init__(batch_size)
        for key, value in kwargs.items():
            if key in _NOT_YET:
                if value != _NOT_YET[key]:
                    raise NotImplementedError(f"ImageRecordIter: {key}={value!r} is not supported by oxnet yet "
                                              f"(only its default {_NOT_YET[key]!r})")
            elif key not in _ACCEPTED:
                raise TypeError(f"ImageRecordIter got an unexpected argument {key!r}")
        if kwargs.get("dtype", "float32") != "float32":
            raise NotImplementedError("ImageRecordIter: only dtype float32 is supported by oxnet yet")
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3:
            raise ValueError(f"ImageRecordIter: data_shape must be (channels, height, width), got {data_shape}")
        self._pipeline = _oxnet.ImageRecordPipeline(
            str(path_imgrec), int(batch_size), data_shape, int(label_width), bool(shuffle), int(seed),
            max(1, int(preprocess_threads)), max(1, int(prefetch_buffer)), bool(round_batch), max(0, int(resize)),
            bool(rand_crop), bool(rand_mirror), bool(mirror), [float(mean_r), float(mean_g), float(mean_b)],
            [float(std_r), float(std_g), float(std_b)], float(scale), int(inter_method), int(part_index),
            int(num_parts))
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape)]
        self.provide_label = [DataDesc(label_name, label_shape)]
        self._batch = None

    def reset(self):
        """Starts the next epoch (reshuffled with ``shuffle``)."""
        self._pipeline.reset()

    def next(self):
        """The next batch; StopIteration at the end of the epoch."""
        got = self._pipeline.next()
        if got is None:
            raise StopIteration
        data, label, pad = got
        return DataBatch(data=[data], label=[label], pad=pad, provide_data=self.provide_data,
                         provide_label=self.provide_label)

    def iter_next(self):
        try:
            self._batch = self.next()
        except StopIteration:
            self._batch = None
            return False
        return True

    def getdata(self):
        return self._batch.data

    def getlabel(self):
        return self._batch.label

    def getpad(self):
        return self._batch.pad

    def getindex(self):
        return None
