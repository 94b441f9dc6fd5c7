"""``oxnet.nd``: the NDArray class, array creation, and one function per
registry operator (built-in, custom, or loaded from a library), with the
reference's names and keyword attributes::

    from oxnet import nd
    y = nd.FullyConnected(x, w, b, num_hidden=4)
    z = nd.broadcast_div(y, nd.sum(y, axis=1, keepdims=True))
"""

import warnings

from .. import _oxnet
from ..base import MXNetError
from .._oxnet import NDArray
from . import contrib, image, linalg, random, _internal
from . import op, sparse  # noqa: E402  (MXNet's module paths: mx.nd.op.<name>, mx.nd.sparse)
from ._helpers import concatenate, eye, from_numpy, linspace, moveaxis, onehot_encode
from ._helpers import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from ._helpers import histogram
from ._ops import keep as _keep_ops, refresh as _refresh_ops

__all__ = [
    "NDArray", "array", "zeros", "ones", "full", "empty", "arange", "waitall",
    "uniform", "normal", "random_uniform", "random_normal", "random", "invoke", "CachedOp",
    "save", "load", "load_frombuffer", "save_safetensors", "load_safetensors",
    "eye", "linspace", "concatenate", "moveaxis", "onehot_encode", "from_numpy",
]


def array(source_array, ctx=None, dtype=None):
    """A new array copied from ``source_array`` (an NDArray, a numpy array, a
    list or a number). The dtype defaults to float32 (the source's own for
    NDArrays), as in the reference."""
    return _oxnet.array(source_array, ctx, dtype)


def _known_shape(op, shape, what="shape"):
    """MXNet 1.x's legacy shape semantics: outside ``mx.np_shape()`` an
    empty shape or a zero extent means "unknown", so creating an array of
    it is an error (inside, they are a scalar and a zero-size axis)."""
    from ..util import is_np_shape  # pylint: disable=import-outside-toplevel

    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not is_np_shape() and (not dims or 0 in dims):
        raise MXNetError(f"{op}: {what} {dims} is unknown under MXNet 1.x's shape semantics (an empty shape "
                         "or a zero extent); use `with mx.np_shape():` for scalars and zero-size arrays")


def full(shape, val, ctx=None, dtype=None, out=None, _op="_full"):
    """An array of ``shape`` filled with ``val`` (float32 by default)."""
    _known_shape("full", shape)
    result = _oxnet.full(shape, float(val), ctx, dtype, _op)
    if out is not None:
        out[:] = result
        return out
    return result


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros (float32 by default); with ``out=``, fills that array."""
    _known_shape("zeros", shape)
    return full(shape, 0.0, ctx, dtype, out=kwargs.get("out"), _op="_zeros")


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones (float32 by default); with ``out=``, fills that array."""
    _known_shape("ones", shape)
    return full(shape, 1.0, ctx, dtype, out=kwargs.get("out"), _op="_ones")


def empty(shape, ctx=None, dtype=None):
    """A new array (zero-filled: oxnet never hands out uninitialised memory)."""
    return _oxnet.empty(shape, ctx, dtype)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` without ``stop``).
    ``infer_range`` is deprecated and ignored here, as in MXNet 1.9.1 (in a
    graph, ``mx.sym.arange`` takes the length from a consumer's shape)."""
    if infer_range is not None:
        warnings.warn("`infer_range` argument has been deprecated", DeprecationWarning, stacklevel=2)
    return _oxnet.arange(float(start), None if stop is None else float(stop), float(step), int(repeat), ctx, dtype)


def waitall():
    """Waits for all pending computation (oxnet computes synchronously: returns at once)."""
    _oxnet.waitall()


def invoke(op_name, *inputs, **kwargs):
    """Calls the registry operator ``op_name`` by name."""
    return _oxnet.invoke(_oxnet.op_handle(op_name), inputs, kwargs)


uniform = random.uniform
normal = random.normal
random_uniform = random.uniform
random_normal = random.normal

def tile(data, reps, out=None, **kwargs):
    """``data`` repeated ``reps`` times along each axis (numpy's ``tile``);
    a zero repeat needs ``mx.np_shape()``, as in MXNet 1.x."""
    _known_shape("tile", (1,) + tuple(reps), "reps")
    return invoke("tile", data, reps=reps, **kwargs, **({} if out is None else {"out": out}))


_keep_ops(["tile", "eye", "linspace", "concatenate", "moveaxis", "onehot_encode", "from_numpy",
           "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
           "uniform", "normal", "random_uniform", "random_normal"])
_refresh_ops(globals())
random.refresh(vars(random), globals())


def _binary(name, array_op, scalar_op, reversed_scalar_op, python_op):
    """MXNet's element-wise function ``name(lhs, rhs)``: arrays broadcast
    (``array_op``), a number on either side uses the scalar operator."""
    import numbers  # pylint: disable=import-outside-toplevel

    def fn(lhs, rhs, out=None):
        if isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
            return python_op(lhs, rhs)
        if isinstance(rhs, numbers.Number):
            return invoke(scalar_op, lhs, scalar=float(rhs), **({} if out is None else {"out": out}))
        if isinstance(lhs, numbers.Number):
            return invoke(reversed_scalar_op, rhs, scalar=float(lhs), **({} if out is None else {"out": out}))
        return invoke(array_op, lhs, rhs, **({} if out is None else {"out": out}))

    fn.__name__ = name
    fn.__doc__ = f"``{name}(lhs, rhs)`` element-wise with broadcasting; either side may be a number."
    return fn


def _define_binary_functions(namespace):
    import operator  # pylint: disable=import-outside-toplevel

    table = [
        ("add", "broadcast_add", "_plus_scalar", "_plus_scalar", operator.add),
        ("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub),
        ("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul),
        ("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
        ("power", "broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow),
        ("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod),
        ("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max),
        ("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min),
        ("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar", operator.eq),
        ("not_equal", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", operator.ne),
        ("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar", operator.gt),
        ("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar", operator.ge),
        ("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar", operator.lt),
        ("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar", operator.le),
        ("logical_and", "broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
         lambda a, b: float(bool(a) and bool(b))),
        ("logical_or", "broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
         lambda a, b: float(bool(a) or bool(b))),
        ("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
         lambda a, b: float(bool(a) != bool(b))),
    ]
    for name, array_op, scalar_op, reversed_op, python_op in table:
        namespace[name] = _binary(name, array_op, scalar_op, reversed_op, python_op)
    namespace["less"], namespace["less_equal"] = namespace["lesser"], namespace["lesser_equal"]
    namespace["true_divide"] = namespace["divide"]  # MXNet's alias
    _keep_ops([row[0] for row in table] + ["less", "less_equal", "true_divide"])


_define_binary_functions(globals())

from .utils import save, load, load_frombuffer, save_safetensors, load_safetensors  # noqa: E402


class CachedOp:
    """A symbol compiled once and called with arrays, as one operator
    (MXNet's ``mx.nd.CachedOp``; what ``hybridize()`` runs)::

        op = mx.nd.CachedOp(net)          # net: an mx.sym.Symbol
        out = op(data, weight, bias)      # arrays in net.list_inputs() order

    Buffers are planned once per input shape and reused; under
    ``autograd.record()`` the call is one node on the tape, differentiable
    again with ``create_graph``. ``flags`` (``static_alloc``,
    ``static_shape``, ...) are accepted: buffers are always kept per shape.
    """

    def __init__(self, sym, flags=()):
        self._flags = dict(flags)
        self._sym = sym
        self._h = _oxnet.CachedOpHandle(sym._h)

    @property
    def input_names(self):
        """Names of the inputs a call takes, in order."""
        return self._h.input_names()

    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        kwargs.pop("default_ctx", None)
        if kwargs:
            names = self.input_names
            given = dict(zip(names, args))
            for k, v in kwargs.items():
                if k not in names:
                    raise MXNetError(f"CachedOp: no input named {k!r} (inputs: {', '.join(names)})")
                given[k] = v
            missing = [n for n in names if n not in given]
            if missing:
                raise MXNetError(f"CachedOp: missing input(s) {', '.join(missing)}")
            args = [given[n] for n in names]
        results = self._h.call(list(args))
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            for t, r in zip(targets, results):
                t[:] = r
            return out
        return results[0] if len(results) == 1 else results
