"""Seed 002: a function-style operator with `@customop('numpy')` and its
gradient defined by `def_grad`, unchanged but for the import.

Run: python examples/python/seed_customop.py
"""

import numpy
import oxnet as mx
from oxnet import customop


@customop('numpy')
def my_softmax(x, y):
    probs = numpy.exp(x - numpy.max(x, axis=1, keepdims=True))
    probs /= numpy.sum(probs, axis=1, keepdims=True)
    N = x.shape[0]
    loss = -numpy.sum(numpy.log(probs[numpy.arange(N), y])) / N
    return loss


def my_softmax_grad(ans, x, y):
    def grad(g):
        N = x.shape[0]
        probs = numpy.exp(x - numpy.max(x, axis=1, keepdims=True))
        probs /= numpy.sum(probs, axis=1, keepdims=True)
        probs[numpy.arange(N), y] -= 1
        probs /= N
        return probs
    return grad


my_softmax.def_grad(my_softmax_grad)


def main():
    mx.random.seed(1)
    x = mx.nd.random.normal(shape=(5, 4))
    y = mx.nd.array([0, 3, 1, 2, 3], dtype='int64')
    x.attach_grad()
    with mx.autograd.record():
        loss = my_softmax(x, y)
    loss.backward()
    print("loss:", loss.asscalar())
    print("d loss / d x:", x.grad)
    return x, y, loss


if __name__ == "__main__":
    main()
