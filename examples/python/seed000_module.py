"""Seed 000 whole: its numpy Softmax custom operator as the loss layer of a
symbolic MLP, trained with `mx.mod.Module.fit` on an `mx.io.NDArrayIter`
of the UCI 8x8 digits shipped in data/, with `mx.callback.Speedometer`
logging the speed and accuracy and `mx.callback.do_checkpoint` saving
`<prefix>-symbol.json` and `<prefix>-<epoch>.params` after every epoch, as
MXNet 1.x scripts did. The last checkpoint is loaded back with
`Module.load` and scored on the held-out digits.

With `--profile trace.json` the training runs under `mx.profiler`: the
Chrome trace (open it in chrome://tracing or https://ui.perfetto.dev) is
written there and the table of operator times printed.

Run: python examples/python/seed000_module.py [--epochs N] [--prefix checkpoints/mlp] [--profile trace.json]
     [--contexts N]   (data-parallel over cpu(0) ... cpu(N-1), as MXNet's context=[...])
"""

import argparse
import logging
import os

import numpy as np
import oxnet as mx

import seed_softmax  # noqa: F401  (registers the "softmax" custom operator)
from gluon_digits import load_digits


def build_net(num_classes=10):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=64)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=num_classes)
    return mx.sym.Custom(data=fc2, name="softmax", op_type="softmax")


def main(epochs=10, prefix="checkpoints/seed000_mlp", seed=0, batch_size=32, profile=None, contexts=1):
    """Trains, checkpoints and scores; returns (training accuracy of the
    last epoch, held-out accuracy of the reloaded checkpoint). With
    `profile` (a file name) the training is profiled into that trace file;
    with `contexts` > 1 each batch is split over cpu(0) ... cpu(contexts-1)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(seed)
    np.random.seed(seed)
    (train_x, train_y), (test_x, test_y) = load_digits(seed=seed)
    train = mx.io.NDArrayIter(train_x.reshape(len(train_x), -1), train_y, batch_size=batch_size, shuffle=True)
    test = mx.io.NDArrayIter(test_x.reshape(len(test_x), -1), test_y, batch_size=batch_size)
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    mod = mx.mod.Module(build_net(), data_names=("data",), label_names=("softmax_label",),
                        context=[mx.cpu(i) for i in range(contexts)])
    metric = mx.metric.Accuracy()
    if profile:
        mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=profile)
        mx.profiler.set_state("run")
    mod.fit(train, eval_metric=metric, num_epoch=epochs, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "rescale_grad": 1.0 / batch_size},
            initializer=mx.init.Xavier(), batch_end_callback=mx.callback.Speedometer(batch_size, 20),
            epoch_end_callback=mx.callback.do_checkpoint(prefix))
    if profile:
        mx.profiler.set_state("stop")
        mx.profiler.dump()
        print(mx.profiler.dumps(sort_by="total"))
    train_acc = metric.get()[1]
    loaded = mx.mod.Module.load(prefix, epochs, data_names=("data",), label_names=("softmax_label",))
    loaded.bind(data_shapes=test.provide_data, label_shapes=test.provide_label, for_training=False)
    held_out = dict(loaded.score(test, mx.metric.Accuracy()))["accuracy"]
    print(f"held-out accuracy of {prefix}-{epochs:04d}.params: {held_out:.3f}")
    return train_acc, held_out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--prefix", default="checkpoints/seed000_mlp")
    parser.add_argument("--profile", metavar="TRACE_JSON", help="profile the training into this Chrome trace file")
    parser.add_argument("--contexts", type=int, default=1, help="split each batch over this many CPU contexts")
    args = parser.parse_args()
    main(epochs=args.epochs, prefix=args.prefix, profile=args.profile, contexts=args.contexts)
