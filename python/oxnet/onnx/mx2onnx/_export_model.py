"""``mx.onnx.export_model`` and ``mx.onnx.get_operator_support``."""
# pylint: disable=too-many-arguments

import numpy as np

from .._util import require_onnx
from . import _op_translations  # noqa: F401  (fills the converter table)
from ._export_onnx import CONVERTERS, OPSET, create_onnx_model


def get_operator_support(opset_version=None):
    """Return the sorted list of oxnet (MXNet) operator names that ``export_model`` converts.

    oxnet writes ONNX opset 13 graphs; ``opset_version`` is accepted as in MXNet 1.9.1 and
    must be 13 or more (or None)."""
    require_onnx("mx.onnx.get_operator_support")
    if opset_version is not None and int(opset_version) < OPSET:
        return []
    return sorted(CONVERTERS)


def _to_numpy(value):
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    return np.asarray(value)


def _load_params(params):
    from ... import ndarray as nd  # pylint: disable=import-outside-toplevel
    if isinstance(params, str):
        params = nd.load(params)
        if not isinstance(params, dict):
            raise ValueError("mx.onnx.export_model: the params file holds no named arrays")
    if isinstance(params, (list, tuple)):
        if len(params) != 2 or not all(isinstance(p, dict) for p in params):
            raise ValueError("mx.onnx.export_model: params as a list must be "
                             "[arg_params, aux_params]")
        merged = dict(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise TypeError("mx.onnx.export_model: params must be a file path, a dict of arrays or "
                        f"[arg_params, aux_params], not {type(params).__name__}")
    out = {}
    for k, v in params.items():
        if k.startswith("arg:") or k.startswith("aux:"):
            k = k[4:]
        out[k] = _to_numpy(v)
    return out


def export_model(sym, params, in_shapes=None, in_types=np.float32, onnx_file_path='model.onnx',
                 verbose=False, dynamic=False, dynamic_input_shapes=None,
                 run_shape_inference=False, input_type=None, input_shape=None):
    """Export an oxnet (MXNet 1.x) model to an ONNX file (opset 13), as MXNet 1.9.1 does.

    Parameters
    ----------
    sym : str or Symbol
        The model: a ``-symbol.json`` path or a Symbol.
    params : str or dict or list of two dicts
        A ``.params`` path, a dict of name -> NDArray (``arg:``/``aux:`` prefixes allowed), or
        ``[arg_params, aux_params]``.
    in_shapes : list of tuple
        The shapes of the model's data inputs (its inputs not in ``params``), in
        ``sym.list_inputs()`` order; a loss head's label is not an input.
    in_types : dtype or list of dtype
        The data inputs' types (one for all, or one per input).
    onnx_file_path : str
        Where to write the ONNX file.
    verbose : bool
        Print each node as it is converted.
    dynamic : bool
        Write the inputs' and outputs' dimensions as unknown (or as ``dynamic_input_shapes``).
    dynamic_input_shapes : list of tuple
        With ``dynamic``, the inputs' shapes with None for the dimensions left free.
    run_shape_inference : bool
        Run ONNX's shape inference on the result (kept only when it succeeds).
    input_type, input_shape :
        MXNet's older names of ``in_types`` and ``in_shapes``.

    Returns
    -------
    str
        ``onnx_file_path``.
    """
    onnx = require_onnx("mx.onnx.export_model")
    from ... import symbol  # pylint: disable=import-outside-toplevel
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    if in_shapes is None:
        raise ValueError("mx.onnx.export_model: in_shapes (the data inputs' shapes) is required")
    if isinstance(in_shapes, tuple) and all(isinstance(d, int) for d in in_shapes):
        in_shapes = [in_shapes]
    in_shapes = [tuple(s) for s in in_shapes]
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if dynamic_input_shapes is not None and not dynamic:
        raise ValueError("mx.onnx.export_model: dynamic_input_shapes is given but dynamic is "
                         "False; set dynamic=True")
    if dynamic_input_shapes is not None and len(dynamic_input_shapes) != len(in_shapes):
        raise ValueError("mx.onnx.export_model: dynamic_input_shapes must have one shape per "
                         "entry of in_shapes")
    if isinstance(sym, str):
        sym = symbol.load(sym)
    if not isinstance(sym, symbol.Symbol):
        raise TypeError("mx.onnx.export_model: sym must be a Symbol or a -symbol.json path, "
                        f"not {type(sym).__name__}")
    params = _load_params(params)
    model = create_onnx_model(onnx, sym, params, in_shapes, list(in_types), dynamic=dynamic,
                              dynamic_input_shapes=dynamic_input_shapes, verbose=verbose)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # pylint: disable=broad-except
            pass  # as MXNet: keep the model without inferred shapes
    if not isinstance(onnx_file_path, str):
        raise TypeError("mx.onnx.export_model: onnx_file_path must be a str")
    with open(onnx_file_path, "wb") as f:
        f.write(model.SerializeToString())
    return onnx_file_path
