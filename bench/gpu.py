"""GPU timings side by side with PyTorch (one run, on the machine's GPU):
sigmoid over 64M float32 against the device-to-device copy bandwidth of the
same run, a small element-wise launch (per-call overhead) and the same for
an extension library's CUDA kernel, the bf16 product, a CuPy custom op and
a Gluon MLP training step.

    python bench/gpu.py [--n 67108864] [--rounds 20]
"""

import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np

import oxnet as mx


def timed(fn, sync, rounds):
    fn()
    sync()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(rounds):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / rounds)
    return best


def matmul_rows(n=8192, rounds=10):
    """bfloat16 matrix product n x n x n (float32 accumulation): oxnet's
    `dot` (cuBLAS) and torch.matmul; the last column holds TFLOP/s."""
    gpu = mx.gpu(0)
    a = mx.nd.random.uniform(-1, 1, shape=(n, n)).astype("bfloat16").as_in_context(gpu)
    b = mx.nd.random.uniform(-1, 1, shape=(n, n)).astype("bfloat16").as_in_context(gpu)
    out = mx.nd.dot(a, b)
    flops = 2 * n ** 3
    t = timed(lambda: mx.nd.dot(a, b, out=out), mx.nd.waitall, rounds)
    rows = [(f"oxnet bf16 matmul {n}^3 TFLOP/s", t, flops / t / 1e12)]
    try:
        import torch
    except ImportError:
        return rows
    ta = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    tb = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    tout = torch.empty_like(ta)
    tt = timed(lambda: torch.matmul(ta, tb, out=tout), torch.cuda.synchronize, rounds)
    rows.append((f"torch bf16 matmul {n}^3 TFLOP/s", tt, flops / tt / 1e12))
    return rows


def cupy_custom_op_rows(n=1 << 20, rounds=200):
    """A Python custom operator computing sigmoid with CuPy on oxnet's GPU
    arrays (no host copy), against the same CuPy code on CuPy arrays."""
    try:
        import cupy
    except ImportError:
        return []

    def cupy_sigmoid(x, y):
        cupy.exp(-x, out=y)
        y += 1
        cupy.reciprocal(y, out=y)

    class CupySigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            cupy_sigmoid(cupy.asarray(in_data[0]), cupy.asarray(out_data[0]))

    @mx.operator.register("bench_cupy_sigmoid")
    class CupySigmoidProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return CupySigmoid()

    x = mx.nd.array(np.random.default_rng(2).standard_normal(n).astype(np.float32), ctx=mx.gpu(0))
    got = mx.nd.Custom(x, op_type="bench_cupy_sigmoid")
    np.testing.assert_allclose(got.asnumpy(), 1 / (1 + np.exp(-x.asnumpy())), rtol=1e-5)
    t_op = timed(lambda: mx.nd.Custom(x, op_type="bench_cupy_sigmoid"), mx.nd.waitall, rounds)
    cx, cy = cupy.asarray(x.asnumpy()), cupy.empty(n, dtype=cupy.float32)
    t_cupy = timed(lambda: cupy_sigmoid(cx, cy), cupy.cuda.runtime.deviceSynchronize, rounds)
    return [("oxnet Custom op with CuPy 1M", t_op, None), ("CuPy alone 1M", t_cupy, None)]


def library_op_rows(rounds=2000):
    """The per-call cost of an extension library's CUDA kernel (relu of
    tests/gpu/ext/gpu_ops.cu, built with nvcc against oxnet's SDK) against
    the built-in relu, on 1K float32, in the same run."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "gpu"))
    import build_ext

    try:
        path = build_ext.build("oxnet", tempfile.mkdtemp())
    except build_ext.Unavailable as e:
        print(f"(no library row: {e})")
        return []
    mx.library.load(path, verbose=False)
    small = mx.nd.array(np.linspace(-1, 1, 1024, dtype=np.float32), ctx=mx.gpu(0))
    np.testing.assert_array_equal(mx.nd.ox_relu(small).asnumpy(), mx.nd.relu(small).asnumpy())
    t_lib = timed(lambda: mx.nd.ox_relu(small), mx.nd.waitall, rounds)
    t_builtin = timed(lambda: mx.nd.relu(small), mx.nd.waitall, rounds)
    return [("oxnet library op relu 1K (launch)", t_lib, None), ("oxnet built-in relu 1K, same run", t_builtin, None)]


def mlp_step_rows(rounds):
    """One hybridized Gluon MLP training step (784-512-512-10, batch 256,
    SGD with momentum) on the GPU, and PyTorch eager's."""
    from oxnet import autograd, gluon

    gpu = mx.gpu(0)
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((256, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, 256).astype(np.float32)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(512, activation="relu"), gluon.nn.Dense(512, activation="relu"), gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=gpu)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mx.nd.array(x_np, ctx=gpu), mx.nd.array(y_np, ctx=gpu)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(256)

    rows = [("oxnet MLP train step", timed(step, mx.nd.waitall, rounds), None)]
    try:
        import torch
    except ImportError:
        return rows
    tnet = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(tnet.parameters(), lr=0.01, momentum=0.9)
    tx, ty = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).long().cuda()
    tloss = torch.nn.CrossEntropyLoss()

    def tstep():
        opt.zero_grad()
        tloss(tnet(tx), ty).backward()
        opt.step()

    rows.append(("torch MLP train step", timed(tstep, torch.cuda.synchronize, rounds), None))
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=64 << 20)
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args()
    if mx.context.num_gpus() == 0:
        print("no GPU: nothing to time")
        return
    n, gpu = a.n, mx.gpu(0)
    x = mx.nd.array(np.random.default_rng(0).standard_normal(n).astype(np.float32), ctx=gpu)
    y = mx.nd.zeros((n,), ctx=gpu)
    sync = mx.nd.waitall
    rows = []
    t_copy = timed(lambda: x.copyto(y), sync, a.rounds)
    t_sig = timed(lambda: mx.nd.sigmoid(x, out=y), sync, a.rounds)
    gbs = lambda t: 2 * 4 * n / t / 1e9  # bytes read + written
    rows.append(("oxnet copy 64M f32", t_copy, gbs(t_copy)))
    rows.append(("oxnet sigmoid 64M f32", t_sig, gbs(t_sig)))
    t_drop = timed(lambda: mx.nd.Dropout(x, p=0.5, mode="always"), sync, a.rounds)
    rows.append(("oxnet Dropout 64M f32 (Philox)", t_drop, gbs(t_drop)))
    small = mx.nd.ones((1024,), ctx=gpu)
    t_small = timed(lambda: mx.nd.relu(small), sync, 2000)
    rows.append(("oxnet relu 1K (launch)", t_small, None))
    try:
        import torch

        tx = torch.from_numpy(x.asnumpy()).cuda()
        ty = torch.empty_like(tx)
        ts = torch.cuda.synchronize
        t_tc = timed(lambda: ty.copy_(tx), ts, a.rounds)
        t_ts = timed(lambda: torch.sigmoid(tx, out=ty), ts, a.rounds)
        tsmall = torch.ones(1024, device="cuda")
        t_tsm = timed(lambda: torch.relu(tsmall), ts, 2000)
        t_td = timed(lambda: torch.nn.functional.dropout(tx, 0.5, training=True), ts, a.rounds)
        rows.append(("torch dropout 64M f32", t_td, gbs(t_td)))
        rows += [("torch copy 64M f32", t_tc, gbs(t_tc)), ("torch sigmoid 64M f32", t_ts, gbs(t_ts)),
                 ("torch relu 1K (launch)", t_tsm, None)]
    except ImportError:
        print("(PyTorch not installed: oxnet only)")
    rows += matmul_rows()
    rows += cupy_custom_op_rows()
    rows += library_op_rows()
    rows += mlp_step_rows(a.rounds)
    print(f"{'what':34s} {'time':>12s} {'GB/s':>8s}")
    for what, t, bw in rows:
        print(f"{what:34s} {t * 1e6:10.1f}us {'' if bw is None else f'{bw:8.0f}'}")
    print(f"sigmoid / copy bandwidth (oxnet, same run): {t_copy / t_sig:.2f}")
    print("operators run on the host for lack of a GPU kernel:", mx.context.gpu_host_fallbacks())


if __name__ == "__main__":
    main()
