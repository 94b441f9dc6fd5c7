"""Shared helpers of oxnet's ONNX support: the lazy ``onnx`` import and dtype maps."""

import numpy as np

from ..base import MXNetError


def require_onnx(func):
    """Import and return the ``onnx`` package, or raise an MXNetError naming ``func``
    that says to ``pip install onnx``."""
    try:
        import onnx  # pylint: disable=import-outside-toplevel
    except ImportError as err:
        raise MXNetError(f"{func} needs the 'onnx' package, which is not installed: "
                         f"pip install onnx ({err})") from None
    return onnx


def np_to_onnx_dtype(onnx, dtype):
    """The ONNX TensorProto element type of a numpy dtype (``onnx`` is the module)."""
    dtype = np.dtype(dtype)
    if hasattr(onnx.helper, "np_dtype_to_tensor_dtype"):
        return onnx.helper.np_dtype_to_tensor_dtype(dtype)
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[dtype]  # older onnx


def onnx_to_np_dtype(onnx, elem_type):
    """The numpy dtype of an ONNX TensorProto element type."""
    if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])
