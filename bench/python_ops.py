"""Side-by-side timings of the Python face: oxnet, numpy and (when a venv
with mxnet==1.9.1 is present) MXNet, in one run.

    bash bench/python_ops.sh          # builds oxnet in release mode, then runs this

Measured (median of repeated runs, microseconds per call):
- a numpy-based Python CustomOp sigmoid on 1 element: forward, and forward+backward;
- a built-in operator (sigmoid) called from Python on 1 element;
- on 1M elements, the custom op against the same numpy work done by hand
  (asnumpy, compute, nd.array, assign): the ratio shows what the engine adds;
- an operator from a library built for MXNet 1.9.1 (``mx_gemm`` of
  examples/extensions/mxnet on 1x1 matrices), forward and forward+backward,
  the same .so loaded by each engine (when ``OXNET_BENCH_MXNET_LIB`` names it;
  python_ops.sh builds it).

Each engine runs in its own interpreter (this file re-runs itself with
``--engine``), since MXNet needs numpy<1.24; the parent prints one table.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timeit(fn, min_time=0.3, repeats=7):
    """Median microseconds per call of ``fn`` over ``repeats`` timed batches."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > min_time / repeats or n > 1 << 22:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def engine_figures(mx):
    """The measurements for one engine module ``mx`` (oxnet or mxnet)."""
    import numpy as np

    nd, autograd = mx.nd, mx.autograd

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = 1.0 / (1.0 + np.exp(-x))
            self.assign(out_data[0], req[0], mx.nd.array(y))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0].asnumpy()
            dy = out_grad[0].asnumpy()
            self.assign(in_grad[0], req[0], mx.nd.array(dy * (1.0 - y) * y))

    @mx.operator.register("bench_sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(True)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Sigmoid()

    figures = {}
    x1 = nd.array([0.5])

    def custom_forward():
        nd.Custom(x1, op_type="bench_sigmoid").wait_to_read()

    xg = nd.array([0.5])
    xg.attach_grad()

    def custom_forward_backward():
        with autograd.record():
            y = nd.Custom(xg, op_type="bench_sigmoid")
        y.backward()
        xg.grad.wait_to_read()

    def builtin():
        nd.sigmoid(x1).wait_to_read()

    figures["custom_fwd_1"] = timeit(custom_forward)
    figures["custom_fwd_bwd_1"] = timeit(custom_forward_backward)
    figures["builtin_1"] = timeit(builtin)

    big = nd.array(np.random.default_rng(0).normal(size=(1_000_000,)).astype(np.float32))
    out = nd.zeros(big.shape)

    def custom_big():
        nd.Custom(big, op_type="bench_sigmoid").wait_to_read()

    def by_hand_big():
        x = big.asnumpy()
        y = 1.0 / (1.0 + np.exp(-x))
        out[:] = mx.nd.array(y)
        out.wait_to_read()

    def builtin_big():
        nd.sigmoid(big).wait_to_read()

    figures["custom_1m"] = timeit(custom_big, min_time=1.0)
    figures["by_hand_1m"] = timeit(by_hand_big, min_time=1.0)
    figures["builtin_1m"] = timeit(builtin_big, min_time=1.0)

    lib = os.environ.get("OXNET_BENCH_MXNET_LIB")
    if lib:
        mx.library.load(lib, verbose=False)
        a, b = nd.array([[0.5]]), nd.array([[2.0]])
        a.attach_grad()

        def library_forward():
            nd.mx_gemm(a, b).wait_to_read()

        def library_forward_backward():
            with autograd.record():
                c = nd.mx_gemm(a, b)
            c.backward()
            a.grad.wait_to_read()

        figures["mxlib_fwd_1"] = timeit(library_forward)
        figures["mxlib_fwd_bwd_1"] = timeit(library_forward_backward)
    return figures


def numpy_figures():
    """numpy's own sigmoid, for reference."""
    import numpy as np

    x1 = np.array([0.5], dtype=np.float32)
    big = np.random.default_rng(0).normal(size=(1_000_000,)).astype(np.float32)
    return {
        "builtin_1": timeit(lambda: 1.0 / (1.0 + np.exp(-x1))),
        "builtin_1m": timeit(lambda: 1.0 / (1.0 + np.exp(-big)), min_time=1.0),
    }


def run_child(python, engine):
    """Runs this script in ``python`` for one engine; returns its figures."""
    env = dict(os.environ, MXNET_CPU_WORKER_NTHREADS="2", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--engine", engine],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        print(f"[{engine}] failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["oxnet", "mxnet", "numpy"])
    parser.add_argument("--mxnet-python", default=os.path.join(ROOT, ".venv-mxnet", "bin", "python"))
    args = parser.parse_args()

    if args.engine:
        if args.engine == "numpy":
            figures = numpy_figures()
        else:
            mx = __import__(args.engine)
            figures = engine_figures(mx)
        print(json.dumps(figures))
        return

    results = {"oxnet": run_child(sys.executable, "oxnet"), "numpy": run_child(sys.executable, "numpy")}
    if os.path.exists(args.mxnet_python):
        results["mxnet 1.9.1"] = run_child(args.mxnet_python, "mxnet")
    else:
        print(f"(MXNet column skipped: no {os.path.relpath(args.mxnet_python, ROOT)}; see bench/python_ops.sh)")

    rows = [
        ("Python CustomOp sigmoid, 1 element: forward", "custom_fwd_1", "target <= 10 us"),
        ("Python CustomOp sigmoid, 1 element: forward+backward", "custom_fwd_bwd_1", "target <= 40 us"),
        ("built-in sigmoid from Python, 1 element", "builtin_1", "target <= 2 us"),
        ("built-in sigmoid from Python, 1M elements", "builtin_1m", ""),
        ("Python CustomOp sigmoid, 1M elements", "custom_1m", ""),
        ("same numpy work by hand (asnumpy, compute, nd.array, assign), 1M", "by_hand_1m", ""),
        ("MXNet-built library op mx_gemm 1x1: forward", "mxlib_fwd_1", "same .so in both"),
        ("MXNet-built library op mx_gemm 1x1: forward+backward", "mxlib_fwd_bwd_1", "same .so in both"),
    ]
    engines = [e for e, r in results.items() if r]
    print(f"{'microseconds per call (median)':<70}" + "".join(f"{e:>14}" for e in engines) + "   note")
    for label, key, note in rows:
        cells = "".join(f"{results[e][key]:>14.2f}" if key in results[e] else f"{'-':>14}" for e in engines)
        print(f"{label:<70}{cells}   {note}")
    ox = results.get("oxnet")
    if ox:
        print(f"\noxnet custom op on 1M / the same work by hand: {ox['custom_1m'] / ox['by_hand_1m']:.2f}x")
        mxr = results.get("mxnet 1.9.1")
        if mxr:
            for key in ("custom_fwd_1", "custom_fwd_bwd_1", "builtin_1", "mxlib_fwd_1", "mxlib_fwd_bwd_1"):
                if key in mxr and key in ox:
                    print(f"MXNet / oxnet, {key}: {mxr[key] / ox[key]:.1f}x")


if __name__ == "__main__":
    main()
