"""Containers and basic layers: ``Sequential``, ``HybridSequential``,
``Dense``, ``Dropout``, ``Flatten``, ``Embedding``, ``Identity``,
``Lambda`` and ``HybridLambda``; the normalization layers (defined in
:mod:`.norm_layers`) are importable from here too, as in MXNet."""

import warnings

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from ..block import Block, HybridBlock
from .activations import Activation
from .norm_layers import BatchNorm, BatchNormReLU, InstanceNorm, LayerNorm, GroupNorm

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Flatten", "Embedding", "Identity", "Lambda",
           "HybridLambda", "BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm"]


def _chain(children, x, args):
    """Feeds ``x`` through ``children`` in order (a tuple output feeds the
    next block's positional arguments)."""
    for block in children:
        x = block(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args = x[1:]
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x


class _Chain:
    """What Sequential and HybridSequential share: adding, indexing and
    slicing children."""

    def add(self, *blocks):
        """Appends blocks."""
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self):
        return len(self._children)


class Sequential(_Chain, Block):
    """Blocks run one after the other: ``net.add(a, b, c)``."""

    def forward(self, x, *args):
        return _chain(self._children.values(), x, args)

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. Consider "
                          "using HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Chain, HybridBlock):
    """HybridBlocks run one after the other; hybridizes into one graph
    (adding a plain Block is an error)."""

    def hybrid_forward(self, F, x, *args):
        return _chain(self._children.values(), x, args)


class Dense(HybridBlock):
    """A fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    ``units`` outputs; ``in_units`` (0: inferred on the first call);
    ``flatten`` collapses all but the first input axis (else the layer
    applies to the last axis); ``weight_initializer``/``bias_initializer``
    override the ones given to ``initialize`` (bias: zeros).
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        act = self.act._act_type if self.act else "linear"
        return f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}, {act})"


class Dropout(HybridBlock):
    """Zeroes inputs with probability ``rate`` in training (scaling the rest
    by ``1/(1-rate)``); ``axes`` shares the mask along those axes."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class Flatten(HybridBlock):
    """Collapses all axes but the first: ``(N, ...) → (N, prod(...))``."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class Embedding(HybridBlock):
    """Rows of a learned ``(input_dim, output_dim)`` table picked by index:
    output shape ``x.shape + (output_dim,)``."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, sparse_grad=False,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._kwargs['input_dim']} -> {self._kwargs['output_dim']}, " \
               f"{np.dtype(self._kwargs['dtype']).name})"


class Identity(HybridBlock):
    """Returns its input."""

    def hybrid_forward(self, F, x):
        return x


def _resolve(function, namespace, what):
    if isinstance(function, str):
        if not hasattr(namespace, function):
            raise MXNetError(f"{what}: function name {function!r} is not found in {namespace.__name__}")
        return getattr(namespace, function)
    if not callable(function):
        raise MXNetError(f"{what}: unrecognized function in lambda: {function} of type {type(function)}")
    return function


class Lambda(Block):
    """Wraps a function (or the name of an ``mx.nd`` function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        self._func = _resolve(function, nd, "Lambda")
        self._func_name = getattr(self._func, "__name__", repr(self._func))

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """Wraps ``function(F, *args)`` (or the name of an operator present in
    both ``mx.nd`` and ``mx.sym``) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            from ... import symbol

            _resolve(function, nd, "HybridLambda")
            _resolve(function, symbol, "HybridLambda")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = name
        else:
            self._func = _resolve(function, nd, "HybridLambda")
            self._func_name = getattr(function, "__name__", repr(function))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"
