"""Custom operators written in Python (the reference's ``mxnet.operator``).

Subclass :class:`CustomOp` for the computation and :class:`CustomOpProp`
for the description, register the property with :func:`register`, and call
the operator as ``nd.Custom(*inputs, op_type=name, **kwargs)``. The
operator lives in oxnet's one registry, so autograd, the op checker and
every other part of the engine treat it like a built-in.

Unlike the reference, hooks run on the calling thread (no worker thread, no
deadlock), and an exception raised in any hook reaches the caller with its
own type and message, prefixed with the operator's name.

:func:`customop` turns a function into an operator with per-argument
gradients (``def_grad``).
"""

import collections
import functools
import inspect
import itertools

import numpy as np

from . import _oxnet
from .base import MXNetError
from ._python_op import NDArrayOp, NumpyOp, PythonOp

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators", "get_operator_arguments",
           "OperatorArguments", "customop", "PythonOp", "NumpyOp", "NDArrayOp"]


class CustomOp:
    """The computation of a custom operator.

    ``in_data``/``out_data``/``in_grad`` are oxnet NDArrays sharing the
    engine's buffers; inputs are read-only during the call.
    """

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes ``out_data`` from ``in_data``; ``req[i]`` says how to store output i."""
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Computes ``in_grad`` from ``out_grad`` (and inputs/outputs)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    def assign(self, dst, req, src):
        """Stores ``src`` into ``dst`` as ``req`` says: 'null' skips,
        'write'/'inplace' overwrite, 'add' accumulates."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            if getattr(src, "dtype", dst.dtype) != dst.dtype:
                src = src.astype(dst.dtype)
            dst[:] = dst + src
        else:
            raise MXNetError(f"unknown request {req!r} (expected 'null', 'write', 'inplace' or 'add')")


class CustomOpProp:
    """The description of a custom operator, with the reference's defaults:
    one argument ``data``, one output ``output``, no auxiliary states,
    every shape and dtype that of the first argument."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """Returns (argument shapes, output shapes[, aux shapes]); may refine the argument shapes."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """Returns (argument dtypes, output dtypes[, aux dtypes]) as numpy types."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype):
        """Storage types (oxnet arrays are dense: 'default' everywhere)."""
        return in_stype, ["default"] * len(self.list_outputs()), ["default"] * len(self.list_auxiliary_states())

    def list_outputs(self):
        """Output names."""
        return ["output"]

    def list_arguments(self):
        """Argument names."""
        return ["data"]

    def list_auxiliary_states(self):
        """Auxiliary-state names."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Which of the given ids backward reads (the rest can be freed)."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Returns the :class:`CustomOp` for these input shapes and dtypes."""
        raise NotImplementedError(f"{type(self).__name__} does not implement create_operator")


def register(reg_name):
    """Class decorator registering a :class:`CustomOpProp` subclass as ``reg_name``.

    Registering a name again replaces the earlier operator."""

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError(f"register({reg_name!r}) expects a CustomOpProp subclass, got {prop_cls!r}")
        _oxnet.register_prop(reg_name, prop_cls)
        return prop_cls

    return do_register


def get_all_registered_operators():
    """Names (and aliases) of every registered operator, as MXNet 1.9.1
    lists them; oxnet adds the ``op_type`` names of registered custom
    operators."""
    names = {n for row in _oxnet.list_ops() for n in [row[0], *row[1]]}
    return sorted(names | set(_oxnet.registered_props()))


OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])

_DTYPE_CHOICES = ["bfloat16", "bool", "float16", "float32", "float64", "int32", "int64", "int8", "uint8"]
_KIND_NAMES = {"tuple of int": "Shape(tuple)", "tuple of int or None": "Shape or None"}


def _type_string(kind, default):
    """An attribute's type as MXNet 1.9.1's operator info writes it:
    ``"float, optional, default=0.5"``, ``"{'a', 'b'}, required"``."""
    enum = None
    if kind.startswith("one of {"):
        enum = sorted(c.strip() for c in kind[len("one of {"):-1].split(","))
    elif kind == "dtype":
        enum = _DTYPE_CHOICES
    if enum is not None:
        head = "{" + ", ".join(f"'{c}'" for c in enum) + "}"
        return f"{head}, required" if default is None else f"{head},optional, default='{default}'"
    head = _KIND_NAMES.get(kind, kind)
    if default is None:
        return f"{head}, required"
    if kind == "boolean":
        default = int(default in ("True", "true", "1"))
    elif kind.startswith("tuple of int") and default == "()":
        default = "[]"
    return f"{head}, optional, default={default}"


def get_operator_arguments(op_name):
    """``OperatorArguments(narg, names, types)`` of a registered operator:
    its array inputs (``NDArray-or-Symbol``) then its attributes, with the
    type strings of MXNet 1.9.1's operator info."""
    for name, aliases, _doc, arguments, attrs, variadic in _oxnet.list_ops():
        if op_name == name or op_name in aliases:
            inputs = ["data"] if variadic else list(arguments)
            names = inputs + [a[0] for a in attrs]
            inputs = ["NDArray-or-Symbol[]" if variadic else "NDArray-or-Symbol"] * len(inputs)
            types = inputs + [_type_string(kind, default) for _n, kind, default, _d in attrs]
            return OperatorArguments(len(names), names, types)
    raise MXNetError(f"get_operator_arguments: no operator named {op_name!r}")


_function_ids = itertools.count()


class _FunctionOperator:
    """A function registered as an operator, with gradients per argument (see :func:`customop`)."""

    def __init__(self, fn, kind):
        self._fn = fn
        self._kind = kind
        self._arguments = list(inspect.signature(fn).parameters)
        self._grads = [None] * len(self._arguments)
        self._name = f"_customop_{fn.__name__}_{next(_function_ids)}"
        self._handle = None
        functools.update_wrapper(self, fn)
        self._register()

    def _to_user(self, arrays):
        return [a.asnumpy() for a in arrays] if self._kind == "numpy" else list(arrays)

    def _from_user(self, value, like=None):
        from .ndarray import NDArray, array  # pylint: disable=import-outside-toplevel

        if isinstance(value, NDArray):
            return value
        value = np.asarray(value)
        dtype = like.dtype if like is not None else value.dtype
        return array(value, dtype=dtype)

    def _forward(self, inputs):
        out = self._fn(*self._to_user(inputs))
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [self._from_user(o) for o in outs]

    def _grad_of(self, argnum):
        make_grad = self._grads[argnum]

        def grad(outputs, inputs, out_grads):
            ans = self._to_user(outputs)
            g = self._to_user(out_grads)
            fn = make_grad(ans[0] if len(ans) == 1 else ans, *self._to_user(inputs))
            result = fn(g[0] if len(g) == 1 else g)
            return self._from_user(result, like=inputs[argnum])

        return grad

    def _register(self):
        grads = [self._grad_of(i) if g is not None else None for i, g in enumerate(self._grads)]
        _oxnet.register_function(self._name, self._arguments, self._forward, grads, self._fn.__doc__ or "")
        self._handle = _oxnet.op_handle(self._name)

    def def_grad(self, func, argnum=0):
        """Defines the gradient of argument ``argnum``: ``func(ans, *args)``
        returns a function of the output gradient ``g`` giving that
        argument's gradient."""
        if not 0 <= argnum < len(self._arguments):
            raise MXNetError(f"{self._fn.__name__} has {len(self._arguments)} arguments, no argnum {argnum}")
        self._grads[argnum] = func
        self._register()

    def __call__(self, *args):
        from .ndarray import NDArray, array  # pylint: disable=import-outside-toplevel

        arrays = tuple(a if isinstance(a, NDArray) else _array_keeping_dtype(a, array) for a in args)
        return _oxnet.invoke(self._handle, arrays, None)


def _array_keeping_dtype(value, array):
    value = np.asarray(value)
    return array(value, dtype=value.dtype)


def customop(kind):
    """Decorator making a function an operator (seed 002's ``@customop``).

    ``kind`` is ``'numpy'`` (the function receives and returns numpy arrays)
    or ``'mxnet'`` (NDArrays). Define gradients with ``f.def_grad(fn, argnum)``.
    """
    if kind not in ("numpy", "mxnet"):
        raise MXNetError(f"customop kind must be 'numpy' or 'mxnet', not {kind!r}")

    def wrap(fn):
        return _FunctionOperator(fn, kind)

    return wrap
