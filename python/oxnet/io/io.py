"""``mx.io.io``: where MXNet 1.9.1 defines its iterators; the same classes
as :mod:`oxnet.io`. ``MXDataIter`` (MXNet's handle on a C++ iterator) does
not exist: oxnet's native iterators are Python classes over Rust."""

from ..base import MXNetError
from . import (CSVIter, DataBatch, DataDesc, DataIter, ImageDetRecordIter, ImageRecordInt8Iter, ImageRecordIter,
               ImageRecordIter_v1, ImageRecordUInt8Iter, ImageRecordUInt8Iter_v1, LibSVMIter, MNISTIter,
               NDArrayIter, PrefetchingIter, ResizeIter)

__all__ = ["DataDesc", "DataBatch", "DataIter", "ResizeIter", "PrefetchingIter", "NDArrayIter", "MXDataIter",
           "CSVIter", "MNISTIter", "LibSVMIter", "ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter",
           "ImageRecordIter_v1", "ImageRecordUInt8Iter_v1", "ImageDetRecordIter"]


class MXDataIter(DataIter):
    """MXNet's wrapper of a C++ iterator handle. oxnet has no such handles:
    constructing one raises an MXNetError; use the iterator classes
    (``mx.io.ImageRecordIter``, ``mx.io.CSVIter``, ...) directly."""

    def __init__(self, handle=None, data_name="data", label_name="softmax_label", **_):
        del handle, data_name, label_name
        raise MXNetError("MXDataIter: oxnet has no C++ iterator handles; use mx.io.ImageRecordIter, CSVIter, "
                         "MNISTIter, ... directly (they are Python classes over Rust)")
