"""Utilities of MXNet 1.x's ``mxnet.util``: environment variables, the
NumPy-shape and NumPy-array semantics flags with their scopes and
decorators, GPU queries.

NumPy-shape semantics (``np_shape``) changes how partial shapes read: off
(the default, MXNet 1.x's legacy), ``0`` in a shape is an unknown dimension
and ``()`` an unknown shape; on, ``-1`` is an unknown dimension, ``0`` a real
zero-size one, ``()`` a scalar's shape and ``None`` an unknown shape. Both
flags are per thread, as in MXNet.

oxnet has no ``mx.np`` array type: the NumPy-array flag (``np_array``,
``use_np``) is kept and reported, and arrays stay ``NDArray``.
"""

import functools
import inspect
import os
import threading

__all__ = [
    "getenv", "setenv", "set_np_shape", "is_np_shape", "np_shape", "use_np_shape",
    "np_array", "is_np_array", "use_np_array", "use_np", "set_np", "reset_np",
    "get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability", "set_module",
]


def getenv(name):
    """The value of environment variable ``name``, or None."""
    return os.environ.get(name)


def setenv(name, value):
    """Sets environment variable ``name`` to ``value`` (None unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


class _Flag(threading.local):
    """A per-thread boolean."""

    value = False


_np_shape = _Flag()


def set_np_shape(active):
    """Turns NumPy-shape semantics on or off for this thread; returns the previous state."""
    if not active and is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is still active "
                         "is not allowed; call reset_np() to deactivate both")
    previous = _np_shape.value
    _np_shape.value = bool(active)
    return previous


def is_np_shape():
    """Whether NumPy-shape semantics is on in this thread."""
    return _np_shape.value


class _NumpyShapeScope:
    """``with`` scope setting NumPy-shape semantics (use :func:`np_shape`)."""

    def __init__(self, is_np_shape):  # pylint: disable=redefined-outer-name
        self._enter_is_np_shape = is_np_shape
        self._prev = None

    def __enter__(self):
        if self._enter_is_np_shape is not None:
            self._prev = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, *exc):
        if self._enter_is_np_shape is not None and self._prev != self._enter_is_np_shape:
            set_np_shape(self._prev)


def np_shape(active=True):
    """A ``with`` scope with NumPy-shape semantics on (or off)."""
    return _NumpyShapeScope(active)


def _wrap_in_scope(func, scope, name):
    """Runs ``func`` (or every method of the class ``func``) inside ``scope()``."""
    if inspect.isclass(func):
        for attr, method in list(vars(func).items()):
            if inspect.isfunction(method) or isinstance(method, property):
                if isinstance(method, property):
                    setattr(func, attr, property(_wrap_in_scope(method.fget, scope, name), method.fset,
                                                 method.fdel, method.__doc__))
                else:
                    setattr(func, attr, _wrap_in_scope(method, scope, name))
        return func
    if not callable(func):
        raise TypeError(f"{name} can only decorate classes and callable objects, got {type(func)}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with scope():
            return func(*args, **kwargs)

    return wrapper


def use_np_shape(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy-shape semantics."""
    return _wrap_in_scope(func, lambda: np_shape(True), "use_np_shape")


class _NumpyArrayScope:
    """``with`` scope setting NumPy-array semantics (use :func:`np_array`)."""

    _current = threading.local()

    def __init__(self, is_np_array):  # pylint: disable=redefined-outer-name
        self._old_scope = None
        self._is_np_array = is_np_array

    def __enter__(self):
        if not hasattr(_NumpyArrayScope._current, "value"):
            _NumpyArrayScope._current.value = _NumpyArrayScope(False)
        self._old_scope = _NumpyArrayScope._current.value
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope


def np_array(active=True):
    """A ``with`` scope with NumPy-array semantics on (or off)."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether NumPy-array semantics is on in this thread."""
    current = getattr(_NumpyArrayScope._current, "value", None)
    return bool(current._is_np_array) if current is not None else False


def use_np_array(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy-array semantics."""
    return _wrap_in_scope(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: NumPy-shape and NumPy-array semantics together."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Sets both flags for this thread (array semantics needs shape semantics)."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics")
    _NumpyArrayScope._current.value = _NumpyArrayScope(array)
    set_np_shape(shape)


def reset_np():
    """Turns both NumPy semantics flags off for this thread."""
    set_np(shape=False, array=False)


def get_gpu_count():
    """Number of GPUs oxnet can use (0 on a machine without a CUDA driver)."""
    from .context import num_gpus

    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """(free, total) bytes of a GPU's memory, as its driver reports them."""
    from . import _oxnet

    return _oxnet.gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """The CUDA compute capability of ``ctx``'s GPU as an int (90 for 9.0)."""
    from .test_utils import get_cuda_compute_capability as capability

    return capability(ctx)


def set_module(module):
    """Decorator setting ``__module__`` of a function or class to ``module``."""

    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func

    return decorator
