"""The ``Symbol`` class: a symbolic expression over named variables, as in
MXNet 1.x. Symbols need no shapes until they are bound; ``infer_shape``,
``infer_type``, ``simple_bind``/``bind`` and ``eval`` give them values."""

import ctypes as _ctypes
import json as _json

import numpy as np

from .. import _oxnet
from ..attribute import AttrScope, stored_key, HIDDEN_KEYS
from ..base import MXNetError, NotImplementedForSymbol
from ..context import Context, current_context
from ..name import NameManager
from ..util import is_np_shape
from . import _subgraph

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "fromjson", "compose_op", "trace"]


def _param_text(value):
    """How MXNet's Python turns a keyword attribute into its string form."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (type, np.dtype)):
        try:
            return np.dtype(value).name
        except TypeError:
            pass
    if isinstance(value, list):
        value = tuple(value)
    return str(value)


def compose_op(op_name, hint, positional, named, params, name=None, attr=None):
    """Calls registry operator ``op_name`` on symbols and returns the new symbol.

    ``positional``: symbols by position; ``named``: ``{argument: symbol}``;
    ``params``: keyword attributes (any value; turned into MXNet's string
    form); ``name``: the node's name (else one made from ``hint`` by the
    current ``mx.name`` manager); ``attr``: user attributes (merged with the
    current ``mx.AttrScope``).
    """
    name = NameManager.current.get(name, hint)
    attrs = {}
    for k, v in AttrScope.current.get(attr).items():
        attrs[stored_key(k)] = str(v)
        if k in HIDDEN_KEYS:  # as MXNet lists them: under both names
            attrs[k] = str(v)
    # A keyword such as ``__layout__='NC'`` is not an operator parameter: MXNet
    # keeps such double-underscored keys as attributes of the node.
    hidden = [k for k in params if k.startswith("__") and k.endswith("__") and len(k) > 4]
    if hidden:
        params = dict(params)
        for k in hidden:
            value = params.pop(k)
            if value is not None:
                attrs[k] = _param_text(value)
    handle = _oxnet.sym_compose_op(
        op_name,
        [s._h for s in positional],
        [(k, s._h) for k, s in named.items()],
        [(k, _param_text(v)) for k, v in params.items() if v is not None],
        name,
        attrs,
    )
    return Symbol(handle)


def _as_symbol_args(args, what):
    out = []
    for a in args:
        if not isinstance(a, Symbol):
            raise TypeError(f"{what}: expected Symbol arguments, got {type(a).__name__}")
        out.append(a)
    return out


class Symbol:
    """A symbolic expression with one or more outputs (``mx.sym.Symbol``)."""

    __slots__ = ("_h", "__weakref__")

    def __init__(self, handle):
        if isinstance(handle, _ctypes.c_void_p):  # a C API handle (see oxnet._capi)
            from .. import _capi

            handle = _capi.resolve(handle)
        self._h = handle

    @property
    def handle(self):
        """An opaque ``ctypes.c_void_p`` handle of this symbol for code
        written against MXNet's C API (valid while the symbol lives;
        ``Symbol(handle)`` turns it back into the symbol)."""
        from .. import _capi

        return _capi.handle_of(self)

    # ----- structure -------------------------------------------------------
    @property
    def name(self):
        """The node's name (None for a grouped symbol)."""
        return self._h.name()

    def list_arguments(self):
        """Names of the arguments (inputs that are not aux states), in order."""
        return self._h.list_arguments()

    def list_outputs(self):
        """Names of the outputs (``<node>_output``)."""
        return self._h.list_outputs()

    def list_auxiliary_states(self):
        """Names of the auxiliary states (such as BatchNorm's moving mean)."""
        return self._h.list_auxiliary_states()

    def list_inputs(self):
        """Names of all variables: arguments and aux states."""
        return self._h.list_inputs()

    def get_internals(self):
        """A grouped symbol of every output of every node, in topological order."""
        return Symbol(self._h.internals())

    def get_children(self):
        """The inputs of this symbol's node, grouped (None for a variable)."""
        c = self._h.children()
        return None if c is None else Symbol(c)

    def __len__(self):
        return self._h.num_outputs()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, str):
            return Symbol(self._h.get_by_name(index))
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self))[index]])
        n = len(self)
        if not isinstance(index, int):
            raise TypeError(f"symbol index must be an int, a slice or an output name, not {type(index).__name__}")
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"output index {index} is out of range for a symbol with {n} outputs")
        return Symbol(self._h.get(index))

    def __repr__(self):
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(self.list_outputs())}]>"
        return f"<Symbol {name}>"

    __hash__ = object.__hash__

    def __copy__(self):
        return Symbol(self._h.deep_copy())

    def __deepcopy__(self, memo):
        return Symbol(self._h.deep_copy())

    def copy(self):
        """A deep copy of the graph."""
        return self.__copy__()

    def __call__(self, *args, **kwargs):
        """Composes: variables replaced by symbols, by position
        (``list_arguments`` order) or by name (``net(data=other)``)."""
        kwargs.pop("name", None)
        positional = _as_symbol_args(args, "compose")
        named = {}
        for k, v in kwargs.items():
            if not isinstance(v, Symbol):
                raise TypeError(f"compose: argument {k!r} must be a Symbol, got {type(v).__name__}")
            named[k] = v
        return Symbol(self._h.compose([s._h for s in positional], [(k, s._h) for k, s in named.items()]))

    def _compose(self, *args, **kwargs):
        """Composes in place (MXNet's ``_compose``)."""
        self._h = self(*args, **kwargs)._h

    # ----- attributes ------------------------------------------------------
    def attr(self, key):
        """A string attribute of this symbol's node (None if absent)."""
        value = self._h.attr(key)
        if value is None and key in HIDDEN_KEYS:
            value = self._h.attr(stored_key(key))
        return value

    def list_attr(self, recursive=False):
        """The attributes of this node (``recursive``: of every node, keyed ``node$key``)."""
        if recursive:
            return {f"{node}${k}": v for node, attrs in self.attr_dict().items() for k, v in attrs.items()}
        return dict(self._h.list_attr())

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node with attributes."""
        return {k: dict(v) for k, v in self._h.attr_dict().items()}

    def _set_attr(self, **kwargs):
        """Sets string attributes on this symbol's node."""
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError(f"attribute {k!r} must be a string")
            self._h.set_attr(stored_key(k), v)

    # ----- arithmetic (element-wise; symbols are not broadcast, as in MXNet) --
    def _binary(self, other, op, hint, scalar_op, scalar_hint, reverse=False):
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reverse else (self, other)
            return compose_op(op, hint, [lhs, rhs], {}, {})
        if isinstance(other, (int, float, np.number, bool)):
            return compose_op(scalar_op, scalar_hint, [self], {}, {"scalar": float(other)})
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, "_Plus", "_plus", "_PlusScalar", "_plusscalar")

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "_Minus", "_minus", "_MinusScalar", "_minusscalar")

    def __rsub__(self, o):
        return self._binary(o, "_Minus", "_minus", "_RMinusScalar", "_rminusscalar", reverse=True)

    def __mul__(self, o):
        return self._binary(o, "_Mul", "_mul", "_MulScalar", "_mulscalar")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, "_Div", "_div", "_DivScalar", "_divscalar")

    def __rtruediv__(self, o):
        return self._binary(o, "_Div", "_div", "_RDivScalar", "_rdivscalar", reverse=True)

    def __pow__(self, o):
        return self._binary(o, "_Power", "_power", "_PowerScalar", "_powerscalar")

    def __rpow__(self, o):
        return self._binary(o, "_Power", "_power", "_RPowerScalar", "_rpowerscalar", reverse=True)

    def __mod__(self, o):
        return self._binary(o, "_Mod", "_mod", "_ModScalar", "_modscalar")

    def __rmod__(self, o):
        return self._binary(o, "_Mod", "_mod", "_RModScalar", "_rmodscalar", reverse=True)

    def __neg__(self):
        return self.__mul__(-1.0)

    def __eq__(self, o):
        return self._binary(o, "_equal", "_equal", "_equal_scalar", "_equalscalar")

    def __ne__(self, o):
        return self._binary(o, "_not_equal", "_notequal", "_not_equal_scalar", "_notequalscalar")

    def __gt__(self, o):
        return self._binary(o, "_greater", "_greater", "_greater_scalar", "_greaterscalar")

    def __ge__(self, o):
        return self._binary(o, "_greater_equal", "_greaterequal", "_greater_equal_scalar", "_greaterequalscalar")

    def __lt__(self, o):
        return self._binary(o, "_lesser", "_lesser", "_lesser_scalar", "_lesserscalar")

    def __le__(self, o):
        return self._binary(o, "_lesser_equal", "_lesserequal", "_lesser_equal_scalar", "_lesserequalscalar")

    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, "bool")

    def __abs__(self):
        return self.abs()

    # ----- inference --------------------------------------------------------
    def _shape_kwargs(self, args, kwargs, what):
        shapes = {}
        if args:
            names = self.list_arguments()
            if len(args) > len(names):
                raise MXNetError(f"{what}: {len(args)} shapes given for {len(names)} arguments")
            for n, s in zip(names, args):
                if s is not None:
                    shapes[n] = tuple(s)
        for k, s in kwargs.items():
            if s is not None:
                shapes[k] = tuple(s)
        inputs = set(self.list_inputs())
        unknown = [k for k in shapes if k not in inputs]
        if unknown:
            raise MXNetError(f"{what}: the symbol has no input named {', '.join(map(repr, unknown))}")
        # Under NumPy-shape semantics MXNet writes an unknown extent as -1,
        # otherwise as 0; the graph layer takes 0.
        unknown = -1 if is_np_shape() else 0
        return {k: [0 if int(d) == unknown else int(d) for d in s] for k, s in shapes.items()}

    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from some input shapes;
        ``(None, None, None)`` if not everything can be inferred."""
        arg, out, aux = self._h.infer_shape(self._shape_kwargs(args, kwargs, "infer_shape"), False)
        if any(s is None for s in arg + out + aux):
            return None, None, None
        return [tuple(s) for s in arg], [tuple(s) for s in out], [tuple(s) for s in aux]

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape``, with what is still unknown reported as MXNet
        does: an unknown shape as ``()`` and an unknown extent as 0, or under
        NumPy-shape semantics (``mx.np_shape()``) as ``None`` and -1."""
        arg, out, aux = self._h.infer_shape(self._shape_kwargs(args, kwargs, "infer_shape_partial"), True)
        if is_np_shape():
            fix = lambda lst: [None if s is None else tuple(-1 if d == 0 else d for d in s) for s in lst]  # noqa: E731
        else:
            fix = lambda lst: [() if s is None else tuple(s) for s in lst]  # noqa: E731
        return fix(arg), fix(out), fix(aux)

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)`` as numpy types from some
        input dtypes; ``(None, None, None)`` if incomplete."""
        given = {}
        if args:
            for n, t in zip(self.list_arguments(), args):
                if t is not None:
                    given[n] = np.dtype(t).name
        for k, t in kwargs.items():
            if t is not None:
                given[k] = np.dtype(t).name
        arg, out, aux = self._h.infer_type(given)
        if any(t is None for t in arg + out + aux):
            return None, None, None
        conv = lambda lst: [_np_type(t) for t in lst]  # noqa: E731
        return conv(arg), conv(out), conv(aux)

    def infer_type_partial(self, *args, **kwargs):
        """Like ``infer_type``, with None for unknown dtypes."""
        given = {k: np.dtype(t).name for k, t in kwargs.items() if t is not None}
        for n, t in zip(self.list_arguments(), args):
            if t is not None:
                given[n] = np.dtype(t).name
        arg, out, aux = self._h.infer_type(given)
        conv = lambda lst: [None if t is None else _np_type(t) for t in lst]  # noqa: E731
        return conv(arg), conv(out), conv(aux)

    # ----- serialization -----------------------------------------------------
    def tojson(self, remove_amp_cast=None):
        """The graph as NNVM JSON (what MXNet 1.x writes; under NumPy-shape
        semantics its attributes say ``is_np_shape``, as MXNet's do).
        ``remove_amp_cast=True`` leaves out ``amp_cast``/``amp_multicast``
        nodes; unlike MXNet, where that is the default, oxnet keeps them
        unless asked (its own graph tools read this JSON), as :meth:`save`
        does not."""
        text = self._h.tojson(is_np_shape())
        if remove_amp_cast and ('"amp_cast"' in text or '"amp_multicast"' in text):
            from ..contrib.amp.amp import remove_amp_cast as _strip_casts
            text = _strip_casts(self).tojson()
        return text

    def __getstate__(self):
        # MXNet pickles a symbol as its JSON
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        self._h = _oxnet.sym_from_json(state["handle"])

    def save(self, fname, remove_amp_cast=True):
        """Writes the graph as NNVM JSON to ``fname``; as in MXNet, the
        ``amp_cast``/``amp_multicast`` nodes of a mixed-precision graph are
        left out unless ``remove_amp_cast=False``."""
        text = self.tojson(remove_amp_cast=remove_amp_cast)
        with open(fname, "w", encoding="utf-8") as f:
            f.write(text)

    def debug_str(self):
        """A readable listing of the nodes."""
        graph = _json.loads(self.tojson())
        lines = []
        for i, node in enumerate(graph["nodes"]):
            ins = ", ".join(graph["nodes"][e[0]]["name"] for e in node["inputs"])
            kind = "Variable" if node["op"] == "null" else f"Op:{node['op']}"
            lines.append(f"{i}: {kind}, Name={node['name']}" + (f", Inputs=[{ins}]" if ins else ""))
        return "\n".join(lines)

    # ----- binding -------------------------------------------------------------
    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Binds with new zeroed arrays whose shapes are inferred from the
        keyword shapes; returns an :class:`~oxnet.executor.Executor`."""
        from ..executor import Executor

        del group2ctx, shared_arg_names, shared_exec, shared_buffer
        if stype_dict and any(v != "default" for v in stype_dict.values()):
            raise MXNetError("simple_bind: oxnet has no sparse storage types")
        ctx = Context(ctx) if ctx is not None else current_context()
        # as MXNet 1.9.1, keywords whose values are not shapes are ignored
        # (test_operator's test_take passes axis= and mode= here)
        kwargs = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        shapes = self._shape_kwargs((), kwargs, "simple_bind")
        types = {k: np.dtype(v).name for k, v in (type_dict or {}).items()}
        if isinstance(grad_req, (list, tuple)):
            grad_req = list(grad_req)
        graph = _subgraph.executor_graph(self, "simple_bind")
        handle = _oxnet.executor_simple_bind(graph, ctx, grad_req, types, shapes)
        return Executor(handle, ctx, self)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds to given arrays (lists in ``list_arguments`` order or dicts
        by name); returns an :class:`~oxnet.executor.Executor`."""
        from ..executor import Executor

        del group2ctx, shared_exec
        ctx = Context(ctx) if ctx is not None else current_context()
        arg_names = self.list_arguments()
        aux_names = self.list_auxiliary_states()
        args = _arrays_in_order(args, arg_names, "args")
        if args_grad is None:
            grads = [None] * len(arg_names)
            reqs = ["null"] * len(arg_names)
        else:
            grads = _arrays_in_order(args_grad, arg_names, "args_grad", allow_missing=True)
            reqs = _reqs_in_order(grad_req, arg_names)
            reqs = ["null" if g is None else r for g, r in zip(grads, reqs)]
        aux = _arrays_in_order(aux_states if aux_states is not None else [], aux_names, "aux_states")
        graph = _subgraph.executor_graph(self, "bind")
        handle = _oxnet.executor_bind(graph, ctx, args, grads, reqs, aux)
        return Executor(handle, ctx, self)

    _bind = bind

    def eval(self, ctx=None, **kwargs):
        """Evaluates with arrays given by argument name; returns the outputs."""
        ctx = ctx if ctx is not None else current_context()
        exe = self.bind(ctx, kwargs)
        return exe.forward()

    def optimize_for(self, backend, args=None, aux=None, ctx=None, shape_dict=None, type_dict=None,
                     stype_dict=None, skip_infer=False, **kwargs):
        """Runs the partitioner or graph pass registered as ``backend`` (a
        loaded library's, by its name) and returns the new symbol.
        Keyword options reach the backend as strings. Parameters a pass
        creates are added to ``args`` / ``aux`` (dicts) when given."""
        del ctx, shape_dict, type_dict, stype_dict, skip_infer
        options = [(k, _param_text(v)) for k, v in kwargs.items()]
        handle, params = _oxnet.sym_optimize_for(self._h, backend, options)
        for name, is_aux, array in params:
            target = aux if is_aux else args
            if isinstance(target, dict):
                target[name] = array
        return Symbol(handle)

    def _gen_atomic_symbol(self):
        """The operator of this symbol's node alone, with the same attributes
        and all of its outputs (MXNet's ``_gen_atomic_symbol``).

        MXNet returns the node without inputs; oxnet has no input-less
        operator symbols, so here each input is a fresh variable named after
        the operator's argument (``data``, ``parameters``, ... ; ``arg0``,
        ``arg1``, ... for a variadic operator), and composing by those names
        (``atomic(data=x, ...)``) attaches new inputs.
        """
        graph = _json.loads(self.tojson())
        heads = graph["heads"]
        node_ids = {h[0] for h in heads}
        if len(node_ids) != 1:
            raise MXNetError("_gen_atomic_symbol: the symbol's outputs come from several nodes; "
                             "generating an atomic symbol is only supported for one operator node")
        nid = node_ids.pop()
        node = graph["nodes"][nid]
        if node["op"] == "null":
            raise MXNetError(f"_gen_atomic_symbol: {node['name']!r} is a variable, not an operator")
        node_name = node["name"]
        attrs = dict(node.get("attrs", {}))
        n_in = len(node["inputs"])
        names = [f"arg{i}" for i in range(n_in)]
        row_ptr = graph["node_row_ptr"]
        n_out = row_ptr[nid + 1] - row_ptr[nid]
        try:  # the operator with its inputs left out names them <node>_<argument>
            probe = compose_op(node["op"], node_name, [], {}, attrs, name=node_name)
        except MXNetError:  # a variadic operator
            probe = None
        if probe is not None and len(probe.list_inputs()) == n_in:
            # the node's name, as the current name manager made it
            stem = _json.loads(probe.tojson())["nodes"][-1]["name"] + "_"
            names = [n[len(stem):] if n.startswith(stem) else n for n in probe.list_inputs()]
            n_out = len(probe)  # the visible outputs
        nodes = [{"op": "null", "name": n, "inputs": []} for n in names]
        nodes.append(dict(node, inputs=[[i, 0, 0] for i in range(n_in)]))
        atomic = {
            "nodes": nodes,
            "arg_nodes": list(range(n_in)),
            "node_row_ptr": list(range(n_in + 1)) + [n_in + n_out],
            "heads": [[n_in, k, 0] for k in range(n_out)],
            "attrs": graph.get("attrs", {}),
        }
        return Symbol(_oxnet.sym_from_json(_json.dumps(atomic)))

    def gradient(self, wrt):
        """Not offered (as in MXNet 1.x): bind and call ``backward``, or use
        ``mx.autograd``."""
        raise MXNetError("Symbol.gradient is not supported; bind the symbol and call backward")


_DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6,
                "bool": 7, "bfloat16": 12}


def _dtype_code(dtype):
    """MXNet's numeric code of a dtype (what ``__dtype__`` holds)."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    if name not in _DTYPE_CODES:
        raise MXNetError(f"unsupported dtype {dtype!r}")
    return _DTYPE_CODES[name]


_FLUENT = ("reshape", "flatten", "expand_dims", "transpose", "sum", "mean", "max", "min", "prod", "exp", "log",
           "sqrt", "square", "abs", "sign", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "clip", "slice",
           "slice_axis", "take", "one_hot", "tile", "repeat", "squeeze", "norm", "argmax", "argmin", "split",
           "broadcast_to", "zeros_like", "ones_like", "reshape_like", "pick", "sin", "cos", "dot", "swapaxes")


def _fluent(op_name):
    def method(self, *args, **kwargs):
        from .. import symbol as generated  # the package holds one function per operator

        return getattr(generated, op_name)(self, *args, **kwargs)

    method.__name__ = op_name
    method.__doc__ = f"``mx.sym.{op_name}`` with this symbol as its first input."
    return method


# MXNet 1.9.1's other fluent methods, for the operators the registry has
_FLUENT_MORE = (
    "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax_channel", "argsort",
    "broadcast_axes", "broadcast_like", "cbrt", "ceil", "cosh", "degrees", "depth_to_space", "diag", "expand_dims",
    "expm1", "fix", "flip", "floor", "log10", "log1p", "log2", "nanprod", "nansum", "pad", "radians", "rcbrt",
    "reciprocal", "rint", "round", "rsqrt", "shape_array", "sinh", "size_array", "slice_like", "softmin", "sort",
    "space_to_depth", "split_v2", "tan", "topk", "trunc",
)
_REGISTERED = {name for entry in _oxnet.list_ops() for name in [entry[0], *entry[1]]}

for _name in _FLUENT + tuple(n for n in _FLUENT_MORE if n in _REGISTERED and n not in _FLUENT):
    setattr(Symbol, _name, _fluent(_name))


def _astype(self, dtype):
    """``mx.sym.cast`` to ``dtype``."""
    from . import cast

    return cast(self, dtype=dtype)


Symbol.astype = _astype


def _np_type(name):
    if name == "bfloat16":
        return name
    return np.dtype(name).type


def _arrays_in_order(given, names, what, allow_missing=False):
    from ..ndarray import NDArray

    if isinstance(given, dict):
        # as MXNet: names the symbol lacks are ignored (a dict may hold the
        # arrays of a larger model), and a name mapped to None is no array
        out = []
        for n in names:
            if n not in given or given[n] is None:
                if allow_missing:
                    out.append(None)
                    continue
                raise MXNetError(f"bind: {what} has no array for {n!r}")
            out.append(given[n])
    else:
        out = list(given)
        if len(out) != len(names):
            raise MXNetError(f"bind: {what} has {len(out)} arrays, the symbol has {len(names)} ({', '.join(names)})")
    for n, a in zip(names, out):
        if a is not None and not isinstance(a, NDArray):
            raise TypeError(f"bind: {what} {n!r} must be an NDArray, got {type(a).__name__}")
    return out


def _reqs_in_order(grad_req, names):
    if isinstance(grad_req, str):
        return [grad_req] * len(names)
    if isinstance(grad_req, dict):
        return [grad_req.get(n, "null") for n in names]
    reqs = list(grad_req)
    if len(reqs) != len(names):
        raise MXNetError(f"bind: {len(reqs)} grad_req entries for {len(names)} arguments")
    return reqs


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None, stype=None,
        profiler_scope=None, **kwargs):
    """A variable (an input, a parameter or an aux state)."""
    if not isinstance(name, str):
        raise TypeError("a variable's name must be a string")
    attrs = {stored_key(k): str(v) for k, v in AttrScope.current.get(attr).items()}
    if shape is not None:
        attrs["__shape__"] = str(tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(_dtype_code(dtype))
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None and stype != "default":
        raise MXNetError("oxnet has no sparse storage types")
    if profiler_scope is not None:
        attrs["__profiler_scope__"] = str(profiler_scope)
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(
                f"attribute {k!r} is not supported: extra attributes must start and end with double "
                "underscores, e.g. __yourattr__"
            )
        attrs[k] = str(v)
    return Symbol(_oxnet.sym_var(name, attrs))


Variable = var


def Group(symbols):
    """One symbol with the outputs of all ``symbols``."""
    symbols = list(symbols)
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group expects a non-empty list of Symbols")
    return Symbol(_oxnet.sym_group([s._h for s in symbols]))


def load_json(json_str):
    """A symbol from NNVM JSON text (what ``tojson`` or MXNet wrote)."""
    if not isinstance(json_str, str):
        raise TypeError("load_json expects a string")
    return Symbol(_oxnet.sym_from_json(json_str))


fromjson = load_json


def load(fname):
    """A symbol from an NNVM JSON file (``-symbol.json``)."""
    if not isinstance(fname, str):
        raise TypeError("load expects a file name")
    try:
        with open(fname, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read symbol file {fname}: {e}") from e
    try:
        return load_json(text)
    except MXNetError as e:
        raise MXNetError(f"{fname}: {e}") from e


def trace(func, inputs):
    """Traces imperative code into a Symbol (an oxnet extension).

    ``func`` is called once with traced NDArrays (shape and dtype, no
    values; reading values raises) and returns an NDArray or a list of
    them, computed with ``mx.nd`` operators. ``inputs`` maps each input
    name to a shape, a ``(shape, dtype)`` pair or an example NDArray (a list
    of NDArrays names them ``data0``, ``data1``, ...). The operators ``func``
    calls become the symbol's nodes::

        sym = mx.sym.trace(lambda x: mx.nd.relu(x) * 2, {"x": (4, 3)})
    """
    from ..ndarray import NDArray

    if isinstance(inputs, (list, tuple)):
        inputs = {f"data{i}": a for i, a in enumerate(inputs)}
    specs = []
    for name, spec in inputs.items():
        if isinstance(spec, NDArray):
            shape, dtype = spec.shape, spec.dtype
        elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], (tuple, list)):
            shape, dtype = spec
        else:
            shape, dtype = spec, np.float32
        dtype = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        specs.append((name, [int(d) for d in shape], dtype))
    return Symbol(_oxnet.trace_function(func, specs))


def __getattr__(name):
    # MXNet defines its symbol functions (zeros, ones, maximum, ...) in
    # mx.sym.symbol; oxnet's are the mx.sym ones
    if not name.startswith("_"):
        from .. import symbol as _package
        if name in _package.__dict__:
            return _package.__dict__[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
