"""Horovod's MXNet API on oxnet: a script written for ``horovod.mxnet``
runs with ``import horovod.mxnet as hvd`` changed to
``import oxnet.horovod as hvd``::

    import oxnet as mx
    import oxnet.horovod as hvd

    hvd.init()
    ctx = mx.cpu(hvd.local_rank())            # or mx.gpu(hvd.local_rank())
    net = build_net()
    net.initialize(ctx=ctx)
    params = net.collect_params()
    hvd.broadcast_parameters(params, root_rank=0)   # deferred ones follow at their first forward
    opt = mx.optimizer.create('sgd', learning_rate=0.1 * hvd.size())
    trainer = hvd.DistributedTrainer(params, opt)    # gradients averaged over ranks
    ...
    trainer.step(batch_size)

started with ``mpirun -np 4 python train.py`` or
``python -m oxnet.tools.launch -n 4 python train.py`` (without a launcher
the job is this one process, and every collective leaves the data as it
is).

What runs underneath is oxnet's communication layer
(:mod:`oxnet.distributed`, MPI through ``mpi4py``), not Horovod's
background thread: each collective runs when called, small tensors of one
call travel fused, and the ranks compare shapes and dtypes before moving
data, so a mismatch is an error naming the ranks instead of a hang. An
uncaught error on one rank aborts the whole job, naming that rank.

Not offered: process sets over part of the job (the global set is
accepted), ``hvd.Adasum``, Horovod's timeline, elastic training,
``horovodrun`` (use ``mpirun`` or ``oxnet.tools.launch``).
"""

import types
import warnings

from .. import autograd
from .. import optimizer as _opt
from ..gluon.parameter import DeferredInitializationError, Parameter, ParameterDict
from ..gluon.trainer import Trainer
from ..ndarray import NDArray
from .basics import (Adasum, Average, Max, Min, Product, ProcessSet, Sum, _check_process_set, _comm,
                     add_process_set, ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built,
                     gloo_enabled, global_process_set, init, is_homogeneous, is_initialized, local_rank, local_size,
                     mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built,
                     shutdown, size, start_timeline, stop_timeline)
from .compression import Compression, Compressor, FP16Compressor, NoneCompressor
from ..kvstore.overlap import GradientOverlap, overlap_enabled
from .ops import (_agree, _check_root, _layout, _reduce_, allgather, allgather_object, allreduce, allreduce_, alltoall,
                  broadcast, broadcast_, broadcast_object, grouped_allgather, grouped_allreduce, grouped_allreduce_,
                  grouped_reducescatter, reducescatter)

__all__ = [
    "init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "is_homogeneous", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline", "stop_timeline",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set", "add_process_set",
    "remove_process_set", "allreduce", "allreduce_", "grouped_allreduce", "grouped_allreduce_", "allgather",
    "grouped_allgather", "broadcast", "broadcast_", "alltoall", "reducescatter", "grouped_reducescatter",
    "broadcast_object", "allgather_object", "broadcast_parameters", "DistributedOptimizer", "DistributedTrainer",
    "Compression", "Compressor", "NoneCompressor", "FP16Compressor",
]


def _split_list(items, n):
    """``items`` in ``n`` consecutive groups of nearly equal length (Horovod's ``num_groups``)."""
    d, r = divmod(len(items), n)
    return [items[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(n)]


# ----------------------------------------------------------------------
# DistributedOptimizer


class DistributedOptimizer(_opt.Optimizer):
    """Wraps an ``mx.optimizer.Optimizer`` so that every update first sums
    the gradient over all ranks: ``DistributedOptimizer(optimizer,
    gradient_predivide_factor=1.0, num_groups=0)``.

    As Horovod does without NCCL, the averaging happens in the optimizer:
    the wrapped optimizer's ``rescale_grad`` is multiplied by
    ``gradient_predivide_factor / size()``, and each gradient is multiplied
    by ``1 / gradient_predivide_factor`` before the sum. ``num_groups``
    splits a list of gradients given to one update into that many fused
    transfers. Every other attribute and method (``learning_rate``,
    ``set_learning_rate``, ``lr_scheduler``, ``rescale_grad``, ...) is the
    wrapped optimizer's. Use it with the Module API (``mod.fit(...,
    kvstore=None, optimizer=dist_opt)``) or a ``gluon.Trainer``; with Gluon,
    :class:`DistributedTrainer` reduces all gradients in one go.
    """

    _OWN = frozenset({"_optimizer", "_gradient_predivide_factor", "_num_groups", "_process_set",
                      "_original_rescale_grad"})

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0,
                 process_set=global_process_set):  # pylint: disable=super-init-not-called
        # no Optimizer.__init__: every setting lives in the wrapped optimizer
        if not isinstance(optimizer, _opt.Optimizer):
            raise TypeError(f"hvd.DistributedOptimizer wraps an mx.optimizer.Optimizer, got "
                            f"{type(optimizer).__name__}")
        if isinstance(optimizer, DistributedOptimizer):
            raise ValueError("hvd.DistributedOptimizer: the optimizer is already a DistributedOptimizer "
                             "(wrapping it twice would reduce each gradient twice)")
        _check_process_set(process_set, "hvd.DistributedOptimizer")
        n = size()
        factor = float(gradient_predivide_factor)
        if factor <= 0:
            raise ValueError(f"hvd.DistributedOptimizer: gradient_predivide_factor must be positive, got {factor}")
        set_own = object.__setattr__
        set_own(self, "_optimizer", optimizer)
        set_own(self, "_gradient_predivide_factor", factor)
        set_own(self, "_num_groups", int(num_groups))
        set_own(self, "_process_set", process_set)
        set_own(self, "_original_rescale_grad", optimizer.rescale_grad)
        optimizer.rescale_grad = optimizer.rescale_grad * factor / n

    def __getattr__(self, item):
        inner = self.__dict__.get("_optimizer")
        if inner is None:
            raise AttributeError(item)
        return getattr(inner, item)

    def __setattr__(self, name, value):
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self._optimizer, name, value)

    def __getstate__(self):
        return {k: self.__dict__[k] for k in self._OWN if k in self.__dict__}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __repr__(self):
        return f"DistributedOptimizer({self._optimizer!r})"

    def create_state(self, index, weight):
        """The wrapped optimizer's state for a new weight."""
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        """The wrapped optimizer's state (with a float32 master copy where it keeps one)."""
        return self._optimizer.create_state_multi_precision(index, weight)

    def _do_allreduce(self, index, grad):
        comm = _comm()
        if comm.size == 1:
            return
        if isinstance(index, (tuple, list)):
            pairs = list(zip(index, grad))
        else:
            pairs = [(index, grad)]
        groups = _split_list(pairs, self._num_groups) if self._num_groups > 0 else [pairs]
        what = "hvd.DistributedOptimizer"
        for group in groups:
            if not group:
                continue
            grads = [g for _, g in group]
            _agree(comm, f"{what}: the gradients (index, shape, dtype) of this update",
                   [(i, s, d) for (i, _), (s, d) in zip(group, _layout(grads))])
            _reduce_(comm, grads, Sum, 1.0 / self._gradient_predivide_factor, 1.0, what, check=False)

    def update(self, index, weight, grad, state):
        """Sums ``grad`` over the ranks (in place), then the wrapped update."""
        self._do_allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """Sums ``grad`` over the ranks (in place), then the wrapped update."""
        self._do_allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        """Sets the wrapped optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        """Sets the wrapped optimizer's learning-rate multipliers."""
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Sets the wrapped optimizer's weight-decay multipliers."""
        self._optimizer.set_wd_mult(args_wd_mult)


def _forwarding_property(name, doc):
    def get(self):
        return getattr(self._optimizer, name)

    def put(self, value):
        setattr(self._optimizer, name, value)

    return property(get, put, doc=doc)


def _forwarding_method(name):
    def method(self, *args, **kwargs):
        return getattr(self._optimizer, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"The wrapped optimizer's ``{name}``."
    return method


# the base class's properties and helpers read the optimizer's own state:
# the wrapper answers with the wrapped optimizer's
for _name, _attr in list(vars(_opt.Optimizer).items()):
    if isinstance(_attr, property) and _name not in vars(DistributedOptimizer):
        setattr(DistributedOptimizer, _name, _forwarding_property(_name, _attr.__doc__))
for _name in ("set_lr_scale", "_set_current_context", "_mults", "_update_count", "_get_lrs", "_get_lr", "_get_wds",
              "_get_wd", "_step_inputs"):
    setattr(DistributedOptimizer, _name, _forwarding_method(_name))
DistributedOptimizer._core_name = _forwarding_property("_core_name", "The wrapped optimizer's Rust name.")
del _name, _attr


# ----------------------------------------------------------------------
# DistributedTrainer


class DistributedTrainer(Trainer):
    """A ``gluon.Trainer`` whose gradients are averaged over all ranks
    (Horovod's ``hvd.DistributedTrainer``)::

        DistributedTrainer(params, optimizer, optimizer_params=None,
                           compression=hvd.Compression.none,
                           gradient_predivide_factor=1.0, prefix=None, num_groups=0)

    It has no kvstore: ``step`` sums each gradient over the ranks (after
    summing this process's contexts), with Horovod's scaling: gradients are
    multiplied by ``1 / gradient_predivide_factor`` before the sum and the
    optimizer's rescaling by ``gradient_predivide_factor / size()``, so the
    update equals one process training on the global batch.
    ``compression=hvd.Compression.fp16`` sends floating-point gradients as
    float16; ``num_groups`` splits the gradients into that many fused
    transfers (0: one); ``prefix`` names this trainer's parameters in error
    messages (use distinct prefixes for several trainers, as with Horovod).
    Where the distributed store would (see oxnet.kvstore.overlap), the
    gradients are summed while backward runs (uncompressed, one context per
    rank; buckets then replace ``num_groups``).
    A ``DistributedOptimizer`` given as the optimizer is unwrapped (with a
    warning). Parameters in a list are ordered by name, so every rank
    reduces them in the same order.
    """

    def __init__(self, params, optimizer, optimizer_params=None, compression=Compression.none,
                 gradient_predivide_factor=1.0, prefix=None, num_groups=0, process_set=global_process_set):
        comm = _comm()
        _check_process_set(process_set, "hvd.DistributedTrainer")
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"hvd.DistributedTrainer: prefix must be a str or None, got {type(prefix).__name__}")
        factor = float(gradient_predivide_factor)
        if factor <= 0:
            raise ValueError(f"hvd.DistributedTrainer: gradient_predivide_factor must be positive, got {factor}")
        if isinstance(optimizer, DistributedOptimizer):
            inner = optimizer._optimizer
            inner.rescale_grad = optimizer._original_rescale_grad  # the trainer does its own averaging
            optimizer = inner
            warnings.warn("DistributedTrainer does not take DistributedOptimizer as its optimizer. We have "
                          "unwrapped it for you.", stacklevel=2)
        if isinstance(params, (list, tuple)):
            params = sorted(params, key=lambda p: getattr(p, "name", ""))
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._compression = compression
        self._gradient_predivide_factor = factor
        self._scale *= factor / comm.size
        self._prefix = prefix or ""
        self._num_groups = int(num_groups)
        self._process_set = process_set
        self._overlap = None  # (gradients, GradientOverlap): summing while backward runs

    def _overlapping(self, comm, names, heads, copies):
        """The overlap for these gradients (made at the first step that
        finds them; see oxnet.kvstore.overlap), or None where there is none:
        compressed gradients, several contexts, every gradient in one
        bucket, or ``OXNET_OVERLAP`` off."""
        if self._overlap is not None:
            held, overlap = self._overlap
            if len(held) == len(heads) and all(a is b for a, b in zip(held, heads)):
                return overlap
            overlap.close()
            self._overlap = None
        if self._compression is not Compression.none or any(copies) or not overlap_enabled(comm):
            return None
        buckets = GradientOverlap.layout(heads)
        if len(buckets) < 2:
            return None
        params = [p for p in self._params if p.grad_req != "null"]
        _agree(comm, "hvd.DistributedTrainer: the parameters summed while backward runs (name, shape, dtype)",
               [(n, s, d) for n, (s, d) in zip(names, _layout(heads))] + [buckets])
        sums = [h.zeros_like() for h in heads]  # the sums land here, then in the gradients
        overlap = GradientOverlap(comm, [p.list_data()[0] for p in params], heads, sums)
        self._overlap = (heads, overlap)
        return None  # this step's gradients were announced before the hooks: summed the usual way

    def _allreduce_grads(self, skip_stale=False):
        """Sums every gradient over this process's contexts and then over
        the ranks (all parameters take part on every rank, stale or not, as
        every rank must join each transfer)."""
        del skip_stale
        comm = _comm()
        if comm.size == 1:
            return
        what = "hvd.DistributedTrainer"
        names, heads, copies = [], [], []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grads = param.list_grad()
            head = grads[0]
            for other in grads[1:]:
                head += other.as_in_context(head.context)
            names.append(self._prefix + str(i))  # Horovod's key: the position, not the (auto-made) name
            heads.append(head)
            copies.append(grads[1:])
        overlap = self._overlapping(comm, names, heads, copies)
        if overlap is not None:
            # most buckets were summed during backward
            overlap.finish()
            factor = self._gradient_predivide_factor
            for head, total in zip(heads, overlap.sums):
                (total if factor == 1.0 else total / factor).copyto(head)
            return
        _agree(comm, f"{what}: the parameters' gradients (name, shape, dtype)",
               [(n, s, d) for n, (s, d) in zip(names, _layout(heads))])
        packed = [self._compression.compress(h) for h in heads]
        entries = list(zip(heads, packed))
        groups = _split_list(entries, self._num_groups) if self._num_groups > 0 else [entries]
        for group in groups:
            if group:
                _reduce_(comm, [c for _, (c, _) in group], Sum, 1.0 / self._gradient_predivide_factor, 1.0, what,
                         check=False)
        for (head, (compressed, ctx)), others in zip(entries, copies):
            if compressed is not head:
                head[:] = self._compression.decompress(compressed, ctx)
            for other in others:
                head.copyto(other)


# ----------------------------------------------------------------------
# broadcast_parameters


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Overwrites parameters on every rank with rank ``root_rank``'s
    (typically right after initialization, so all ranks start equal).

    ``params``: a dict of NDArrays (``Module.get_params()``'s
    ``arg_params``), or a gluon ``ParameterDict`` / dict of Parameters
    (``net.collect_params()``). A Parameter whose initialization is deferred
    (its shape is known at the first forward pass) is broadcast right after
    it is created, during that forward pass, on every rank. ``prefix`` is
    put before each name in error messages. Entries are matched between
    ranks by sorted name; differing names, shapes or dtypes raise an
    MXNetError naming the ranks.
    """
    what = "hvd.broadcast_parameters"
    comm = _comm()
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"{what}: prefix must be a str or None, got {type(prefix).__name__}")
    prefix = prefix or ""
    if not isinstance(params, (dict, ParameterDict)):
        raise ValueError(f"invalid params of type: {type(params)}")
    if comm.size == 1:
        _check_root(root_rank, 1, what)
        return
    names, arrays, others, deferred = [], [], [], []
    for key, value in sorted(params.items(), key=lambda kv: str(kv[0])):
        name = prefix + str(key)
        if isinstance(value, Parameter):
            try:
                data = value.list_data()
            except DeferredInitializationError:
                deferred.append((name, value))
                continue
            arrays.append(data[0])
            others.append(data[1:])
        elif isinstance(value, NDArray):
            arrays.append(value)
            others.append([])
        else:
            raise TypeError(f"{what}: {key!r} is a {type(value).__name__}, not a Parameter or an NDArray")
        names.append(name)
    layout = [(n, s, d) for n, (s, d) in zip(names, _layout(arrays))]
    _agree(comm, f"{what}: the root rank, the parameters (name, shape, dtype) and the deferred ones",
           (root_rank, layout, [n for n, _ in deferred]))
    root = _check_root(root_rank, comm.size, what)
    if arrays:
        comm.broadcast_(arrays, root=root)
    for head, rest in zip(arrays, others):
        for other in rest:
            head.copyto(other)
    for name, param in deferred:
        _broadcast_when_initialized(param, root, name)


def _broadcast_when_initialized(param, root_rank, name):
    """Makes ``param``'s deferred initialization broadcast the new values
    from ``root_rank`` (once; a second call replaces the first)."""
    existing = param.__dict__.get("_init_impl")
    original = getattr(getattr(existing, "__func__", None), "_hvd_original", None) or param._init_impl

    def init_then_broadcast(self, *args, **kwargs):
        self.__dict__.pop("_init_impl", None)  # fires once
        original(*args, **kwargs)
        comm = _comm()
        if comm.size == 1:
            return
        data = self.list_data()
        what = "hvd.broadcast_parameters (deferred initialization)"
        _agree(comm, f"{what}: the root rank and the parameter (name, shape, dtype)",
               (root_rank, [(name,) + _layout(data[:1])[0]]))
        with autograd.pause():
            comm.broadcast_([data[0]], root=root_rank)
            for other in data[1:]:
                data[0].copyto(other)

    init_then_broadcast._hvd_original = original
    param._init_impl = types.MethodType(init_then_broadcast, param)
