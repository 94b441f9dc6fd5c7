"""The main job in Python: a small Gluon convolutional network with seed
001's numpy Sigmoid custom operator inside, hybridized, trained with a
DataLoader and the Trainer on the UCI 8x8 digits shipped in data/, scored
with mx.metric.

Run: python examples/python/gluon_digits.py [--epochs N]
"""

import argparse
import gzip
import pathlib

import numpy as np
import oxnet as mx
from oxnet import autograd, gluon

from seed_sigmoid_dense import SigmoidProp  # noqa: F401  (registers op_type 'sigmoid')

DIGITS = pathlib.Path(__file__).resolve().parents[2] / "data" / "digits.csv.gz"


def load_digits(seed=0, held_out=0.2):
    """(train_x, train_y), (test_x, test_y): 1x8x8 images with pixels scaled
    to [0, 1], a fixed random split."""
    with gzip.open(DIGITS, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    x, y = (table[:, :-1] / 16.0).reshape(-1, 1, 8, 8), table[:, -1]
    order = np.random.RandomState(seed).permutation(len(x))
    cut = int(len(x) * (1 - held_out))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


class CustomSigmoid(gluon.HybridBlock):
    """Seed 001's numpy sigmoid operator as a layer."""

    def hybrid_forward(self, F, x):
        return F.Custom(x, op_type="sigmoid")


def network():
    """Conv2D(16, 3x3) -> BatchNorm -> ReLU -> MaxPool2D(2x2) -> Dense(64)
    -> the custom sigmoid -> Dense(10)."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(
            gluon.nn.Conv2D(16, kernel_size=3, padding=1),
            gluon.nn.BatchNorm(),
            gluon.nn.Activation("relu"),
            gluon.nn.MaxPool2D(pool_size=2),
            gluon.nn.Dense(64),
            CustomSigmoid(),
            gluon.nn.Dense(10),
        )
    return net


def accuracy(net, x, y):
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array(y)], [net(mx.nd.array(x))])
    return metric.get()[1]


def main(epochs=20, seed=1):
    mx.random.seed(seed)
    (train_x, train_y), (test_x, test_y) = load_digits()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(train_x, train_y), batch_size=32, shuffle=True)
    net = network()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    losses = []
    for epoch in range(epochs):
        total, count = 0.0, 0
        for x, y in loader:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            total += loss.sum().asscalar()
            count += x.shape[0]
        losses.append(total / count)
        print(f"epoch {epoch + 1:2d}: mean loss {losses[-1]:.4f}")
    held_out = accuracy(net, test_x, test_y)
    print(f"held-out accuracy: {held_out:.1%} on {len(test_y)} images")
    return losses, held_out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    main(parser.parse_args().epochs)
