"""Parameters: the arrays a Block learns (``gluon.Parameter``), constants
(``gluon.Constant``) and the name-keyed collections blocks keep them in
(``gluon.ParameterDict``), with MXNet 1.x's semantics:

- a shape may have unknown dimensions (``0``) that the first forward pass
  fills by shape inference (deferred initialisation; reading the data before
  that raises :class:`DeferredInitializationError`);
- ``grad_req`` is ``'write'``, ``'add'`` or ``'null'``; the gradient buffer is
  attached to the data with autograd, so ``backward()`` fills it;
- one copy of the data per context in ``ctx``.
"""

import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd, initializer, ndarray as nd, symbol
from ..base import MXNetError
from ..context import Context, cpu, current_context

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict", "tensor_types"]

tensor_types = (symbol.Symbol, nd.NDArray)


class DeferredInitializationError(MXNetError):
    """A Parameter's data was asked for before its deferred initialisation
    ran (its shape is only known after the first forward pass)."""


_GRAD_REQS = ("write", "add", "null")


def _as_shape(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    # MXNet 1.x writes unknown dimensions as 0, 2.x as -1: both mean unknown.
    return tuple(0 if int(d) < 0 else int(d) for d in shape)


def _shape_is_known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _dtype_name(dtype):
    return np.dtype(dtype).name


def _merge_shapes(expected, given, what):
    """``expected`` with its unknown dimensions taken from ``given``; an
    error naming ``what`` when a known dimension disagrees."""
    if expected is None:
        return given
    if len(expected) != len(given) or any(e and g and e != g for e, g in zip(expected, given)):
        raise MXNetError(f"{what}: expected shape {expected} is incompatible with given shape {given}")
    return tuple(e or g for e, g in zip(expected, given))


class _TracedParameters:
    """While a HybridBlock's ``forward`` (nd code) is traced into a graph,
    maps each Parameter to the traced array that stands for it."""

    _local = threading.local()
    # How many traces are running in any thread: Parameter.data() looks
    # for a traced array only when one is.
    active = 0

    def __init__(self, mapping):
        self._mapping = mapping
        self._old = None

    def __enter__(self):
        self._old = getattr(_TracedParameters._local, "value", None)
        _TracedParameters._local.value = self._mapping
        _TracedParameters.active += 1
        return self

    def __exit__(self, *exc):
        _TracedParameters.active -= 1
        _TracedParameters._local.value = self._old
        return False

    @staticmethod
    def lookup(param):
        """The traced array standing for ``param``, or None."""
        mapping = getattr(_TracedParameters._local, "value", None)
        return None if mapping is None else mapping.get(param)


class Parameter:
    """A learnable array of a Block.

    ``Parameter(name, grad_req='write', shape=None, dtype=float32,
    lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
    differentiable=True)``: ``shape`` may hold ``0`` for dimensions the
    first forward pass infers (with ``allow_deferred_init``); ``init`` is an
    initializer (instance or name) used instead of the one given to
    ``initialize``; ``lr_mult``/``wd_mult`` scale the optimizer's learning
    rate and weight decay for this parameter; a non-differentiable
    parameter has no gradient (``grad_req='null'``).
    """

    def __init__(self, name="weight", grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0, wd_mult=1.0,
                 init=None, allow_deferred_init=False, differentiable=True, stype="default",
                 grad_stype="default"):
        if stype != "default" or grad_stype != "default":
            raise MXNetError(f"Parameter {name!r}: oxnet has dense storage only (stype={stype!r}, "
                             f"grad_stype={grad_stype!r})")
        self.name = name
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._shape = _as_shape(shape)
        self.dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self._trainer = None
        self.grad_req = grad_req

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # -- attributes -----------------------------------------------------

    @property
    def grad_req(self):
        """``'write'``, ``'add'`` or ``'null'`` (always ``'null'`` when not
        differentiable). Changing it re-attaches the gradient buffers."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in _GRAD_REQS:
            raise ValueError(f"Parameter {self.name!r}: grad_req must be one of {', '.join(_GRAD_REQS)}, "
                             f"got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if self._data is None:
            return
        if req == "null":
            self._grad = None
            self._data = [d.detach() for d in self._data]
        else:
            self._init_grad()

    @property
    def differentiable(self):
        """False for parameters no gradient flows to (constants)."""
        return self._differentiable

    @property
    def shape(self):
        """The shape; unknown dimensions are 0 until inference fills them."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = _as_shape(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        self._shape = _merge_shapes(self._shape, new_shape, f"Parameter {self.name!r}")

    # -- initialisation -------------------------------------------------

    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Allocates and fills the data on ``ctx`` (a Context or a list;
        the current context by default) with ``init``, else this
        parameter's own ``init``, else ``default_init`` (``Uniform()``).
        With an unknown shape and ``allow_deferred_init`` the work waits for
        the first forward pass."""
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if default_init is None:
            default_init = initializer.Uniform()
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_is_known(self._shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, list(ctx), default_init, None)
                return
            raise MXNetError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                             f"{self._shape}. Give its full shape or allow_deferred_init=True.")
        self._deferred_init = (init, list(ctx), default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Runs the initialisation that was deferred until the shape was known."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not _shape_is_known(self._shape):
            raise MXNetError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                             f"{self._shape}. Please specify in_units, in_channels, etc for `Block`s.")
        with autograd.pause():
            if data is None:
                data = nd.zeros(self._shape, dtype=self.dtype, ctx=cpu())
                initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
        self._deferred_init = ()
        self._init_impl(data, ctx)
        if self._trainer is not None:
            self._trainer._on_param_initialized(self)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        with autograd.pause():
            self._data = [data.copyto(c) for c in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        if self._grad_req == "null":
            self._grad = None
            return
        self._data = [d.detach() for d in self._data]
        self._grad = [nd.zeros(d.shape, dtype=d.dtype, ctx=d.context) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self._grad_req)

    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            for c, arr in zip(self._ctx_list, arr_list):
                if c == ctx:
                    return arr
            raise MXNetError(f"Parameter '{self.name}' was not initialized on context {ctx}. "
                             f"It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was deferred. "
                "Actual initialization happens during the first forward pass. Please pass one batch of data "
                "through the network before accessing Parameters. You can also avoid deferred initialization "
                "by specifying in_units, num_features, etc., for network layers.")
        raise MXNetError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize parameters "
            "and create Trainer with Block.collect_params() instead of Block.params because the later does "
            "not include Parameters of nested child Blocks")

    # -- data and gradients ---------------------------------------------

    def data(self, ctx=None):
        """The data on ``ctx`` (the only copy when there is one); while a
        HybridBlock's ``forward`` is traced, the graph input standing for it."""
        if _TracedParameters.active:
            traced = _TracedParameters.lookup(self)
            if traced is not None:
                return traced
        data = self._data
        if data is not None and len(data) == 1 and (ctx is None or ctx == self._ctx_list[0]):
            return data[0]  # the common case, first
        return self._check_and_get(data, ctx)

    def list_data(self):
        """The data on every context, in ``list_ctx()`` order."""
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient buffers on every context."""
        if self._data is not None and self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter lives on (or will, when deferred)."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise MXNetError(f"Parameter '{self.name}' has not been initialized")
        return list(self._ctx_list)

    def zero_grad(self):
        """Sets the gradient buffers to zero (needed with ``grad_req='add'``)."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    def set_data(self, data):
        """Replaces the values on every context (before deferred
        initialisation, the values it will use). A trainer whose kvstore
        holds this parameter's values (``update_on_kvstore``) starts its
        store again, so that the store takes the new values."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise MXNetError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()
        with autograd.pause():
            for arr in self._data:
                arr[:] = data

    def reset_ctx(self, ctx):
        """Moves the data (and gradients) to ``ctx`` (a Context or a list)."""
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is not None:
            data = self._reduce()
            self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, list(ctx), default_init, data)
        else:
            raise MXNetError(f"Cannot reset context for Parameter '{self.name}' because it has not been initialized.")

    def _reduce(self):
        """The data averaged over contexts, on the CPU (what is saved)."""
        data = self.list_data()
        with autograd.pause():
            if len(data) == 1:
                return data[0].copyto(cpu())
            total = data[0].copyto(cpu())
            for d in data[1:]:
                total = total + d.copyto(cpu())
            return total / len(data)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Takes loaded values (checked by :meth:`_check_loadable`)."""
        data = self._check_loadable(data, cast_dtype, dtype_source)
        if cast_dtype and dtype_source == "saved":
            self.dtype = data.dtype
        self.shape = data.shape
        if self._data is None:
            if self._deferred_init:
                ctx = self._deferred_init[1] if ctx is None else ctx
            elif ctx is None:
                ctx = [cpu()]
            if isinstance(ctx, Context):
                ctx = [ctx]
            self._deferred_init = ()
            self._init_impl(data, ctx)
        else:
            self.set_data(data)

    def _check_loadable(self, data, cast_dtype=False, dtype_source="current"):
        """``data`` as it will be loaded into this parameter, or an error
        naming the parameter (nothing is changed here)."""
        _merge_shapes(self._shape, tuple(data.shape), f"Failed loading Parameter '{self.name}' from saved params")
        if cast_dtype:
            if dtype_source == "current":
                data = data.astype(self.dtype)
            elif dtype_source != "saved":
                raise ValueError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
        elif _dtype_name(self.dtype) != _dtype_name(data.dtype):
            raise MXNetError(f"Failed loading Parameter '{self.name}' from saved params: dtype incompatible "
                             f"expected {_dtype_name(self.dtype)} vs saved {_dtype_name(data.dtype)}. "
                             "Set cast_dtype=True to cast the dtype of saved params.")
        return data

    def var(self):
        """This parameter as a symbol variable (with its shape, dtype,
        multipliers and initializer as attributes)."""
        if self._var is None:
            self._var = symbol.var(self.name, shape=self._shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                   wd_mult=self.wd_mult, init=self.init)
        return self._var

    def cast(self, dtype):
        """Casts data and gradients to ``dtype``."""
        self.dtype = dtype
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
        self._init_grad()

    def _set_trainer(self, trainer):
        self._trainer = trainer


class Constant(Parameter):
    """A parameter that never changes (``grad_req='null'``), holding
    ``value`` (an NDArray, a numpy array, a list or a number). It works in
    hybridized blocks like any parameter."""

    def __init__(self, name, value):
        if not isinstance(value, nd.NDArray):
            value = nd.array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=initializer.Constant(value), differentiable=False)

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"


class ParameterDict:
    """Parameters by full name, all sharing ``prefix``; ``get`` makes a
    parameter ``prefix + name`` or returns the existing one (also from the
    ``shared`` dict), so blocks built with ``params=`` share weights."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        body = "\n".join(f"  {v}" for v in self._params.values())
        name = f"{self._prefix} " if self._prefix else ""
        return f"{name}(\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        """(name, Parameter) pairs."""
        return self._params.items()

    def keys(self):
        """Parameter names."""
        return self._params.keys()

    def values(self):
        """Parameters."""
        return self._params.values()

    @property
    def prefix(self):
        """The prefix of every name in this dict."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter ``prefix + name``, made with ``kwargs`` (Parameter's
        keywords) when it does not exist yet; for an existing one, the given
        attributes must agree with its own (unknown shape dimensions are
        filled)."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = Parameter(full, **kwargs)
            self._params[full] = param
            return param
        for k, v in kwargs.items():
            if not hasattr(param, k) or getattr(param, k) is None:
                setattr(param, k, v)
                continue
            existing = getattr(param, k)
            if v is None:
                continue
            if k == "shape":
                param.shape = v
                continue
            if k == "dtype" and _dtype_name(v) == _dtype_name(existing):
                continue
            if v != existing:
                raise MXNetError(f"Cannot retrieve Parameter '{full}' because desired attribute does not match "
                                 f"with stored for attribute '{k}': desired '{v}' vs stored '{existing}'.")
        return param

    def get_constant(self, name, value=None):
        """The constant ``prefix + name``, made from ``value`` if new."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{full}'. Please specify value if you want to create a new "
                               "constant.")
            param = Constant(full, value)
            self._params[full] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise MXNetError(f"Parameter '{full}' already exists but it is not a constant.")
            value = value.asnumpy() if isinstance(value, nd.NDArray) else np.asarray(value)
            if param.value.shape != value.shape or not np.array_equal(param.value.asnumpy(), value):
                raise MXNetError(f"Constant '{full}' already exists but its value doesn't match the new value")
        return param

    def update(self, other):
        """Adds the parameters of ``other`` (a ParameterDict or a dict);
        two different parameters under one name are an error."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise MXNetError(f"Cannot update self with other because they have different Parameters with "
                                 f"the same name '{k}'")
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initializes every parameter (``init`` is the default initializer
        for those without their own; ``Uniform()`` if None)."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Zeroes every gradient buffer."""
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx):
        """Moves every parameter to ``ctx``."""
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self):
        """The contexts the parameters live on."""
        out = []
        for v in self.values():
            for c in v.list_ctx():
                if c not in out:
                    out.append(c)
        return out

    def setattr(self, name, value):
        """Sets attribute ``name`` (e.g. ``grad_req``, ``lr_mult``) on every parameter."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename, strip_prefix=""):
        """Saves the parameters to ``filename`` (MXNet's ``.params`` format),
        keyed by name without ``strip_prefix``."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ValueError(f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name "
                                 f"'{param.name}' does not start with '{strip_prefix}'. this may be due to your "
                                 "Block shares parameters from other Blocks or you forgot to use "
                                 "``with name_scope()`` when creating child blocks.")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        nd.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
             cast_dtype=False, dtype_source="current"):
        """Loads parameters saved by :meth:`save` or by MXNet (names may
        carry ``arg:``/``aux:``); ``restore_prefix`` is put before every
        name. Every check runs before any parameter changes, so a failed
        load leaves the parameters as they were."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ValueError(f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' does "
                                     "not start with it")
        loaded = nd.load(filename)
        if isinstance(loaded, list) and not loaded:
            loaded = {}  # a file of no arrays (MXNet reads it back as an empty list)
        if not isinstance(loaded, dict):
            raise MXNetError(f"{filename}: holds a list of arrays without names, not parameters")
        arg_dict = {}
        for k, v in loaded.items():
            if k.startswith(("arg:", "aux:")):
                k = k[4:]
            arg_dict[restore_prefix + k] = v
        _load_checked(self._params, arg_dict, filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source)


def _load_checked(params, arrays, filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source):
    """Loads ``arrays`` (name → NDArray) into ``params`` (name → Parameter)
    after checking every name, shape and dtype. A parameter known under
    several names (shared by blocks) is present when any of them is."""
    names_of = {}
    for name, param in params.items():
        names_of.setdefault(id(param), []).append(name)
    if not allow_missing:
        for name, param in params.items():
            if not any(alias in arrays for alias in names_of[id(param)]):
                raise MXNetError(f"Parameter '{name}' is missing in file '{filename}', which contains parameters: "
                                 f"{_brief(arrays.keys())}. Set allow_missing=True to ignore missing parameters.")
    if not ignore_extra:
        for name in arrays:
            if name not in params:
                raise MXNetError(f"Parameter '{name}' loaded from file '{filename}' is not present in the block, "
                                 f"which contains parameters {_brief(params.keys())}. Set ignore_extra=True to "
                                 "ignore.")
    for name, arr in arrays.items():
        if name in params:
            params[name]._check_loadable(arr, cast_dtype, dtype_source)
    for name, arr in arrays.items():
        if name in params:
            params[name]._load_init(arr, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)


def _brief(names, limit=10):
    names = list(names)
    text = ", ".join(names[:limit])
    return text + (f", ... ({len(names)} in all)" if len(names) > limit else "")
