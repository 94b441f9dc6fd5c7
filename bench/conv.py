"""Side-by-side timings of convolutional work, float32, on the CPU:

- ``Convolution`` 3x3, 64 -> 64 channels, 56x56, batch 32, padding 1:
  forward, and forward + backward (the data's and the weight's gradients);
- 1x1, 64 -> 256 channels, same input: forward;
- depth-wise 3x3 over 64 channels (64 groups), same input: forward;
- a small CNN's training step, hybridized: two blocks of 3x3 convolution
  (32 then 64 filters) + BatchNorm + ReLU + 2x2 max-pool, then Dense(128)
  + ReLU and Dense(10), softmax cross-entropy, SGD with momentum, batch 64
  of 1x28x28;
- ResNet-18 inference (``model_zoo.vision.resnet18_v1``), batch 8 of
  3x224x224, hybridized (where the engine has the model zoo); PyTorch runs
  the same layers defined here (``torch_resnet18``), in eval mode.

oxnet and MXNet 1.9.1 run the same code (the API is the same); PyTorch runs
the equivalent ``torch.nn.functional`` calls and modules, eager. Each also
times one float32 1024x1024x1024 matrix product, the machine's attainable
FMA rate in that engine, so each convolution's GFLOP/s is also given as a
share of it.

    bash bench/conv.sh        # builds oxnet in release mode and the side venvs, then runs this

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``), the engines taking turns over the rounds; medians; ratios
are taken within this one run.
"""

import os

import side_by_side
import python_ops  # the same timer as the other side-by-side benchmarks (this folder)

BATCH, CH, SIDE = 32, 64, 56
CASES = {
    # name: (flops, description)
    "conv3x3_fwd": (2 * BATCH * CH * CH * 9 * SIDE * SIDE, "3x3 64->64 forward"),
    "conv3x3_fwd_bwd": (3 * 2 * BATCH * CH * CH * 9 * SIDE * SIDE, "3x3 64->64 forward+backward"),
    "conv1x1_fwd": (2 * BATCH * CH * 256 * SIDE * SIDE, "1x1 64->256 forward"),
    "depthwise_fwd": (2 * BATCH * CH * 9 * SIDE * SIDE, "depth-wise 3x3 x64 forward"),
}
GEMM_N = 1024


def timeit(fn, min_time=1.0):
    """Median milliseconds per call of ``fn``."""
    return python_ops.timeit(fn, min_time=min_time, repeats=5) / 1e3


def mx_figures(mx, np):
    """The cases on oxnet or MXNet (the same code)."""
    nd = mx.nd
    rng = np.random.RandomState(0)
    x = nd.array(rng.uniform(-1, 1, (BATCH, CH, SIDE, SIDE)))
    w3 = nd.array(rng.uniform(-0.1, 0.1, (CH, CH, 3, 3)))
    w1 = nd.array(rng.uniform(-0.1, 0.1, (256, CH, 1, 1)))
    wd = nd.array(rng.uniform(-0.1, 0.1, (CH, 1, 3, 3)))
    a = nd.array(rng.uniform(-1, 1, (GEMM_N, GEMM_N)))
    b = nd.array(rng.uniform(-1, 1, (GEMM_N, GEMM_N)))

    def run(fn):
        def step():
            fn()
            nd.waitall()
        return step

    def conv3():
        return nd.Convolution(x, w3, kernel=(3, 3), pad=(1, 1), num_filter=CH, no_bias=True)

    xg, wg = x.copy(), w3.copy()
    xg.attach_grad()
    wg.attach_grad()

    def conv3_fwd_bwd():
        with mx.autograd.record():
            y = nd.Convolution(xg, wg, kernel=(3, 3), pad=(1, 1), num_filter=CH, no_bias=True)
        y.backward()

    out = {
        "gemm": timeit(run(lambda: nd.dot(a, b))),
        "conv3x3_fwd": timeit(run(conv3)),
        "conv3x3_fwd_bwd": timeit(run(conv3_fwd_bwd)),
        "conv1x1_fwd": timeit(run(lambda: nd.Convolution(x, w1, kernel=(1, 1), num_filter=256, no_bias=True))),
        "depthwise_fwd": timeit(run(lambda: nd.Convolution(x, wd, kernel=(3, 3), pad=(1, 1), num_filter=CH,
                                                           num_group=CH, no_bias=True))),
        "cnn_step": timeit(cnn_step(mx, np)),
    }
    resnet = resnet18(mx, np)
    if resnet is not None:
        out["resnet18"] = timeit(resnet, min_time=2.0)
    return out


def cnn_step(mx, np):
    """One hybridized Gluon training step of the small CNN."""
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        for filters in (32, 64):
            net.add(nn.Conv2D(filters, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2))
        net.add(nn.Dense(128, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    rng = np.random.RandomState(1)
    x = mx.nd.array(rng.uniform(0, 1, (64, 1, 28, 28)))
    y = mx.nd.array(rng.randint(0, 10, 64))
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(64)
        mx.nd.waitall()
    return step


def resnet18(mx, np):
    """ResNet-18 inference on 8 images, hybridized; None without a model zoo."""
    try:
        from importlib import import_module
        vision = import_module(mx.__name__ + ".gluon.model_zoo.vision")
    except ImportError:
        return None
    net = vision.resnet18_v1()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(2).uniform(0, 1, (8, 3, 224, 224)))

    def infer():
        net(x)
        mx.nd.waitall()
    return infer


def run_mx(name):
    import importlib

    import numpy as np

    if name == "mxnet":
        os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    mx = importlib.import_module(name)
    return {f"{name}_{k}": v for k, v in mx_figures(mx, np).items()}


def torch_resnet18(torch):
    """ResNet-18 v1 in PyTorch modules, the layers of ``resnet18_v1`` (and of
    torchvision's model, which this avoids installing): a 7x7/2 stem with
    BatchNorm, ReLU and a 3x3/2 max-pool, four stages of two basic blocks
    (64, 128, 256, 512 channels; 1x1/2 projections where the shape changes),
    global average pooling and a 1000-way dense layer."""
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            skip = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + skip)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def run_torch():
    import numpy as np
    import torch
    import torch.nn.functional as F

    rng = np.random.RandomState(0)
    t = lambda shape, lo, hi: torch.tensor(rng.uniform(lo, hi, shape).astype(np.float32))  # noqa: E731
    x = t((BATCH, CH, SIDE, SIDE), -1, 1)
    w3, w1, wd = t((CH, CH, 3, 3), -0.1, 0.1), t((256, CH, 1, 1), -0.1, 0.1), t((CH, 1, 3, 3), -0.1, 0.1)
    a, b = t((GEMM_N, GEMM_N), -1, 1), t((GEMM_N, GEMM_N), -1, 1)
    xg, wg = x.clone().requires_grad_(), w3.clone().requires_grad_()

    def fwd_bwd():
        xg.grad = wg.grad = None
        F.conv2d(xg, wg, padding=1).backward(torch.ones(BATCH, CH, SIDE, SIDE))

    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    cx = torch.tensor(np.random.RandomState(1).uniform(0, 1, (64, 1, 28, 28)).astype(np.float32))
    cy = torch.tensor(np.random.RandomState(1).randint(0, 10, 64))

    def cnn():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(cx), cy).backward()
        opt.step()

    out = {
        "torch_gemm": timeit(lambda: a @ b),
        "torch_conv3x3_fwd": timeit(lambda: F.conv2d(x, w3, padding=1)),
        "torch_conv3x3_fwd_bwd": timeit(fwd_bwd),
        "torch_conv1x1_fwd": timeit(lambda: F.conv2d(x, w1)),
        "torch_depthwise_fwd": timeit(lambda: F.conv2d(x, wd, padding=1, groups=CH)),
        "torch_cnn_step": timeit(cnn),
        "torch_threads": torch.get_num_threads(),
    }
    model = torch_resnet18(torch).eval()
    img = torch.rand(8, 3, 224, 224)
    with torch.no_grad():
        out["torch_resnet18"] = timeit(lambda: model(img), min_time=2.0)
    return out


ENGINES = {"oxnet": (".venv", lambda: run_mx("oxnet")), "torch": (".venv-bench", run_torch),
           "mxnet": (".venv-mxnet", lambda: run_mx("mxnet"))}
LABELS = [("oxnet", "oxnet"), ("PyTorch", "torch"), ("MXNet 1.9.1", "mxnet")]


def main():
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    print(f"float32 on the CPU (ms, median); GFLOP/s; share of that engine's {GEMM_N}^3 matrix product rate")
    for engine_label, key in LABELS:
        if f"{key}_gemm" in figures:
            rate = 2 * GEMM_N ** 3 / figures[f"{key}_gemm"] / 1e6
            print(f"  {engine_label:12s} matrix product {figures[f'{key}_gemm']:8.2f} ms = {rate:6.1f} GFLOP/s")
    for case, (flops, label) in CASES.items():
        print(f"  {label}:")
        for engine_label, key in LABELS:
            name = f"{key}_{case}"
            if name in figures:
                gflops = flops / figures[name] / 1e6
                peak = 2 * GEMM_N ** 3 / figures[f"{key}_gemm"] / 1e6
                print(f"    {engine_label:12s} {figures[name]:8.2f} ms {gflops:7.1f} GFLOP/s {gflops / peak:6.0%}")
    for case, label in [("cnn_step", "small CNN train step, batch 64"), ("resnet18", "ResNet-18 inference, batch 8")]:
        print(f"  {label}:")
        for engine_label, key in LABELS:
            if f"{key}_{case}" in figures:
                print(f"    {engine_label:12s} {figures[f'{key}_{case}']:8.2f} ms")
    ratios = []
    for case in list(CASES) + ["cnn_step", "resnet18"]:
        ox = figures.get(f"oxnet_{case}")
        for other, key in [("PyTorch", "torch"), ("MXNet", "mxnet")]:
            if ox and f"{key}_{case}" in figures:
                ratios.append(f"{case}: {other} / oxnet = {figures[f'{key}_{case}'] / ox:.2f}")
    if ratios:
        print("  ratios (above 1: oxnet faster):")
        for r in ratios:
            print("    " + r)


if __name__ == "__main__":
    main()
