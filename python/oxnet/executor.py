"""``Executor``: a symbol bound to arrays (``Symbol.bind``/``simple_bind``).

``forward`` runs the graph (keyword arrays are copied into the bound
arguments first), ``backward`` writes the gradients of the arguments into
``grad_arrays`` according to each argument's ``grad_req`` (``write``,
``add`` or ``null``).
"""

from .base import MXNetError

__all__ = ["Executor"]


class _UnknownParameter(MXNetError, ValueError):
    """A parameter name the executor does not have (MXNet raised ValueError)."""


class Executor:
    """A bound symbol (made by ``Symbol.bind`` or ``Symbol.simple_bind``)."""

    def __init__(self, handle, ctx, symbol):
        self._h = handle
        self._ctx = ctx
        self._symbol = symbol
        self._arg_names = handle.arg_names()
        self._aux_names = handle.aux_names()
        self._monitor = None

    def forward(self, is_train=False, **kwargs):
        """Runs the graph; keyword arrays (or values) are first copied into
        the arguments of those names. Returns the outputs."""
        arg_dict = self.arg_dict
        for name, value in kwargs.items():
            if name not in arg_dict:
                raise MXNetError(f"forward: unknown argument {name!r} (arguments: {', '.join(self._arg_names)})")
            arg_dict[name][:] = value
        return self._h.forward(bool(is_train))

    def backward(self, out_grads=None, is_train=True):
        """Back-propagates from the outputs of the last ``forward(is_train=True)``
        with ``out_grads`` (an NDArray, a list, or None for ones)."""
        del is_train
        from .ndarray import NDArray

        if out_grads is None:
            grads = []
        elif isinstance(out_grads, NDArray):
            grads = [out_grads]
        elif isinstance(out_grads, dict):
            grads = [out_grads.get(n) for n in self._h.output_names()]
        else:
            grads = list(out_grads)
        self._h.backward(grads)

    @property
    def outputs(self):
        """The output arrays of the last forward."""
        return self._h.outputs()

    @property
    def arg_arrays(self):
        """The argument arrays, in ``list_arguments`` order."""
        return self._h.arg_arrays()

    @property
    def grad_arrays(self):
        """The gradient arrays (None where grad_req is null)."""
        return self._h.grad_arrays()

    @property
    def aux_arrays(self):
        """The auxiliary-state arrays."""
        return self._h.aux_arrays()

    @property
    def arg_dict(self):
        """Argument arrays by name."""
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self):
        """Gradient arrays by argument name (arguments with grad_req null are left out)."""
        return {n: g for n, g in zip(self._arg_names, self.grad_arrays) if g is not None}

    @property
    def aux_dict(self):
        """Aux-state arrays by name."""
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self):
        """Output arrays by output name."""
        return dict(zip(self._h.output_names(), self.outputs))

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies parameter arrays in by name. A name the executor lacks is
        an error (a ``ValueError``, as in MXNet) unless
        ``allow_extra_params``."""
        arg_params, aux_params = dict(arg_params), dict(aux_params or {})
        if not allow_extra_params:
            for names, given, kind in ((self._arg_names, arg_params, "argument"),
                                       (self._aux_names, aux_params, "auxiliary state")):
                extra = [n for n in given if n not in names]
                if extra:
                    raise _UnknownParameter(f"copy_params_from: the executor has no {kind} `{extra[0]}` (pass "
                                            "allow_extra_params=True to skip it)")
        self._h.copy_params_from(arg_params, aux_params, bool(allow_extra_params))

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes (``name=shape`` keywords).

        Arrays whose shape stays are shared; one that shrinks becomes a view
        of the start of the old one, one that grows gets new memory (only
        with ``allow_up_sizing``). Arguments not named may change shape only
        with ``partial_shaping``. The new executor reuses this one's working
        memory where it fits, as in MXNet."""
        shapes = {k: [int(d) for d in v] for k, v in kwargs.items()}
        return Executor(self._h.reshape(shapes, bool(partial_shaping), bool(allow_up_sizing)), self._ctx,
                        self._symbol)

    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls ``callback(name, array)`` with every operator output during
        forward and backward (a backward kernel's outputs are named
        ``<forward node>_backward_output[k]``, as in MXNet)."""
        del monitor_all
        self._monitor = callback
        self._h.set_monitor(callback)

    def get_optimized_symbol(self):
        """The symbol as this executor runs it, after the graph passes
        (common subexpression elimination unless the environment sets
        ``MXNET_ELIMINATE_COMMON_EXPR=0``, as in MXNet)."""
        from .symbol import Symbol
        return Symbol(self._h.optimized_symbol())

    def debug_str(self):
        """A listing of the bound graph, then (as MXNet's) the memory its
        operator outputs take: ``Total N MB allocated``, the planned
        buffers for the forward and backward steps (shared where lifetimes
        allow), not counting the bound argument, gradient and aux arrays."""
        planned, naive, blocks = self._h.memory_plan()
        mb = planned >> 20
        listing = self._symbol.debug_str()
        return (listing + ("" if listing.endswith("\n") else "\n")
                + f"Total {mb} MB allocated\n"
                + f"Memory plan: {blocks} blocks, {planned} bytes (one buffer per output would take {naive})\n")
