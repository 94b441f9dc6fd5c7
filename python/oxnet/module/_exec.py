"""``BoundGraph``: a module's symbol bound on one device, with the batch
loading, reshaping and parameter copying a module needs. A
``DataParallelExecutorGroup`` (executor_group.py) holds one per context."""

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataDesc

__all__ = ["BoundGraph"]


def _grad_reqs(arg_names, param_names, data_names, fixed_param_names, for_training, inputs_need_grad, grad_req):
    """``grad_req`` for every argument, as MXNet's executor group decides:
    parameters get ``grad_req`` (fixed ones ``null``), data gets it only with
    ``inputs_need_grad``, everything else ``null``; nothing without training."""
    if not for_training:
        return {k: "null" for k in arg_names}
    if isinstance(grad_req, str):
        reqs = {}
        for k in arg_names:
            if k in param_names:
                reqs[k] = "null" if k in fixed_param_names else grad_req
            elif k in data_names:
                reqs[k] = grad_req if inputs_need_grad else "null"
            else:
                reqs[k] = "null"
        return reqs
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ValueError(f"grad_req: {len(grad_req)} requests for {len(arg_names)} arguments")
        return dict(zip(arg_names, grad_req))
    if isinstance(grad_req, dict):
        # As MXNet: parameters default to ``write`` (fixed ones ``null``), data to
        # ``write`` with ``inputs_need_grad``; the dict overrides; names that are
        # not arguments of this symbol are ignored (one dict can serve modules
        # whose symbols differ, e.g. a fused and an unfused RNN).
        reqs = {}
        for k in arg_names:
            if k in param_names:
                reqs[k] = "null" if k in fixed_param_names else "write"
            elif k in data_names:
                reqs[k] = "write" if inputs_need_grad else "null"
            else:
                reqs[k] = "null"
        reqs.update((k, v) for k, v in grad_req.items() if k in reqs)
        return reqs
    raise TypeError(f"grad_req must be a str, a list or a dict, got {type(grad_req).__name__}")


class BoundGraph:
    """A symbol bound for given input shapes on one context.

    ``shared`` (another ``BoundGraph``) makes this one use its parameter,
    gradient and aux arrays (same memory), as MXNet's shared modules do.
    """

    def __init__(self, symbol, context, data_shapes, label_shapes, param_names, for_training, inputs_need_grad,
                 grad_req, fixed_param_names=(), state_names=(), shared=None, group2ctx=None, input_pool=None):
        self.symbol = symbol
        self.context = context
        self.group2ctx = dict(group2ctx) if group2ctx else {}
        # Input (data and label) arrays by name, shared with the groups bound
        # sharing this one (MXNet's ``shared_data_arrays``): a later bind takes
        # a view of a pooled array that is large enough instead of allocating.
        self.input_pool = input_pool if input_pool is not None else {}
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.param_names = list(param_names)
        self.state_names = list(state_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        data_names = [d.name for d in data_shapes]
        self.grad_req = _grad_reqs(self.arg_names, self.param_names, data_names, list(fixed_param_names),
                                   for_training, inputs_need_grad, grad_req)
        self._set_shapes(data_shapes, label_shapes)
        self.exec = self._bind_sharing(shared.exec if shared is not None else None, self._input_shapes())
        self._default_exec = self.exec
        self._default_shapes = self._input_shapes()

    # ----------------------------------------------------------- shapes
    def _set_shapes(self, data_shapes, label_shapes):
        for desc in list(data_shapes) + list(label_shapes or []):
            if desc.name not in self.arg_names:
                raise MXNetError(f"bind: input {desc.name!r} is not an argument of the symbol (arguments: "
                                 f"{', '.join(self.arg_names)})")
        batch_sizes = {d.shape[DataDesc.get_batch_axis(d.layout)] for d in list(data_shapes) + list(label_shapes or [])
                       if DataDesc.get_batch_axis(d.layout) >= 0 and len(d.shape) > 0}
        if len(batch_sizes) > 1:
            raise MXNetError(f"bind: all data must have the same batch size, got {sorted(batch_sizes)} "
                             f"({[(d.name, d.shape) for d in list(data_shapes) + list(label_shapes or [])]})")
        self.batch_size = batch_sizes.pop() if batch_sizes else None
        self.data_shapes = list(data_shapes)
        self.label_shapes = list(label_shapes) if label_shapes is not None else None
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes] if self.label_shapes is not None else []

    def _input_shapes(self):
        return {d.name: tuple(d.shape) for d in self.data_shapes + (self.label_shapes or [])}

    def _context_of(self, name):
        """Where argument ``name`` lives: its ``ctx_group``'s context when
        ``group2ctx`` maps it (MXNet's model-parallel placement), else the
        graph's."""
        group = self._ctx_groups.get(name)
        where = self.group2ctx.get(group, self.context) if group is not None else self.context
        if where != self.context and "gpu" in (where.device_type, self.context.device_type):
            raise MXNetError(f"bind: group2ctxs puts {name!r} (ctx_group {group!r}) on {where} and the module on "
                             f"{self.context}; oxnet's model-parallel placement is for host contexts only "
                             "(a graph cannot span devices yet)")
        return where

    @property
    def _ctx_groups(self):
        groups = getattr(self, "_ctx_groups_cache", None)
        if groups is None:
            attrs = self.symbol.attr_dict()
            groups = {k: v["__ctx_group__"] for k, v in attrs.items() if "__ctx_group__" in v}
            self._ctx_groups_cache = groups
        return groups

    def _pooled_input(self, name, shape, dtype, ctx):
        """An input array of ``shape``: a view of the pooled array of that
        name when it is large enough (same dtype and context), else a new
        array that replaces it in the pool."""
        size = 1
        for n in shape:
            size *= n
        have = self.input_pool.get(name)
        if have is not None and have.dtype == dtype and have.context == ctx and have.size >= size:
            if tuple(have.shape) == tuple(shape):
                return have
            return have.reshape((-1,))[:size].reshape(shape)
        arr = nd.zeros(shape, ctx=ctx, dtype=dtype)
        self.input_pool[name] = arr
        return arr

    def _bind_sharing(self, base, shapes):
        """An executor for the input ``shapes``. With ``base`` (another
        executor of a compatible symbol), parameters, gradients and aux states
        that ``base`` has are its arrays (same memory); inputs come from the
        input pool; everything else is new and zeroed."""
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        types = {d.name: d.dtype for d in self.data_shapes + (self.label_shapes or [])}
        arg_types, _, aux_types = self.symbol.infer_type(**types)
        base_args = base.arg_dict if base is not None else {}
        base_grads = base.grad_dict if base is not None else {}
        base_aux = base.aux_dict if base is not None else {}
        args, grads = {}, {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            dtype = dtype if dtype is not None else "float32"
            ctx = self._context_of(name)
            old = base_args.get(name)
            if name in shapes:
                args[name] = self._pooled_input(name, tuple(shape), np.dtype(dtype), ctx)
            elif old is not None and tuple(old.shape) == tuple(shape):
                args[name] = old
                if self.grad_req[name] != "null" and base_grads.get(name) is not None:
                    grads[name] = base_grads[name]
            elif old is not None:
                raise MXNetError(f"bind: argument {name!r} would change shape from {old.shape} to {shape}")
            else:
                args[name] = nd.zeros(shape, ctx=ctx, dtype=dtype)
            if self.grad_req[name] != "null" and name not in grads:
                grads[name] = nd.zeros(shape, ctx=ctx, dtype=dtype)
        aux = {}
        for name, shape, dtype in zip(self.aux_names, aux_shapes, aux_types):
            old = base_aux.get(name)
            if old is None:
                aux[name] = nd.zeros(shape, ctx=self._context_of(name), dtype=dtype or "float32")
            elif tuple(old.shape) != tuple(shape):
                raise MXNetError(f"bind: auxiliary state {name!r} would change shape to {shape}")
            else:
                aux[name] = old
        reqs = {k: (v if k in grads else "null") for k, v in self.grad_req.items()}
        return self.symbol.bind(self.context, args, args_grad=grads, grad_req=reqs, aux_states=aux)

    def reshape(self, data_shapes, label_shapes):
        """Rebinds for new input shapes, keeping the parameter memory."""
        self._set_shapes(data_shapes, label_shapes)
        shapes = self._input_shapes()
        if shapes == self._default_shapes:
            self.exec = self._default_exec
        else:
            self.exec = self._bind_sharing(self._default_exec, shapes)

    # ----------------------------------------------------------- arrays
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies parameter values into the executor."""
        self.exec.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    # ----------------------------------------------------------- running
    def load_input(self, name, src):
        """Copies ``src`` into input ``name`` (shapes must match)."""
        dst = self.exec.arg_dict[name]
        if tuple(src.shape) != tuple(dst.shape):
            raise MXNetError(f"forward: input {name!r} has shape {tuple(src.shape)}, the module is bound for "
                             f"{tuple(dst.shape)} on {self.context}")
        src.copyto(dst)

    def run_forward(self, is_train):
        """Runs forward on the loaded inputs."""
        self.exec.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Back-propagates (``out_grads``: list of NDArray, None for ones)."""
        self.exec.backward(out_grads=out_grads)

    def get_output_shapes(self):
        """``(name, shape)`` of every output for the bound input shapes."""
        return list(zip(self.output_names, [tuple(o.shape) for o in self.exec.outputs]))

    def install_monitor(self, mon):
        """Installs ``mon`` (an ``mx.monitor.Monitor``-like object) on the executor."""
        mon.install(self.exec)
