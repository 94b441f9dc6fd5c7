"""``oxnet.visualization`` (``mx.viz``): looking at a symbolic network, as
MXNet 1.x's ``mx.viz`` does::

    mx.viz.print_summary(net, shape={"data": (1, 784)})   # a layer table
    dot = mx.viz.plot_network(net, shape={"data": (1, 784)})
    dot.source                                              # Graphviz DOT text

``plot_network`` returns a ``graphviz.Digraph`` when the ``graphviz`` Python
package is installed. Without it, it returns a :class:`DotGraph` whose
``source`` holds the same DOT text; rendering that text needs the package
(and the Graphviz programs), so its ``render``/``view`` raise ImportError.
"""

import json
import re
import warnings

from .symbol import Symbol

__all__ = ["print_summary", "plot_network", "DotGraph"]

# Name endings of variables that hold parameters (MXNet hides these in plots).
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma",
                    "_moving_var", "_moving_mean", "_running_var", "_running_mean")

# Fill colours of plotted nodes, by kind of layer.
_COLORS = {
    "input": "#8dd3c7",
    "linear": "#fb8072",
    "activation": "#ffffb3",
    "norm": "#bebada",
    "pool": "#80b1d3",
    "shape": "#fdb462",
    "softmax": "#b3de69",
    "other": "#fccde5",
}


def _looks_like_weight(name):
    return name.endswith(_WEIGHT_SUFFIXES)


def _looks_like_label(name):
    return name == "label" or name.endswith("_label")


def _numbers(text):
    """The integers written in an attribute such as ``(3, 3)``, as strings."""
    return re.findall(r"\d+", str(text))


def _dims(shape):
    """A shape without its batch axis, written ``256`` or ``3x32x32``."""
    return "x".join(str(d) for d in tuple(shape)[1:])


def _size(shape):
    """Number of elements of a fully known shape; 0 when unknown."""
    if not shape or any(int(d) == 0 for d in shape):
        return 0
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _size_from_attrs(node, param):
    """The size of parameter ``param`` of operator ``node`` where the node's
    attributes alone give it (a bias, an embedding table); 0 otherwise. Used
    when no input shapes are given, which MXNet's summary also counts."""
    op, attrs = node["op"], node.get("attrs", {})
    try:
        if param.endswith("_bias") and op == "FullyConnected":
            return int(attrs["num_hidden"])
        if param.endswith("_bias") and op in ("Convolution", "Deconvolution"):
            return int(attrs["num_filter"])
        if param.endswith("_weight") and op == "Embedding":
            return int(attrs["input_dim"]) * int(attrs["output_dim"])
    except (KeyError, ValueError):
        pass
    return 0


def _output_names(symbol):
    """``{(node name, output index): output name}`` for every visible output
    of every node, and the internals symbol they were read from."""
    internals = symbol.get_internals()
    heads = json.loads(internals.tojson())
    nodes = heads["nodes"]
    names = {}
    for (node_id, index, _), out_name in zip(heads["heads"], internals.list_outputs()):
        names[(nodes[node_id]["name"], index)] = out_name
    return names, internals


def _inferred_shapes(internals, shape):
    """Every output's shape (by output name) and every argument's shape (by
    argument name) for the given input shapes; ValueError if incomplete."""
    arg_shapes, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError("Input shape is incomplete")
    return (dict(zip(internals.list_outputs(), out_shapes)),
            dict(zip(internals.list_arguments(), arg_shapes)))


# ----- print_summary ---------------------------------------------------------------

def _row(fields, stops):
    """One table line: field ``i`` ends (cut or padded) at column ``stops[i]``."""
    line = ""
    for field, stop in zip(fields, stops):
        line = (line + str(field))[:stop]
        line = line.ljust(stop)
    return line


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):
    """Prints a table of the network's layers: each operator (and each data
    input) with its output shape (batch axis left out), its number of
    parameters and the layers it reads, then the total parameter count.

    Parameters
    ----------
    symbol : Symbol
        The network.
    shape : dict of str to tuple, optional
        Shapes of the data inputs. With them, output shapes are shown and
        parameter counts use the inferred parameter shapes.
    line_length : int
        Width of the table in characters.
    positions : list of float or int
        Where each of the four columns ends: fractions of ``line_length``
        when the last one is at most 1, else character columns.

    Parameters are the argument variables that are neither data inputs
    (the keys of ``shape``) nor labels (``*_label``); without ``shape``, the
    variables named like MXNet's parameters (``*_weight``, ``*_bias``,
    ``*_gamma``, ``*_beta``), of which only the sizes known without input
    shapes count (declared ``shape=``, biases, embedding tables). Each is
    counted once, for the first layer that reads it; auxiliary states
    (running statistics) are not counted.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    show_shape = shape is not None
    out_names, internals = _output_names(symbol)
    if show_shape:
        out_shapes, arg_shapes = _inferred_shapes(internals, shape)
        given = set(shape)
    else:
        out_shapes = {}
        # Declared shapes (``var(..., shape=)``) still give parameter sizes.
        args, _, _ = internals.infer_shape_partial()
        arg_shapes = dict(zip(internals.list_arguments(), args))
        given = set()
    arguments = set(symbol.list_arguments())

    def kind(name):
        """'param', 'input' or 'label' for a variable; None for an aux state."""
        if name not in arguments:
            return None
        if _looks_like_label(name):
            return "label"
        if name in given:
            return "input"
        if show_shape or _looks_like_weight(name):
            return "param"
        return "input"

    nodes = json.loads(symbol.tojson())["nodes"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    rows = []  # (layer, output shape, param count, [previous layers])
    counted = set()
    for node in nodes:
        name, op = node["name"], node["op"]
        if op == "null":
            if kind(name) == "input":
                dims = _dims(arg_shapes[name]) if show_shape else ""
                rows.append((f"{name}(null)", dims, 0, []))
            continue
        params = 0
        previous = []
        for node_id, _index, _ in node["inputs"]:
            source = nodes[node_id]
            if source["op"] != "null":
                previous.append(source["name"])
                continue
            role = kind(source["name"])
            if role == "input":
                previous.append(source["name"])
            elif role == "param" and source["name"] not in counted:
                counted.add(source["name"])
                size = _size(arg_shapes.get(source["name"]))
                params += size if size or show_shape else _size_from_attrs(node, source["name"])
        out = out_names.get((name, 0))
        dims = _dims(out_shapes[out]) if show_shape and out in out_shapes else ""
        rows.append((f"{name}({op})", dims, params, previous))

    print("_" * line_length)
    print(_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions))
    print("=" * line_length)
    total = 0
    for i, (layer, dims, params, previous) in enumerate(rows):
        print(_row([layer, dims, params, previous[0] if previous else ""], positions))
        for extra in previous[1:]:
            print(_row(["", "", "", extra], positions))
        print(("=" if i == len(rows) - 1 else "_") * line_length)
        total += params
    print(f"Total params: {total}")
    print("_" * line_length)


# ----- plot_network ------------------------------------------------------------------

_PLAIN_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^-?(\.[0-9]+|[0-9]+(\.[0-9]*)?)$")
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


def _dot_id(text):
    """``text`` as a DOT identifier: bare when DOT allows it, else quoted."""
    text = str(text)
    if _PLAIN_ID.match(text) and text.lower() not in _KEYWORDS:
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "")
    return f'"{escaped}"'


def _dot_attrs(label, attrs):
    items = [] if label is None else [f"label={_dot_id(label)}"]
    items += [f"{k}={_dot_id(v)}" for k, v in sorted(attrs.items())]
    return f" [{' '.join(items)}]" if items else ""


class DotGraph:
    """What :func:`plot_network` returns when the ``graphviz`` package is not
    installed: the same graph as DOT text (``source``, also ``str(graph)``),
    built through ``node``/``edge`` like ``graphviz.Digraph``.

    ``save`` writes the text to a file (render it with Graphviz's ``dot``
    program); ``render``, ``view`` and ``pipe`` need the ``graphviz`` package
    and raise ImportError saying so.
    """

    def __init__(self, name="plot", format="pdf"):  # noqa: A002 (graphviz's keyword)
        self.name = name
        self.format = format
        self.body = []

    def node(self, name, label=None, **attrs):
        """Adds a node."""
        self.body.append(f"\t{_dot_id(name)}{_dot_attrs(label, attrs)}\n")

    def edge(self, tail_name, head_name, label=None, **attrs):
        """Adds an edge from ``tail_name`` to ``head_name``."""
        self.body.append(f"\t{_dot_id(tail_name)} -> {_dot_id(head_name)}{_dot_attrs(label, attrs)}\n")

    @property
    def source(self):
        """The graph as Graphviz DOT text."""
        return f"digraph {_dot_id(self.name)} {{\n{''.join(self.body)}}}\n"

    def __str__(self):
        return self.source

    def __repr__(self):
        return f"<DotGraph {self.name!r}: {len(self.body)} statements>"

    def save(self, filename=None, directory=None):
        """Writes the DOT text to ``filename`` (default ``<name>.gv``) and returns the path."""
        import os

        path = filename or f"{self.name}.gv"
        if directory:
            path = os.path.join(directory, path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.source)
        return path

    def _needs_graphviz(self, what):
        raise ImportError(
            f"DotGraph.{what}: rendering a network plot needs the graphviz Python package "
            "(pip install graphviz) and the Graphviz programs; the DOT text is available "
            "without them as .source (or written to a file by .save())"
        )

    def render(self, *args, **kwargs):
        """Needs the ``graphviz`` package: raises ImportError."""
        self._needs_graphviz("render")

    def view(self, *args, **kwargs):
        """Needs the ``graphviz`` package: raises ImportError."""
        self._needs_graphviz("view")

    def pipe(self, *args, **kwargs):
        """Needs the ``graphviz`` package: raises ImportError."""
        self._needs_graphviz("pipe")


def _new_graph(title, save_format):
    try:
        from graphviz import Digraph
    except ImportError:
        return DotGraph(name=title, format=save_format)
    return Digraph(name=title, format=save_format)


def _node_look(node):
    """The label and fill colour of an operator node, as MXNet draws them."""
    op, attrs = node["op"], node.get("attrs", {})
    label = node["name"]
    if op == "Convolution":
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        label = f"Convolution\n{'x'.join(_numbers(attrs.get('kernel', '')))}/{stride}, {attrs.get('num_filter', '')}"
        return label, _COLORS["linear"]
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs.get('num_hidden', '')}", _COLORS["linear"]
    if op == "BatchNorm":
        return label, _COLORS["norm"]
    if op == "Activation":
        return f"Activation\n{attrs.get('act_type', '')}", _COLORS["activation"]
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}", _COLORS["activation"]
    if op == "Pooling":
        kernel = "x".join(_numbers(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs.get('pool_type', 'max')}, {kernel}/{stride}", _COLORS["pool"]
    if op in ("Concat", "concat", "Flatten", "flatten", "Reshape", "reshape"):
        return label, _COLORS["shape"]
    if op == "Softmax":
        return label, _COLORS["softmax"]
    if op == "Custom" and "op_type" in attrs:
        return attrs["op_type"], _COLORS["other"]
    return label, _COLORS["other"]


def _type_name(t):
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs={},
                 hide_weights=True):
    """The network as a Graphviz graph: data inputs as ovals, operators as
    filled boxes labelled with their key attributes (``FullyConnected`` and
    its ``num_hidden``, ``Activation`` and its ``act_type``, ...), and an
    edge from each operator back to each of its inputs.

    Parameters
    ----------
    symbol : Symbol
        The network (every node it depends on is drawn).
    title : str
        The graph's name.
    save_format : str
        The format ``render`` writes (``pdf``, ``png``, ``svg``, ...).
    shape : dict of str to tuple, optional
        Input shapes; edges are then labelled with the shapes they carry
        (batch axis left out).
    dtype : dict of str to dtype, optional
        Input dtypes; edges are then labelled with their dtype too.
    node_attrs : dict
        Graphviz node attributes that override the defaults, such as
        ``{"shape": "oval", "fixedsize": "false"}``.
    hide_weights : bool
        Leave out variables named like parameters (``*_weight``, ``*_bias``,
        ``*_gamma``, ``*_beta``, running statistics) and their edges.

    Returns
    -------
    graphviz.Digraph, or :class:`DotGraph` (DOT text in ``.source``) when
    the ``graphviz`` package is not installed.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be a Symbol")
    out_names, internals = _output_names(symbol)
    out_shapes = _inferred_shapes(internals, shape)[0] if shape is not None else None
    out_types = None
    if dtype is not None:
        _, types, _ = internals.infer_type(**dtype)
        if types is None:
            raise ValueError("Input type is incomplete")
        out_types = dict(zip(internals.list_outputs(), types))

    nodes = json.loads(symbol.tojson())["nodes"]
    seen, repeated = set(), []
    for node in nodes:
        if node["name"] in seen and node["name"] not in repeated:
            repeated.append(node["name"])
        seen.add(node["name"])
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may result "
                      "in cyclic graph. Repeated names: " + ",".join(repeated), RuntimeWarning)

    style = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}
    style.update(node_attrs)
    dot = _new_graph(title, save_format)

    hidden = set()
    for node in nodes:
        name = node["name"]
        attrs = dict(style)
        if node["op"] == "null":
            if _looks_like_weight(name):
                # Hidden: no node and no edges. Shown: no node of its own,
                # so Graphviz draws a plain ellipse where its edges meet.
                if hide_weights:
                    hidden.add(name)
                continue
            attrs["shape"] = "oval"
            label, attrs["fillcolor"] = name, _COLORS["input"]
        else:
            label, attrs["fillcolor"] = _node_look(node)
        dot.node(name=name, label=label, **attrs)

    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"]
        if node["op"] == "_contrib_BilinearResize2D":
            inputs = inputs[:1]
        for node_id, index, _ in inputs:
            source = nodes[node_id]["name"]
            if source in hidden:
                continue
            out = out_names.get((source, index))
            label = ""
            if out_shapes is not None and out in out_shapes:
                label = _dims(out_shapes[out])
            if out_types is not None and out in out_types:
                label += f"({_type_name(out_types[out])})"
            dot.edge(tail_name=node["name"], head_name=source, label=label, dir="back", arrowtail="open")
    return dot
