"""Side-by-side timings of symbolic training with ``Module.fit`` against
the same network's hybridized Gluon loop, float32, per batch:

- the MLP 784-256-256-10 (ReLU; ``SoftmaxOutput`` in the Module,
  ``SoftmaxCrossEntropyLoss`` in Gluon), batch 64, 32 batches per epoch of
  an ``NDArrayIter`` over fixed random data, SGD with momentum, accuracy
  updated every batch in both;
- oxnet's ``Module.fit``, oxnet's Gluon loop, MXNet 1.9.1's ``Module.fit``
  (the same code on both: the API is the same).

    bash bench/module.sh        # builds oxnet in release mode and the side venvs, then runs this

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``). A warm-up epoch first, then the time of three epochs;
figures are ms per batch, the median over the rounds.
"""

import os
import time

import side_by_side

SIZES = [784, 256, 256, 10]
BATCH = 64
BATCHES = 32
EPOCHS = 3


def data(mx, np):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (BATCH * BATCHES, SIZES[0])).astype(np.float32)
    y = rng.randint(0, SIZES[-1], BATCH * BATCHES).astype(np.float32)
    return mx.io.NDArrayIter(x, y, batch_size=BATCH, label_name="softmax_label")


def module_fit(mx, np):
    """ms per batch of ``Module.fit``."""
    net = mx.sym.var("data")
    for i, width in enumerate(SIZES[1:-1]):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=width, name=f"fc{i}"), act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=SIZES[-1], name="out"), name="softmax")
    it = data(mx, np)
    mod = mx.mod.Module(net, data_names=("data",), label_names=("softmax_label",))
    opt = {"learning_rate": 0.01, "momentum": 0.9, "rescale_grad": 1.0 / BATCH}
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params=opt, initializer=mx.init.Xavier(),
            eval_metric="acc")
    start = time.perf_counter()
    mod.fit(it, begin_epoch=1, num_epoch=1 + EPOCHS, optimizer="sgd", optimizer_params=opt, eval_metric="acc")
    mx.nd.waitall()
    return (time.perf_counter() - start) * 1e3 / (EPOCHS * BATCHES)


def gluon_loop(mx, np):
    """ms per batch of the hybridized Gluon loop over the same iterator."""
    gluon = mx.gluon
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        for width, fan_in in zip(SIZES[1:-1], SIZES[:-2]):
            net.add(gluon.nn.Dense(width, activation="relu", in_units=fan_in))
        net.add(gluon.nn.Dense(SIZES[-1], in_units=SIZES[-2]))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    metric = mx.metric.Accuracy()
    it = data(mx, np)

    def epoch():
        it.reset()
        metric.reset()
        for batch in it:
            x, y = batch.data[0], batch.label[0]
            with mx.autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
            loss.backward()
            trainer.step(BATCH)
            metric.update([y], [out])
        mx.nd.waitall()

    epoch()
    start = time.perf_counter()
    for _ in range(EPOCHS):
        epoch()
    return (time.perf_counter() - start) * 1e3 / (EPOCHS * BATCHES)


def run(mx_name, with_gluon):
    import importlib
    import logging
    import warnings

    import numpy as np

    logging.disable(logging.CRITICAL)  # fit's per-epoch lines
    warnings.simplefilter("ignore")  # the second fit's "already initialized"
    if mx_name == "mxnet":
        os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    mx = importlib.import_module(mx_name)
    figures = {f"{mx_name}_module": module_fit(mx, np)}
    if with_gluon:
        figures[f"{mx_name}_gluon"] = gluon_loop(mx, np)
    return figures


ENGINES = {"oxnet": (".venv", lambda: run("oxnet", True)), "mxnet": (".venv-mxnet", lambda: run("mxnet", False))}


def main():
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    print(f"Training the MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, on NDArrayIter (ms per batch, median):")
    for label, key in [("oxnet Module.fit", "oxnet_module"), ("oxnet Gluon loop, hybridized", "oxnet_gluon"),
                       ("MXNet 1.9.1 Module.fit", "mxnet_module")]:
        if key in figures:
            print(f"  {label:32s} {figures[key]:8.3f}")
    if "oxnet_module" in figures and "oxnet_gluon" in figures:
        print(f"  Module.fit / Gluon loop: {figures['oxnet_module'] / figures['oxnet_gluon']:.2f} (target <= 1.2)")
    if "oxnet_module" in figures and "mxnet_module" in figures:
        print(f"  MXNet Module.fit / oxnet Module.fit: {figures['mxnet_module'] / figures['oxnet_module']:.2f} "
              "(target >= 3)")


if __name__ == "__main__":
    main()
