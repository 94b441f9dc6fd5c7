"""``import_model`` and ``get_model_metadata``: ONNX files to oxnet Symbols."""

from ....onnx._util import require_onnx
from .import_onnx import GraphProto


def _load(model_file, func):
    onnx = require_onnx(func)
    if not isinstance(model_file, str):
        raise TypeError(f"{func}: model_file must be a path (str), not "
                        f"{type(model_file).__name__}")
    return onnx, onnx.load_model(model_file)


def import_model(model_file):
    """Import an ONNX model file into oxnet.

    Parameters
    ----------
    model_file : str
        The ONNX file.

    Returns
    -------
    sym : Symbol
        The model's graph; its free variables other than the parameters are the ONNX graph's
        inputs.
    arg_params : dict of str to NDArray
        The weights (ONNX initializers that feed operators).
    aux_params : dict of str to NDArray
        The auxiliary states (BatchNorm's running mean and variance).
    """
    onnx, proto = _load(model_file, "mx.contrib.onnx.import_model")
    graph = GraphProto(onnx)
    return graph.from_onnx(proto.graph, graph.opset_of(proto))


def get_model_metadata(model_file):
    """The names and shapes of an ONNX model's inputs and outputs.

    Returns
    -------
    dict
        ``{'input_tensor_data': [(name, shape, onnx_elem_type), ...],
        'output_tensor_data': [(name, shape), ...]}``; initializers are not inputs, unknown
        dimensions are 0 (as MXNet 1.9.1 reports them).
    """
    onnx, proto = _load(model_file, "mx.contrib.onnx.get_model_metadata")
    return GraphProto(onnx).get_graph_metadata(proto.graph)
