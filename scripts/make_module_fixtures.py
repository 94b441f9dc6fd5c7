#!/usr/bin/env python3
"""Writes a Module checkpoint with the real MXNet 1.9.1, for oxnet's tests.

Into tests/fixtures/module/:

    mlp-symbol.json, mlp-0003.params   ``mx.model.save_checkpoint('mlp', 3, ...)``
                                       of a small MLP's logits, trained for three
                                       epochs with SGD through SoftmaxOutput
    mlp-expected.npz                   ``data``: inputs; ``out``: MXNet's
                                       ``predict`` of them (batches of 5, the last
                                       one padded) with the checkpoint

Usage (from the repository root; needs mxnet==1.9.1 and numpy<1.24):

    .venv-mxnet/bin/python scripts/make_module_fixtures.py [--out DIR]
"""

import argparse
import pathlib

import mxnet as mx
import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "tests/fixtures/module"))
    out = pathlib.Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    mx.random.seed(0)
    np.random.seed(0)
    x = np.random.uniform(-1, 1, (12, 4)).astype("float32")
    y = np.random.randint(0, 3, 12).astype("float32")
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc1"), act_type="relu")
    logits = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(logits, name="softmax"))
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=4), num_epoch=3, initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.5})
    arg_params, aux_params = mod.get_params()
    mx.model.save_checkpoint(str(out / "mlp"), 3, logits, arg_params, aux_params)
    loaded = mx.mod.Module.load(str(out / "mlp"), 3, label_names=None)
    loaded.bind([("data", (5, 4))], for_training=False)
    pred = loaded.predict(mx.io.NDArrayIter(x, batch_size=5)).asnumpy()
    np.savez(out / "mlp-expected.npz", data=x, out=pred)


if __name__ == "__main__":
    main()
