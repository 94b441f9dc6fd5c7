"""``mx.image.ImageIter``: batches of augmented images from a RecordIO
file (with or without its index), an image list file or a Python list,
with MXNet 1.9.1's arguments, order of reading, labels and
``last_batch_handle`` (``pad``, ``discard``, ``roll_over``)."""

import logging
import os
import random

from .. import io, recordio
from ..base import numeric_types
from .augmenters import CreateAugmenter
from .image import imdecode

__all__ = ["ImageIter"]


def _nd():
    from .. import ndarray
    return ndarray


class ImageIter(io.DataIter):
    """Batches of ``batch_size`` images of ``data_shape`` (3, h, w) and
    their labels, read from ``path_imgrec`` (with ``path_imgidx`` for
    shuffling and partitions), ``path_imglist`` (``index<TAB>labels...<TAB>
    path`` lines, files under ``path_root``) or ``imglist`` (a list of
    ``[label(s)..., path]``). Each image is decoded, run through
    ``aug_list`` (``CreateAugmenter(data_shape, **kwargs)`` by default) and
    laid out channels first. ``part_index``/``num_parts`` read one part of
    the indexed images (distributed training)."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None, path_imglist=None, path_root=None,
                 path_imgidx=None, shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="softmax_label", dtype="float32", last_batch_handle="pad", **kwargs):
        super().__init__(batch_size)
        assert path_imgrec or path_imglist or isinstance(imglist, list), \
            "ImageIter needs path_imgrec, path_imglist or imglist"
        assert dtype in ["int32", "float32", "int64", "float64"], dtype + " label not supported"
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(f"last_batch_handle must be pad, discard or roll_over, not {last_batch_handle!r}")
        nd = _nd()
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        keys = None
        self.imglist = None
        if path_imglist:
            self.imglist, keys = {}, []
            with open(path_imglist) as f:
                for number, line in enumerate(f, 1):
                    fields = line.strip().split("\t")
                    if len(fields) < 3:
                        raise ValueError(f"{path_imglist}, line {number}: expected index<TAB>label(s)<TAB>path, "
                                         f"got {line!r}")
                    key = int(fields[0])
                    self.imglist[key] = (nd.array(fields[1:-1], dtype=dtype), fields[-1])
                    keys.append(key)
        elif isinstance(imglist, list):
            self.imglist, keys = {}, []
            for number, item in enumerate(imglist, 1):
                if len(item) > 2:
                    label = nd.array(item[:-1], dtype=dtype)
                elif isinstance(item[0], numeric_types):
                    label = nd.array([item[0]], dtype=dtype)
                else:
                    label = nd.array(item[0], dtype=dtype)
                self.imglist[str(number)] = (label, item[-1])
                keys.append(str(number))
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [(label_name, label_shape)]
        self.batch_size, self.data_shape, self.label_width = batch_size, tuple(data_shape), label_width
        self.shuffle = shuffle
        # the order of reading: the list's keys, the index's keys, or the file's order (None)
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            assert self.imgidx is not None, "shuffling or partitioning a RecordIO file needs its path_imgidx"
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            assert part_index < num_parts
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part:(part_index + 1) * per_part]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self.cur = 0
        self._allow_read = True
        self._cache = None
        self.reset()

    def reset(self):
        """Starts the next epoch (reshuffled when ``shuffle``); with
        ``roll_over``, the images left from the last one start the first batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        # images rolled over: the reading already went back to the start
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Like :meth:`reset`, dropping images rolled over."""
        self._cache = None
        self.reset()

    def next_sample(self):
        """The next (label, encoded image bytes); StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        key = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(key))
            return (header.label if self.imglist is None else self.imglist[key][0]), img
        label, fname = self.imglist[key]
        return label, self.read_image(fname)

    def _batchify(self, batch_data, batch_label, start=0):
        filled = start
        try:
            while filled < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                data = self.augmentation_transform(data)
                batch_data[filled] = self.postprocess_data(data)
                batch_label[filled] = label
                filled += 1
        except StopIteration:
            if not filled:
                raise
        return filled

    def _new_label_batch(self):
        """The array a batch's labels are written into."""
        return _nd().empty(self.provide_label[0][1])

    def next(self):
        """The next :class:`mx.io.DataBatch` (``pad`` counts the images
        repeated from the epoch's start to fill the last batch)."""
        nd = _nd()
        if self._cache is not None:
            batch_data, batch_label, filled = self._cache
        else:
            c, h, w = self.data_shape
            batch_data = nd.zeros((self.batch_size, c, h, w))
            batch_label = self._new_label_batch()
            filled = self._batchify(batch_data, batch_label)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (batch_data, batch_label, filled)
                raise StopIteration
            self._batchify(batch_data, batch_label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return io.DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """``data_shape`` must be (3, height, width)."""
        if len(data_shape) != 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if data_shape[0] != 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raises RuntimeError for an image with no pixels."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def _where(self):
        """Which image was read last, for error messages."""
        if self.num_image:
            position = (self.cur % self.num_image) - 1
            key = self.seq[position] if self.seq is not None else position
        else:
            key = "?"
        if self.imglist is not None and key in self.imglist:
            return "filename: {}".format(self.imglist[key][1])
        return "index: {}".format(key)

    def imdecode(self, s):
        """Decodes the bytes ``s``; a failure names the image."""
        try:
            return imdecode(s)
        except Exception as e:
            raise RuntimeError("Broken image {}, {}".format(self._where(), e)) from e

    def read_image(self, fname):
        """The bytes of image file ``fname`` under ``path_root``."""
        with open(os.path.join(self.path_root or "", fname), "rb") as f:
            return f.read()

    def augmentation_transform(self, data):
        """``data`` through every augmenter."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(h, w, c) to (c, h, w)."""
        return _nd().transpose(datum, axes=(2, 0, 1))
