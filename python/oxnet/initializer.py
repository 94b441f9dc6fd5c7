"""Weight initializers (MXNet 1.x's ``mx.init`` / ``mx.initializer``).

An initializer fills a parameter's array in place. Called as
``init(InitDesc(name, attrs), arr)``, it picks what to do from the name's ending
(``*weight`` gets :meth:`Initializer._init_weight`, ``*bias`` zeros, ``*gamma``
ones, ...) unless the ``__init__`` attribute names an initializer for this
parameter. Users subclass :class:`Initializer` and override ``_init_weight`` (and
``_init_bias`` ...); the built-in classes describe themselves by their JSON spec
and the engine fills the array (random draws come from the generator that
``mx.random.seed`` seeds)::

    import oxnet as mx
    w = mx.nd.zeros((64, 32))
    mx.init.Xavier(magnitude=2)(mx.init.InitDesc("fc_weight"), w)
    mx.init.create('["normal", {"sigma": 0.5}]').dumps()
"""

import json
import logging
import re
import warnings
from math import sqrt

import numpy as np

from . import _oxnet
from .ndarray import NDArray

__all__ = [
    "InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero", "Zeros", "One",
    "Ones", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear", "LSTMBias",
    "FusedRNN",
]


class InitDesc(str):
    """The name of a parameter to initialize, with its attributes.

    Parameters
    ----------
    name : str
        The parameter's name.
    attrs : dict of str to str, optional
        Its attributes (``Symbol.attr_dict()``); ``__init__`` names its own
        initializer (a ``dumps()`` string, a registered name or an instance).
    global_init : Initializer, optional
        The initializer to fall back to.
    """

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


def _jsonable(value):
    """``value`` with arrays turned into nested lists and numpy scalars into Python numbers."""
    if isinstance(value, NDArray):
        return value.asnumpy().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _spec(name, **kwargs):
    """The engine's JSON spec of built-in initializer ``name``."""
    return json.dumps([name, {k: _jsonable(v) for k, v in kwargs.items()}])


def _fill(spec, name, arr, method="weight"):
    """Fills ``arr`` in the engine with method ``method`` of initializer ``spec``."""
    if not isinstance(arr, NDArray):
        raise TypeError("initializer %s: arr must be an NDArray, got %s" % (name, type(arr).__name__))
    _oxnet.init_fill(spec, str(name), arr, method)


_ZERO = '["zero", {}]'


class Initializer:
    """The base class of initializers.

    Subclasses override ``_init_weight(self, name, arr)`` (and may override
    ``_init_bias``, ``_init_gamma``, ``_init_beta``, ...), filling ``arr`` in place.
    Keyword arguments given to ``__init__`` are what :meth:`dumps` records.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Switches logging of every initialized array on or off.

        Parameters
        ----------
        verbose : bool
            Whether to log.
        print_func : callable, optional
            Maps an NDArray to the string logged; defaults to its root mean square,
            ``norm(x) / sqrt(x.size)``.
        """
        self._verbose = verbose
        if print_func is None:
            def rms(x):
                return str(float(np.linalg.norm(x.asnumpy().ravel())) / sqrt(max(x.size, 1)))
            print_func = rms
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        """Logs ``desc`` initialized by ``init`` when verbose."""
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """The initializer as a JSON string, ``'["name", {kwargs}]'``.

        ``create`` reads it back; it is what a symbol's ``__init__`` attribute holds.
        """
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        """Fills ``arr`` for the parameter ``desc``.

        Parameters
        ----------
        desc : InitDesc or str
            The parameter. An ``InitDesc`` follows the rules of MXNet 1.x: its
            ``__init__`` attribute first, then the name's ending (weight, bias, gamma,
            beta, min, max, weight_quantize, bias_quantize). A plain string follows
            the older rules (deprecated).
        arr : NDArray
            The array to fill in place.
        """
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            chosen = create(init)
            if hasattr(chosen, "_init_weight"):
                chosen._init_weight(desc, arr)
            else:
                chosen(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in (("weight", self._init_weight), ("bias", self._init_bias),
                               ("gamma", self._init_gamma), ("beta", self._init_beta),
                               ("min", self._init_zero), ("max", self._init_one),
                               ("weight_quantize", self._init_quantized_weight),
                               ("bias_quantize", self._init_quantized_bias)):
            if desc.endswith(suffix):
                method(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """Fills ``arr`` for a parameter known only by its name (MXNet's older rules)."""
        warnings.warn("Calling an initializer with init(str, NDArray) is deprecated; "
                      "use init(mx.init.InitDesc(...), NDArray)", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("name must be a string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be an NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        elif name.endswith("bias"):
            self._init_bias(name, arr)
        elif name.endswith("gamma"):
            self._init_gamma(name, arr)
        elif name.endswith("beta"):
            self._init_beta(name, arr)
        elif name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith("moving_mean"):
            self._init_zero(name, arr)
        elif name.endswith("moving_var"):
            self._init_one(name, arr)
        elif name.endswith(("moving_inv_var", "moving_avg", "min")):
            self._init_zero(name, arr)
        elif name.endswith("max"):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_bilinear(self, name, arr):
        _fill(_ZERO, name, arr, "bilinear")

    def _init_loc_bias(self, name, arr):
        _fill(_ZERO, name, arr, "loc_bias")

    def _init_zero(self, name, arr):
        _fill(_ZERO, name, arr, "zero")

    def _init_one(self, name, arr):
        _fill(_ZERO, name, arr, "one")

    def _init_bias(self, name, arr):
        _fill(_ZERO, name, arr, "bias")

    def _init_quantized_bias(self, name, arr):
        _fill(_ZERO, name, arr, "quantized_bias")

    def _init_gamma(self, name, arr):
        _fill(_ZERO, name, arr, "gamma")

    def _init_beta(self, name, arr):
        _fill(_ZERO, name, arr, "beta")

    def _init_weight(self, name, arr):
        """Fills a weight: subclasses must override it."""
        raise NotImplementedError("%s must override _init_weight" % type(self).__name__)

    def _init_quantized_weight(self, name, arr):
        _fill(_ZERO, name, arr, "quantized_weight")

    def _init_default(self, name, _arr):
        raise ValueError(
            "Unknown initialization pattern for %s. Default initialization is limited to names ending in "
            '"weight", "bias", "gamma" (1.0), "beta" (0.0), "min" (0.0) and "max" (1.0). '
            "Please use mx.sym.Variable(init=mx.init.*) to set the initialization pattern" % name)

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in self._kwargs.items()))


_REGISTRY = {}


def _register(klass, name=None):
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError("Can only register subclasses of Initializer, got %r" % (klass,))
    name = (name or klass.__name__).lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn("New initializer %s.%s registered with name %s is overriding existing initializer %s.%s"
                      % (klass.__module__, klass.__name__, name, _REGISTRY[name].__module__,
                         _REGISTRY[name].__name__), UserWarning, stacklevel=3)
    _REGISTRY[name] = klass
    return klass


def register(klass):
    """Registers an Initializer subclass under its lower-cased class name, so that
    ``create("name")`` and ``__init__`` attributes can name it. Use as a decorator."""
    return _register(klass)


def alias(*aliases):
    """Decorator registering an Initializer subclass under extra names."""
    def reg(klass):
        for name in aliases:
            _register(klass, name)
        return klass
    return reg


def create(*args, **kwargs):
    """Makes an initializer from a spec.

    Parameters
    ----------
    initializer : Initializer, str or dict
        An instance (returned as is), a registered name (``"xavier"``, case-insensitive;
        further arguments go to its constructor), a ``dumps()`` JSON string
        (``'["xavier", {"magnitude": 2}]'``), a JSON object string or dict with an
        ``"initializer"`` key.
    """
    if args:
        spec, args = args[0], args[1:]
    elif "initializer" in kwargs:
        spec = kwargs.pop("initializer")
    else:
        raise TypeError("create() needs an initializer: an instance, a name or a JSON string")
    if isinstance(spec, (Initializer, Mixed, Load)):
        if args or kwargs:
            raise ValueError("initializer is already an instance; additional arguments are invalid")
        return spec
    if isinstance(spec, dict):
        return create(**spec)
    if not isinstance(spec, str):
        raise TypeError("initializer must be an Initializer, a name or a JSON string, got %s"
                        % type(spec).__name__)
    text = spec.strip()
    if text.startswith("["):
        if args or kwargs:
            raise ValueError("a JSON initializer spec takes no further arguments")
        parsed = json.loads(text)
        if not isinstance(parsed, list) or not parsed or not isinstance(parsed[0], str):
            raise ValueError("initializer spec %s must be [name, {arguments}]" % text)
        return create(parsed[0], **(parsed[1] if len(parsed) > 1 and parsed[1] else {}))
    if text.startswith("{"):
        if args or kwargs:
            raise ValueError("a JSON initializer spec takes no further arguments")
        return create(**json.loads(text))
    name = text.lower()
    if name not in _REGISTRY:
        raise ValueError("initializer %s is not registered (known: %s); register it with "
                         "mx.init.register first" % (name, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[name](*args, **kwargs)


class Load:
    """Initializes parameters from saved arrays, by name.

    Parameters
    ----------
    param : str or dict of str to NDArray
        A parameter file (read with ``mx.nd.load``) or a dict. The prefixes ``arg:``
        and ``aux:`` of saved names are dropped.
    default_init : Initializer, optional
        Initializes parameters that are not among the saved ones.
    verbose : bool
        Logs where each parameter's values came from.
    """

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            from .ndarray import load as _load  # pylint: disable=import-outside-toplevel
            param = _load(param)
        if not isinstance(param, dict):
            raise TypeError("Load needs a file name or a dict of name -> NDArray, got %s" % type(param).__name__)
        self.param = {}
        for name, arr in param.items():
            if not isinstance(arr, NDArray):
                from .ndarray import array as _array  # pylint: disable=import-outside-toplevel
                arr = _array(arr)
            key = name[4:] if name.startswith(("arg:", "aux:")) else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        """Copies the saved array ``name`` into ``arr``, or falls back to ``default_init``."""
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError("Parameter %s cannot be initialized from loading. Shape mismatch, "
                                 "target %s vs loaded %s" % (name, tuple(arr.shape), tuple(src.shape)))
            _oxnet.init_constant(str(name), arr, src)
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError("Cannot initialize %s: not found in the loaded parameters and no default "
                             "initializer was given" % name)
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)

    def _init_weight(self, name, arr):
        self(name, arr)


class Mixed:
    """Initializes parameters with the first initializer whose pattern matches.

    Parameters
    ----------
    patterns : list of str
        Regular expressions matched at the start of parameter names (``re.match``).
    initializers : list of Initializer
        One initializer per pattern. End with ``".*"`` for a default.
    """

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError("Mixed: %d patterns but %d initializers" % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        """Initializes ``arr`` with the initializer of the first pattern matching ``name``."""
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError('Parameter name %s did not match any pattern. Consider adding a ".*" pattern '
                         "at the end with a default Initializer." % name)

    def _init_weight(self, name, arr):
        self(name, arr)


@register
@alias("zeros")
class Zero(Initializer):
    """Fills weights with zeros."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        _fill(_ZERO, name, arr)


@register
@alias("ones")
class One(Initializer):
    """Fills weights with ones."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        _fill('["one", {}]', name, arr)


Zeros = Zero
Ones = One


@register
class Constant(Initializer):
    """Fills weights with a value: a number, or a list / NDArray / numpy array
    broadcast to the weight's shape.

    Parameters
    ----------
    value : float, list, NDArray or numpy.ndarray
        The value. ``dumps()`` writes arrays as nested lists, so a Constant stored
        as a symbol's ``__init__`` attribute survives serialisation.
    """

    def __init__(self, value):
        # as MXNet, the keyword arguments hold arrays as nested lists (JSON)
        super().__init__(value=_jsonable(value))
        self.value = value

    def _init_weight(self, name, arr):
        value = self.value
        if isinstance(value, NDArray):
            if not isinstance(arr, NDArray):
                raise TypeError("initializer constant: arr must be an NDArray")
            _oxnet.init_constant(str(name), arr, value)
        elif isinstance(value, (bool, int, float, np.generic)):
            _fill(_spec("constant", value=float(value)), name, arr)
        else:
            _fill(_spec("constant", value=value), name, arr)


@register
class Uniform(Initializer):
    """Fills weights with draws from the uniform distribution on ``[-scale, scale]``.

    Parameters
    ----------
    scale : float
        The bound (default 0.07).
    """

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        _fill(_spec("uniform", scale=self.scale), name, arr)


@register
class Normal(Initializer):
    """Fills weights with draws from N(0, sigma²).

    Parameters
    ----------
    sigma : float
        The standard deviation (default 0.01).
    """

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        _fill(_spec("normal", sigma=self.sigma), name, arr)


@register
class Orthogonal(Initializer):
    """Fills weights with a scaled (semi-)orthogonal matrix (Saxe et al. 2013): the
    weight seen as ``shape[0]`` rows has orthonormal rows, or orthonormal columns
    when it has more rows than columns, times ``scale``.

    Parameters
    ----------
    scale : float
        The factor (default 1.414).
    rand_type : str
        ``"uniform"`` or ``"normal"``: the draws the basis is built from.
    """

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name, arr):
        _fill(_spec("orthogonal", scale=self.scale, rand_type=self.rand_type), name, arr)


@register
class Xavier(Initializer):
    """Xavier (Glorot) initialization: draws scaled by ``c = sqrt(magnitude / factor)``.

    The factor is fan-in, fan-out or their mean, where fan-in is ``shape[1]`` and
    fan-out ``shape[0]``, each times the product of the remaining axes. Uniform draws
    lie in ``[-c, c]``; Gaussian draws have deviation ``c``. Weights need at least two
    dimensions.

    Parameters
    ----------
    rnd_type : str
        ``"uniform"`` or ``"gaussian"``.
    factor_type : str
        ``"avg"``, ``"in"`` or ``"out"``.
    magnitude : float
        The scale's numerator (default 3).
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        _fill(_spec("xavier", rnd_type=self.rnd_type, factor_type=self.factor_type,
                    magnitude=self.magnitude), name, arr)


@register
class MSRAPrelu(Xavier):
    """MSRA (He) initialization for layers followed by a PReLU (He et al. 2015):
    Gaussian Xavier with magnitude ``2 / (1 + slope²)``.

    Parameters
    ----------
    factor_type : str
        ``"avg"``, ``"in"`` or ``"out"``.
    slope : float
        The initial slope of the PReLU (default 0.25; 0 for ReLU).
    """

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Fills a 4-D ``(out, in, height, width)`` kernel with bilinear interpolation
    weights, for upsampling (deconvolution) layers."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        _fill('["bilinear", {}]', name, arr)


@register
class LSTMBias(Initializer):
    """Fills an LSTM cell's bias with zeros, except the forget gate's (the second
    quarter along axis 0), which gets ``forget_bias``.

    Parameters
    ----------
    forget_bias : float
        The forget gate's bias (default 1.0).
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        _fill(_spec("lstmbias", forget_bias=self.forget_bias), name, arr)


@register
class FusedRNN(Initializer):
    """Fills the flat parameter vector of a fused ``RNN`` layer
    (``mx.rnn.FusedRNNCell``) piece by piece: each per-gate weight matrix and
    bias (as ``FusedRNNCell.unpack_weights`` names them) gets ``init`` (or,
    when ``init`` is None, the global initializer, by name), except that an
    LSTM's forget-gate biases get ``forget_bias``.

    Parameters
    ----------
    init : Initializer, str or None
        The initializer of the pieces (an instance or a ``dumps()`` string).
    num_hidden, num_layers, mode, bidirectional, forget_bias
        As given to ``FusedRNNCell``.
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        from .rnn.rnn_cell import FusedRNNCell  # pylint: disable=import-outside-toplevel

        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode, self._bidirectional,
                            forget_bias=self._forget_bias, prefix='')
        # the pieces are views into ``arr``: filling them fills it
        pieces = cell._slice_weights(arr, cell._num_input(arr.size), self._num_hidden)
        fallback = getattr(desc, "global_init", None)
        chosen = self._init if self._init is not None else fallback
        for name, piece in pieces.items():
            if self._mode == 'lstm' and name.endswith('_f_bias'):
                piece[:] = self._forget_bias
                continue
            if chosen is None:
                raise ValueError("FusedRNN initializer: no init given and no global initializer for %s" % desc)
            chosen(InitDesc(name, global_init=fallback), piece)
