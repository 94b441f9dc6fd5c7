#!/usr/bin/env python3
"""Writes a Module checkpoint with the real MXNet 1.9.1, for oxnet's tests.

Into tests/fixtures/module/:

    mlp-symbol.json, mlp-0003.params   ``mx.model.save_checkpoint('mlp', 3, ...)``
                                       of a small MLP's logits, trained for three
                                       epochs with SGD through SoftmaxOutput
    mlp-expected.npz                   ``data``: inputs; ``out``: MXNet's
                                       ``predict`` of them (batches of 5, the last
                                       one padded) with the checkpoint
    mlp-curve.npz                      a training curve: ``x``, ``y``, the initial
                                       parameters (``init:<name>``), the training
                                       accuracy and cross-entropy after each of
                                       five epochs of ``Module.fit`` (SGD with
                                       momentum and weight decay, no shuffle),
                                       the validation accuracy per epoch, and the
                                       final parameters (``final:<name>``)

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
    training_curve(out)


def curve_symbol():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=8, name="fc1"), act_type="tanh")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def training_curve(out):
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (40, 6)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("float32") + (x[:, 2] > 0.5)
    init = {"fc1_weight": rng.normal(0, 0.5, (8, 6)), "fc1_bias": np.zeros(8),
            "fc2_weight": rng.normal(0, 0.5, (3, 8)), "fc2_bias": np.zeros(3)}
    init = {k: v.astype("float32") for k, v in init.items()}
    mod = mx.mod.Module(curve_symbol())
    train, val = mx.io.NDArrayIter(x, y, batch_size=8), mx.io.NDArrayIter(x[:16], y[:16], batch_size=8)
    metric = mx.metric.create(["acc", "ce"])
    curve, val_acc = [], []

    def after_epoch(epoch, symbol, arg, aux):
        curve.append([v for _, v in metric.get_name_value()])

    def after_validation(param):  # once per validation pass
        val_acc.append(param.eval_metric.get_name_value()[0][1])

    mod.fit(train, eval_data=val, eval_metric=metric, num_epoch=5, optimizer="sgd",
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3},
            arg_params={k: mx.nd.array(v) for k, v in init.items()}, epoch_end_callback=after_epoch,
            eval_end_callback=after_validation)
    final, _ = mod.get_params()
    np.savez(out / "mlp-curve.npz", x=x, y=y, curve=np.array(curve), val_acc=np.array(val_acc),
             **{f"init:{k}": v for k, v in init.items()}, **{f"final:{k}": v.asnumpy() for k, v in final.items()})


if __name__ == "__main__":
    main()
