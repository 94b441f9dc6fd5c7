"""Seed 000: the numpy Softmax custom operator (with its loss-style backward
completed: gradient of cross-entropy with the labels, as the seed intends).

Run: python examples/python/seed_softmax.py
"""

import numpy as np
import oxnet as mx


class Softmax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        # the seed used np.int, which numpy removed; the built-in int is the same thing
        l = in_data[1].asnumpy().ravel().astype(int)
        y = out_data[0].asnumpy()
        y[np.arange(l.shape[0]), l] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        # labels get no gradient
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_data[1].shape))


@mx.operator.register("softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(SoftmaxProp, self).__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def main():
    mx.random.seed(0)
    x = mx.nd.random.normal(shape=(4, 3))
    label = mx.nd.array([0, 2, 1, 2])
    x.attach_grad()
    with mx.autograd.record():
        prob = mx.nd.Custom(x, label, op_type='softmax')
    prob.backward()
    print("probabilities:", prob)
    print("gradient of the cross-entropy:", x.grad)
    return x, label, prob


if __name__ == "__main__":
    main()
