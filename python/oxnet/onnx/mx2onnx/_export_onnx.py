"""Walks an oxnet Symbol's JSON graph and builds an ONNX graph, one converter per node."""

import json

import numpy as np

from ...base import MXNetError
from .._util import np_to_onnx_dtype

OPSET = 13

# op name -> converter(ctx, node); filled by _op_translations' @register
CONVERTERS = {}

# loss heads: their second input is a training label, not a model input
_LABEL_OPS = {"SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
              "MAERegressionOutput", "SVMOutput"}


def register(*op_names):
    """Decorator: register a converter function for the oxnet operators ``op_names``."""
    def wrap(func):
        for name in op_names:
            CONVERTERS[name] = func
        return func
    return wrap


class Node:
    """One oxnet graph node as a converter sees it: ``name``, ``op``, ``attrs`` (strings),
    ``inputs`` (ONNX tensor names), ``in_shapes``/``in_dtypes``, ``outputs`` (the ONNX
    names the converter must produce) and ``out_shapes``/``out_dtypes``."""

    def __init__(self, name, op, attrs, inputs, in_shapes, in_dtypes, outputs, out_shapes,
                 out_dtypes):
        self.name, self.op, self.attrs = name, op, attrs
        self.inputs, self.in_shapes, self.in_dtypes = inputs, in_shapes, in_dtypes
        self.outputs, self.out_shapes, self.out_dtypes = outputs, out_shapes, out_dtypes

    def error(self, what):
        """An MXNetError about this node that names its operator and its name."""
        return MXNetError(f"mx.onnx.export_model: operator '{self.op}' (node '{self.name}'): {what}")


class Context:
    """Collects the ONNX nodes and initializers that converters emit."""

    def __init__(self, onnx, dynamic):
        self.onnx = onnx
        self.dynamic = dynamic
        self.nodes = []
        self.initializers = []
        self.used = set()

    def fresh(self, base):
        """A tensor name not used yet, built from ``base``."""
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name

    def add(self, op_type, inputs, outputs=None, name=None, **attrs):
        """Append an ONNX node; ``outputs`` is a list of names or a base name (one output).
        Returns the list of output names."""
        if outputs is None or isinstance(outputs, str):
            outputs = [self.fresh(outputs or f"{op_type.lower()}")]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(
            op_type, list(inputs), list(outputs), name=name or outputs[0], **attrs))
        return outputs

    def const(self, base, value, dtype=None):
        """Add an initializer holding ``value`` (numpy-convertible); returns its name."""
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(base)
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def ints(self, base, values):
        """An int64 1-D initializer (shapes, axes, starts...)."""
        return self.const(base, np.asarray(list(values), dtype=np.int64).reshape(-1))

    def dtype_code(self, dtype):
        """ONNX element type of a numpy dtype."""
        return np_to_onnx_dtype(self.onnx, dtype)


def _dims(shape):
    return [None if d is None or d < 0 else int(d) for d in shape]


def create_onnx_model(onnx, sym, params, in_shapes, in_types, dynamic=False,
                      dynamic_input_shapes=None, verbose=False):
    """Build and return the ONNX ModelProto of ``sym`` with ``params`` (name -> numpy)."""
    graph = json.loads(sym.tojson())
    nodes = graph["nodes"]
    row_ptr = graph.get("node_row_ptr")
    if not row_ptr or len(row_ptr) != len(nodes) + 1:
        row_ptr = list(range(len(nodes) + 1))  # one output per node

    # labels of loss heads are not model inputs
    labels = set()
    for n in nodes:
        if n["op"] in _LABEL_OPS and len(n["inputs"]) > 1:
            src = nodes[n["inputs"][1][0]]
            if src["op"] == "null" and src["name"] not in params:
                labels.add(src["name"])
    data_names = [n["name"] for n in nodes
                  if n["op"] == "null" and n["name"] not in params and n["name"] not in labels]
    # MXNet orders the data inputs as sym.list_inputs() does
    order = [n for n in sym.list_inputs() if n in data_names]
    if len(in_shapes) != len(order):
        raise ValueError(f"mx.onnx.export_model: in_shapes has {len(in_shapes)} shapes but the "
                         f"model has {len(order)} data inputs {order} (inputs not in params)")
    if len(in_types) != len(order):
        raise ValueError(f"mx.onnx.export_model: in_types has {len(in_types)} types but the "
                         f"model has {len(order)} data inputs {order}")
    shapes = {n: tuple(int(d) for d in s) for n, s in zip(order, in_shapes)}
    types = {n: np.dtype(t) for n, t in zip(order, in_types)}
    for name in sym.list_inputs():
        if name in params:
            shapes[name] = params[name].shape
            types[name] = params[name].dtype

    internals = sym.get_internals()
    try:
        _, all_shapes, _ = internals.infer_shape(**shapes)
        _, all_types, _ = internals.infer_type(**types)
    except Exception as err:  # pylint: disable=broad-except
        raise MXNetError(f"mx.onnx.export_model: shape/type inference of the model failed "
                         f"with in_shapes={in_shapes}: {err}") from None
    if all_shapes is None or any(s is None for s in all_shapes):
        raise MXNetError("mx.onnx.export_model: could not infer the shapes of every node "
                         f"with in_shapes={in_shapes}")
    # node_row_ptr counts hidden outputs too (Dropout's mask): index the visible ones
    out_names = internals.list_outputs()
    visible, p = [0], 0
    for idx, n in enumerate(nodes):
        total = row_ptr[idx + 1] - row_ptr[idx]
        k = 1 if n["op"] == "null" else 0
        while n["op"] != "null" and k < total and p + k < len(out_names) and \
                out_names[p + k].startswith(n["name"] + "_") and \
                "output" in out_names[p + k][len(n["name"]):]:
            k += 1
        p += max(k, 1)
        visible.append(p)
    if p != len(out_names):
        raise MXNetError("mx.onnx.export_model: could not match the graph's nodes with its "
                         "outputs")
    row_ptr = visible

    ctx = Context(onnx, dynamic)
    names = []        # per node: ONNX names of its outputs
    seen = set()
    inputs, dyn = [], list(dynamic_input_shapes) if dynamic_input_shapes is not None else None
    for idx, n in enumerate(nodes):
        name = n["name"]
        if name in seen:
            name = f"idx_{idx}_{name}"
        seen.add(name)
        nout = row_ptr[idx + 1] - row_ptr[idx]
        out_shapes = [tuple(all_shapes[row_ptr[idx] + i]) for i in range(nout)]
        out_dtypes = [np.dtype(all_types[row_ptr[idx] + i]) for i in range(nout)]
        if n["op"] == "null":
            ctx.used.add(name)
            names.append([name])
            if name in params:
                ctx.initializers.append(onnx.numpy_helper.from_array(params[name], name))
            elif name in labels:
                pass
            else:
                shape = out_shapes[0]
                if dynamic:
                    pos = order.index(name)
                    shape = dyn[pos] if dyn is not None else [None] * len(shape)
                inputs.append(onnx.helper.make_tensor_value_info(
                    name, ctx.dtype_code(out_dtypes[0]), _dims(shape)))
            continue
        op = n["op"]
        conv = CONVERTERS.get(op)
        if conv is None:
            raise MXNetError(f"mx.onnx.export_model: no ONNX converter for operator '{op}' "
                             f"(node '{name}'); mx.onnx.get_operator_support() lists the "
                             "supported operators")
        outs = [name] if nout == 1 else [f"{name}{i}" for i in range(nout)]
        for o in outs:
            ctx.used.add(o)
        ins = [names[e[0]][e[1]] for e in n["inputs"]]
        in_shapes_n = [tuple(all_shapes[row_ptr[e[0]] + e[1]]) for e in n["inputs"]]
        in_types_n = [np.dtype(all_types[row_ptr[e[0]] + e[1]]) for e in n["inputs"]]
        node = Node(name, op, dict(n.get("attrs", n.get("param", {})) or {}), ins, in_shapes_n,
                    in_types_n, outs, out_shapes, out_dtypes)
        if verbose:
            print(f"mx.onnx: converting node {idx} '{name}' ({op})")
        conv(ctx, node)
        names.append(outs)

    outputs = []
    for head in graph["heads"]:
        idx, i = head[0], head[1]
        tname = names[idx][i]
        shape = tuple(all_shapes[row_ptr[idx] + i])
        if dynamic:
            shape = [None] * len(shape)
        outputs.append(onnx.helper.make_tensor_value_info(
            tname, ctx.dtype_code(np.dtype(all_types[row_ptr[idx] + i])), _dims(shape)))
    g = onnx.helper.make_graph(ctx.nodes, "oxnet_graph", inputs, outputs, ctx.initializers)
    model = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", OPSET)],
                                   producer_name="oxnet")
    model.ir_version = min(model.ir_version, 7)  # opset 13's IR: readable by older runtimes
    return model
