"""``gluon.data.vision`` datasets: MNIST, Fashion-MNIST, CIFAR-10 and
CIFAR-100 read from MXNet's file layout under ``root`` (there is no network
to download from: missing files are an error naming the folder and the
files expected; a ``.tar.gz`` archive of CIFAR found there is unpacked),
and images from RecordIO files, folders and lists."""

import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .... import base, image, ndarray as nd, recordio
from ..dataset import Dataset, RecordFileDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset",
           "ImageListDataset"]


class _FileDataset(Dataset):
    """Samples held in memory: ``_data`` (an NDArray of images) and
    ``_label``, read by ``_get_data`` from files under ``root``."""

    def __init__(self, root, transform):
        self._transform = transform
        self._root = os.path.expanduser(root)
        self._data, self._label = None, None
        self._get_data()

    def _require(self, names, archive=None):
        """The paths of ``names`` under the root; unpacks ``archive`` there
        if it is present and they are not; else an error naming them."""
        paths = [os.path.join(self._root, n) for n in names]
        missing = [n for n, p in zip(names, paths) if not os.path.exists(p)]
        if missing and archive and os.path.exists(os.path.join(self._root, archive)):
            with tarfile.open(os.path.join(self._root, archive)) as tar:
                tar.extractall(self._root, filter="data")
            missing = [n for n, p in zip(names, paths) if not os.path.exists(p)]
        if missing:
            also = f" (or the archive {archive} holding them)" if archive else ""
            raise FileNotFoundError(
                f"{type(self).__name__}: {', '.join(missing)} not found in {self._root}{also}; oxnet does not "
                "download datasets: copy MXNet's files there, or pass root=")
        return paths

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError


class MNIST(_FileDataset):
    """The MNIST digits: 28×28×1 uint8 images and int32 labels, from the
    gzipped IDX files ``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz`` (``t10k-...`` with ``train=False``)."""

    _default = "mnist"

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        root = root or os.path.join(base.data_dir(), "datasets", self._default)
        super().__init__(root, transform)

    def _get_data(self):
        prefix = "train" if self._train else "t10k"
        images, labels = self._require([f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"])
        with gzip.open(labels, "rb") as f:
            magic, n = struct.unpack(">II", f.read(8))
            if magic != 2049:
                raise ValueError(f"{labels}: not an IDX label file (magic {magic}, expected 2049)")
            label = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
        with gzip.open(images, "rb") as f:
            magic, n_img, rows, cols = struct.unpack(">IIII", f.read(16))
            if magic != 2051:
                raise ValueError(f"{images}: not an IDX image file (magic {magic}, expected 2051)")
            data = np.frombuffer(f.read(), dtype=np.uint8)
        if n != len(label) or n_img != n or data.size != n * rows * cols:
            raise ValueError(f"{images} and {labels}: {n_img} images of {rows}x{cols} and {n} labels "
                             f"({len(label)} read) do not match")
        self._data = nd.array(data.reshape(n, rows, cols, 1), dtype=np.uint8)
        self._label = label


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's layout and file names, under ``fashion-mnist``."""

    _default = "fashion-mnist"


class CIFAR10(_FileDataset):
    """CIFAR-10: 32×32×3 uint8 images and int32 labels from the binary
    batches ``data_batch_1.bin`` ... ``data_batch_5.bin`` (``test_batch.bin``
    with ``train=False``), or the archive ``cifar-10-binary.tar.gz``."""

    _archive = "cifar-10-binary.tar.gz"
    _labels = 1

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        root = root or os.path.join(base.data_dir(), "datasets", "cifar10")
        super().__init__(root, transform)

    def _files(self):
        return [f"data_batch_{i}.bin" for i in range(1, 6)] if self._train else ["test_batch.bin"]

    def _label_of(self, rows):
        return rows[:, 0]

    def _get_data(self):
        data, label = [], []
        for path in self._require(self._files(), self._archive):
            raw = np.fromfile(path, dtype=np.uint8)
            width = 3072 + self._labels
            if raw.size % width:
                raise ValueError(f"{path}: {raw.size} bytes is not a whole number of {width}-byte records")
            rows = raw.reshape(-1, width)
            data.append(rows[:, self._labels:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            label.append(self._label_of(rows).astype(np.int32))
        self._data = nd.array(np.concatenate(data), dtype=np.uint8)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100: ``train.bin`` / ``test.bin`` (or ``cifar-100-binary.tar.gz``),
    the coarse labels (20 classes) or with ``fine_label`` the fine ones (100)."""

    _archive = "cifar-100-binary.tar.gz"
    _labels = 2

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        root = root or os.path.join(base.data_dir(), "datasets", "cifar100")
        super().__init__(root, train, transform)

    def _files(self):
        return ["train.bin" if self._train else "test.bin"]

    def _label_of(self, rows):
        return rows[:, 1 if self._fine_label else 0]


class ImageRecordDataset(RecordFileDataset):
    """The images of a RecordIO file of image records: (decoded image,
    label); ``flag`` 1 colour, 0 grey."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        data = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label


class ImageFolderDataset(Dataset):
    """Images in class folders: ``root/<class>/<image>``. ``synsets``
    lists the class names (sorted); the label of an image is its folder's
    position there. Files other than .jpg, .jpeg and .png are skipped with
    a warning."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        if not os.path.isdir(root):
            raise FileNotFoundError(f"ImageFolderDataset: {root} is not a folder")
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support {', '.join(self._exts)}",
                                  stacklevel=3)
                    continue
                self.items.append((os.path.join(path, filename), label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        img = image.imread(path, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(Dataset):
    """Images listed in ``imglist``: an image list file (``index<TAB>
    label(s)<TAB>path`` lines, as im2rec writes) or a list of ``(label,
    path)``; paths under ``root``. A single label is a float, several an
    array."""

    def __init__(self, root=".", imglist=None, flag=1):
        self._root = root
        self._flag = flag
        self.items = []
        if isinstance(imglist, str):
            with open(imglist) as f:
                for number, line in enumerate(f, 1):
                    fields = line.strip().split("\t")
                    if not line.strip():
                        continue
                    if len(fields) < 3:
                        raise ValueError(f"{imglist}, line {number}: expected index<TAB>label(s)<TAB>path")
                    labels = [float(v) for v in fields[1:-1]]
                    self.items.append((fields[-1], labels[0] if len(labels) == 1 else np.array(labels)))
        elif imglist is not None:
            for label, path in imglist:
                if isinstance(label, (list, tuple)):
                    label = label[0] if len(label) == 1 else np.array(label, dtype=np.float32)
                self.items.append((path, float(label) if np.isscalar(label) else label))
        else:
            raise ValueError("ImageListDataset needs imglist: a list file or a list of (label, path)")

    def __getitem__(self, idx):
        path, label = self.items[idx]
        return image.imread(os.path.join(self._root, path), self._flag), label

    def __len__(self):
        return len(self.items)
