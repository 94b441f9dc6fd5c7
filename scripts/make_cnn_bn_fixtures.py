#!/usr/bin/env python3
"""Exports a small Gluon CNN with BatchNorm from MXNet 1.9.1, for oxnet's tests.

Into tests/fixtures/cnn_bn/:

    cnn-symbol.json, cnn-0000.params   ``HybridBlock.export('cnn', 0)`` of
        Conv2D(4, 3x3, pad 1) -> BatchNorm -> relu -> MaxPool2D(2)
        -> Conv2D(6, 3x3, stride 2, pad 1, groups 2) -> BatchNorm
        -> GlobalAvgPool2D -> Flatten -> Dense(3),
        Xavier-initialised with a fixed seed and trained for three SGD steps
        (so the BatchNorm moving statistics are not their initial 0 and 1)
    expected.npz
        ``data``                 the input (2, 3, 8, 8)
        ``infer``                MXNet's inference output of the exported net
        ``train``                its training-mode output (``autograd.record``)
        ``head``                 the gradient fed back from that output
        ``grad:<name>``          each parameter's gradient after the backward
        ``moving_after:<name>``  each BatchNorm moving statistic after that
                                 forward and backward (momentum 0.9; MXNet's
                                 CPU BatchNorm moves them in the backward)

MXNet runs with its oneDNN kernels off (``MXNET_MKLDNN_ENABLED=0``).

Usage (from the repository root; needs mxnet==1.9.1 and numpy<1.24):

    .venv-mxnet/bin/python scripts/make_cnn_bn_fixtures.py [--out DIR]
"""

import argparse
import os
import pathlib
import sys

import numpy as np

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")
os.environ.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
try:
    import mxnet as mx
    from mxnet.gluon import nn
except ImportError:
    sys.exit("mxnet is not importable; run this script with .venv-mxnet/bin/python (see its docstring)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_conv_fixtures import write_npz  # noqa: E402  (fixed-timestamp npz writer)


def build():
    net = nn.HybridSequential(prefix="cnn_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=3),
                nn.BatchNorm(in_channels=4),
                nn.Activation("relu"),
                nn.MaxPool2D(2),
                nn.Conv2D(6, 3, strides=2, padding=1, groups=2, in_channels=4),
                nn.BatchNorm(in_channels=6, center=True, scale=True),
                nn.GlobalAvgPool2D(),
                nn.Flatten(),
                nn.Dense(3, in_units=6))
    return net


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "fixtures" / "cnn_bn")
    args = parser.parse_args()
    if mx.__version__ != "1.9.1":
        sys.exit(f"need mxnet==1.9.1, found {mx.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)
    mx.random.seed(3)
    rng = np.random.RandomState(3)
    net = build()
    net.initialize(mx.init.Xavier())
    # non-trivial gamma/beta, so the export carries more than ones and zeros
    for name, p in net.collect_params().items():
        if name.endswith("gamma"):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif name.endswith("beta"):
            p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        x = mx.nd.array(rng.uniform(-1, 1, (4, 3, 8, 8)) + 0.3)
        y = mx.nd.array(rng.randint(0, 3, 4))
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(4)
    net.hybridize()
    data = rng.uniform(-1, 1, (2, 3, 8, 8)).astype("float32")
    infer = net(mx.nd.array(data)).asnumpy()
    net.export(str(args.out / "cnn"), 0)

    # what MXNet reads back from the export gives the same output
    loaded = mx.gluon.SymbolBlock.imports(str(args.out / "cnn-symbol.json"), ["data"],
                                          str(args.out / "cnn-0000.params"))
    np.testing.assert_array_equal(loaded(mx.nd.array(data)).asnumpy(), infer)

    # one training step's forward and backward: MXNet's CPU BatchNorm moves
    # its statistics in the backward pass (the forward leaves them as loaded)
    params = loaded.collect_params()
    moving = {n: p.data().asnumpy() for n, p in params.items() if "running" in n}
    with mx.autograd.record(train_mode=True):
        out = loaded(mx.nd.array(data))
    train = out.asnumpy()
    head = rng.uniform(-1, 1, train.shape).astype("float32")
    out.backward(mx.nd.array(head))
    arrays = {"data": data, "infer": infer, "train": train, "head": head}
    for name, p in params.items():
        if name in moving:
            arrays["moving_after:" + name] = p.data().asnumpy()
            assert not np.array_equal(arrays["moving_after:" + name], moving[name]), name
        else:
            arrays["grad:" + name] = p.grad().asnumpy()
    write_npz(args.out / "expected.npz", arrays)
    for f in sorted(args.out.iterdir()):
        print(f"{f.name}: {f.stat().st_size} bytes")
    print("moving statistics:", sorted(k for k in arrays if k.startswith("moving_after:")))


if __name__ == "__main__":
    main()
