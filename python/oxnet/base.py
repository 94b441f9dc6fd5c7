"""Base definitions shared by the package: the engine's exception type, the
names MXNet 1.x's ``mxnet.base`` offers to user code (string and numeric
type tuples, ``py_str``, ``data_dir``, ``NotImplementedForSymbol``, ...),
and the per-thread "current" instance of scope classes (``mx.name``,
``mx.AttrScope``).

oxnet has no C library behind a ctypes interface: ``_LIB`` answers every
function name with an error that says so, so code that reaches into
MXNet's C API fails clearly, naming the function; the few functions in
``oxnet._capi`` (graph partitioning by operator names) are answered by
Python functions that take the same ctypes arguments.
"""

import ctypes
import os
import platform
import threading

import numpy as np

from ._oxnet import MXNetError

__all__ = [
    "MXNetError", "NotImplementedForSymbol", "NotSupportedForSparseNDArray", "ThreadScope",
    "string_types", "numeric_types", "integer_types", "py_str", "data_dir", "data_dir_default",
    "mx_real_t", "mx_uint", "mx_int", "mx_float", "c_str", "c_str_array", "c_array", "c_array_buf",
    "NDArrayHandle", "SymbolHandle", "check_call", "classproperty", "ScopedClassMeta", "register_error",
    "error_types",
]

#: error classes by the name an engine message starts with (``"ValueError: ..."``),
#: filled by :func:`register_error` (see :mod:`oxnet.error`)
error_types = {}


def register_error(func_name=None, cls=None):
    """Registers an error class under a name (its class name by default), as
    MXNet's ``register_error``: used as ``@register_error``,
    ``@register_error("Name")`` or ``register_error("Name", cls)``; returns
    the class (or, without ``cls``, a decorator)."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(klass):
        error_types[func_name if isinstance(func_name, str) else klass.__name__] = klass
        return klass

    return register if cls is None else register(cls)

string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)

#: The default real type, as in MXNet.
mx_real_t = np.float32
mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_float = ctypes.c_float
NDArrayHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p


def py_str(x):
    """Decodes the UTF-8 bytes ``x`` to ``str``."""
    return x.decode("utf-8")


def c_str(string):
    """``string`` as a C string (UTF-8 bytes)."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_str_array(strings):
    """A C array of C strings."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") for s in strings]
    return arr


def c_array(ctype, values):
    """A C array of ``ctype`` holding ``values``."""
    return (ctype * len(values))(*values)


def c_array_buf(ctype, buf):
    """A C array of ``ctype`` over the buffer ``buf``."""
    return (ctype * len(buf)).from_buffer(buf)


def data_dir_default():
    """Where MXNet keeps downloaded data when ``MXNET_HOME`` is not set."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The data directory: ``$MXNET_HOME``, else :func:`data_dir_default`."""
    return os.getenv("MXNET_HOME", data_dir_default())


def _as_list(obj):
    """``obj`` itself if it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


class _OnlyForNDArray(MXNetError):
    """A function called on a kind of array it does not exist for."""

    _kind = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + f" is not {self._kind} and only available in NDArray."


class NotImplementedForSymbol(_OnlyForNDArray):
    """A function that exists for NDArray only was called on a Symbol."""

    _kind = "implemented for Symbol"


class NotSupportedForSparseNDArray(_OnlyForNDArray):
    """A function that sparse arrays do not support (oxnet has no sparse storage)."""

    _kind = "supported for SparseNDArray"


class classproperty:
    """A property of the class itself; with a setter, class-level
    assignment (``Cls.name = value``) calls it when the class's metaclass is
    :class:`ScopedClassMeta`."""

    def __init__(self, fget, fset=None):
        self.fget = fget
        self.fset = fset

    def __get__(self, obj, owner):
        return self.fget(owner)

    def setter(self, fset):
        """Returns this property with ``fset`` as its setter."""
        return classproperty(self.fget, fset)


class _NoCLibrary:
    """Stands where MXNet's ctypes handle to libmxnet stood: every function
    looked up on it raises, naming the function, except those
    ``oxnet._capi`` implements in Python."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        from . import _capi

        shim = _capi.SHIMS.get(name)
        if shim is not None:
            return shim

        def missing(*_args, **_kwargs):
            raise MXNetError(
                f"{name}: oxnet has no C API library (libmxnet); use the Python API instead")

        missing.__name__ = name
        return missing


_LIB = _NoCLibrary()


def check_call(ret):
    """Raises MXNetError for a non-zero return code of a C API call."""
    if ret != 0:
        raise MXNetError(f"C API call failed with code {ret}")


class ThreadScope:
    """A class attribute ``current``: this thread's active instance of a
    scope class (``default()`` made on first use). ``with`` blocks make
    another current through :meth:`enter` and restore it with :meth:`exit`."""

    def __init__(self, default):
        self._default = default
        self._local = threading.local()

    def __get__(self, obj, owner):
        current = getattr(self._local, "value", None)
        if current is None:
            current = self._local.value = self._default()
        return current

    def enter(self, scope):
        """Makes ``scope`` current; returns the one it replaces."""
        previous = self.__get__(None, None)
        self._local.value = scope
        return previous

    def exit(self, previous):
        """Makes ``previous`` current again."""
        self._local.value = previous

    set = exit


class ScopedClassMeta(type):
    """Metaclass of classes with per-thread class attributes: assigning a
    :class:`ThreadScope` attribute or a :class:`classproperty` with a setter
    at class level (``AttrScope.current = AttrScope(x='1')``,
    ``Context.default_ctx = cpu(1)``) sets this thread's value instead of
    replacing the attribute, as in MXNet."""

    def __setattr__(cls, name, value):
        for klass in cls.__mro__:
            attr = klass.__dict__.get(name)
            if attr is None:
                continue
            if isinstance(attr, ThreadScope):
                attr.set(value)
                return
            if isinstance(attr, classproperty) and attr.fset is not None:
                attr.fset(cls, value)
                return
            break
        super().__setattr__(name, value)
