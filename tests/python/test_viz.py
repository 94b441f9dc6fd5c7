"""mx.viz: print_summary's layer table and parameter count, and plot_network's
Graphviz graph (a graphviz.Digraph when that package is installed, else a
DotGraph holding the same DOT text)."""

import pathlib
import re
import subprocess
import sys
import types
import warnings

import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"

MLP_PARAMS = 784 * 256 + 256 + 256 * 10 + 10

# The same network for oxnet and (in a subprocess) MXNet 1.9.1.
MLP_SOURCE = """
data = mx.sym.var("data")
fc1 = mx.sym.FullyConnected(data, num_hidden=256, name="fc1")
act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
fc2 = mx.sym.FullyConnected(act, num_hidden=10, name="fc2")
net = mx.sym.softmax(fc2, name="softmax")
"""


def mlp(lib=mx):
    scope = {"mx": lib}
    exec(MLP_SOURCE, scope)
    return scope["net"]


def summary(capsys, *args, **kwargs):
    capsys.readouterr()
    mx.viz.print_summary(*args, **kwargs)
    return capsys.readouterr().out


def rows(text):
    """{layer: (output shape, param count, previous layer)} from a summary table."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\((\S+)\)\s", line)
        if m:
            layer = m.group(1)
            fields = [line[0:52].strip(), line[52:76].strip(), line[76:88].strip(), line[88:].strip()]
            out[layer] = (fields[1], int(fields[2]), fields[3])
    return out


def total(text):
    m = re.search(r"^Total params: (\d+)$", text, re.M)
    assert m, text
    return int(m.group(1))


# ----- the module ----------------------------------------------------------------------------

def test_viz_is_the_visualization_module():
    assert mx.viz is mx.visualization
    assert "viz" in mx.__all__ and "visualization" in mx.__all__
    assert callable(mx.viz.print_summary) and callable(mx.viz.plot_network)


# ----- print_summary ---------------------------------------------------------------------------

def test_summary_counts_mlp_parameters_and_shapes(capsys):
    text = summary(capsys, mlp(), shape={"data": (1, 784)})
    assert total(text) == MLP_PARAMS == 203530
    table = rows(text)
    assert list(table) == ["data", "fc1", "relu1", "fc2", "softmax"]
    assert table["data"] == ("784", 0, "")
    assert table["fc1"] == ("256", 784 * 256 + 256, "data")
    assert table["relu1"] == ("256", 0, "fc1")
    assert table["fc2"] == ("10", 256 * 10 + 10, "relu1")
    assert table["softmax"] == ("10", 0, "fc2")
    lines = text.splitlines()
    assert lines[0] == "_" * 120 and lines[2] == "=" * 120 and lines[-1] == "_" * 120
    assert lines[1].startswith("Layer (type)") and "Output Shape" in lines[1] and "Previous Layer" in lines[1]
    assert lines[1].index("Output Shape") == int(120 * .44) and lines[1].index("Param #") == int(120 * .64)
    assert all(len(line) == 120 for line in lines if not line.startswith("Total"))
    # The batch size does not change the table.
    assert summary(capsys, mlp(), shape={"data": (32, 784)}) == text


def test_summary_without_shapes_counts_what_attributes_give(capsys):
    text = summary(capsys, mlp())
    # No shapes: only the biases' sizes are known (as MXNet counts them), and no shapes shown.
    assert total(text) == 256 + 10
    table = rows(text)
    assert table["fc1"] == ("", 256, "data") and table["fc2"] == ("", 10, "relu1")
    assert table["data"] == ("", 0, "")


def test_summary_declared_shapes_and_shared_weights(capsys):
    x = mx.sym.var("x")
    w = mx.sym.var("shared_weight")
    a = mx.sym.FullyConnected(x, weight=w, num_hidden=4, no_bias=True, name="a")
    b = mx.sym.FullyConnected(a, weight=w, num_hidden=4, no_bias=True, name="b")
    text = summary(capsys, b, shape={"x": (2, 4)})
    # The shared 4x4 weight is one parameter array, counted once.
    assert total(text) == 16
    assert rows(text)["a"] == ("4", 16, "x") and rows(text)["b"] == ("4", 0, "a")


def test_summary_layout_options_and_errors(capsys):
    text = summary(capsys, mlp(), shape={"data": (1, 784)}, line_length=80, positions=[30, 50, 60, 80])
    lines = text.splitlines()
    assert lines[0] == "_" * 80
    assert lines[1].index("Output Shape") == 30 and lines[1].index("Param #") == 50
    assert lines[1].index("Previous Layer") == 60
    assert total(text) == MLP_PARAMS
    with pytest.raises(TypeError):
        mx.viz.print_summary("not a symbol")
    with pytest.raises(ValueError, match="incomplete"):
        mx.viz.print_summary(mlp(), shape={})


def run_mxnet(code):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 is not installed in .venv-mxnet (scripts install it for the MXNet comparisons)")
    proc = subprocess.run([str(MXNET_PYTHON), "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("shape", [{"data": (1, 784)}, {"data": (8, 784)}, None])
def test_summary_matches_mxnet(capsys, shape):
    theirs = run_mxnet("import mxnet as mx\n" + MLP_SOURCE + f"mx.viz.print_summary(net, shape={shape!r})\n")
    ours = summary(capsys, mlp(), shape=shape)
    assert total(ours) == total(theirs)
    ours_rows, theirs_rows = rows(ours), rows(theirs)
    assert list(ours_rows) == list(theirs_rows)
    for layer, (dims, params, previous) in theirs_rows.items():
        assert ours_rows[layer] == (dims, params, previous), layer
    # For this network the whole table is the same, character for character.
    assert ours.splitlines() == [line for line in theirs.splitlines() if line and not line.startswith("[")]


# ----- plot_network ------------------------------------------------------------------------------

@pytest.fixture
def no_graphviz(monkeypatch):
    """Makes `import graphviz` fail, as where the package is not installed."""
    monkeypatch.setitem(sys.modules, "graphviz", None)


def node_line(source, name):
    m = re.search(rf"^\t{re.escape(name)} \[(.*)\]$", source, re.M)
    assert m, f"no node {name} in\n{source}"
    return m.group(1)


DOT_ID = r'"(?:[^"\\]|\\.)*"|[^\s"]+'


def edges(source):
    """{(consumer, input): attribute text} for every edge."""
    return {(m.group(1), m.group(2)): m.group(3)
            for m in re.finditer(rf"^\t({DOT_ID}) -> ({DOT_ID}) \[(.*)\]$", source, re.M)}


def test_plot_without_graphviz_gives_dot_source(no_graphviz):
    dot = mx.viz.plot_network(mlp(), title="mlp")
    assert isinstance(dot, mx.viz.DotGraph)
    src = dot.source
    assert src.startswith("digraph mlp {\n") and src.rstrip().endswith("}")
    assert str(dot) == src
    assert 'shape=oval' in node_line(src, "data") and 'label=data' in node_line(src, "data")
    assert node_line(src, "fc1").startswith('label="FullyConnected\\n256" fillcolor="#fb8072"')
    assert "shape=box" in node_line(src, "fc1")
    assert node_line(src, "relu1").startswith('label="Activation\\nrelu"')
    assert node_line(src, "fc2").startswith('label="FullyConnected\\n10"')
    assert node_line(src, "softmax").startswith("label=softmax")
    # Weights and biases are hidden: no nodes, no edges.
    assert "_weight" not in src and "_bias" not in src
    assert set(edges(src)) == {("fc1", "data"), ("relu1", "fc1"), ("fc2", "relu1"), ("softmax", "fc2")}
    for attrs in edges(src).values():
        assert attrs == 'label="" arrowtail=open dir=back'


def test_plot_render_needs_graphviz(no_graphviz, tmp_path):
    dot = mx.viz.plot_network(mlp())
    for method in (dot.render, dot.view):
        with pytest.raises(ImportError, match="graphviz Python package"):
            method()
    path = dot.save(str(tmp_path / "net.gv"))
    assert pathlib.Path(path).read_text() == dot.source


def test_plot_shapes_types_and_weights(no_graphviz):
    src = mx.viz.plot_network(mlp(), shape={"data": (5, 784)}, dtype={"data": "float32"},
                              hide_weights=False, node_attrs={"fixedsize": "false"}).source
    e = edges(src)
    assert e[("fc1", "data")] == 'label="784(float32)" arrowtail=open dir=back'
    assert e[("relu1", "fc1")].startswith('label="256(float32)"')
    assert e[("fc2", "relu1")].startswith('label="256(float32)"')
    assert e[("softmax", "fc2")].startswith('label="10(float32)"')
    # Shown weights get edges (with their shapes) but, as in MXNet, no styled node of their own.
    assert e[("fc1", "fc1_weight")].startswith('label="784(float32)"')
    assert e[("fc2", "fc2_bias")].startswith('label="(float32)"')
    assert not re.search(r"^\tfc1_weight \[", src, re.M)
    assert "fixedsize=false" in node_line(src, "fc1")


def test_plot_multi_output_edges_and_escaping(no_graphviz):
    data = mx.sym.var("my data")
    parts = mx.sym.split(data, num_outputs=2, axis=1, name="sp")
    fc = mx.sym.FullyConnected(parts[1], num_hidden=5, name='fc "x"')
    out = mx.sym.concat(parts[0], fc, dim=1, name="cat")
    src = mx.viz.plot_network(out, shape={"my data": (1, 6)}).source
    assert node_line(src, '"my data"').startswith('label="my data"')
    assert node_line(src, '"fc \\"x\\""').startswith('label="FullyConnected\\n5"')
    e = edges(src)
    assert e[('"fc \\"x\\""', "sp")].startswith("label=3 ")
    assert e[("cat", '"fc \\"x\\""')].startswith("label=5 ")
    assert e[("cat", "sp")].startswith("label=3 ")
    assert "#fdb462" in node_line(src, "cat")  # concat is drawn as a shape op


def test_plot_warns_about_repeated_names(no_graphviz):
    net = mx.sym.elemwise_add(mx.sym.var("x"), mx.sym.var("x"), name="add")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(net)
    assert any(issubclass(w.category, RuntimeWarning) and "Repeated names: x" in str(w.message) for w in caught)
    with pytest.raises(TypeError):
        mx.viz.plot_network("not a symbol")
    with pytest.raises(ValueError, match="incomplete"):
        mx.viz.plot_network(mlp(), shape={})


def test_plot_uses_graphviz_digraph_when_installed(monkeypatch):
    class Digraph:
        def __init__(self, name=None, format=None):
            self.name, self.format, self.nodes, self.edges = name, format, {}, []

        def node(self, name, label=None, **attrs):
            self.nodes[name] = (label, attrs)

        def edge(self, tail_name, head_name, label=None, **attrs):
            self.edges.append((tail_name, head_name, label))

    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Digraph=Digraph))
    dot = mx.viz.plot_network(mlp(), title="t", save_format="svg", shape={"data": (1, 784)})
    assert isinstance(dot, Digraph) and (dot.name, dot.format) == ("t", "svg")
    assert dot.nodes["fc1"][0] == "FullyConnected\n256" and dot.nodes["data"][1]["shape"] == "oval"
    assert "fc1_weight" not in dot.nodes
    assert ("fc1", "data", "784") in dot.edges and ("softmax", "fc2", "10") in dot.edges


def test_plot_with_the_real_graphviz_package():
    graphviz = pytest.importorskip("graphviz", reason="the graphviz Python package is not installed")
    dot = mx.viz.plot_network(mlp(), shape={"data": (1, 784)})
    assert isinstance(dot, graphviz.Digraph)
    assert "FullyConnected" in dot.source and "fc1_weight" not in dot.source
