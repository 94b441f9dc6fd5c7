"""Summing gradients while backward runs, on and off, side by side.

Under a launcher of N ranks (``python -m oxnet.tools.launch -n 2 .venv/bin/python
bench/overlap.py``): the MLP 784-256-256-10 and the digits CNN (batch 32
per rank, hybridized, SGD, ``gluon.Trainer(kvstore='dist_sync')``), each
trained by two trainers, one whose store overlaps (``OXNET_OVERLAP=1``) and
one whose does not, their steps alternating so that the machine's drift
falls on both alike. Prints, from rank 0, one JSON line per model: the
median step, its forward and backward part, and its ``trainer.step`` part
(the exchange left after backward, and the update), in microseconds, and
how many buckets the overlapping store summed during backward.
"""

import json
import os
import statistics
import sys
import time

import oxnet as mx
from oxnet import autograd, gluon, nd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "python"))
from gluon_digits import network  # noqa: E402  pylint: disable=wrong-import-position

BATCH_PER_RANK = 32


def mlp():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    return net


class Run:
    """One network and trainer; ``overlap`` decides its store's mode."""

    def __init__(self, make, x, y, overlap):
        os.environ["OXNET_OVERLAP"] = "1" if overlap else "0"
        self.net = make()
        self.net.initialize(mx.init.Xavier())
        self.net.hybridize()
        self.trainer = gluon.Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.01}, kvstore="dist_sync")
        self.x, self.y = x, y
        self.loss = gluon.loss.SoftmaxCrossEntropyLoss()
        self.times = {"step_us": [], "forward_backward_us": [], "trainer_step_us": []}
        for _ in range(5):  # the store's plan (and its mode) is made here
            self.step(record=False)

    def step(self, record=True):
        start = time.perf_counter()
        with autograd.record():
            loss = self.loss(self.net(self.x), self.y)
        loss.backward()
        middle = time.perf_counter()
        self.trainer.step(BATCH_PER_RANK * mx.distributed.world().size)
        nd.waitall()
        end = time.perf_counter()
        if record:
            self.times["step_us"].append(end - start)
            self.times["forward_backward_us"].append(middle - start)
            self.times["trainer_step_us"].append(end - middle)

    def medians(self):
        return {k: round(statistics.median(v) * 1e6, 1) for k, v in self.times.items()}


def main():
    world = mx.distributed.world()
    if world.size < 2:
        sys.exit("bench/overlap.py compares data-parallel steps: start it under a launcher of 2 or more ranks")
    labels = nd.array([k % 10 for k in range(BATCH_PER_RANK)])
    models = (("MLP 784-256-256-10", mlp, nd.random.uniform(shape=(BATCH_PER_RANK, 784))),
              ("digits CNN", network, nd.random.uniform(shape=(BATCH_PER_RANK, 1, 8, 8))))
    for name, make, x in models:
        on, off = Run(make, x, labels, True), Run(make, x, labels, False)
        for _ in range(100):
            for run in (on, off):
                world.barrier()
                run.step()
        overlap = on.trainer._kvstore._plan.overlap  # pylint: disable=protected-access
        if world.rank == 0:
            print(json.dumps({"model": name, "ranks": world.size, "threads": os.environ.get("OXNET_NUM_THREADS"),
                              "bucket_bytes": os.environ.get("OXNET_BUCKET_BYTES", "default"),
                              "overlap": on.medians(), "no_overlap": off.medians(),
                              # (no overlap where every gradient fits one bucket)
                              "buckets": len(overlap.buckets) if overlap else 1,
                              "summed_during_backward": overlap.early if overlap else 0}))


if __name__ == "__main__":
    main()
