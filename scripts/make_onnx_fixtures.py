"""Write tests/fixtures/onnx/: small models exported by real MXNet 1.9.1's mx.onnx.

Run with the MXNet environment (which needs `pip install onnx==1.14.1 "protobuf<4"`):
    .venv-mxnet/bin/python scripts/make_onnx_fixtures.py
For each model it stores the ONNX file MXNet writes (<name>.onnx), an input and MXNet's
output (<name>.npz), and the op types of MXNet's ONNX nodes (op_types.json)."""

import json
import os

import mxnet as mx
import numpy as np
import onnx

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "onnx")


def models():
    """name -> (symbol, input shape)"""
    d = mx.sym.var("data")
    mlp = mx.sym.FullyConnected(d, num_hidden=8, flatten=True, name="fc1")
    mlp = mx.sym.Activation(mlp, act_type="relu", name="relu1")
    mlp = mx.sym.FullyConnected(mlp, num_hidden=3, flatten=True, name="fc2")
    mlp = mx.sym.softmax(mlp, name="prob")
    x = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.Flatten(x, name="flat0")
    x = mx.sym.FullyConnected(x, num_hidden=5, flatten=True, name="fc0")
    cnn = mx.sym.softmax(x, name="prob")
    return {"mlp": (mlp, (2, 6)), "cnn": (cnn, (2, 3, 6, 6))}


def main():
    """Export each model with MXNet and store the files."""
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(0)
    op_types = {}
    for name, (sym, shape) in models().items():
        args, _, auxs = sym.infer_shape(data=shape)
        params = {}
        for n, s in zip(sym.list_arguments(), args):
            if n != "data":
                params[n] = mx.nd.array(rng.normal(0, 0.5, s).astype(np.float32))
        for n, s in zip(sym.list_auxiliary_states(), auxs):
            params[n] = mx.nd.array(rng.uniform(0.5, 1.5, s).astype(np.float32))
        path = os.path.join(OUT, name + ".onnx")
        mx.onnx.export_model(sym, params, [shape], np.float32, path)
        model = onnx.load(path)
        # MXNet writes the installed onnx's newest opset but emits opset-13 nodes
        del model.opset_import[:]
        model.opset_import.extend([onnx.helper.make_opsetid("", 13)])
        model.ir_version = 7
        onnx.save(model, path)
        op_types[name] = [n.op_type for n in model.graph.node]
        data = rng.uniform(-1, 1, shape).astype(np.float32)
        arg = {k: v for k, v in params.items() if k in sym.list_arguments()}
        aux = {k: v for k, v in params.items() if k in sym.list_auxiliary_states()}
        ex = sym.bind(mx.cpu(), {"data": mx.nd.array(data), **arg}, aux_states=aux)
        out = ex.forward(is_train=False)[0].asnumpy()
        np.savez(os.path.join(OUT, name + ".npz"), data=data, out=out)
    with open(os.path.join(OUT, "op_types.json"), "w") as f:
        json.dump(op_types, f, indent=1)


if __name__ == "__main__":
    main()
