"""``import_to_gluon``: an ONNX file as a Gluon SymbolBlock."""

from .import_model import _load
from .import_onnx import GraphProto


def import_to_gluon(model_file, ctx):
    """Import an ONNX model file as a :class:`~oxnet.gluon.SymbolBlock` whose parameters hold
    the model's weights on ``ctx`` (a Context or a list of them)."""
    onnx, proto = _load(model_file, "mx.contrib.onnx.import_to_gluon")
    graph = GraphProto(onnx)
    return graph.graph_to_gluon(proto.graph, ctx, graph.opset_of(proto))
