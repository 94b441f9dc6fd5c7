"""Seed 000's Softmax custom operator as the loss layer of a symbolic MLP
(`mx.sym.Custom(data=fc, name='softmax', op_type='softmax')`), bound with
`simple_bind` and trained for a few steps of plain SGD on generated data.
The label's shape is inferred backwards from the data's by the operator's
own `infer_shape`.

Run: python examples/python/seed_softmax_symbolic.py
"""

import numpy as np
import oxnet as mx

import seed_softmax  # noqa: F401  (registers the "softmax" custom operator)


def build_net(num_classes=3):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=32)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=num_classes)
    return mx.sym.Custom(data=fc2, name="softmax", op_type="softmax")


def make_data(n=96, dim=8, num_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.normal(scale=3.0, size=(num_classes, dim))
    labels = rng.randint(0, num_classes, size=n)
    x = centers[labels] + rng.normal(size=(n, dim))
    return x.astype(np.float32), labels.astype(np.float32)


def train(steps=30, lr=0.1, verbose=True):
    mx.random.seed(1)
    net = build_net()
    x, y = make_data()
    exe = net.simple_bind(mx.cpu(), data=x.shape)
    rng = np.random.RandomState(2)
    for name, arr in exe.arg_dict.items():
        if name.endswith("weight"):
            arr[:] = rng.normal(scale=0.1, size=arr.shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["softmax_label"][:] = y
    losses = []
    for step in range(steps):
        prob = exe.forward(is_train=True)[0].asnumpy()
        loss = -np.log(prob[np.arange(len(y)), y.astype(int)] + 1e-12).mean()
        losses.append(float(loss))
        exe.backward()
        for name in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
            exe.arg_dict[name][:] = exe.arg_dict[name] - lr / len(y) * exe.grad_dict[name]
        if verbose and step % 10 == 0:
            print(f"step {step:3d}  cross-entropy {loss:.4f}")
    accuracy = float((prob.argmax(axis=1) == y).mean())
    if verbose:
        print(f"final cross-entropy {losses[-1]:.4f}, training accuracy {accuracy:.2f}")
    return losses, accuracy


if __name__ == "__main__":
    train()
