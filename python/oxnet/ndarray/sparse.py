"""``mx.nd.sparse``: MXNet's CSR and row-sparse arrays. oxnet stores every
array densely, so this module only names them: constructing a sparse array
or calling a sparse function raises an MXNetError saying so (``isinstance``
checks against the classes work and are always false)."""

from .._absent import NotProvidedError, not_provided

REASON = ("oxnet stores every array densely (no 'csr' or 'row_sparse' storage); use dense NDArrays "
          "(mx.nd.array, mx.nd.dot, tostype('default') is the identity) or scipy.sparse on the host")

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray"]


class BaseSparseNDArray:
    """MXNet's base class of sparse arrays; cannot be constructed in oxnet."""

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise NotProvidedError(f"{type(self).__name__}: not offered by oxnet. {REASON}")


class CSRNDArray(BaseSparseNDArray):
    """A compressed-sparse-row array in MXNet; cannot be constructed in oxnet."""


class RowSparseNDArray(BaseSparseNDArray):
    """A row-sparse array in MXNet; cannot be constructed in oxnet."""


__getattr__ = not_provided(__name__, REASON)
