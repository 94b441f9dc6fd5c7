"""Step time of data-parallel training at a fixed batch per rank: the
MLP 784-256-256-10 (batch 32 per rank) and the digits CNN of
examples/python/gluon_digits.py (batch 32 per rank), hybridized, SGD.

Without a launcher it trains as one plain process (no key-value store);
under a launcher of N ranks with gluon.Trainer(kvstore='dist_sync').
With --no-exchange the ranks train side by side without exchanging
gradients (kvstore None; a barrier before each timed step still lines
them up): what sharing the machine costs, apart from communication.
Prints one JSON line from rank 0: the median step times in microseconds,
and the medians of the part spent in trainer.step.
bench/scaling.sh runs it on 1 and 2 ranks and prints the scaling
efficiency time(1) / time(2).
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


def step_time(world, net, x, y, exchange, repeat=60):
    net.initialize(mx.init.Xavier())
    net.hybridize()
    store = "dist_sync" if world.size > 1 and exchange else None
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01}, kvstore=store)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        middle = time.perf_counter()
        trainer.step(BATCH_PER_RANK * world.size)
        return middle

    for _ in range(5):
        step()
    times, updates = [], []
    for _ in range(repeat):
        world.barrier()
        start = time.perf_counter()
        middle = step()
        nd.waitall()
        end = time.perf_counter()
        times.append(end - start)
        updates.append(end - middle)
    return statistics.median(times) * 1e6, statistics.median(updates) * 1e6


def main():
    world = mx.distributed.world()
    exchange = "--no-exchange" not in sys.argv[1:]
    mlp = gluon.nn.HybridSequential()
    mlp.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    mlp_us, mlp_update_us = step_time(world, mlp, nd.random.uniform(shape=(BATCH_PER_RANK, 784)),
                       nd.array([k % 10 for k in range(BATCH_PER_RANK)]), exchange)
    cnn_us, cnn_update_us = step_time(world, network(), nd.random.uniform(shape=(BATCH_PER_RANK, 1, 8, 8)),
                       nd.array([k % 10 for k in range(BATCH_PER_RANK)]), exchange)
    if world.rank == 0:
        print(json.dumps({"ranks": world.size, "threads": os.environ.get("OXNET_NUM_THREADS"), "exchange": exchange,
                          "mlp_us": round(mlp_us, 1), "cnn_us": round(cnn_us, 1),
                          # of which trainer.step (the exchange and the update)
                          "mlp_update_us": round(mlp_update_us, 1), "cnn_update_us": round(cnn_update_us, 1)}))


if __name__ == "__main__":
    main()
