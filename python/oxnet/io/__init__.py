"""``mx.io``: data iterators, as in MXNet 1.x.

What exists: ``DataDesc``, ``DataBatch``, ``DataIter``, ``NDArrayIter``,
``ResizeIter``, ``PrefetchingIter``, ``ImageRecordIter`` and
``ImageDetRecordIter`` (decoding and augmenting in Rust on background
threads), ``MNISTIter``, ``CSVIter``.
``LibSVMIter`` exists but raises at construction: its batches are sparse
CSR arrays, and oxnet stores arrays densely.
"""

from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter
from .image_record_iter import (ImageRecordInt8Iter, ImageRecordIter, ImageRecordIter_v1, ImageRecordUInt8Iter,
                                ImageRecordUInt8Iter_v1)
from .det_record_iter import ImageDetRecordIter
from .file_iters import CSVIter, LibSVMIter, MNISTIter
from . import io, utils  # noqa: E402  (MXNet's module paths mx.io.io, mx.io.utils)
from .io import MXDataIter  # noqa: E402

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter", "ImageRecordIter",
           "MNISTIter", "CSVIter", "LibSVMIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1", "ImageDetRecordIter"]
