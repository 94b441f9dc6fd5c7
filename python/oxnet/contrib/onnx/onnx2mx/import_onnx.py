"""Builds an oxnet Symbol (and its parameters) from an ONNX GraphProto."""

import numpy as np

from ....base import MXNetError
from ....onnx._util import onnx_to_np_dtype

# ONNX op type -> converter(graph, node, inputs, attrs, name); filled by _op_translations
CONVERTERS = {}


def register(*op_types):
    """Decorator: register a converter for the ONNX operators ``op_types``."""
    def wrap(func):
        for op in op_types:
            CONVERTERS[op] = func
        return func
    return wrap


class GraphProto:
    """State of one ONNX → oxnet conversion: the symbols and constants of every tensor."""

    def __init__(self, onnx):
        self.onnx = onnx
        self.opset = 13
        self.consts = {}       # tensor name -> numpy array known at import time
        self.syms = {}         # tensor name -> Symbol
        self.initializers = set()
        self.input_shapes = {}
        self.arg_params, self.aux_params = {}, {}
        self.node = None

    # ---- helpers for converters --------------------------------------------------
    def error(self, what):
        """An MXNetError naming the ONNX node being converted."""
        n = self.node
        where = f"operator '{n.op_type}' (node '{n.name or n.output[0]}')" if n else "graph"
        return MXNetError(f"mx.contrib.onnx.import_model: {where}: {what}")

    def is_const(self, name):
        """Whether tensor ``name`` is known at import time."""
        return name in self.consts

    def const(self, name):
        """The numpy value of tensor ``name`` (an error when it is computed at run time)."""
        if name not in self.consts:
            raise self.error(f"input '{name}' must be a constant (initializer) for oxnet")
        return self.consts[name]

    def sym(self, name, aux=False):
        """The Symbol of tensor ``name``; a constant becomes a parameter variable."""
        from .... import symbol, ndarray  # pylint: disable=import-outside-toplevel
        if name in self.syms:
            return self.syms[name]
        if name in self.consts:
            value = self.consts[name]
            if value.ndim == 0:  # oxnet (as MXNet) reads shape () as unknown: use (1,)
                value = value.reshape(1)
            v = symbol.var(name, shape=value.shape, dtype=value.dtype)
            (self.aux_params if aux else self.arg_params)[name] = ndarray.array(
                value, dtype=value.dtype)
            self.syms[name] = v
            return v
        raise self.error(f"input '{name}' is not produced by any earlier node")

    def shape(self, name):
        """The static shape of tensor ``name``, or None when the inputs' shapes do not fix it."""
        if name in self.consts:
            return tuple(self.consts[name].shape)
        s = self.sym(name)
        known = {k: v for k, v in self.input_shapes.items() if all(d > 0 for d in v)}
        params = {k: v.shape for k, v in {**self.arg_params, **self.aux_params}.items()}
        try:
            _, out, _ = s.infer_shape(**{k: v for k, v in {**known, **params}.items()
                                         if k in s.list_inputs()})
        except Exception:  # pylint: disable=broad-except
            return None
        if not out or out[0] is None or any(d == 0 for d in out[0]):
            return None
        return tuple(out[0])

    def ndim(self, name):
        """The rank of tensor ``name`` (an error when unknown)."""
        s = self.shape(name)
        if s is None:
            raise self.error(f"the rank of '{name}' is needed; give the graph inputs "
                             "static shapes")
        return len(s)

    # ---- graph ---------------------------------------------------------------------
    @staticmethod
    def opset_of(model_proto):
        """The default-domain opset version a model imports."""
        versions = [o.version for o in model_proto.opset_import if o.domain in ("", "ai.onnx")]
        return max(versions) if versions else 13

    def _attrs(self, node):
        out = {}
        for a in node.attribute:
            v = self.onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list):
                v = [x.decode() if isinstance(x, bytes) else x for x in v]
            elif isinstance(v, self.onnx.TensorProto):
                v = self.onnx.numpy_helper.to_array(v)
            out[a.name] = v
        return out

    def get_graph_metadata(self, graph):
        """``{'input_tensor_data': [(name, shape, elem_type)], 'output_tensor_data':
        [(name, shape)]}`` of an ONNX graph (initializers are not inputs)."""
        params = {t.name for t in graph.initializer}
        inputs = []
        for i in graph.input:
            if i.name in params:
                continue
            shape = tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
            inputs.append((i.name, shape, i.type.tensor_type.elem_type))
        outputs = [(o.name, tuple(d.dim_value for d in o.type.tensor_type.shape.dim))
                   for o in graph.output]
        return {"input_tensor_data": inputs, "output_tensor_data": outputs}

    def from_onnx(self, graph, opset_version):
        """Convert an ONNX GraphProto; returns ``(sym, arg_params, aux_params)``."""
        from .... import symbol  # pylint: disable=import-outside-toplevel
        from . import _op_translations  # noqa: F401  pylint: disable=import-outside-toplevel
        self.opset = int(opset_version)
        if self.opset < 7:
            raise MXNetError(f"mx.contrib.onnx.import_model: opset {self.opset} is too old "
                             "(oxnet reads opsets 11-13 and newer ones' unchanged operators)")
        for t in graph.initializer:
            if not t.name.strip():
                raise ValueError("mx.contrib.onnx.import_model: an initializer has no name")
            self.consts[t.name] = self.onnx.numpy_helper.to_array(t)
            self.initializers.add(t.name)
        for i in graph.input:
            if i.name in self.consts:
                continue
            tt = i.type.tensor_type
            shape = tuple(d.dim_value for d in tt.shape.dim)
            self.input_shapes[i.name] = shape
            kw = {"dtype": onnx_to_np_dtype(self.onnx, tt.elem_type)} if tt.elem_type else {}
            self.syms[i.name] = symbol.var(i.name, **kw)
        for node in graph.node:
            self.node = node
            conv = CONVERTERS.get(node.op_type)
            if node.domain not in ("", "ai.onnx") or conv is None:
                raise self.error("no oxnet converter for this ONNX operator")
            name = node.output[0] if node.output and node.output[0] else node.name
            result = conv(self, node, list(node.input), self._attrs(node), name)
            if not isinstance(result, (list, tuple)):
                result = [result]
            for out, val in zip(node.output, result):
                if not out:
                    continue
                if isinstance(val, np.ndarray):
                    self.consts[out] = val
                else:
                    self.syms[out] = val
        self.node = None
        outs = []
        for o in graph.output:
            if o.name in self.syms:
                outs.append(self.syms[o.name])
            elif o.name in self.consts:
                outs.append(self.sym(o.name))
            else:
                raise MXNetError(f"mx.contrib.onnx.import_model: graph output '{o.name}' is "
                                 "not produced by any node")
        sym = outs[0] if len(outs) == 1 else symbol.Group(outs)
        used = set(sym.list_inputs())
        arg = {k: v for k, v in self.arg_params.items() if k in used}
        aux = {k: v for k, v in self.aux_params.items() if k in used}
        return sym, arg, aux

    def graph_to_gluon(self, graph, ctx, opset_version):
        """Convert an ONNX GraphProto into a SymbolBlock with its parameters loaded."""
        from .... import symbol  # pylint: disable=import-outside-toplevel
        from ....gluon import SymbolBlock  # pylint: disable=import-outside-toplevel
        sym, arg_params, aux_params = self.from_onnx(graph, opset_version)
        data_names = [i[0] for i in self.get_graph_metadata(graph)["input_tensor_data"]]
        net = SymbolBlock(outputs=sym, inputs=[symbol.var(n) for n in data_names])
        net_params = net.collect_params()
        for params in (arg_params, aux_params):
            for name, value in params.items():
                if name in net_params:
                    net_params[name].shape = value.shape
                    net_params[name]._load_init(value, ctx=ctx)  # pylint: disable=protected-access
        return net
