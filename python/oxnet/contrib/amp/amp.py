"""Automatic mixed precision (``mx.contrib.amp``), with MXNet 1.9.1's API.

Two ways in, as in MXNet:

* training: :func:`init` wraps the operator functions of ``mx.nd`` and
  ``mx.sym`` so that listed operators cast their inputs (to the low
  precision, to float32, or to the widest dtype among them);
  :func:`init_trainer` gives a Gluon ``Trainer`` dynamic loss scaling, used
  through :func:`scale_loss` (and :func:`unscale` for gradient clipping);
* inference: :func:`convert_symbol` / :func:`convert_model` /
  :func:`convert_hybrid_block` / :func:`convert_bucketing_module` rewrite a
  float32 graph with ``amp_cast`` and ``amp_multicast`` nodes by MXNet's
  ReducePrecision rules.
"""

import contextlib
import json
import logging
import types

import numpy as np

from ... import ndarray
from ... import symbol
from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ...symbol import Symbol
from . import lists
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_hybrid_block",
           "convert_bucketing_module", "convert_symbol", "list_lp16_ops", "list_fp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params", "remove_amp_cast", "bfloat16"]

#: oxnet's bfloat16 dtype (bfloat16 arrays report their dtype as this name;
#: MXNet used a numpy structured dtype here).
bfloat16 = "bfloat16"

# dtypes AMP casts between; others (float64, integers) are left alone
_AMP_FLOATS = ("float16", "bfloat16", "float32")
# MXNet's dtype codes
_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6,
          "bool": 7, "bfloat16": 12}
_NAMES = {v: k for k, v in _CODES.items()}


def _dtype_name(dtype):
    """The name of ``dtype`` (a numpy dtype or type, a string, MXNet's
    structured bfloat16 dtype)."""
    if isinstance(dtype, str):
        return "bfloat16" if dtype == "bfloat16" else np.dtype(dtype).name
    try:
        d = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if d.names == ("bfloat16",):
        return "bfloat16"
    return d.name


def _target_name(target_dtype, what):
    """'float16' or 'bfloat16' from ``target_dtype``; else ValueError."""
    try:
        name = _dtype_name(target_dtype)
    except TypeError:
        name = None
    if name not in ("float16", "bfloat16"):
        raise ValueError(f"{what}: target_dtype must be 'float16' or 'bfloat16', got {target_dtype!r}")
    return name


def _cast(x, dtype):
    """``x`` cast to ``dtype`` with ``amp_cast``: a Symbol always, an NDArray
    when it has another AMP float dtype; anything else unchanged."""
    if isinstance(x, Symbol):
        return symbol.amp_cast(x, dtype=dtype)
    if isinstance(x, NDArray):
        have = _dtype_name(x.dtype)
        if have != dtype and have in _AMP_FLOATS:
            return ndarray.amp_cast(x, dtype=dtype)
    return x


# ---------------------------------------------------------------------------
# operator lists

def _lists(target_dtype):
    name = _target_name(target_dtype, "amp")
    return lists.symbol_fp16 if name == "float16" else lists.symbol_bf16


def list_lp16_ops(target_dtype):
    """The operators AMP runs in ``target_dtype`` ('float16' or 'bfloat16')."""
    m = _lists(target_dtype)
    return m.FP16_FUNCS if m is lists.symbol_fp16 else m.BF16_FUNCS


def list_fp16_ops(target_dtype="float16"):
    """The operators AMP runs in float16 (``list_lp16_ops``' older name)."""
    return list_lp16_ops(target_dtype)


def list_fp32_ops(target_dtype="float16"):
    """The operators AMP runs in float32."""
    return _lists(target_dtype).FP32_FUNCS


def list_lp16_fp32_ops(target_dtype="float16"):
    """The operators that run in whichever of the two precisions they get."""
    m = _lists(target_dtype)
    return m.FP16_FP32_FUNCS if m is lists.symbol_fp16 else m.BF16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype="float16"):
    """``(operator, attribute, values)``: operators run in float32 when the
    attribute has one of the values."""
    return _lists(target_dtype).CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype="float16"):
    """Operators whose inputs are cast to the widest dtype among them."""
    return _lists(target_dtype).WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype="float16"):
    """Loss outputs whose ``grad_scale`` gets the loss scale (``mx.nd``)."""
    return _lists(target_dtype).LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype="float16"):
    """For bfloat16: ``{operator: [input names]}``, the inputs that stay
    float32 ('' marks one that is cast); None for float16."""
    m = _lists(target_dtype)
    return None if m is lists.symbol_fp16 else m.BF16_USE_FP32_PARAMS


# ---------------------------------------------------------------------------
# init: wrapping the operator functions

_PREFIXES = {"_contrib_": "contrib", "_linalg_": "linalg", "_image_": "image", "_random_": "random",
             "_sparse_": "sparse"}


def _function_home(name, module):
    """(module, function name) where ``module`` (mx.nd or mx.sym) keeps the
    function of operator ``name``."""
    for prefix, sub in _PREFIXES.items():
        if name.startswith(prefix):
            if prefix == "_random_" and not name.endswith("_like"):
                return getattr(module, "_internal", None), name
            return getattr(module, sub, None), name[len(prefix):]
    if name.startswith("_"):
        return getattr(module, "_internal", None), name
    return module, name


def _copy_meta(new, f):
    new.__name__ = getattr(f, "__name__", "op")
    new.__doc__ = getattr(f, "__doc__", None)
    new.__module__ = getattr(f, "__module__", __name__)
    new.__wrapped__ = f
    return new


def _nd_wrapper(f, dtype, fp32_param=None, cond_arg=None):
    """``f`` (an mx.nd function) with its array arguments cast to ``dtype``."""
    def wrapped(*args, **kwargs):
        if cond_arg is not None and kwargs.get(cond_arg[0]) not in cond_arg[1]:
            return f(*args, **kwargs)
        if fp32_param:
            args = [a if i < len(fp32_param) and fp32_param[i] else _cast(a, dtype) for i, a in enumerate(args)]
            kwargs = {k: v if k in fp32_param else _cast(v, dtype) for k, v in kwargs.items()}
        else:
            args = [_cast(a, dtype) for a in args]
            kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return _copy_meta(wrapped, f)


def _node_of(sym):
    """The JSON node of ``sym``'s (single) operator."""
    graph = json.loads(sym.tojson())
    return graph["nodes"][graph["heads"][0][0]]


def _sym_wrapper(f, dtype, fp32_param=None, cond_arg=None):
    """``f`` (an mx.sym function) whose node gets every input (the ones it
    made itself, such as weights, included; aux states excepted) through
    ``amp_cast`` to ``dtype``."""
    from ...symbol.symbol import compose_op  # pylint: disable=import-outside-toplevel

    def wrapped(*args, **kwargs):
        if cond_arg is not None and kwargs.get(cond_arg[0]) not in cond_arg[1]:
            return f(*args, **kwargs)
        sym = f(*args, **kwargs)
        node = _node_of(sym)
        aux = set(sym.list_auxiliary_states())
        children = list(sym.get_children())
        inputs = []
        for i, child in enumerate(children):
            keep = child.name in aux or (fp32_param and i < len(fp32_param) and fp32_param[i])
            inputs.append(child if keep else _cast(child, dtype))
        return compose_op(node["op"], node["op"].lower(), inputs, {}, dict(node.get("attrs", {})),
                          name=node["name"])
    return _copy_meta(wrapped, f)


def _widest_wrapper(f, target_dtype):
    """``f`` whose array (symbol) arguments get one dtype: the widest among
    them (``amp_multicast`` for symbols)."""
    def wrapped(*args, **kwargs):
        args = list(args)
        found = [(args, i, a) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        found += [(kwargs, k, a) for k, a in kwargs.items() if isinstance(a, (Symbol, NDArray))]
        if any(isinstance(a, Symbol) for _, _, a in found):
            if found:
                casted = symbol.amp_multicast(*[a for _, _, a in found], num_outputs=len(found))
                outs = [casted] if len(found) == 1 else list(casted)
                for (where, key, _), c in zip(found, outs):
                    where[key] = c
        else:
            wide = target_dtype
            if any(_dtype_name(a.dtype) == "float32" for _, _, a in found):
                wide = "float32"
            for where, key, a in found:
                if _dtype_name(a.dtype) != wide and _dtype_name(a.dtype) == target_dtype:
                    where[key] = ndarray.amp_cast(a, dtype=wide)
        return f(*args, **kwargs)
    return _copy_meta(wrapped, f)


def _install(module, name, make):
    """Replaces operator ``name``'s function in ``module`` by ``make(f)``;
    names the module lacks are skipped."""
    home, fname = _function_home(name, module)
    f = getattr(home, fname, None) if home is not None else None
    if f is None:
        return
    setattr(home, fname, make(f))
    op_module = getattr(module, "op", None)
    if home is module and op_module is not None and op_module.__dict__.get(fname) is not None:
        setattr(op_module, fname, make(f))


def _wrap_functions(module, target, target_precision_ops, conditional_fp32_ops, fp32_ops):
    wrapper = _sym_wrapper if module is symbol else _nd_wrapper
    fp32_params = list_lp16_use_fp32_params(target) or {}
    for name in target_precision_ops if target_precision_ops is not None else list_lp16_ops(target):
        _install(module, name, lambda f, n=name: wrapper(f, target, fp32_param=fp32_params.get(n)))
    for name in fp32_ops if fp32_ops is not None else list_fp32_ops(target):
        _install(module, name, lambda f: wrapper(f, "float32"))
    cond = conditional_fp32_ops if conditional_fp32_ops is not None else list_conditional_fp32_ops(target)
    for name, arg, values in cond:
        _install(module, name, lambda f, a=arg, v=values: wrapper(f, "float32", cond_arg=(a, v)))
    for name in list_widest_type_cast(target):
        _install(module, name, lambda f: _widest_wrapper(f, target))


def _wrap_loss_outputs(module, scaler, target):
    for name in list_loss_output_functions(target):
        f = getattr(module, name, None)
        if f is None:
            continue
        if module is ndarray:
            def scaled(*args, _f=f, **kwargs):
                kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * scaler.loss_scale
                return _f(*args, **kwargs)
            setattr(module, name, _copy_meta(scaled, f))
        else:
            def warned(*args, _f=f, **kwargs):
                logging.warning("%s does not support dynamic loss scaling in symbolic and hybridized execution.",
                                getattr(_f, "__name__", "op"))
                return _f(*args, **kwargs)
            setattr(module, name, _copy_meta(warned, f))


_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None, fp32_ops=None):
    """Turns AMP on (before the model is built): the operator functions of
    ``mx.nd`` and ``mx.sym`` listed for AMP cast their inputs.

    Parameters
    ----------
    target_dtype : {'float16', 'bfloat16'}
        The low precision.
    target_precision_ops : list of str, optional
        Operators to run in ``target_dtype`` (default: :func:`list_lp16_ops`).
    conditional_fp32_ops : list of (str, str, list of str), optional
        ``(operator, attribute, values)`` run in float32 when the attribute
        has one of the values (default: :func:`list_conditional_fp32_ops`).
    fp32_ops : list of str, optional
        Operators to run in float32 (default: :func:`list_fp32_ops`).

    A second call does nothing (as in MXNet).
    """
    global _amp_initialized, _loss_scaler  # pylint: disable=global-statement
    target = _target_name(target_dtype, "amp.init")
    if _amp_initialized:
        return
    _amp_initialized = True
    logging.info("Using AMP")
    for module in (symbol, ndarray):
        _wrap_functions(module, target, target_precision_ops, conditional_fp32_ops, fp32_ops)
    _loss_scaler = LossScaler()
    _wrap_loss_outputs(ndarray, _loss_scaler, target)
    _wrap_loss_outputs(symbol, _loss_scaler, target)


# ---------------------------------------------------------------------------
# training: loss scaling

def _is_trainer(obj):
    from ...gluon import trainer  # pylint: disable=import-outside-toplevel
    return isinstance(obj, trainer.Trainer)


def _check_trainer(obj, what):
    from ... import optimizer as opt  # pylint: disable=import-outside-toplevel
    if _is_trainer(obj):
        return
    if isinstance(obj, opt.Optimizer):
        raise TypeError(f"{what}: AMP is currently only compatible with Gluon Trainer, not an Optimizer")
    raise TypeError(f"{what}: optimizer_or_trainer should be a Gluon Trainer, got {type(obj).__name__}")


def _skip_on_overflow(trainer):
    """Makes ``trainer``'s update skip the step when a gradient overflowed
    (MXNet's Trainer checks its ``_amp_loss_scaler`` in ``_update``)."""
    if getattr(trainer, "_amp_update_wrapped", False):
        return
    original = trainer._update

    def _update(self, ignore_stale_grad=False):
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None and scaler.has_overflow(self._params):
            return  # skip the step; the scale is halved for the next one
        return original(ignore_stale_grad)

    trainer._update = types.MethodType(_update, trainer)
    trainer._amp_update_wrapped = True


def init_trainer(optimizer_or_trainer):
    """Gives a Gluon ``Trainer`` dynamic loss scaling (a :class:`LossScaler`;
    the first trainer gets the one :func:`init` made). Needs :func:`init`.
    A step whose gradients hold an inf or NaN is skipped."""
    global _amp_loss_scale_initialized  # pylint: disable=global-statement
    if not _amp_initialized:
        raise MXNetError("amp.init_trainer: AMP is not initialized; call amp.init() first")
    _check_trainer(optimizer_or_trainer, "amp.init_trainer")
    if not _amp_loss_scale_initialized:
        _amp_loss_scale_initialized = True
        scaler = _loss_scaler
    else:
        scaler = LossScaler()
    optimizer_or_trainer._amp_loss_scaler = scaler
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale
    _skip_on_overflow(optimizer_or_trainer)


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Context manager yielding the loss (or list of losses) multiplied by
    the loss scale; the trainer's next step divides the gradients by it::

        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    """
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise MXNetError("amp.scale_loss: the loss scaler is not initialized; call amp.init_trainer(trainer) first")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divides the gradients by the loss scale now (for gradient clipping)
    and sets the trainer's scale to 1 for the coming step."""
    _check_trainer(optimizer_or_trainer, "amp.unscale")
    for p in optimizer_or_trainer._params:
        if p.grad_req == "null":
            continue
        for g in p.list_grad():
            g[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = 1.0


# ---------------------------------------------------------------------------
# inference: the ReducePrecision graph pass

# operators whose outputs MXNet names (FListOutputNames); the cast after
# output i of another operator is named after i ("<node>_0_amp_cast_...")
_NAMED_OUTPUTS = {
    "Activation", "BatchNorm", "BatchNorm_v1", "BilinearSampler", "Concat", "Convolution", "Correlation",
    "Crop", "Custom", "Deconvolution", "Dropout", "FullyConnected", "GridGenerator", "GroupNorm",
    "IdentityAttachKLSparseReg", "InstanceNorm", "L2Normalization", "LRN", "LayerNorm", "LeakyReLU",
    "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "MakeLoss", "Pad",
    "Pooling", "RNN", "ROIPooling", "SVMOutput", "SequenceLast", "SequenceMask", "SequenceReverse",
    "SliceChannel", "SoftmaxActivation", "SoftmaxOutput", "SpatialTransformer", "SwapAxis", "UpSampling",
    "_contrib_DeformableConvolution", "_contrib_DeformablePSROIPooling", "_contrib_MultiBoxDetection",
    "_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget", "_contrib_MultiProposal", "_contrib_PSROIPooling",
    "_contrib_Proposal", "_contrib_ROIAlign", "_contrib_SyncBatchNorm", "_contrib_count_sketch",
    "_contrib_fft", "_contrib_ifft", "_contrib_interleaved_matmul_encdec_qk",
    "_contrib_interleaved_matmul_encdec_valatt", "_contrib_interleaved_matmul_selfatt_qk",
    "_contrib_interleaved_matmul_selfatt_valatt", "elemwise_add", "softmax", "softmin", "col2im", "im2col",
}


def _canonical_names():
    """{any operator name or alias: the name oxnet's graphs use}."""
    from ... import _oxnet  # pylint: disable=import-outside-toplevel
    out = {}
    for name, aliases, *_ in _oxnet.list_ops():
        out[name] = name
        for a in aliases:
            out[a] = name
    return out


class _Pass:
    """MXNet 1.9.1's ReducePrecision pass over a graph's NNVM JSON."""

    def __init__(self, graph, target, target_ops, fp32_ops, widest_ops, conditional, excluded, data_names,
                 cast_optional_params):
        canon = _canonical_names()
        as_canon = lambda names: {canon.get(n, n) for n in names}  # noqa: E731
        self.graph = graph
        self.target = target
        self.target_ops = as_canon(target_ops)
        self.fp32_ops = as_canon(fp32_ops)
        self.widest_ops = as_canon(widest_ops)
        self.named_outputs = as_canon(_NAMED_OUTPUTS)
        self.conditional = {}
        for op, attr, values in conditional:
            self.conditional.setdefault(canon.get(op, op), {}).setdefault(attr, []).extend(values)
        self.excluded = set(excluded)
        self.data_names = set(data_names)
        self.cast_optional = bool(cast_optional_params)
        self.nodes = []          # the new graph's nodes
        self.n_out = []          # their output counts
        self.mirror = {}         # old node id -> new node id
        self.fp32 = {}           # old entry -> new entry known to be float32
        self.low = {}            # old entry -> new entry known to be the target dtype
        self._infer_cache = {}
        self._meta_cache = {}

    # -- helpers ----------------------------------------------------------
    def _old_outputs(self, nid):
        return self.graph["node_row_ptr"][nid + 1] - self.graph["node_row_ptr"][nid]

    def _add(self, node, n_out):
        self.nodes.append(node)
        self.n_out.append(n_out)
        return len(self.nodes) - 1

    def _meta(self, node):
        """(aux input positions, output names) of an operator node."""
        key = (node["op"], json.dumps(node.get("attrs", {}), sort_keys=True), len(node["inputs"]))
        if key not in self._meta_cache:
            sym = self._atomic(node)
            if sym is None:
                self._meta_cache[key] = (set(), [])
            else:
                aux = set(sym.list_auxiliary_states())
                pos = {n: i for i, n in enumerate(f"amp_in{i}" for i in range(len(node["inputs"])))}
                stem = node["name"] + "_"
                outs = [o[len(stem):] if o.startswith(stem) else o for o in sym.list_outputs()]
                self._meta_cache[key] = ({pos[a] for a in aux if a in pos}, outs)
        return self._meta_cache[key]

    def _atomic(self, node):
        """``node`` alone over variables amp_in0, amp_in1, ...; None if it
        does not load."""
        n_in = len(node["inputs"])
        nodes = [{"op": "null", "name": f"amp_in{i}", "inputs": []} for i in range(n_in)]
        nodes.append(dict(node, inputs=[[i, 0, 0] for i in range(n_in)]))
        n_out = self._old_outputs(self.graph["nodes"].index(node)) if node in self.graph["nodes"] else 1
        g = {"nodes": nodes, "arg_nodes": list(range(n_in)),
             "node_row_ptr": list(range(n_in + 1)) + [n_in + n_out],
             "heads": [[n_in, k, 0] for k in range(n_out)], "attrs": self.graph.get("attrs", {})}
        try:
            return symbol.load_json(json.dumps(g))
        except MXNetError:
            return None

    def _infer(self, nid, first):
        """The operator's FInferType with input 0 of dtype ``first``:
        (input dtypes, output dtypes) as names or None, and whether all are
        known; None when inference fails."""
        node = self.graph["nodes"][nid]
        key = (node["op"], json.dumps(node.get("attrs", {}), sort_keys=True), len(node["inputs"]), first)
        if key not in self._infer_cache:
            result = None
            sym = self._atomic(node)
            if sym is not None and node["inputs"]:
                try:
                    arg, out, aux = sym._h.infer_type({"amp_in0": first})
                    names = sym.list_arguments() + sym.list_auxiliary_states()
                    by_name = dict(zip(names, list(arg) + list(aux)))
                    ins = [by_name.get(f"amp_in{i}") for i in range(len(node["inputs"]))]
                    outs = list(out)
                    result = (ins, outs, all(t is not None for t in ins + outs))
                except MXNetError:
                    result = None
            self._infer_cache[key] = result
        return self._infer_cache[key]

    def _suffix(self, entry):
        src, idx = entry[0], entry[1]
        node = self.graph["nodes"][src]
        if node["op"] == "null":
            return ""
        if node["op"] in self.named_outputs:
            outs = self._meta(node)[1]
            if idx < len(outs):
                return "_" + outs[idx]
        return f"_{idx}"

    def _mirror_entry(self, entry):
        return [self.mirror[entry[0]], entry[1], 0]

    def _cast(self, entry, dtype, table):
        """A new amp_cast node after ``entry``, recorded in ``table``."""
        src = self.graph["nodes"][entry[0]]
        name = src["name"] + self._suffix(entry) + "_amp_cast_" + dtype
        nid = self._add({"op": "amp_cast", "name": name, "attrs": {"dtype": dtype},
                         "inputs": [self._mirror_entry(entry)]}, 1)
        table[(entry[0], entry[1])] = [nid, 0, 0]
        return [nid, 0, 0]

    def _record(self, nid, new_id, out_types):
        for i, t in enumerate(out_types):
            if t == self.target:
                self.low[(nid, i)] = [new_id, i, 0]
            elif t == "float32":
                self.fp32[(nid, i)] = [new_id, i, 0]

    def _conditional_fp32(self, node):
        if node["op"] == "null" or node["name"] in self.excluded or node["op"] not in self.conditional:
            return False
        attrs = node.get("attrs", {})
        return any(attrs.get(k) in vals for k, vals in self.conditional[node["op"]].items())

    # -- the pass ----------------------------------------------------------
    def run(self):
        """The converted graph's JSON (a dict)."""
        for nid, node in enumerate(self.graph["nodes"]):
            self._visit(nid, node)
        heads = []
        for e in self.graph["heads"]:
            key = (e[0], e[1])
            heads.append(self.fp32[key] if key in self.fp32 else self._cast(e, "float32", self.fp32))
        return {"nodes": self.nodes,
                "arg_nodes": [i for i, n in enumerate(self.nodes) if n["op"] == "null"],
                "node_row_ptr": [sum(self.n_out[:i]) for i in range(len(self.nodes) + 1)],
                "heads": heads, "attrs": self.graph.get("attrs", {})}

    def _visit(self, nid, node):
        is_var = node["op"] == "null"
        op = node["op"]
        inputs = [(e[0], e[1]) for e in node["inputs"]]
        new_inputs = []
        if (not is_var and op in self.fp32_ops) or node["name"] in self.excluded:
            for e in inputs:
                if e in self.fp32:
                    new_inputs.append(self.fp32[e])
                elif self.graph["nodes"][e[0]]["op"] == "null":
                    new_inputs.append(self._mirror_entry(e))  # variables: float32 already
                else:
                    new_inputs.append(self._cast(e, "float32", self.fp32))
            new_id = len(self.nodes)
            for i in range(self._old_outputs(nid)):
                self.fp32[(nid, i)] = [new_id, i, 0]
        elif not is_var and op in self.target_ops:
            mutable = self._meta(node)[0]
            inferred = self._infer(nid, self.target)
            in_types = inferred[0] if inferred else [None] * len(inputs)
            pending = []
            for i, e in enumerate(inputs):
                if e in self.low:
                    pending.append(("low", e))
                elif ((self.cast_optional and self.graph["nodes"][e[0]]["op"] == "null"
                       and self.graph["nodes"][e[0]]["name"] not in self.data_names)
                      or i in mutable or in_types[i] not in (self.target, None)):
                    pending.append(("keep", e))
                else:
                    pending.append(("cast", e))
            for kind, e in pending:
                if kind == "low":
                    new_inputs.append(self.low[e])
                elif kind == "keep":
                    entry = self._mirror_entry(e)
                    new_inputs.append(entry)
                    if self.cast_optional and self.graph["nodes"][e[0]]["op"] == "null":
                        self.low[e] = entry
                else:
                    new_inputs.append(self._cast(e, self.target, self.low))
            if inferred:
                self._record(nid, len(self.nodes), inferred[1])
        elif not is_var and op in self.widest_ops and node["name"] not in self.excluded:
            if not inputs:
                raise MXNetError(f"amp.convert_symbol: node {node['name']!r} ({op}) has no inputs")
            unknown = any(e not in self.low and e not in self.fp32 for e in inputs)
            if unknown:
                first = inputs[0]
                name = self.graph["nodes"][first[0]]["name"] + self._suffix(first) + "_amp_multicast"
                mc = self._add({"op": "amp_multicast", "name": name,
                                "attrs": {"num_outputs": str(len(inputs))},
                                "inputs": [self._mirror_entry(e) for e in inputs]}, len(inputs))
                new_inputs = [[mc, i, 0] for i in range(len(inputs))]
            else:
                wide = "float32" if any(e in self.fp32 for e in inputs) else self.target
                table = self.fp32 if wide == "float32" else self.low
                for e in inputs:
                    new_inputs.append(table[e] if e in table else self._cast(e, wide, table))
                new_id = len(self.nodes)
                for i in range(self._old_outputs(nid)):
                    table[(nid, i)] = [new_id, i, 0]
        elif self._conditional_fp32(node):
            mutable = self._meta(node)[0]
            for i, e in enumerate(inputs):
                if e in self.fp32:
                    new_inputs.append(self.fp32[e])
                elif i in mutable:
                    new_inputs.append(self._mirror_entry(e))
                else:
                    new_inputs.append(self._cast(e, "float32", self.fp32))
            new_id = len(self.nodes)
            for i in range(self._old_outputs(nid)):
                self.fp32[(nid, i)] = [new_id, i, 0]
        else:
            if inputs and (inputs[0] in self.fp32 or inputs[0] in self.low):
                first = self.target if inputs[0] in self.low else "float32"
                inferred = self._infer(nid, first)
                if inferred and inferred[2]:
                    self._record(nid, len(self.nodes), inferred[1])
            new_inputs = [self._mirror_entry(e) for e in inputs]
        new = dict(node, inputs=new_inputs)
        self.mirror[nid] = self._add(new, self._old_outputs(nid))


def _check_lists(target, target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names):
    if target_dtype_ops is None:
        target_dtype_ops = list_lp16_ops(target)
    elif not isinstance(target_dtype_ops, list):
        raise TypeError("amp.convert_symbol: target_dtype_ops should be a list of strs")
    if fp32_ops is None:
        fp32_ops = list_fp32_ops(target)
    elif not isinstance(fp32_ops, list):
        raise TypeError("amp.convert_symbol: fp32_ops should be a list of strs")
    if conditional_fp32_ops is None:
        conditional_fp32_ops = list_conditional_fp32_ops(target)
    elif not isinstance(conditional_fp32_ops, list):
        raise TypeError("amp.convert_symbol: conditional_fp32_ops should be a list")
    for entry in conditional_fp32_ops:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], str) and isinstance(entry[2], list)):
            raise TypeError("amp.convert_symbol: conditional_fp32_ops should be a list of (str, str, list of str)")
    if excluded_sym_names is None:
        excluded_sym_names = []
    elif not isinstance(excluded_sym_names, list):
        raise TypeError("amp.convert_symbol: excluded_sym_names should be a list of strs")
    cond_names = [c[0] for c in conditional_fp32_ops]
    for a, b, what in ((target_dtype_ops, fp32_ops, "target_dtype_ops and fp32_ops"),
                       (target_dtype_ops, cond_names, "target_dtype_ops and conditional_fp32_ops"),
                       (cond_names, fp32_ops, "fp32_ops and conditional_fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise ValueError(f"amp.convert_symbol: ops cannot be in two or more lists; common ops in {what}: "
                             f"{sorted(common)}")
    known = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target)
                + [c[0] for c in list_conditional_fp32_ops(target)])
    illegal = set(target_dtype_ops + fp32_ops + cond_names) - known
    if illegal:
        raise ValueError(f"amp.convert_symbol: ops {sorted(illegal)} are in none of list_lp16_ops, "
                         "list_fp32_ops, list_lp16_fp32_ops and list_conditional_fp32_ops")
    return target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names


def _infer_unknown(graph, inferred, target):
    """MXNet's AMPInferUnknown: variables read only by casts to the target
    dtype (or by multicasts over variables alone) become the target dtype."""
    result = dict(inferred)
    visited = {}

    def update(var_name, dtype):
        if var_name not in visited:
            if result.get(var_name) is None:
                visited[var_name] = dtype
                result[var_name] = dtype
        elif visited[var_name] != dtype:
            result[var_name] = inferred.get(var_name)

    nodes = graph["nodes"]
    for node in nodes:
        if node["op"] == "amp_cast":
            for e in node["inputs"]:
                if nodes[e[0]]["op"] == "null":
                    update(nodes[e[0]]["name"], node["attrs"]["dtype"])
        elif node["op"] == "amp_multicast":
            if all(nodes[e[0]]["op"] == "null" for e in node["inputs"]):
                for e in node["inputs"]:
                    update(nodes[e[0]]["name"], target)
    return result


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None,
                   excluded_sym_names=None, data_names=None, cast_optional_params=False):
    """A float32 network ``sym`` rewritten for mixed precision: ``amp_cast``
    and ``amp_multicast`` nodes go where MXNet 1.9.1's ReducePrecision pass
    puts them, and the model parameters get a ``__dtype__`` attribute.

    Parameters
    ----------
    sym : Symbol
        The float32 network.
    target_dtype : {'float16', 'bfloat16'}
        The low precision.
    target_dtype_ops, fp32_ops : list of str, optional
        Operators to run in ``target_dtype`` / float32 (default: the lists).
    conditional_fp32_ops : list of (str, str, list of str), optional
        ``(operator, attribute, values)`` run in float32 when the attribute
        has one of the values.
    excluded_sym_names : list of str, optional
        Nodes to keep in float32.
    data_names : list of str, optional
        The network's data inputs (default: inputs without ``__dtype__``).
    cast_optional_params : bool
        Leave parameters read only by low-precision operators uncast and
        mark them ``target_dtype`` (they are stored in it).
    """
    if not isinstance(sym, Symbol):
        raise TypeError(f"amp.convert_symbol: sym should be a Symbol, got {type(sym).__name__}")
    target = _target_name(target_dtype, "amp.convert_symbol")
    target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names = _check_lists(
        target, target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names)
    attr_dict = sym.attr_dict()
    if data_names is None:
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attr_dict.get(n, {})]
    model_params = set(sym.list_inputs()) - set(data_names)
    graph = json.loads(sym.tojson())
    new_graph = _Pass(graph, target, target_dtype_ops, fp32_ops, list_widest_type_cast(target),
                      conditional_fp32_ops, excluded_sym_names, data_names, cast_optional_params).run()
    converted = symbol.load_json(json.dumps(new_graph))
    # the inputs' dtypes with the data in float32
    known = {n: "float32" for n in data_names if n in converted.list_inputs()}
    arg, _, aux = converted._h.infer_type(known)
    names = converted.list_arguments() + converted.list_auxiliary_states()
    inferred = dict(zip(names, list(arg) + list(aux)))
    if cast_optional_params:
        inferred = _infer_unknown(new_graph, inferred, target)
    for node in new_graph["nodes"]:
        if node["op"] != "null":
            continue
        name = node["name"]
        attrs = node.setdefault("attrs", {})
        if (model_params and name in model_params) or (not model_params and "__dtype__" in attrs):
            attrs["__dtype__"] = str(_CODES.get(inferred.get(name) or "float32", 0))
    return symbol.load_json(json.dumps(new_graph))


def _param_dtypes(sym):
    """{input name: dtype name} from the ``__dtype__`` attributes."""
    out = {}
    for name, attrs in sym.attr_dict().items():
        code = attrs.get("__dtype__")
        if code is not None and code != "-1":
            out[name] = _NAMES.get(int(code), "float32")
    return out


def _as_dtype(array, dtype):
    if _dtype_name(array.dtype) == dtype:
        return array
    return array.astype(dtype)


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                  conditional_fp32_ops=None, excluded_sym_names=None, cast_optional_params=False):
    """:func:`convert_symbol` on a model (``sym``, ``arg_params``,
    ``aux_params``); returns the new symbol and the parameter dicts with
    each array cast to the dtype its ``__dtype__`` names."""
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise ValueError("amp.convert_model: excluded_sym_names must be a list of strings, got "
                         f"{type(excluded_sym_names).__name__}")
    _target_name(target_dtype, "amp.convert_model")
    if not isinstance(sym, Symbol):
        raise TypeError("amp.convert_model: the first argument should be a Symbol")
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise TypeError("amp.convert_model: arg_params and aux_params should be dicts of name to NDArray")
    param_names = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in param_names]
    sym = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names or [], data_names, cast_optional_params)
    dtypes = _param_dtypes(sym)
    for name in sym.list_arguments():
        if name in dtypes and name in arg_params:
            arg_params[name] = _as_dtype(arg_params[name], dtypes[name])
    for name in sym.list_auxiliary_states():
        if name in dtypes and name in aux_params:
            aux_params[name] = _as_dtype(aux_params[name], dtypes[name])
    return sym, arg_params, aux_params


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """A ``SymbolBlock`` running ``block`` (a hybridized HybridBlock that
    has run forward once) in mixed precision, its parameters cast as the
    converted graph asks. ``ctx``: where the parameters live (default
    cpu; MXNet's default is gpu(0))."""
    from ...gluon import HybridBlock, SymbolBlock  # pylint: disable=import-outside-toplevel
    if not isinstance(block, HybridBlock):
        raise TypeError("amp.convert_hybrid_block: block should be a HybridBlock")
    if not block._cached_graph:
        raise RuntimeError("Please first call block.hybridize() and then run forward with "
                           "this block at least once before calling export.")
    ctx = cpu() if ctx is None else ctx
    inputs, sym = block._cached_graph
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, data_names=[i.name for i in inputs],
                               cast_optional_params=cast_optional_params)
    dtypes = _param_dtypes(converted)
    arg_names = set(converted.list_arguments())
    aux_names = set(converted.list_auxiliary_states())
    values = {}
    for name, param in block.collect_params().items():
        if name not in arg_names and name not in aux_names:
            continue
        kind = "arg" if name in arg_names else "aux"
        value = param._reduce()
        if name in dtypes:
            value = _as_dtype(value, dtypes[name])
        values[f"{kind}:{name}"] = value
    ret = SymbolBlock(converted, inputs)
    for name, param in ret.collect_params().items():
        for kind in ("arg", "aux"):
            value = values.get(f"{kind}:{name}")
            if value is not None and _dtype_name(param.dtype) != _dtype_name(value.dtype):
                param.cast(value.dtype)
    for name, param in ret.collect_params().items():
        value = values.get(f"arg:{name}", values.get(f"aux:{name}"))
        if value is not None:
            param._load_init(value, ctx)
    return ret


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                             conditional_fp32_ops=None, excluded_sym_names=None, cast_optional_params=False):
    """A new ``BucketingModule`` whose bucket symbols are converted with
    :func:`convert_model` (the module's parameters must be initialized)."""
    from ...module import BucketingModule  # pylint: disable=import-outside-toplevel
    if not isinstance(bucketing_mod, BucketingModule):
        raise TypeError("amp.convert_bucketing_module: module should be an instance of BucketingModule")
    if not bucketing_mod._buckets:
        raise ValueError("amp.convert_bucketing_module: the BucketingModule should not be empty")
    if not bucketing_mod.params_initialized:
        raise ValueError("amp.convert_bucketing_module: the module's params should be initialized")
    arg_params, aux_params = bucketing_mod._curr_module._arg_params, bucketing_mod._curr_module._aux_params
    sym_dict = {}
    result_args, result_aux = arg_params, aux_params
    for key, mod in bucketing_mod._buckets.items():
        sym_dict[key], result_args, result_aux = convert_model(
            mod._symbol, dict(arg_params), dict(aux_params), target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops, conditional_fp32_ops=conditional_fp32_ops,
            excluded_sym_names=excluded_sym_names, cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(sym_dict, sym_gen=bucketing_mod._sym_gen, arg_params=result_args,
                                     aux_params=result_aux, default_bucket_key=bucketing_mod._default_bucket_key,
                                     logger=bucketing_mod.logger, context=bucketing_mod._context,
                                     work_load_list=bucketing_mod._work_load_list,
                                     fixed_param_names=bucketing_mod._fixed_param_names,
                                     state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
                                     compression_params=bucketing_mod._compression_params)


def remove_amp_cast(sym):
    """``sym`` without its ``amp_cast`` / ``amp_multicast`` nodes (each
    consumer reads the cast's input again), as MXNet's ``tojson`` /
    ``save`` do by default with ``remove_amp_cast=True``."""
    graph = json.loads(sym.tojson())
    nodes = graph["nodes"]

    def source(e):
        while nodes[e[0]]["op"] in ("amp_cast", "amp_multicast"):
            node = nodes[e[0]]
            e = node["inputs"][0] if node["op"] == "amp_cast" else node["inputs"][e[1]]
        return list(e)

    for node in nodes:
        node["inputs"] = [source(e) for e in node["inputs"]]
    heads = [source(e) for e in graph["heads"]]
    # keep the nodes still reached, in order
    keep, stack = set(), [h[0] for h in heads]
    while stack:
        n = stack.pop()
        if n not in keep:
            keep.add(n)
            stack.extend(e[0] for e in nodes[n]["inputs"])
    order = [i for i in range(len(nodes)) if i in keep]
    new_id = {old: i for i, old in enumerate(order)}
    row = graph["node_row_ptr"]
    out_nodes = [dict(nodes[i], inputs=[[new_id[e[0]], e[1], e[2] if len(e) > 2 else 0]
                                        for e in nodes[i]["inputs"]]) for i in order]
    counts = [row[i + 1] - row[i] for i in order]
    new_graph = {"nodes": out_nodes,
                 "arg_nodes": [i for i, n in enumerate(out_nodes) if n["op"] == "null"],
                 "node_row_ptr": [sum(counts[:i]) for i in range(len(counts) + 1)],
                 "heads": [[new_id[h[0]], h[1], 0] for h in heads], "attrs": graph.get("attrs", {})}
    return symbol.load_json(json.dumps(new_graph))

