"""Devices: ``Context``, ``cpu()`` and ``gpu()`` (the reference's names).

A ``Context`` names a device. oxnet's GPU backend loads CUDA at run time:
on a machine without a CUDA driver ``num_gpus()`` is 0 and creating an array
on ``gpu(i)`` raises an error that says why.
"""

import ctypes
import glob
import importlib.util
import os
import threading

from .base import ScopedClassMeta, classproperty

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "gpu_memory_info",
           "gpu_host_fallbacks"]


class Context(metaclass=ScopedClassMeta):
    """A device on which arrays live and operators run.

    ``Context('cpu')`` or ``Context('gpu', 0)``; usable as a ``with`` block
    to set the default device of this thread, which ``Context.default_ctx``
    reads and (assigned at class level) sets.
    """

    _default_ctx = threading.local()
    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise ValueError(f"unknown device type {device_type!r} (expected 'cpu' or 'gpu')")
        self.device_type = device_type
        self.device_id = int(device_id)
        self._old = None
        if device_type == "gpu":
            _preload_cuda_libraries()

    @property
    def device_typeid(self):
        """The numeric device type (1 cpu, 2 gpu)."""
        return self.devstr2type[self.device_type]

    def __eq__(self, other):
        return (
            isinstance(other, Context)
            and self.device_type == other.device_type
            and self.device_id == other.device_id
        )

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    @classproperty
    def default_ctx(cls):  # pylint: disable=no-self-argument
        """This thread's default context (``cpu(0)`` unless set)."""
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):  # pylint: disable=no-self-argument
        Context._default_ctx.value = ctx

    def __enter__(self):
        self._old = current_context()
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc):
        Context._default_ctx.value = self._old
        return False


def cpu(device_id=0):
    """The CPU context. ``cpu(i)`` for ``i > 0`` is the same host memory
    under another label, as in MXNet: arrays keep it, operators give their
    results on their first input's context, and code that spreads work over
    ``[cpu(0), cpu(1)]`` (a Gluon parameter's copies, ``split_and_load``, a
    kvstore's devices) runs as it would on several devices."""
    return Context("cpu", device_id)


def gpu(device_id=0):
    """A GPU context (CUDA device ``device_id``)."""
    return Context("gpu", device_id)


def cpu_pinned(device_id=0):
    """MXNet's page-locked host memory context. Arrays made or moved there
    report ``cpu_pinned(device_id)`` and operators on them give
    ``cpu(device_id)`` results, as in MXNet; oxnet allocates all host
    memory alike, so they live in ordinary host memory."""
    return Context("cpu_pinned", device_id)


def gpu_memory_info(device_id=0):
    """(free, total) bytes of GPU ``device_id``'s memory, as its driver reports them."""
    from . import _oxnet

    return _oxnet.gpu_memory_info(device_id)


def num_gpus():
    """Number of GPUs oxnet can use (0 on a machine without a CUDA driver)."""
    from . import _oxnet

    return _oxnet.num_gpus()


def gpu_host_fallbacks():
    """oxnet extension: the operators that ran on the CPU so far because
    they have no GPU kernel yet (their GPU arrays were copied to the host
    and back). Set ``OXNET_GPU_FALLBACK=0`` to make that an error."""
    from . import _oxnet

    return _oxnet.gpu_host_fallbacks()


_libraries_loaded = False


def _preload_cuda_libraries():
    """Makes NVRTC (which compiles oxnet's GPU kernels) and cuBLAS loadable
    when they come from PyPI's ``nvidia-*`` wheels rather than a CUDA
    toolkit on the library path: loading each once by its full path lets
    the engine find it by name."""
    global _libraries_loaded
    if _libraries_loaded:
        return
    _libraries_loaded = True
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    roots = list(spec.submodule_search_locations or []) if spec else []
    for lib in ("nvrtc", "cublasLt", "cublas"):
        candidates = [f"cu13/lib/lib{lib}.so.13", f"cu12/lib/lib{lib}.so.12", f"cuda_nvrtc/lib/lib{lib}.so.12",
                      f"cublas/lib/lib{lib}.so.12"]
        paths = [p for root in roots for c in candidates for p in glob.glob(os.path.join(root, c))]
        for path in paths:
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                pass


def current_context():
    """The default context of this thread (``cpu(0)`` unless a ``with`` block set one)."""
    return getattr(Context._default_ctx, "value", None) or Context("cpu", 0)
