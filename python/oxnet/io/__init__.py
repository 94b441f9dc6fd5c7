"""``mx.io``: data iterators, as in MXNet 1.x.

What exists: ``DataDesc``, ``DataBatch``, ``DataIter``, ``NDArrayIter``,
``ResizeIter``, ``PrefetchingIter``. The iterators MXNet implements in C++
(``CSVIter``, ``ImageRecordIter``, ``MNISTIter``, ``LibSVMIter``, ...) are
not here yet.
"""

from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter"]
