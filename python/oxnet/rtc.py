"""CUDA kernels written in Python strings, compiled at run time with NVRTC
and launched on oxnet's GPU arrays (MXNet's ``mx.rtc``).

    source = r'''
    extern "C" __global__ void axpy(const float *x, float *y, float alpha) {
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        y[i] += alpha * x[i];
    }
    '''
    module = mx.rtc.CudaModule(source)
    func = module.get_kernel("axpy", "const float *x, float *y, float alpha")
    x = mx.nd.ones((10,), ctx=mx.gpu(0))
    y = mx.nd.zeros((10,), ctx=mx.gpu(0))
    func.launch([x, y, 3.0], mx.gpu(0), (1, 1, 1), (10, 1, 1))

Templated kernels are named through ``exports`` (``exports=['axpy<float>']``,
then ``get_kernel('axpy<float>', ...)``). Kernels run on the device's oxnet
stream, in order with every other operation on it.

Differences from MXNet, on purpose: the source is checked when the module is
created, also on machines without a GPU (NVRTC needs none), and its
errors carry NVRTC's log; the module is compiled to machine code for each
device's own architecture on its first launch there, so ``-arch`` options are
refused; a launch checks each array's dtype and device against the
signature (MXNet passed a wrong array through) and says which argument is wrong.
"""

import re
import struct

import numpy as np

from . import _oxnet
from .base import MXNetError, string_types
from .context import Context, _preload_cuda_libraries

__all__ = ["CudaModule", "CudaKernel"]

# C++ parameter types and their numpy dtypes (MXNet's list)
_DTYPE_CPP_TO_NP = {
    "float": np.float32,
    "double": np.float64,
    "__half": np.float16,
    "uint8_t": np.uint8,
    "int": np.int32,
    "int32_t": np.int32,
    "int8_t": np.int8,
    "char": np.int8,
    "int64_t": np.int64,
}

_PARAMETER = re.compile(r"^(const)?\s?([\w_]+)\s?(\*)?\s?([\w_]+)?$")


class CudaModule:
    """CUDA C++ ``source`` compiled with NVRTC.

    Parameters
    ----------
    source : str
        The complete source.
    options : str or tuple of str
        NVRTC flags, such as ``-DN=4`` or ``-I/usr/local/cuda/include``.
    exports : str or tuple of str
        C++ name expressions of kernels to find by those names (templated or
        overloaded kernels, ``axpy<float>``); ``extern "C"`` kernels need none.
    """

    def __init__(self, source, options=(), exports=()):
        if isinstance(options, string_types):
            options = (options,)
        if isinstance(exports, string_types):
            exports = (exports,)
        self._exports = tuple(exports)
        _preload_cuda_libraries()
        self.handle = _oxnet.CudaModuleHandle(source, list(options), list(self._exports))

    def get_kernel(self, name, signature):
        """The kernel ``name`` with parameters ``signature``: the parameter
        list as in C, such as ``const float *x, double *y, int alpha`` (names
        optional). ``*`` marks an array, passed as an NDArray of that dtype."""
        is_array, dtypes = [], []
        for arg in re.sub(r"\s+", " ", signature).split(","):
            text = " ".join(arg.split())
            match = _PARAMETER.match(text)
            if not match or match.group(2) == "const":
                raise ValueError(f'Invalid function prototype "{text}". Must be in the form of "(const) type (*) (name)"')
            if match.group(2) not in _DTYPE_CPP_TO_NP:
                raise TypeError(f"Unsupported kernel argument type {text}. Supported types are: "
                                f"{','.join(_DTYPE_CPP_TO_NP)}.")
            is_array.append(bool(match.group(3)))
            dtypes.append(np.dtype(_DTYPE_CPP_TO_NP[match.group(2)]))
        return CudaKernel(self, name, is_array, dtypes)


class CudaKernel:
    """A kernel of a :class:`CudaModule`; made by ``CudaModule.get_kernel``."""

    def __init__(self, module, name, is_ndarray, dtypes):
        self._module = module
        self._name = name
        self._is_ndarray = list(is_ndarray)
        self._dtypes = list(dtypes)

    def launch(self, args, ctx, grid_dims, block_dims, shared_mem=0):
        """Launches the kernel on GPU context ``ctx`` with ``args`` (NDArrays
        for array parameters, numbers for the others), a grid of
        ``grid_dims`` blocks of ``block_dims`` threads (3 integers each) and
        ``shared_mem`` bytes of dynamic shared memory per block."""
        from .ndarray import NDArray

        ctx = ctx if isinstance(ctx, Context) else Context(ctx)
        if ctx.device_type != "gpu":
            raise MXNetError(f"kernel `{self._name}`: CUDA kernels run on a GPU context, not {ctx}")
        if len(args) != len(self._dtypes):
            raise ValueError(f"kernel `{self._name}` takes {len(self._dtypes)} arguments, {len(args)} were given")
        params = []
        for i, (arg, is_array, dtype) in enumerate(zip(args, self._is_ndarray, self._dtypes)):
            if is_array:
                if not isinstance(arg, NDArray):
                    raise TypeError(f"kernel `{self._name}`: argument {i} is an array ({dtype}*): "
                                    f"expected an NDArray, got {type(arg).__name__}")
                if np.dtype(arg.dtype) != dtype:
                    raise TypeError(f"kernel `{self._name}`: argument {i} is {dtype}*, the array is {np.dtype(arg.dtype)}")
                if arg.context != ctx:
                    raise MXNetError(f"kernel `{self._name}`: argument {i} is on {arg.context}, the launch on {ctx}")
                params.append(struct.pack("<Q", arg.__cuda_array_interface__["data"][0]))
            else:
                if isinstance(arg, NDArray):
                    raise TypeError(f"kernel `{self._name}`: argument {i} is a {dtype} number, got an NDArray")
                params.append(np.asarray(arg, dtype=dtype).tobytes())
        dims = []
        for what, d in (("grid_dims", grid_dims), ("block_dims", block_dims)):
            d = tuple(int(v) for v in d)
            if len(d) != 3:
                raise ValueError(f"{what} must hold 3 integers, got {d}")
            dims.append(list(d))
        self._module.handle.launch(self._name, ctx.device_id, params, dims[0], dims[1], int(shared_mem))
