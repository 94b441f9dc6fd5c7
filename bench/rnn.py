"""Side-by-side timings of recurrent layers, float32, on the CPU:

- LSTM, 2 layers, hidden 256, sequence 35, batch 32, input 256: forward and
  backward of the hybridized ``gluon.rnn.LSTM`` (oxnet and MXNet 1.9.1, the
  same code) and of ``torch.nn.LSTM``;
- GRU of the same size, forward only (inference);
- the same LSTM as two ``LSTMCell`` layers unrolled in a hybridized block
  (oxnet; against its fused layer).

    bash bench/rnn.sh        # builds oxnet in release mode and the side venvs, then runs this

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``): oxnet from .venv, PyTorch from .venv-bench, MXNet from
.venv-mxnet (a missing one is left out). Medians of repeated timed calls;
ratios are taken within this one run.
"""

import os
import time

import python_ops  # the same timer as the other side-by-side benchmarks (this folder)
import side_by_side

T, N, I, H, L = 35, 32, 256, 256, 2


WARM_UP_S = 3.0


def timeit(fn):
    """Median milliseconds per call of ``fn``, after calling it for
    ``WARM_UP_S`` seconds (on this VM oxnet's step time kept falling for
    seconds after the first calls, 77 to 60 ms, as its allocator settled)."""
    end = time.perf_counter() + WARM_UP_S
    while time.perf_counter() < end:
        fn()
    return python_ops.timeit(fn, min_time=1.0, repeats=7) / 1e3


def gluon_steps(mx, np):
    """Timed closures of the Gluon layers (the same code on oxnet and MXNet)."""
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (T, N, I)).astype(np.float32))
    head = mx.nd.array(rng.uniform(-1, 1, (T, N, H)).astype(np.float32))

    lstm = mx.gluon.rnn.LSTM(H, num_layers=L, input_size=I)
    lstm.initialize(mx.init.Xavier())
    lstm.hybridize(static_alloc=True, static_shape=True)
    x.attach_grad()

    def lstm_train():
        with mx.autograd.record():
            y = lstm(x)
        y.backward(head)
        mx.nd.waitall()

    gru = mx.gluon.rnn.GRU(H, num_layers=L, input_size=I)
    gru.initialize(mx.init.Xavier())
    gru.hybridize(static_alloc=True, static_shape=True)

    def gru_infer():
        gru(x).wait_to_read()

    figures = {"lstm": timeit(lstm_train), "gru": timeit(gru_infer)}
    return figures, x, head, lstm


def unrolled_step(mx, x, head):
    """Two LSTMCell layers unrolled over the sequence inside one hybridized
    block, forward and backward."""
    gluon = mx.gluon

    class Unrolled(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.cells = gluon.rnn.HybridSequentialRNNCell()
                for _ in range(L):
                    self.cells.add(gluon.rnn.LSTMCell(H))

        def hybrid_forward(self, F, x):
            out, _ = self.cells.unroll(T, x, layout="TNC", merge_outputs=True)
            return out

    net = Unrolled()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)

    def step():
        with mx.autograd.record():
            y = net(x)
        y.backward(head)
        mx.nd.waitall()
    return timeit(step)


def run_gluon(mx_name):
    import importlib

    import numpy as np

    if mx_name == "mxnet":
        os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    mx = importlib.import_module(mx_name)
    figures, x, head, _ = gluon_steps(mx, np)
    out = {f"{mx_name}_{k}": v for k, v in figures.items()}
    if mx_name == "oxnet":
        out["oxnet_unrolled"] = unrolled_step(mx, x, head)
    return out


def run_torch():
    import numpy as np
    import torch

    rng = np.random.RandomState(0)
    x = torch.tensor(rng.uniform(-1, 1, (T, N, I)).astype(np.float32), requires_grad=True)
    head = torch.tensor(rng.uniform(-1, 1, (T, N, H)).astype(np.float32))
    lstm = torch.nn.LSTM(I, H, num_layers=L)
    gru = torch.nn.GRU(I, H, num_layers=L)

    def lstm_train():
        y, _ = lstm(x)
        y.backward(head)

    def gru_infer():
        with torch.no_grad():
            gru(x)
    return {"torch_lstm": timeit(lstm_train), "torch_gru": timeit(gru_infer), "torch_threads": torch.get_num_threads()}


ENGINES = {"oxnet": (".venv", lambda: run_gluon("oxnet")), "torch": (".venv-bench", run_torch),
           "mxnet": (".venv-mxnet", lambda: run_gluon("mxnet"))}


def main():
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    print(f"Recurrent layers, float32, T={T} N={N} input={I} hidden={H} layers={L} (ms, median):")
    rows = [("LSTM forward+backward", "lstm"), ("GRU forward (inference)", "gru")]
    print(f"  {'':28s} {'oxnet':>9s} {'PyTorch':>9s} {'MXNet':>9s}")
    for label, key in rows:
        cells = [figures.get(f"{e}_{key}") for e in ("oxnet", "torch", "mxnet")]
        print(f"  {label:28s} " + " ".join(f"{c:9.2f}" if c is not None else f"{'-':>9s}" for c in cells))
    if "oxnet_unrolled" in figures:
        print(f"  {'LSTMCell x2 unrolled, f+b':28s} {figures['oxnet_unrolled']:9.2f}")
    ox = figures.get("oxnet_lstm")
    if ox and "torch_lstm" in figures:
        print(f"  LSTM oxnet / PyTorch: {ox / figures['torch_lstm']:.2f} (target <= 1)")
    if ox and "mxnet_lstm" in figures:
        print(f"  LSTM MXNet / oxnet: {figures['mxnet_lstm'] / ox:.2f} (target >= 2)")
    if "oxnet_gru" in figures and "torch_gru" in figures:
        print(f"  GRU oxnet / PyTorch: {figures['oxnet_gru'] / figures['torch_gru']:.2f} (target <= 1)")
    if ox and "oxnet_unrolled" in figures:
        print(f"  unrolled cells / fused LSTM: {figures['oxnet_unrolled'] / ox:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
