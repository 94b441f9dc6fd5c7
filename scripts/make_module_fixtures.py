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
    multi-context.npz                  data-parallel ``Module.fit`` of an MLP with
                                       BatchNorm on ``[cpu(0), cpu(1)]``, equal and
                                       uneven (``work_load_list=[1, 3]``) splits and
                                       one context: per setting ``<s>:arg:<name>``,
                                       ``<s>:aux:<name>`` (averaged over contexts),
                                       the MSE after each batch (``<s>:metric``,
                                       updated once per context), ``<s>:pred``

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
    multi_context(out)


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


def multi_context(out):
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (24, 5)).astype("float32")
    y = rng.uniform(-1, 1, (24, 2)).astype("float32")
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1")
    act = mx.sym.Activation(mx.sym.BatchNorm(fc1, name="bn", fix_gamma=False), act_type="tanh")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(act, num_hidden=2, name="fc2"), mx.sym.var("label"),
                                        name="lro")
    init = {"fc1_weight": rng.uniform(-0.5, 0.5, (6, 5)), "fc1_bias": rng.uniform(-0.1, 0.1, (6,)),
            "bn_gamma": np.ones(6), "bn_beta": np.zeros(6),
            "fc2_weight": rng.uniform(-0.5, 0.5, (2, 6)), "fc2_bias": np.zeros(2)}
    init = {k: v.astype("float32") for k, v in init.items()}
    saved = {"x": x, "y": y, **{f"init:{k}": v for k, v in init.items()}}
    for name, ctxs, load in [("one", [mx.cpu(0)], None), ("two", [mx.cpu(0), mx.cpu(1)], None),
                             ("uneven", [mx.cpu(0), mx.cpu(1)], [1, 3])]:
        it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="label")
        mod = mx.mod.Module(net, data_names=("data",), label_names=("label",), context=ctxs, work_load_list=load)
        metric = []
        mod.fit(it, num_epoch=3, optimizer="sgd", optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
                arg_params={k: mx.nd.array(v) for k, v in init.items()},
                aux_params={"bn_moving_mean": mx.nd.zeros(6), "bn_moving_var": mx.nd.ones(6)},
                eval_metric=mx.metric.MSE(), batch_end_callback=lambda p: metric.append(p.eval_metric.get()[1]))
        arg, aux = mod.get_params()
        it.reset()
        saved[f"{name}:metric"] = np.array(metric)
        saved[f"{name}:pred"] = mod.predict(it).asnumpy()
        saved.update({f"{name}:arg:{k}": v.asnumpy() for k, v in arg.items()})
        saved.update({f"{name}:aux:{k}": v.asnumpy() for k, v in aux.items()})
    np.savez(out / "multi-context.npz", **saved)


if __name__ == "__main__":
    main()
