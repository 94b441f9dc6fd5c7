"""``mx.io``: data iterators, as in MXNet 1.x.

What exists: ``DataDesc``, ``DataBatch``, ``DataIter``, ``NDArrayIter``,
``ResizeIter``, ``PrefetchingIter``, ``ImageRecordIter`` (decoding and
augmenting in Rust on background threads). Not here yet: ``CSVIter``,
``MNISTIter``, ``LibSVMIter``.
"""

from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter
from .image_record_iter import ImageRecordIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter", "ImageRecordIter"]
