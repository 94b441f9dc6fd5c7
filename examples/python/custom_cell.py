"""A recurrent cell of your own with a custom operator inside: a minimal
gated cell (one update gate) whose gate is seed 001's numpy Sigmoid
operator. It derives from gluon.rnn.HybridRecurrentCell, so it stacks with
the built-in cells, unrolls over a sequence, and hybridizes: the unrolled
steps, custom operator included, become one cached graph.

The task: read a sequence of numbers and output, at each step, the mean so
far; a minute's worth of work for the cell, a few seconds here.

Run: python examples/python/custom_cell.py
"""

import numpy as np
import oxnet as mx
from oxnet import autograd, gluon

from seed_sigmoid_dense import SigmoidProp  # noqa: F401  (registers op_type 'sigmoid')


class GatedCell(gluon.rnn.HybridRecurrentCell):
    """h' = z * h + (1 - z) * tanh(W x + U h + b), z = sigmoid(Wz x + Uz h + bz),
    the sigmoid being the numpy custom operator."""

    def __init__(self, hidden, input_size=0, **kwargs):
        super().__init__(**kwargs)
        self._hidden = hidden
        with self.name_scope():
            self.i2h_weight = self.params.get("i2h_weight", shape=(2 * hidden, input_size),
                                              allow_deferred_init=True)
            self.h2h_weight = self.params.get("h2h_weight", shape=(2 * hidden, hidden))
            self.bias = self.params.get("bias", shape=(2 * hidden,), init="zeros")

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden), "__layout__": "NC"}]

    def _alias(self):
        return "gated"

    def hybrid_forward(self, F, x, states, i2h_weight, h2h_weight, bias):
        h = states[0]
        pre = (F.FullyConnected(x, i2h_weight, bias, num_hidden=2 * self._hidden)
               + F.FullyConnected(h, h2h_weight, no_bias=True, num_hidden=2 * self._hidden))
        gate_in, cand_in = F.split(pre, num_outputs=2, axis=1)
        z = F.Custom(gate_in, op_type="sigmoid")
        new = z * h + (1 - z) * F.tanh(cand_in)
        return new, [new]


class RunningMean(gluon.HybridBlock):
    """The custom cell unrolled over the sequence, then a Dense read-out."""

    def __init__(self, hidden=16, steps=10, **kwargs):
        super().__init__(**kwargs)
        self._steps = steps
        with self.name_scope():
            self.cell = GatedCell(hidden, input_size=1)
            self.out = gluon.nn.Dense(1, flatten=False)

    def hybrid_forward(self, F, x):
        states, _ = self.cell.unroll(self._steps, x, layout="NTC", merge_outputs=True)
        return self.out(states)


def data(n, steps, rng):
    """Sequences of uniform numbers and their running means, (n, steps, 1)."""
    x = rng.uniform(-1, 1, (n, steps, 1)).astype(np.float32)
    return x, np.cumsum(x, axis=1) / np.arange(1, steps + 1).reshape(1, steps, 1)


def main(epochs=40, steps=10, seed=0, quiet=False):
    """Trains the hybridized model; returns the loss of each epoch and the
    largest difference between the hybridized and the imperative outputs."""
    mx.random.seed(seed)
    rng = np.random.RandomState(seed)
    x, y = data(256, steps, rng)
    net = RunningMean(steps=steps)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.02})
    loss_fn = gluon.loss.L2Loss()
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for b in range(0, len(x), 32):
            xb, yb = mx.nd.array(x[b:b + 32]), mx.nd.array(y[b:b + 32])
            with autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            trainer.step(xb.shape[0])
            total += loss.sum().asscalar()
        losses.append(total / len(x))
        if not quiet and (epoch % 10 == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:3d}  loss {losses[-1]:.5f}")
    probe = mx.nd.array(x[:8])
    hybrid = net(probe).asnumpy()
    net.hybridize(False)
    imperative = net(probe).asnumpy()
    gap = float(np.abs(hybrid - imperative).max())
    if not quiet:
        print(f"hybridized and imperative outputs differ by at most {gap:.2e}")
    return losses, gap


if __name__ == "__main__":
    main()
