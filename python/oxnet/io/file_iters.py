"""``mx.io.MNISTIter`` and ``mx.io.CSVIter``: batches from MNIST's IDX
files and from CSV files, with MXNet 1.9.1's arguments and batching.

- ``MNISTIter``: images scaled by 1/256 (MXNet's factor), (batch, 1, rows,
  cols) or flat (batch, rows·cols); shuffled once when created; a last
  batch that is not full is dropped; ``part_index``/``num_parts`` read a
  contiguous part. Reads gzipped files too. The shuffled order differs from
  MXNet's (whose comes from its own generator); the set of images does not.
- ``CSVIter``: each row reshaped to ``data_shape`` (and ``label_shape``,
  zeros without ``label_csv``); with ``round_batch`` the last batch of an
  epoch is filled from the start, its ``pad`` counting those rows, and the
  next epoch starts after them (MXNet's round robin); without it the last
  batch is filled with zeros and ``pad`` counts them (MXNet reports 0).
"""

import gzip
import os
import struct

import numpy as np

from ..base import MXNetError
from .base import BatchSourceIter, DataBatch, DataDesc, DataIter

__all__ = ["MNISTIter", "CSVIter", "LibSVMIter"]


def _nd():
    from .. import ndarray
    return ndarray


def _read_idx(path, magic, what):
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise OSError(f"MNISTIter: cannot read the {what} file {path!r}: {e.strerror or e}") from e
    dims = 3 if magic == 2051 else 1
    if len(raw) < 4 + 4 * dims or struct.unpack(">I", raw[:4])[0] != magic:
        raise ValueError(f"MNISTIter: {path!r} is not an IDX {what} file (magic {magic} expected)")
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"MNISTIter: {path!r} holds {data.size} bytes of data for a shape of {shape}")
    return data.reshape(shape)


class MNISTIter(BatchSourceIter):
    """Batches of MNIST images and labels from the IDX files ``image`` and ``label``."""

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte", batch_size=128,
                 shuffle=True, flat=False, seed=0, silent=False, num_parts=1, part_index=0, data_name="data",
                 label_name="softmax_label", **kwargs):
        super().__init__(batch_size)
        for key in kwargs:
            if key not in ("prefetch_buffer", "ctx", "dtype"):
                raise TypeError(f"MNISTIter got an unexpected argument {key!r}")
        if not 0 <= part_index < num_parts:
            raise ValueError(f"MNISTIter: part_index {part_index} is not a part of {num_parts}")
        images = _read_idx(image, 2051, "image")
        labels = _read_idx(label, 2049, "label")
        if len(images) != len(labels):
            raise ValueError(f"MNISTIter: {len(images)} images in {image!r} but {len(labels)} labels in {label!r}")
        count = len(images)
        start, end = int(count / num_parts * part_index), int(count / num_parts * (part_index + 1))
        images, labels = images[start:end], labels[start:end]
        if shuffle:
            order = np.random.default_rng(seed).permutation(len(images))
            images, labels = images[order], labels[order]
        rows, cols = images.shape[1:]
        data = images.astype(np.float32) / 256.0
        self._data = data.reshape(len(data), rows * cols) if flat else data.reshape(len(data), 1, rows, cols)
        self._label = labels.astype(np.float32)
        self.provide_data = [DataDesc(data_name, (batch_size,) + self._data.shape[1:])]
        self.provide_label = [DataDesc(label_name, (batch_size,))]
        self._cursor = 0
        if not silent:
            print(f"MNISTIter: load {len(data)} images, shuffle={int(bool(shuffle))}, shape={self.provide_data[0].shape}")

    def reset(self):
        self._cursor = 0

    def _make_batch(self):
        if self._cursor + self.batch_size > len(self._data):
            raise StopIteration
        nd = _nd()
        sl = slice(self._cursor, self._cursor + self.batch_size)
        self._cursor += self.batch_size
        return DataBatch([nd.array(self._data[sl])], [nd.array(self._label[sl])], pad=0,
                         provide_data=self.provide_data, provide_label=self.provide_label)


def _read_csv(path, shape, what):
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if not f.startswith("."))
    else:
        files = [path]
    rows = []
    for name in files:
        try:
            # float64 keeps every int32 (and integers to 2**53) exact for dtype='int32'/'int64'
            table = np.loadtxt(name, delimiter=",", dtype=np.float64, ndmin=2)
        except (OSError, ValueError) as e:
            raise ValueError(f"CSVIter: cannot read the {what} file {name!r}: {e}") from e
        rows.append(table)
    table = np.concatenate(rows) if rows else np.zeros((0, int(np.prod(shape))), np.float64)
    if table.shape[1] != int(np.prod(shape)):
        raise ValueError(f"CSVIter: the rows of {path!r} hold {table.shape[1]} values, but {what}_shape "
                         f"{tuple(shape)} needs {int(np.prod(shape))}")
    return table.reshape((len(table),) + tuple(shape))


class CSVIter(BatchSourceIter):
    """Batches from the CSV file (or folder of files) ``data_csv``, each
    row one example of ``data_shape``; labels from ``label_csv`` (zeros
    without it)."""

    def __init__(self, data_csv, data_shape, batch_size, label_csv=None, label_shape=(1,), round_batch=True,
                 data_name="data", label_name="softmax_label", dtype="float32", **kwargs):
        super().__init__(batch_size)
        for key in kwargs:
            if key not in ("prefetch_buffer", "ctx"):
                raise TypeError(f"CSVIter got an unexpected argument {key!r}")
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        self._data = _read_csv(data_csv, data_shape, "data").astype(dtype)
        if label_csv in (None, "NULL"):
            self._label = np.zeros((len(self._data),) + label_shape, dtype=dtype)
        else:
            self._label = _read_csv(label_csv, label_shape, "label").astype(dtype)
            if len(self._label) != len(self._data):
                raise ValueError(f"CSVIter: {len(self._data)} data rows but {len(self._label)} label rows")
        if not len(self._data):
            raise ValueError(f"CSVIter: {data_csv!r} holds no rows")
        self.round_batch = round_batch
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, dtype)]
        label_batch = (batch_size,) if label_shape == (1,) else (batch_size,) + label_shape
        self.provide_label = [DataDesc(label_name, label_batch, dtype)]
        self._start = 0
        self._cursor = 0

    def reset(self):
        """The next epoch; after a round-robin batch it starts after the rows used to fill it."""
        n = len(self._data)
        read = n - self._start
        pad = (self.batch_size - read % self.batch_size) % self.batch_size
        self._start = pad % n if self.round_batch else 0
        self._cursor = self._start

    def _make_batch(self):
        n = len(self._data)
        if self._cursor >= n:
            raise StopIteration
        take = np.arange(self._cursor, self._cursor + self.batch_size)
        self._cursor += self.batch_size
        pad = int(max(0, take[-1] + 1 - n))
        nd = _nd()
        if self.round_batch:
            data, label = self._data[take % n], self._label[take % n]
        else:
            keep = take[take < n]
            data = np.zeros((self.batch_size,) + self._data.shape[1:], self._data.dtype)
            label = np.zeros((self.batch_size,) + self._label.shape[1:], self._label.dtype)
            data[:len(keep)], label[:len(keep)] = self._data[keep], self._label[keep]
        label = label.reshape(self.provide_label[0].shape)
        return DataBatch([nd.array(data, dtype=data.dtype)], [nd.array(label, dtype=label.dtype)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)


class LibSVMIter(DataIter):
    """MXNet's iterator over LibSVM text files, whose batches are sparse CSR
    arrays. oxnet stores arrays densely, so constructing one is an error
    that says so; read the file into dense arrays (e.g. with
    ``sklearn.datasets.load_svmlight_file(...)[0].toarray()``) and use
    ``NDArrayIter``."""

    def __init__(self, *args, **kwargs):  # pylint: disable=super-init-not-called
        del args, kwargs
        raise MXNetError("LibSVMIter is not provided by oxnet: its batches are sparse (CSR) arrays and oxnet "
                         "stores arrays densely; load the file into dense arrays and use NDArrayIter")
