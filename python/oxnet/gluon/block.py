"""Blocks: the layers and models of Gluon (MXNet 1.x's ``gluon.Block``,
``HybridBlock`` and ``SymbolBlock``).

A Block registers the child blocks and Parameters assigned to its
attributes; ``name_scope()`` gives children names under the parent's
prefix (``hybridsequential0_dense0_weight``). A HybridBlock writes
``hybrid_forward(F, x, *args, **params)`` once for ``F = mx.nd`` (run
imperatively) and ``F = mx.sym`` (the graph ``hybridize()`` runs as one
cached operator, built on oxnet's graph layer). A HybridBlock that instead
overrides ``forward`` with ``mx.nd`` code is hybridized by tracing it.
"""

import copy
import re
import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import name as _name, ndarray as nd, symbol
from ..base import MXNetError
from .parameter import DeferredInitializationError, Parameter, ParameterDict, _load_checked, _TracedParameters

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """The naming scope of a block: children made inside
    ``with block.name_scope():`` get the block's prefix."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new block with class-name ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.NameManager.current.get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return False
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope
        return False


class HookHandle:
    """Detaches a forward hook or pre-hook: ``handle.detach()`` (or use it
    as a context manager)."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self._id = HookHandle._next_id
        HookHandle._next_id += 1

    def detach(self):
        """Removes the hook (a second call does nothing)."""
        if self._hooks is not None:
            self._hooks.pop(self._id, None)
            self._hooks = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False


def _flatten(args, what):
    """Nested lists/tuples of arrays or symbols → a flat list and its format."""
    if isinstance(args, (nd.NDArray, symbol.Symbol)):
        if isinstance(args, symbol.Symbol) and len(args.list_outputs()) > 1:
            return list(args), len(args.list_outputs())
        return [args], 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise MXNetError(f"HybridBlock {what} must be (nested) lists of NDArrays or Symbols, "
                         f"got {type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of :func:`_flatten`: (nested structure, items left)."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            return None, args[1:]
        return list(args[:fmt]), args[fmt:]
    out = []
    for f in fmt:
        item, args = _regroup(args, f)
        out.append(item)
    return out, args


def _naming_errors(block, fn, args):
    """Calls ``fn(*args)``; an engine error gets the block's name in front
    (``hybridsequential0: dense1: operator FullyConnected: ...``)."""
    try:
        return fn(*args)
    except MXNetError as e:
        if str(e).startswith(f"{block.name}:"):
            raise
        raise type(e)(f"{block.name}: {e}") from e


class Block:
    """Base class of all layers and models.

    Subclasses assign child blocks and Parameters to attributes (they are
    registered automatically) and implement ``forward``. ``prefix`` names
    this block's parameters (default: class name + counter, e.g.
    ``dense0_``); ``params`` shares another block's ParameterDict.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        lines = [f"{self.__class__.__name__}("]
        for key, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({key}): {body}")
        return "\n".join(lines) + "\n)" if len(lines) > 1 else f"{self.__class__.__name__}()"

    def __setattr__(self, name, value):
        if hasattr(self, "_children") and hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to {type(value)} "
                                "is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params and self._reg_params[name] is not value:
                raise MXNetError(f"Overriding Parameter attribute {name} is not allowed. If you want to share "
                                 "parameters between blocks, please set 'params' at Block construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """The prefix of this block's parameter names (``dense0_``)."""
        return self._prefix

    @property
    def name(self):
        """The prefix without its trailing underscore (``dense0``)."""
        return self._name

    @property
    def params(self):
        """This block's own ParameterDict (not its children's)."""
        return self._params

    def name_scope(self):
        """A ``with`` scope in which new blocks get this block's prefix."""
        return self._scope

    def collect_params(self, select=None):
        """A ParameterDict with the parameters of this block and all its
        children; ``select`` is a regular expression the names must match
        (``'.*weight|.*bias'``)."""
        ret = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None

        def take(items):
            ret.update({k: v for k, v in items if pattern is None or pattern.match(k)})

        take(self._params.items())
        take((p.name, p) for p in self._reg_params.values() if p.name not in ret)
        for child in self._children.values():
            take(child.collect_params(select).items())
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + k: v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def register_child(self, block, name=None):
        """Registers ``block`` as a child (named by position if ``name`` is None)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """``hook(block, inputs)`` runs before each forward; returns a HookHandle."""
        handle = HookHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle._id] = hook
        return handle

    def register_forward_hook(self, hook):
        """``hook(block, inputs, outputs)`` runs after each forward; returns a HookHandle."""
        handle = HookHandle(self._forward_hooks)
        self._forward_hooks[handle._id] = hook
        return handle

    def apply(self, fn):
        """Calls ``fn(block)`` on every child (recursively), then on self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initializes all parameters (``init``: the default initializer,
        ``Uniform()`` if None; parameters with their own ``init`` keep it)."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes every HybridBlock child (a plain Block runs imperatively)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Casts all parameters (and future inputs' expectations) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)
        for p in self._reg_params.values():
            if p.name not in self.params:
                p.cast(dtype)

    def zero_grad(self):
        """Sets the gradients of all parameters to zero."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Moves all parameters to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def save_parameters(self, filename, deduplicate=False):
        """Saves the parameters by their structural names (``0.weight``,
        ``1.bias``) in MXNet's ``.params`` format. With ``deduplicate``, a
        parameter shared by several blocks is saved once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            first = {}
            for k, v in params.items():
                first.setdefault(id(v), k)
            params = {k: v for k, v in params.items() if first[id(v)] == k}
        nd.save(filename, {k: v._reduce() for k, v in params.items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                        dtype_source="current"):
        """Loads parameters saved by :meth:`save_parameters` (or by MXNet).
        Missing or extra names are errors unless allowed; every name, shape
        and dtype is checked before any parameter changes."""
        loaded = nd.load(filename)
        if isinstance(loaded, list) and not loaded:
            loaded = {}  # a file of no arrays (MXNet reads it back as an empty list)
        if not isinstance(loaded, dict):
            raise MXNetError(f"{filename}: holds a list of arrays without names, not parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if loaded and not any("." in k for k in loaded):
            # A file written by ParameterDict.save (full names, no structure).
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        _load_checked(params, loaded, filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source)

    def save_params(self, filename):
        """Deprecated: saves by full parameter names (``ParameterDict.save``)."""
        warnings.warn("save_params is deprecated. Please use save_parameters.", DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated: loads a file written by :meth:`save_params`."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = _naming_errors(self, self._computation(), args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def _computation(self):
        """What a call runs between the hooks (``forward``)."""
        return self.forward

    def forward(self, *args):
        """The computation; subclasses override it."""
        raise NotImplementedError(f"{self.__class__.__name__} must implement forward")

    def summary(self, *inputs):
        """Prints each block's output shape and parameter count for ``inputs``."""
        rows = []
        hooks = []

        def record(block, _inputs, outputs):
            shapes = [o.shape for o in _flatten(outputs, "output")[0] if o is not None]
            own = sum(int(np.prod(p.shape)) for p in block._reg_params.values() if p.shape)
            rows.append((f"{block.__class__.__name__}-{len(rows) + 1}", shapes, own))

        self.apply(lambda b: hooks.append(b.register_forward_hook(record)))
        try:
            self(*inputs)
        finally:
            for h in hooks:
                h.detach()
        width = 80
        print("-" * width)
        print(f"{'Layer (type)':>30}{'Output Shape':>35}{'Param #':>15}")
        print("=" * width)
        print(f"{'Input':>30}{str([i.shape for i in inputs][0] if len(inputs) == 1 else [i.shape for i in inputs]):>35}"
              f"{0:>15}")
        for name, shapes, count in rows:
            shown = shapes[0] if len(shapes) == 1 else shapes
            print(f"{name:>30}{str(shown):>35}{count:>15}")
        print("=" * width)
        params = self.collect_params()
        total = sum(int(np.prod(p.shape)) for p in params.values() if p.shape)
        trainable = sum(int(np.prod(p.shape)) for p in params.values() if p.shape and p.grad_req != "null")
        print(f"Parameters in forward computation graph, duplicate included\n   Total params: {total}\n"
              f"   Trainable params: {trainable}\n   Non-trainable params: {total - trainable}")
        print("-" * width)


class HybridBlock(Block):
    """A Block that runs imperatively or, after ``hybridize()``, as one
    cached graph.

    Write ``hybrid_forward(self, F, x, *args, **params)``: ``F`` is
    ``mx.nd`` or ``mx.sym`` and each registered Parameter arrives by its
    attribute name (as an NDArray or a Symbol). Unknown parameter shapes
    (0) are inferred from the first input. A subclass may instead override
    ``forward(self, x, ...)`` with ``mx.nd`` code and ``param.data()``:
    hybridizing it traces that code.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None
        self._in_format = None
        self._out_format = None
        self._active = False
        self._flags = []
        self._backend = None
        self._backend_opts = {}

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise MXNetError(f"Children of HybridBlock must also be HybridBlock, but {block} has type "
                             f"{type(block)}. If you are using Sequential, please try HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None

    def hybridize(self, active=True, backend=None, backend_opts=None, static_alloc=False, static_shape=False,
                  **kwargs):
        """Runs this block (and its children) as one cached graph from the
        next call on (``active=False`` returns to imperative execution).
        Buffers are planned once per input shape whatever ``static_alloc``
        and ``static_shape`` say; ``backend`` partitions the graph with an
        ``optimize_for`` backend."""
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape)]
        self._backend = backend
        self._backend_opts = backend_opts or {}
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self}" is being hybridized while still having forward hook/pre-hook. If "{self}" is '
                          "a child of HybridBlock, the hooks will not take effect.", stacklevel=2)
        super().hybridize(active, backend=backend, backend_opts=backend_opts, static_alloc=static_alloc,
                          static_shape=static_shape, **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    # -- the graph ------------------------------------------------------

    def _traces_forward(self):
        """True when the subclass wrote ``forward`` (nd code) instead of
        ``hybrid_forward``: hybridizing then traces it."""
        cls = type(self)
        return cls.forward is not HybridBlock.forward and cls.hybrid_forward is HybridBlock.hybrid_forward

    def _get_graph(self, *args):
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, "input")
            if self._traces_forward():
                inputs, out = self._trace_graph(flat)
            else:
                names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
                inputs = [symbol.var(n) for n in names]
                grouped = _regroup(inputs, self._in_format)[0]
                params = {k: v.var() for k, v in self._reg_params.items()}
                with self.name_scope():
                    out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = inputs, symbol.Group(out) if len(out) > 1 else out[0]
        return self._cached_graph

    def _trace_graph(self, flat):
        """Traces ``forward`` (nd code) with parameters as graph inputs."""
        params = list(self.collect_params().values())
        names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
        specs = {n: (a.shape, a.dtype) for n, a in zip(names, flat)}
        for p in params:
            p._finish_deferred_init()
            specs[p.name] = (p.shape, p.dtype)

        def run(*arrays):
            data, values = arrays[:len(flat)], arrays[len(flat):]
            with _TracedParameters(dict(zip(params, values))):
                return self.forward(*_regroup(list(data), self._in_format)[0])

        sym = symbol.trace(run, specs)
        outputs = [sym[i] for i in range(len(sym.list_outputs()))]
        return [symbol.var(n) for n in names], outputs[0] if len(outputs) == 1 else outputs

    def _build_cache(self, *args):
        inputs, out = self._get_graph(*args)
        data_index = {s.name: i for i, s in enumerate(inputs)}
        params = self.collect_params()
        input_names = out.list_inputs()
        for n in input_names:
            if n not in params and n not in data_index:
                raise MXNetError(f"{self.name}: unknown input to HybridBlock: {n}")
        flat = _flatten(args, "input")[0]
        # an input given as None (an optional argument left out) is not "unused"
        unused = [n for n, i in data_index.items() if n not in input_names and flat[i] is not None]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock {self.name} is not used by any "
                          "computation. Is this intended?", stacklevel=4)
        if self._backend:
            out = out.optimize_for(self._backend, **self._backend_opts)
        # a cached op takes the graph's arguments, then its aux states
        # (list_inputs interleaves them when aux states are not last)
        self._cached_op_args = [(True, data_index[n]) if n in data_index else (False, params[n])
                                for n in out.list_arguments() + out.list_auxiliary_states()]
        self._cached_op = nd.CachedOp(out, self._flags)

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        if self._in_format == 0 and len(args) == 1 and isinstance(args[0], nd.NDArray):
            flat = args  # the common case: one array
        else:
            flat, fmt = _flatten(args, "input")
            if fmt != self._in_format:
                raise MXNetError(f"{self.name}: the inputs are nested differently from the first call's")
        ctx = next((a.context for a in flat if a is not None), None)
        try:
            cargs = [flat[i] if is_arg else i.data(ctx) for is_arg, i in self._cached_op_args]
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            cargs = []
            for is_arg, i in self._cached_op_args:
                if not is_arg:
                    i._finish_deferred_init()
                cargs.append(flat[i] if is_arg else i.data(ctx))
        out = self._cached_op._h.call(cargs)
        if self._out_format == 0:
            return out[0]
        return _regroup(list(out), self._out_format)[0]

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise MXNetError(f"{self.name}: deferred initialization failed because shape cannot be inferred. "
                             f"{e}") from e

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat, _ = _flatten(args, "input")
        given = {s.name: getattr(a, attr) for s, a in zip(inputs, flat) if a is not None}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**given)
        found = dict(zip(out.list_arguments(), arg_attrs or []))
        found.update(zip(out.list_auxiliary_states(), aux_attrs or []))
        for p in self.collect_params().values():
            value = found.get(p.name)
            if value is None or (attr == "shape" and not all(d > 0 for d in value)):
                raise MXNetError(f"cannot infer the {attr} of Parameter '{p.name}' from inputs "
                                 f"{ {k: v for k, v in given.items()} } (got {value})")
            setattr(p, attr, value)

    def infer_shape(self, *args):
        """Fills the unknown dimensions of the parameters from the inputs."""
        self._infer_attrs("infer_shape_partial", "shape", *args)

    def infer_type(self, *args):
        """Sets the parameters' dtypes from the inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes ``path-symbol.json`` and ``path-%04d.params`` (``arg:`` and
        ``aux:`` keys), as MXNet does; the block must have run hybridized
        once. Returns the two file names."""
        if not self._cached_graph:
            raise MXNetError(f"{self.name}: please first call block.hybridize() and then run forward with this "
                             "block at least once before calling export.")
        sym = self._cached_graph[1]
        sym_file = f"{path}-symbol.json"
        sym.save(sym_file, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        nd.save(params_file, arg_dict)
        return sym_file, params_file

    def forward(self, x, *args):
        """Runs the block: the cached graph when hybridized, else
        ``hybrid_forward`` with ``F = mx.nd`` (or ``mx.sym`` for Symbol inputs)."""
        if self._active and isinstance(x, nd.NDArray):
            return self._call_cached_op(x, *args)
        flat = [a for a in _flatten([x, *args], "input")[0] if a is not None]
        has_sym = any(isinstance(a, symbol.Symbol) for a in flat)
        has_nd = any(isinstance(a, nd.NDArray) for a in flat)
        if has_sym and has_nd:
            raise MXNetError(f"{self.name}: inputs mix Symbols and NDArrays")
        if not has_sym and not has_nd:
            raise MXNetError(f"{self.name}: in HybridBlock, there must be one NDArray or one Symbol in the input")
        if has_nd:
            if self._active:
                return self._call_cached_op(x, *args)
            ctx = flat[0].context
            try:
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                for p in self.collect_params().values():
                    p._finish_deferred_init()
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            return self.hybrid_forward(nd, x, *args, **params)
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def _computation(self):
        # a hybridized block whose forward is nd code runs its traced graph
        if self._active and self._traces_forward():
            return self._call_traced
        return self.forward

    def _call_traced(self, *args):
        if args and isinstance(args[0], nd.NDArray):
            return self._call_cached_op(*args)
        return self.forward(*args)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation for ``F`` = ``mx.nd`` or ``mx.sym``; subclasses override it."""
        raise NotImplementedError(f"{self.__class__.__name__} must implement hybrid_forward (or forward)")


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for n in names:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol: ``SymbolBlock(outputs, inputs,
    params=None)`` where ``inputs`` are the variables fed at call time and
    every other argument of ``outputs`` becomes a Parameter. Load an
    exported model with :meth:`imports`."""

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """A SymbolBlock from ``path-symbol.json`` (and ``path-0000.params``),
        as written by ``HybridBlock.export`` here or in MXNet."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(n, dtype="float32") for n in input_names]
        else:
            inputs = [symbol.var(n) for n in input_names]
        block = SymbolBlock(sym, inputs)
        if param_file is not None:
            block.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                        dtype_source="saved")
        return block

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, symbol.Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        out = symbol.Group(out) if len(out) > 1 else out[0]
        input_names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise MXNetError(f"SymbolBlock: input symbols must be variables, but {s.name} is an output of "
                                 "operators")
            input_names.add(s.name)
        for n in out.list_arguments():
            if n not in input_names:
                self.params.get(n, allow_deferred_init=True)
        for n in out.list_auxiliary_states():
            if n not in input_names:
                self.params.get(n, grad_req="null", allow_deferred_init=True)
        self._cached_graph = syms, out
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params = OrderedDict((k[cut:], v) for k, v in self._params.items())

    def forward(self, x, *args):
        if isinstance(x, nd.NDArray):
            return self._call_cached_op(x, *args)
        flat, _ = _flatten([x, *args], "input")
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{s.name: a for s, a in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)[0]

    def _clear_cached_op(self):
        graph = getattr(self, "_cached_graph", ())
        super()._clear_cached_op()
        self._cached_graph = graph

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError("SymbolBlock runs its symbol; hybrid_forward is not used")
