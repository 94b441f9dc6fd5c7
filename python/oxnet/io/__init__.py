"""``mx.io``: data iterators, as in MXNet 1.x.

What exists: ``DataDesc``, ``DataBatch``, ``DataIter``, ``NDArrayIter``,
``ResizeIter``, ``PrefetchingIter``, ``ImageRecordIter`` (decoding and
augmenting in Rust on background threads), ``MNISTIter``, ``CSVIter``.
Not here: ``LibSVMIter`` (sparse storage).
"""

from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter
from .image_record_iter import ImageRecordIter
from .file_iters import CSVIter, MNISTIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter", "ImageRecordIter",
           "MNISTIter", "CSVIter"]
