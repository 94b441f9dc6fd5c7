"""The few MXNet C API functions oxnet answers through ``mx.base._LIB``.

oxnet has no C library; ``_LIB`` raises for every function name except the
ones here, which are Python functions taking the ctypes arguments MXNet's
users pass (``c_str(...)``, ``mx_uint(n)``, ``c_str_array([...])``, a
``SymbolHandle``, ``ctypes.byref(out)``). Each returns 0 on success, as the
C functions do, and raises :class:`~oxnet.base.MXNetError` on bad input.

Symbol handles
--------------
``Symbol.handle`` is an opaque ``ctypes.c_void_p``: a key into a table held
here, and ``Symbol(handle)`` turns it back into the symbol.

* A handle read from ``sym.handle`` is borrowed: the table holds the symbol
  weakly, so the handle is valid while ``sym`` is alive and costs nothing
  after.
* A handle a shim function writes to an output argument (``byref(out)``)
  owns its graph until ``Symbol(out)`` takes it: the first ``Symbol(out)``
  removes it from the table (as MXNet's ``Symbol`` takes ownership of a
  handle), so a handle that is never wrapped is the only thing that stays.

Functions
---------
``MXSetSubgraphPropertyOpNames(backend, n, names)`` and
``MXRemoveSubgraphPropertyOpNames(backend)``: the operator names executors
partition with when ``MXNET_SUBGRAPH_BACKEND`` is ``backend``.
``MXSetSubgraphPropertyOpNamesV2`` / ``MXRemoveSubgraphPropertyOpNamesV2``:
the names the ``default`` / ``default_v2`` backends select in
``optimize_for`` and ``hybridize(backend=...)``.
``MXBuildSubgraphByOpNames(sym, backend, n, names, byref(out))``: ``sym``
partitioned by those names.
"""

import ctypes
import weakref

from . import _oxnet
from .base import MXNetError

_BORROWED = weakref.WeakValueDictionary()  # key -> Symbol (alive while the Symbol is)
_OWNED = {}  # key -> _oxnet SymbolHandle, until a Symbol takes it


def handle_of(sym):
    """A borrowed ``c_void_p`` handle of ``sym`` (valid while ``sym`` lives)."""
    key = id(sym)
    _BORROWED[key] = sym
    return ctypes.c_void_p(key)


def _key(handle, function, argument):
    if isinstance(handle, ctypes.c_void_p):
        value = handle.value
    elif isinstance(handle, int):
        value = handle
    else:
        raise MXNetError(f"{function}: {argument} must be a SymbolHandle (ctypes.c_void_p), "
                         f"got {type(handle).__name__}")
    if not value:
        raise MXNetError(f"{function}: {argument} is a null handle")
    return value


def resolve(handle, function="Symbol", take=True):
    """The oxnet graph handle behind a ``c_void_p`` handle; ``take`` removes
    an owned one from the table (``Symbol(handle)`` takes ownership)."""
    key = _key(handle, function, "handle")
    sym = _BORROWED.get(key)
    if sym is not None:
        return sym._h
    owned = _OWNED.pop(key, None) if take else _OWNED.get(key)
    if owned is None:
        raise MXNetError(f"{function}: {hex(key)} is not a live symbol handle")
    return owned


def _new_handle(graph):
    key = id(graph)
    _OWNED[key] = graph
    return key


def _text(value, function, argument):
    if isinstance(value, ctypes.c_char_p):
        value = value.value
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise MXNetError(f"{function}: {argument} must be a C string (c_str), got {type(value).__name__}")


def _count(value, function, argument):
    if isinstance(value, (ctypes.c_uint, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t)):
        value = value.value
    if not isinstance(value, int) or value < 0:
        raise MXNetError(f"{function}: {argument} must be a non-negative count (mx_uint), got {value!r}")
    return value


def _names(array, n, function, argument):
    if n == 0:
        return []
    try:
        if len(array) < n:
            raise MXNetError(f"{function}: {argument} holds {len(array)} names, fewer than {n}")
        items = [array[i] for i in range(n)]
    except TypeError:
        raise MXNetError(f"{function}: {argument} must be an array of C strings (c_str_array)") from None
    return [_text(s, function, argument) for s in items]


def _out_pointer(ref, function, argument):
    target = getattr(ref, "_obj", ref)  # ctypes.byref(x) keeps x as _obj
    if not isinstance(target, ctypes.c_void_p):
        raise MXNetError(f"{function}: {argument} must be ctypes.byref(SymbolHandle())")
    return target


def MXSetSubgraphPropertyOpNames(prop_name, num_ops, op_names):
    """Sets the operator names executors partition with for ``prop_name``."""
    f = "MXSetSubgraphPropertyOpNames"
    backend = _text(prop_name, f, "prop_name")
    _oxnet.subgraph_set_op_names(backend, _names(op_names, _count(num_ops, f, "num_ops"), f, "op_names"), False)
    return 0


def MXSetSubgraphPropertyOpNamesV2(prop_name, num_ops, op_names):
    """Sets the operator names backend ``prop_name`` selects."""
    f = "MXSetSubgraphPropertyOpNamesV2"
    backend = _text(prop_name, f, "prop_name")
    _oxnet.subgraph_set_op_names(backend, _names(op_names, _count(num_ops, f, "num_ops"), f, "op_names"), True)
    return 0


def MXRemoveSubgraphPropertyOpNames(prop_name):
    """Forgets the executors' operator names for ``prop_name``."""
    _oxnet.subgraph_remove_op_names(_text(prop_name, "MXRemoveSubgraphPropertyOpNames", "prop_name"), False)
    return 0


def MXRemoveSubgraphPropertyOpNamesV2(prop_name):
    """Forgets the operator names of backend ``prop_name``."""
    _oxnet.subgraph_remove_op_names(_text(prop_name, "MXRemoveSubgraphPropertyOpNamesV2", "prop_name"), True)
    return 0


def MXBuildSubgraphByOpNames(sym_handle, prop_name, num_ops, op_names, ret_sym_handle):
    """Writes to ``ret_sym_handle`` a handle of the symbol partitioned by
    the operators named (an empty list gives a copy)."""
    f = "MXBuildSubgraphByOpNames"
    graph = resolve(sym_handle, f, take=False)
    backend = _text(prop_name, f, "prop_name")
    names = _names(op_names, _count(num_ops, f, "num_ops"), f, "op_names")
    out = _out_pointer(ret_sym_handle, f, "ret_sym_handle")
    if names:
        result = _oxnet.subgraph_build_by_op_names(graph, backend, names, False)
    else:
        result = graph.deep_copy()
    out.value = _new_handle(result)
    return 0


#: The C functions answered, by name.
SHIMS = {f.__name__: f for f in (
    MXSetSubgraphPropertyOpNames, MXSetSubgraphPropertyOpNamesV2, MXRemoveSubgraphPropertyOpNames,
    MXRemoveSubgraphPropertyOpNamesV2, MXBuildSubgraphByOpNames)}
