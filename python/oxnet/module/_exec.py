"""``BoundGraph``: a module's symbol bound on one device, with the batch
loading, reshaping and parameter copying a module needs (MXNet's
``DataParallelExecutorGroup`` restricted to one context)."""

from collections import OrderedDict

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
                 grad_req, fixed_param_names=(), state_names=(), shared=None):
        self.symbol = symbol
        self.context = context
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
        if shared is not None:
            self.exec = self._bind_sharing(shared.exec, self._input_shapes())
        else:
            types = {d.name: d.dtype for d in self.data_shapes + (self.label_shapes or [])
                     if d.name in self.arg_names}
            self.exec = symbol.simple_bind(context, grad_req=self.grad_req, type_dict=types,
                                           **self._input_shapes())
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

    def _bind_sharing(self, base, shapes):
        """A new executor for ``shapes`` whose parameters, gradients and aux
        states are ``base``'s arrays (inputs get new arrays)."""
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        types = {d.name: d.dtype for d in self.data_shapes + (self.label_shapes or [])}
        arg_types, _, _ = self.symbol.infer_type(**types)
        base_args, base_grads, base_aux = base.arg_dict, base.grad_dict, base.aux_dict
        args, grads = {}, {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            old = base_args.get(name)
            if old is not None and name not in shapes and tuple(old.shape) == tuple(shape):
                args[name] = old
                if self.grad_req[name] != "null":
                    grads[name] = base_grads.get(name)
                    if grads[name] is None:
                        grads[name] = nd.zeros(shape, ctx=self.context, dtype=dtype)
            else:
                if name not in shapes:
                    raise MXNetError(f"bind: argument {name!r} would change shape from "
                                     f"{None if old is None else old.shape} to {shape}")
                args[name] = nd.zeros(shape, ctx=self.context, dtype=dtype)
                if self.grad_req[name] != "null":
                    grads[name] = nd.zeros(shape, ctx=self.context, dtype=dtype)
        aux = {}
        for name, shape in zip(self.aux_names, aux_shapes):
            old = base_aux.get(name)
            if old is None or tuple(old.shape) != tuple(shape):
                raise MXNetError(f"bind: auxiliary state {name!r} would change shape to {shape}")
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
    @property
    def param_arrays(self):
        """``[[array]]`` per parameter (one device), in ``param_names`` order."""
        d = self.exec.arg_dict
        return [[d[n]] for n in self.param_names]

    @property
    def grad_arrays(self):
        """``[[grad or None]]`` per parameter."""
        g = self.exec.grad_dict
        return [[g.get(n)] for n in self.param_names]

    @property
    def aux_arrays(self):
        """``[[array]]`` per auxiliary state."""
        d = self.exec.aux_dict
        return [[d[n]] for n in self.aux_names]

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies parameter values into the executor."""
        self.exec.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Copies the executor's parameter values into the given dicts' arrays."""
        args = self.exec.arg_dict
        for name in self.param_names:
            args[name].copyto(arg_params[name])
        auxs = self.exec.aux_dict
        for name in self.aux_names:
            auxs[name].copyto(aux_params[name])

    # ----------------------------------------------------------- running
    def _load(self, arrays, names):
        args = self.exec.arg_dict
        for name, src in zip(names, arrays):
            dst = args[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise MXNetError(f"forward: input {name!r} has shape {src.shape}, the module is bound for "
                                 f"{dst.shape}")
            src.copyto(dst)

    def forward(self, data_batch, is_train=None):
        """Loads the batch's data (and labels, if any) and runs forward."""
        self._load(data_batch.data, self.data_names)
        if self.label_shapes is not None and data_batch.label:
            self._load(data_batch.label, self.label_names)
        if is_train is None:
            is_train = self.for_training
        self.exec.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Back-propagates (``out_grads``: NDArray or list, None for ones)."""
        if not self.for_training:
            raise MXNetError("backward: re-bind with for_training=True to run backward")
        self.exec.backward(out_grads=out_grads)

    def get_outputs(self):
        """The outputs of the last forward."""
        return list(self.exec.outputs)

    def get_output_shapes(self):
        """``(name, shape)`` of every output for the bound input shapes."""
        return list(zip(self.output_names, [tuple(o.shape) for o in self.exec.outputs]))

    def get_input_grads(self):
        """Gradients of the data inputs, in ``data_shapes`` order (None for
        an input whose grad_req is ``null``, as MXNet gives)."""
        g = self.exec.grad_dict
        return [g.get(n) for n in self.data_names]

    def get_states(self):
        """The state input arrays."""
        d = self.exec.arg_dict
        return [d[n] for n in self.state_names]

    def set_states(self, states=None, value=None):
        """Copies ``states`` into the state inputs, or fills them with ``value``."""
        d = self.exec.arg_dict
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            if len(states) != len(self.state_names):
                raise ValueError(f"set_states: {len(states)} states for {len(self.state_names)} state inputs")
            for name, src in zip(self.state_names, states):
                src = src[0] if isinstance(src, (list, tuple)) else src
                src.copyto(d[name])
        else:
            if value is None:
                raise ValueError("set_states: give states or value")
            for name in self.state_names:
                d[name][:] = value

    def update_metric(self, eval_metric, labels):
        """Updates ``eval_metric`` with labels by label name and outputs by output name."""
        labels_ = OrderedDict(zip(self.label_names, labels or []))
        preds = OrderedDict(zip(self.output_names, self.exec.outputs))
        eval_metric.update_dict(labels_, preds)

    def install_monitor(self, mon):
        """Installs ``mon`` (an ``mx.monitor.Monitor``-like object) on the executor."""
        mon.install(self.exec)
