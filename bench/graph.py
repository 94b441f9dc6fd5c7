"""Side-by-side timings of graphs: the MLP 784-256-256-10 (ReLU, log-softmax
head), batch 64, float32, one forward+backward pass, in oxnet (a cached graph
under autograd, a bound executor, imperative autograd), PyTorch eager on the
CPU and MXNet 1.9.1's ``simple_bind`` executor; plus oxnet's executor
overhead per node on a chain of 100 one-element sigmoids.

    bash bench/graph.sh        # builds oxnet in release mode and the side venvs, then runs this

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``): oxnet from .venv, PyTorch from .venv-bench, MXNet from
.venv-mxnet (a missing one is left out of the table). Medians of repeated
timed batches; ratios are taken within this one run.
"""

import os

import side_by_side
import python_ops  # the same timer as the other side-by-side benchmark (this folder)

SIZES = [784, 256, 256, 10]
BATCH = 64


def timeit(fn):
    """Median milliseconds per call of ``fn`` (python_ops.py's timer)."""
    return python_ops.timeit(fn, min_time=1.0, repeats=9) / 1e3


def weights(np):
    rng = np.random.RandomState(0)
    params = {"data": rng.uniform(-1, 1, (BATCH, SIZES[0])).astype(np.float32)}
    for i in range(3):
        params[f"fc{i}_weight"] = rng.uniform(-0.05, 0.05, (SIZES[i + 1], SIZES[i])).astype(np.float32)
        params[f"fc{i}_bias"] = np.zeros(SIZES[i + 1], dtype=np.float32)
    return params


def mx_symbol(mx):
    h = mx.sym.var("data")
    for i in range(3):
        h = mx.sym.FullyConnected(h, num_hidden=SIZES[i + 1], name=f"fc{i}")
        if i < 2:
            h = mx.sym.Activation(h, act_type="relu", name=f"relu{i}")
    return mx.sym.log_softmax(h, name="out")


def executor_step(mx, np):
    """The MLP bound by ``simple_bind`` (no gradient for the data) and one
    forward+backward step of it, waiting for the results."""
    sym = mx_symbol(mx)
    reqs = {k: ("null" if k == "data" else "write") for k in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=reqs, data=(BATCH, SIZES[0]))
    for k, v in weights(np).items():
        exe.arg_dict[k][:] = v

    def step():
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((BATCH, SIZES[-1])))
        mx.nd.waitall()
    return sym, step


def run_oxnet():
    import numpy as np
    import oxnet as mx

    out = {}
    sym, step = executor_step(mx, np)
    out["executor"] = timeit(step)

    arrays = {k: mx.nd.array(v) for k, v in weights(np).items()}
    for k, a in arrays.items():
        if k != "data":
            a.attach_grad()
    op = mx.nd.CachedOp(sym)
    ordered = [arrays[k] for k in op.input_names]

    def cached():
        with mx.autograd.record():
            y = op(*ordered)
        y.backward()
    out["cached_graph"] = timeit(cached)

    def imperative():
        with mx.autograd.record():
            h = arrays["data"]
            for i in range(3):
                h = mx.nd.FullyConnected(h, arrays[f"fc{i}_weight"], arrays[f"fc{i}_bias"], num_hidden=SIZES[i + 1])
                if i < 2:
                    h = mx.nd.Activation(h, act_type="relu")
            y = mx.nd.log_softmax(h)
        y.backward()
    out["imperative"] = timeit(imperative)

    chain = mx.sym.var("x")
    for i in range(100):
        chain = mx.sym.sigmoid(chain)
    cexe = chain.simple_bind(mx.cpu(), grad_req="null", x=(1,))
    out["chain100_us_per_node"] = timeit(lambda: cexe.forward()) * 1e3 / 100
    return out


def run_torch():
    import numpy as np
    import torch

    params = {k: torch.tensor(v) for k, v in weights(np).items()}
    for k, p in params.items():
        if k != "data":
            p.requires_grad_(True)

    def step():
        h = params["data"]
        for i in range(3):
            h = torch.nn.functional.linear(h, params[f"fc{i}_weight"], params[f"fc{i}_bias"])
            if i < 2:
                h = torch.relu(h)
        y = torch.log_softmax(h, dim=1)
        y.backward(torch.ones_like(y))
        for k, p in params.items():
            if p.grad is not None:
                p.grad = None
    return {"torch_eager": timeit(step), "torch_threads": torch.get_num_threads()}


def run_mxnet():
    os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    import numpy as np
    import mxnet as mx

    return {"mxnet_simple_bind": timeit(executor_step(mx, np)[1])}


ENGINES = {"oxnet": (".venv", run_oxnet), "torch": (".venv-bench", run_torch), "mxnet": (".venv-mxnet", run_mxnet)}


def main():
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    imp = figures.get("imperative")
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32, forward+backward (ms, median):")
    rows = [("oxnet cached graph under autograd", "cached_graph"), ("oxnet bound executor", "executor"),
            ("oxnet imperative autograd", "imperative"), ("PyTorch eager (CPU)", "torch_eager"),
            ("MXNet 1.9.1 simple_bind executor", "mxnet_simple_bind")]
    for label, key in rows:
        if key in figures:
            ratio = f"{figures[key] / imp:5.2f}x oxnet imperative" if imp else ""
            print(f"  {label:36s} {figures[key]:8.3f}   {ratio}")
    if "cached_graph" in figures and "torch_eager" in figures:
        print(f"  cached graph / PyTorch eager: {figures['cached_graph'] / figures['torch_eager']:.2f} (target <= 1)")
    if "cached_graph" in figures and "mxnet_simple_bind" in figures:
        print(f"  MXNet simple_bind / cached graph: {figures['mxnet_simple_bind'] / figures['cached_graph']:.2f} (target >= 3)")
    if "chain100_us_per_node" in figures:
        print(f"executor overhead, chain of 100 one-element sigmoids: {figures['chain100_us_per_node']:.3f} us per node (target <= 0.3)")


if __name__ == "__main__":
    main()
