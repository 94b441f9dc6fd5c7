"""All-reduce cost of oxnet's communication layer against mpi4py itself,
run on the ranks of one job (bench/allreduce.sh starts 2 over shared memory).

Four cases, each the median of repeated timings, ranks synchronized first:
  sweep: one float32 array of 4 B ... 64 MiB: oxnet against mpi4py on a
         numpy array of the same size and a memcpy of it (np.copyto), with
         the bus bandwidth 2 (n - 1) / n * bytes / time (NCCL's measure);
  small: 100 gradients of 1,000 float32 (a small network's parameters),
         oxnet fused (one buffer), oxnet unfused (OXNET_FUSION_THRESHOLD=0
         behaviour), and mpi4py on one pre-packed numpy buffer (the floor);
  large: one 16M-float32 array (64 MiB), oxnet vs mpi4py on numpy;
  step:  a Dense(256)-Dense(256)-Dense(10) Trainer step with dist_sync.
Prints one table from rank 0 (times in microseconds, ratios oxnet / mpi4py).
"""

import os
import statistics
import time

import numpy as np
import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.distributed import mpi as ox_mpi


def timed(world, fn, repeat):
    times = []
    for _ in range(repeat):
        world.barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def main():
    world = mx.distributed.world()
    if world.size < 2:
        raise SystemExit("run under a launcher with 2 or more ranks (bench/allreduce.sh)")
    comm, MPI = world._comm, world._mpi  # pylint: disable=protected-access
    rows = []
    sweep = []
    for exponent in range(0, 25, 2):  # 1, 4, ..., 4 ** 12 floats: 4 B, 16 B, ..., 64 MiB
        count = 2 ** exponent
        nbytes = 4 * count
        repeat = 300 if nbytes <= 65536 else 60 if nbytes <= 4 * 2 ** 20 else 10
        ours_array = nd.ones((count,))
        theirs_array = np.ones(count, dtype=np.float32)
        source = np.ones(count, dtype=np.float32)
        theirs = timed(world, lambda: comm.Allreduce(MPI.IN_PLACE, theirs_array, op=MPI.SUM), repeat)
        ours = timed(world, lambda: world.allreduce_([ours_array]), repeat)
        copy = timed(world, lambda: np.copyto(theirs_array, source), repeat)
        bus = 2 * (world.size - 1) / world.size * nbytes
        sweep.append((nbytes, ours, theirs, copy, bus / (ours * 1e-6) / 1e9, bus / (theirs * 1e-6) / 1e9))

    grads = [nd.ones((1000,)) for _ in range(100)]
    packed = np.ones(100 * 1000, dtype=np.float32)
    floor = timed(world, lambda: comm.Allreduce(MPI.IN_PLACE, packed, op=MPI.SUM), 200)
    fused = timed(world, lambda: world.allreduce_(grads), 200)
    os.environ["OXNET_FUSION_THRESHOLD"] = "0"
    unfused = timed(world, lambda: world.allreduce_(grads), 50)
    del os.environ["OXNET_FUSION_THRESHOLD"]
    rows += [("100 x 1k float32, mpi4py one packed buffer", floor, 1.0),
             ("100 x 1k float32, oxnet fused", fused, fused / floor),
             ("100 x 1k float32, oxnet one message each", unfused, unfused / floor)]

    big = nd.ones((16 * 1024 * 1024,))
    big_np = np.ones(16 * 1024 * 1024, dtype=np.float32)
    raw = timed(world, lambda: comm.Allreduce(MPI.IN_PLACE, big_np, op=MPI.SUM), 10)
    ours = timed(world, lambda: world.allreduce_([big]), 10)
    gbps = 64 * 2 ** 20 / (ours * 1e-6) / 1e9
    rows += [("64 MiB float32, mpi4py on numpy", raw, 1.0), (f"64 MiB float32, oxnet ({gbps:.2f} GB/s)", ours,
                                                             ours / raw)]

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    net.initialize()
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01}, kvstore="dist_sync")
    x, y = nd.ones((32, 784)), nd.ones((32,))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(32 * world.size)

    step()
    step_us = timed(world, step, 50)
    rows.append(("MLP 784-256-256-10 step, dist_sync (compute included)", step_us, float("nan")))

    if world.rank == 0:
        print(f"{world.size} ranks, fusion threshold {ox_mpi.fusion_threshold()} bytes")
        print(f"{'bytes':>10s} {'oxnet us':>10s} {'mpi4py us':>10s} {'memcpy us':>10s} "
              f"{'oxnet GB/s':>11s} {'mpi4py GB/s':>12s} {'mpi4py/oxnet':>13s}")
        for nbytes, ours, theirs, copy, ours_bw, theirs_bw in sweep:
            print(f"{nbytes:10d} {ours:10.1f} {theirs:10.1f} {copy:10.1f} {ours_bw:11.3f} {theirs_bw:12.3f} "
                  f"{theirs / ours:13.2f}")
        print()
        print(f"{'case':58s} {'us':>10s} {'ratio':>7s}")
        for name, us, ratio in rows:
            print(f"{name:58s} {us:10.1f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
