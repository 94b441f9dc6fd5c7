"""``DataParallelExecutorGroup``: a module's symbol bound once per context,
each executor computing its slice of the batch (MXNet 1.x's class of that
name, which ``Module`` uses for ``context=[...]``).

The batch is cut along each input's batch axis (from its ``layout``, ``N``;
axis 0 by default) in proportion to ``workload``; outputs and input
gradients are joined again along their batch axis, and parameters live on
every context (their gradients are summed by the module's kvstore).
"""

import logging
from collections import OrderedDict

from .. import context as ctx
from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataDesc
from ._exec import BoundGraph

__all__ = ["DataParallelExecutorGroup", "split_input_slice"]


def split_input_slice(batch_size, work_load_list):
    """Cuts ``range(batch_size)`` into one ``slice`` per entry of
    ``work_load_list``, sized in proportion to it (rounded; the last slice
    takes what rounding left). An empty slice is an error."""
    total = float(sum(work_load_list))
    if total <= 0:
        raise ValueError(f"work_load_list must have a positive sum, got {list(work_load_list)}")
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    short = batch_size - sum(counts)
    if short > 0:
        counts[-1] += short
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ValueError(f"a batch of {batch_size} cannot be split over {len(work_load_list)} contexts with "
                             f"work loads {list(work_load_list)}: some slices would be empty")
        slices.append(slice(begin, end))
    return slices


def _group2ctx_per_device(group2ctxs, n):
    """One ``{group: Context}`` per device from ``group2ctxs``: a list (one
    dict per device), or a dict whose values are a context (every device) or
    a list of one or ``n`` contexts."""
    if group2ctxs is None:
        return [None] * n
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n:
            raise ValueError(f"group2ctxs: a list of {len(group2ctxs)} dicts for {n} contexts")
        return group2ctxs
    if not isinstance(group2ctxs, dict):
        raise TypeError(f"group2ctxs must be a dict or a list of dicts, got {type(group2ctxs).__name__}")
    per_device = [{} for _ in range(n)]
    for group, where in group2ctxs.items():
        if isinstance(where, ctx.Context):
            where = [where] * n
        elif len(where) == 1:
            where = list(where) * n
        elif len(where) != n:
            raise ValueError(f"group2ctxs[{group!r}]: {len(where)} contexts for {n} devices (give 1 or {n})")
        for i, c in enumerate(where):
            per_device[i][group] = c
    return per_device


def _batch_axis(layout):
    return DataDesc.get_batch_axis(layout)


def _take(array, sl, axis, context):
    """``array``'s slice ``sl`` along ``axis`` on ``context``."""
    if sl.start == 0 and array.shape[axis] == sl.stop:
        part = array
    elif axis == 0:
        part = array[sl.start:sl.stop]
    else:
        part = nd.slice_axis(array, axis=axis, begin=sl.start, end=sl.stop)
    return part.as_in_context(context)


def _merge(per_output, axes):
    """Joins each output's per-device arrays along its batch axis (the first
    device's array for an output without one)."""
    merged = []
    for arrays, axis in zip(per_output, axes):
        if axis >= 0 and len(arrays) > 1:
            first = arrays[0].context
            merged.append(nd.concat(*[a.as_in_context(first) for a in arrays], dim=axis))
        else:
            merged.append(arrays[0])
    return merged


class DataParallelExecutorGroup:
    """The executors of one symbol over ``contexts``, one per context.

    Parameters
    ----------
    symbol : Symbol
        The network.
    contexts : list of Context
        One executor per context.
    workload : list of number
        Share of the batch each context computes.
    data_shapes, label_shapes : list of DataDesc or (name, shape)
        The whole batch's input shapes (``label_shapes`` may be None).
    param_names : list of str
        The arguments that are parameters.
    for_training, inputs_need_grad : bool
        Allocate gradients; also for the data inputs.
    shared_group : DataParallelExecutorGroup, optional
        A group whose parameters, gradients, aux states and input memory
        this one uses (a bucketing module's buckets).
    logger : logging.Logger
        Unused; accepted as in MXNet.
    fixed_param_names, state_names : list of str, optional
        Parameters not trained; inputs kept between batches.
    grad_req : str, list or dict
        ``write``, ``add`` or ``null`` for all parameters or per argument.
    group2ctxs : dict or list of dict, optional
        Model-parallel placement: the arrays of arguments in an
        ``AttrScope(ctx_group=...)`` live on that group's context.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, shared_group=None, logger=logging, fixed_param_names=None, grad_req="write",
                 state_names=None, group2ctxs=None):
        del logger
        self.symbol = symbol
        self.contexts = list(contexts)
        if not self.contexts:
            raise MXNetError("DataParallelExecutorGroup: no contexts")
        self.workload = list(workload) if workload is not None else [1] * len(self.contexts)
        if len(self.workload) != len(self.contexts):
            raise ValueError(f"workload has {len(self.workload)} entries for {len(self.contexts)} contexts")
        self.group2ctxs = _group2ctx_per_device(group2ctxs, len(self.contexts))
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req_arg = grad_req
        if shared_group is not None:
            if len(shared_group.contexts) != len(self.contexts):
                raise MXNetError(f"shared_group has {len(shared_group.contexts)} contexts, this group "
                                 f"{len(self.contexts)}")
            self.shared_data_arrays = shared_group.shared_data_arrays
        else:
            self.shared_data_arrays = [{} for _ in self.contexts]
        self.output_layouts = [_batch_axis(symbol[name].attr("__layout__")) for name in self.output_names]
        self._graphs = None
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # ------------------------------------------------------------ binding
    def decide_slices(self, data_shapes):
        """Sets ``batch_size`` from the inputs' batch axes (which must agree)
        and cuts it by the work load; returns each input's batch axis."""
        axes = [_batch_axis(d.layout) for d in data_shapes]
        sizes = {d.shape[a] for d, a in zip(data_shapes, axes) if a >= 0 and len(d.shape) > a}
        if len(sizes) > 1:
            raise MXNetError("all data must have the same batch size: "
                             + ", ".join(f"{d.name} {tuple(d.shape)} (axis {a})" for d, a in zip(data_shapes, axes)))
        if sizes:
            self.batch_size = sizes.pop()
            self.slices = split_input_slice(self.batch_size, self.workload)
        else:
            self.batch_size = None
            self.slices = [slice(0, 0)] * len(self.contexts)
        return axes

    def _sliced(self, descs, i):
        """``descs`` with the batch axis cut to device ``i``'s slice."""
        out = []
        for d in descs:
            shape = list(d.shape)
            axis = _batch_axis(d.layout)
            if axis >= 0 and len(shape) > axis:
                sl = self.slices[i]
                shape[axis] = sl.stop - sl.start
            out.append(DataDesc(d.name, tuple(shape), d.dtype, d.layout))
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Binds (or with ``reshape``, rebinds keeping the parameter memory)
        one executor per context for these whole-batch shapes."""
        data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
        if label_shapes is not None:
            label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = ([_batch_axis(d.layout) for d in label_shapes] if label_shapes is not None else None)
        if label_shapes is not None:
            self.decide_slices(data_shapes + label_shapes)
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes is not None else []
        if reshape:
            for i, graph in enumerate(self._graphs):
                graph.reshape(self._sliced(data_shapes, i),
                              self._sliced(label_shapes, i) if label_shapes is not None else None)
            return
        graphs = []
        for i, context in enumerate(self.contexts):
            shared = shared_group._graphs[i] if shared_group is not None else None
            graphs.append(BoundGraph(self.symbol, context, self._sliced(data_shapes, i),
                                     self._sliced(label_shapes, i) if label_shapes is not None else None,
                                     self.param_names, self.for_training, self.inputs_need_grad,
                                     self._grad_req_arg, fixed_param_names=self.fixed_param_names,
                                     state_names=self.state_names, shared=shared, group2ctx=self.group2ctxs[i],
                                     input_pool=self.shared_data_arrays[i]))
        self._graphs = graphs

    def reshape(self, data_shapes, label_shapes):
        """Rebinds for a new whole-batch shape, keeping parameter memory."""
        if list(data_shapes) == list(self.data_shapes) and label_shapes == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # ------------------------------------------------------------- arrays
    @property
    def grad_req(self):
        """``grad_req`` by argument name (the same on every context)."""
        return self._graphs[0].grad_req

    @property
    def execs(self):
        """The executors, one per context (the current shapes')."""
        return [g.exec for g in self._graphs]

    def _per_name(self, names, which):
        return [[getattr(e, which).get(n) for e in self.execs] for n in names]

    @property
    def param_arrays(self):
        """``[[param on each context]]`` in ``param_names`` order."""
        return self._per_name(self.param_names, "arg_dict")

    @property
    def grad_arrays(self):
        """``[[gradient on each context]]`` per parameter (None without one)."""
        return self._per_name(self.param_names, "grad_dict")

    @property
    def aux_arrays(self):
        """``[[aux state on each context]]``."""
        return self._per_name(self.aux_names, "aux_dict")

    @property
    def data_arrays(self):
        """``[[(slice, array) on each context]]`` per data input."""
        return [[(sl, e.arg_dict[n]) for sl, e in zip(self.slices, self.execs)] for n in self.data_names]

    @property
    def label_arrays(self):
        """Like ``data_arrays`` for the labels (None without labels)."""
        if self.label_shapes is None:
            return None
        return [[(sl, e.arg_dict[n]) for sl, e in zip(self.slices, self.execs)] for n in self.label_names]

    @property
    def state_arrays(self):
        """``[[state on each context]]``."""
        return self._per_name(self.state_names, "arg_dict")

    @property
    def input_grad_arrays(self):
        """``[[gradient on each context]]`` per data input (with ``inputs_need_grad``)."""
        return self._per_name(self.data_names, "grad_dict") if self.inputs_need_grad else []

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies the values in the dicts into every context's executor."""
        for graph in self._graphs:
            graph.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Writes into the dicts' arrays the mean over the contexts of each
        parameter and aux state (equal on every context after kvstore
        updates; aux states such as running means differ and are averaged)."""
        for names, per_name, target in ((self.param_names, self.param_arrays, arg_params),
                                        (self.aux_names, self.aux_arrays, aux_params)):
            for name, arrays in zip(names, per_name):
                if len(arrays) == 1:
                    arrays[0].astype(target[name].dtype).copyto(target[name])
                    continue
                total = arrays[0].copyto(ctx.cpu())
                for a in arrays[1:]:
                    total += a.as_in_context(ctx.cpu())
                (total / len(arrays)).astype(target[name].dtype).copyto(target[name])

    # ------------------------------------------------------------ running
    def _load(self, sources, names, axes):
        """Copies each source into the executors' inputs: a list (one array
        per context) as given, an NDArray cut along its batch axis."""
        for src, name, axis in zip(sources, names, axes):
            if isinstance(src, (list, tuple)):
                if len(src) != len(self._graphs):
                    raise MXNetError(f"forward: {len(src)} arrays for input {name!r} on {len(self._graphs)} "
                                     "contexts")
                parts = src
            else:
                parts = [_take(src, sl, axis, g.context) if axis >= 0 else src
                         for sl, g in zip(self.slices, self._graphs)]
            for part, graph in zip(parts, self._graphs):
                graph.load_input(name, part)

    def forward(self, data_batch, is_train=None):
        """Runs every executor on its slice of ``data_batch`` (labels too,
        when the group has labels and the batch carries them)."""
        if isinstance(data_batch, list):
            # one batch per context (MXNet's pre-sliced form)
            if len(data_batch) != len(self._graphs):
                raise MXNetError(f"forward: {len(data_batch)} batches for {len(self._graphs)} contexts")
            data = [[b.data[k] for b in data_batch] for k in range(len(self.data_names))]
            label = ([[b.label[k] for b in data_batch] for k in range(len(self.label_names))]
                     if getattr(data_batch[0], "label", None) else None)
        else:
            data, label = data_batch.data, getattr(data_batch, "label", None)
        self._load(data, self.data_names, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_shapes is not None and label:
            self._load(label, self.label_names, self.label_layouts)
        for graph in self._graphs:
            graph.run_forward(is_train)

    def backward(self, out_grads=None):
        """Back-propagates on every context (``out_grads`` for the whole
        batch, cut like the outputs)."""
        if not self.for_training:
            raise MXNetError("backward: re-bind with for_training=True to run backward")
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for i, graph in enumerate(self._graphs):
            heads = None
            if out_grads is not None:
                heads = [_take(g, self.slices[i], axis, graph.context) if axis >= 0 else g.copyto(graph.context)
                         for g, axis in zip(out_grads, self.output_layouts)]
            graph.backward(out_grads=heads)

    def get_output_shapes(self):
        """``(name, whole-batch shape)`` of every output."""
        shapes = []
        for (name, shape), axis in zip(self._graphs[0].get_output_shapes(), self.output_layouts):
            shape = list(shape)
            if axis >= 0 and self.batch_size is not None:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs ``begin:end``: joined over the contexts, or per context
        (``[[out_dev0, out_dev1], ...]``)."""
        if end is None:
            end = len(self.output_names)
        per_output = [[g.exec.outputs[i] for g in self._graphs] for i in range(begin, end)]
        return _merge(per_output, self.output_layouts[begin:end]) if merge_multi_context else per_output

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs, joined or per context."""
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        grads = self.input_grad_arrays
        return _merge(grads, self.data_layouts) if merge_multi_context else grads

    def get_states(self, merge_multi_context=True):
        """State inputs: joined along axis 0 over the contexts, or per
        context. (MXNet's refuses ``merge_multi_context=True``.)"""
        states = self.state_arrays
        return _merge(states, [0] * len(states)) if merge_multi_context else states

    def set_states(self, states=None, value=None):
        """Sets the state inputs from ``states`` (per state: one array cut
        along axis 0, or one array per context) or fills them with ``value``."""
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            if len(states) != len(self.state_names):
                raise ValueError(f"set_states: {len(states)} states for {len(self.state_names)} state inputs")
            self._load(states, self.state_names, [0] * len(states))
        else:
            if value is None:
                raise ValueError("set_states: give states or value")
            for arrays in self.state_arrays:
                for a in arrays:
                    a[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` once per context with that context's
        outputs and label slice (``pre_sliced``: ``labels`` holds one label
        list per context), as MXNet does."""
        for i, graph in enumerate(self._graphs):
            if pre_sliced:
                part = labels[i]
            else:
                part = []
                for label, axis in zip(labels or [], self.label_layouts or [0] * len(labels or [])):
                    part.append(_take(label, self.slices[i], axis, label.context) if axis >= 0 else label)
            eval_metric.update_dict(OrderedDict(zip(self.label_names, part)),
                                    OrderedDict(zip(self.output_names, graph.exec.outputs)))

    def install_monitor(self, mon):
        """Installs ``mon`` on every executor."""
        for graph in self._graphs:
            graph.install_monitor(mon)
