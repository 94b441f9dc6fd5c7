"""Side-by-side timings of Gluon training steps (forward, backward and
optimizer update), hybridized, float32:

- the MLP 784-256-256-10 (ReLU, softmax cross-entropy, SGD with momentum),
  batch 64: oxnet and MXNet 1.9.1 Gluon (the same code: the API is the same)
  and PyTorch eager with ``torch.optim.SGD``;
- seed 003's tiny network (Dense(5), its NormalizationHybridLayer with a
  deferred-shape weight and a Constant, Dense(1); L2Loss; batch 5x2), where
  the framework's own overhead is everything: oxnet against MXNet 1.9.1.

    bash bench/gluon.sh        # builds oxnet in release mode and the side venvs, then runs this

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``): oxnet from .venv, PyTorch from .venv-bench, MXNet from
.venv-mxnet (a missing one is left out). Medians of repeated timed steps;
ratios are taken within this one run.
"""

import os

import side_by_side
import python_ops  # the same timer as the other side-by-side benchmarks (this folder)

SIZES = [784, 256, 256, 10]
BATCH = 64


def timeit(fn):
    """Median milliseconds per call of ``fn``."""
    return python_ops.timeit(fn, min_time=1.0, repeats=9) / 1e3


def gluon_mlp_step(mx, np):
    """One hybridized Gluon training step of the MLP (the same code runs on
    oxnet and on MXNet)."""
    from_gluon = mx.gluon
    net = from_gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(from_gluon.nn.Dense(SIZES[1], activation="relu", in_units=SIZES[0]))
        net.add(from_gluon.nn.Dense(SIZES[2], activation="relu", in_units=SIZES[1]))
        net.add(from_gluon.nn.Dense(SIZES[3], in_units=SIZES[2]))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (BATCH, SIZES[0])))
    y = mx.nd.array(rng.randint(0, SIZES[-1], BATCH))
    loss_fn = from_gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = from_gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        mx.nd.waitall()
    return step


def gluon_seed003_step(mx, np):
    """One training step of seed 003's network, hybridized (its Constant
    initialised from a number: MXNet 1.9.1 fails hybridized on the seed's
    list form, which oxnet runs)."""
    gluon, nd = mx.gluon, mx.nd

    class NormalizationHybridLayer(gluon.HybridBlock):
        def __init__(self, hidden_units, scales):
            super().__init__()
            with self.name_scope():
                self.weights = self.params.get("weights", shape=(hidden_units, 0), allow_deferred_init=True)
                self.scales = self.params.get("scales", shape=scales.shape,
                                              init=mx.init.Constant(2.0),  # MXNet 1.9.1 fails on the seed's list
                                              differentiable=False)

        def hybrid_forward(self, F, x, weights, scales):
            normalized = F.broadcast_div(F.broadcast_sub(x, F.min(x)), F.broadcast_sub(F.max(x), F.min(x)))
            weighted = F.FullyConnected(normalized, weights, num_hidden=self.weights.shape[0], no_bias=True)
            return F.broadcast_mul(scales, weighted)

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(5))
        net.add(NormalizationHybridLayer(hidden_units=5, scales=nd.array([2])))
        net.add(gluon.nn.Dense(1))
    net.initialize(mx.init.Xavier(magnitude=2.24))
    net.hybridize()
    rng = np.random.RandomState(1)
    x = nd.array(rng.uniform(-10, 10, (5, 2)))
    label = nd.array(rng.uniform(-1, 1, (5, 1)))
    loss_fn = gluon.loss.L2Loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        trainer.step(x.shape[0])
        mx.nd.waitall()
    return step


def run_gluon(mx_name):
    import importlib

    import numpy as np

    if mx_name == "mxnet":
        os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    mx = importlib.import_module(mx_name)
    return {f"{mx_name}_mlp": timeit(gluon_mlp_step(mx, np)), f"{mx_name}_seed003": timeit(gluon_seed003_step(mx, np))}


def run_torch():
    import numpy as np
    import torch

    rng = np.random.RandomState(0)
    model = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[1], SIZES[2]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[2], SIZES[3]))
    x = torch.tensor(rng.uniform(-1, 1, (BATCH, SIZES[0])).astype(np.float32))
    y = torch.tensor(rng.randint(0, SIZES[-1], BATCH))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return {"torch_mlp": timeit(step), "torch_threads": torch.get_num_threads()}


ENGINES = {"oxnet": (".venv", lambda: run_gluon("oxnet")), "torch": (".venv-bench", run_torch),
           "mxnet": (".venv-mxnet", lambda: run_gluon("mxnet"))}


def main():
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    print("Gluon train step (forward, backward, SGD momentum), hybridized, float32 (ms, median):")
    print(f"  MLP {'-'.join(map(str, SIZES))}, batch {BATCH}:")
    for label, key in [("oxnet", "oxnet_mlp"), ("PyTorch eager (CPU)", "torch_mlp"), ("MXNet 1.9.1", "mxnet_mlp")]:
        if key in figures:
            print(f"    {label:24s} {figures[key]:8.3f}")
    print("  seed 003's network, batch 5x2:")
    for label, key in [("oxnet", "oxnet_seed003"), ("MXNet 1.9.1", "mxnet_seed003")]:
        if key in figures:
            print(f"    {label:24s} {figures[key]:8.3f}")
    if "oxnet_mlp" in figures and "torch_mlp" in figures:
        print(f"  MLP oxnet / PyTorch eager: {figures['oxnet_mlp'] / figures['torch_mlp']:.2f} (target <= 1)")
    if "oxnet_mlp" in figures and "mxnet_mlp" in figures:
        print(f"  MLP MXNet / oxnet: {figures['mxnet_mlp'] / figures['oxnet_mlp']:.2f} (target >= 3)")
    if "oxnet_seed003" in figures and "mxnet_seed003" in figures:
        print(f"  seed 003 MXNet / oxnet: {figures['mxnet_seed003'] / figures['oxnet_seed003']:.2f} (target >= 10)")


if __name__ == "__main__":
    main()
