"""Writes tests/fixtures/deformable/reference.npz: values computed by real
MXNet 1.9.1 for oxnet's tests of ``mx.gluon.contrib.cnn`` (the deformable
convolutions and their operators) and of the convolutional recurrent cells
of ``mx.gluon.contrib.rnn``.

Run with MXNet 1.9.1's environment:

    .venv-mxnet/bin/python scripts/make_deformable_fixtures.py

Contents (keys ``<case>/<name>``):

* ``dcn_op/*``: ``contrib.DeformableConvolution`` on random inputs, its
  output and the gradients of data, offset, weight and bias for a random
  head gradient (attributes in ``dcn_op/attrs``, a JSON string).
* ``mdcn_op<k>/*``: ``contrib.ModulatedDeformableConvolution`` outputs for
  two attribute sets (MXNet 1.9.1 computes this operator's backward pass on
  the GPU only, so there are no gradients; oxnet checks those by central
  differences).
* ``dcn_block/*``, ``mdcn_block/*``: the Gluon layers with every parameter
  set to random values (by parameter name without the prefix), input,
  output, and for v1 the input's gradient of ``sum(out * head)``.
* ``cell_<Class>[_<layout>]/*``: each convolutional cell with random
  parameters unrolled over 3 steps: inputs, merged outputs, final states.
"""

import json
import os

# MXNet 1.9.1's oneDNN convolutions leave some cell outputs in a layout that
# asnumpy() then refuses ("Check failed: to.IsDefaultData()"): use the plain kernels.
os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "deformable")


def rand(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def dcn_op(rng, out):
    attrs = dict(kernel=(3, 3), pad=(1, 1), stride=(1, 1), dilate=(1, 1), num_filter=4, num_group=2,
                 num_deformable_group=2)
    x = rand(rng, (2, 4, 5, 6))
    off = rand(rng, (2, 2 * 2 * 9, 5, 6), -1.7, 1.7)
    w = rand(rng, (4, 2, 3, 3))
    b = rand(rng, (4,))
    head = rand(rng, (2, 4, 5, 6))
    arrs = [mx.nd.array(v) for v in (x, off, w, b)]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.DeformableConvolution(*arrs, **attrs)
    y.backward(mx.nd.array(head))
    for name, v in zip(("data", "offset", "weight", "bias"), arrs):
        out[f"dcn_op/{name}"] = v.asnumpy()
        out[f"dcn_op/grad_{name}"] = v.grad.asnumpy()
    out["dcn_op/head"] = head
    out["dcn_op/out"] = y.asnumpy()
    out["dcn_op/attrs"] = np.array(json.dumps(attrs))


def mdcn_ops(rng, out):
    cases = [
        (dict(kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=2, num_deformable_group=2), (2, 4, 5, 6),
         (5, 6), False),
        (dict(kernel=(2, 3), pad=(1, 0), stride=(2, 1), dilate=(1, 2), num_filter=3, no_bias=True), (1, 2, 6, 7),
         (4, 3), True),
    ]
    for k, (attrs, dshape, (ho, wo), no_bias) in enumerate(cases):
        taps = attrs["kernel"][0] * attrs["kernel"][1]
        dg = attrs.get("num_deformable_group", 1)
        groups = attrs.get("num_group", 1)
        x = rand(rng, dshape)
        # large offsets too, so that taps land outside, on the border band (-1, 0) and past the end
        off = rand(rng, (dshape[0], 2 * dg * taps, ho, wo), -2.5, 2.5)
        mask = rand(rng, (dshape[0], dg * taps, ho, wo), 0.0, 2.0)
        w = rand(rng, (attrs["num_filter"], dshape[1] // groups) + attrs["kernel"])
        ins = [x, off, mask, w]
        if not no_bias:
            ins.append(rand(rng, (attrs["num_filter"],)))
        y = mx.nd.contrib.ModulatedDeformableConvolution(*[mx.nd.array(v) for v in ins], **attrs)
        for name, v in zip(("data", "offset", "mask", "weight", "bias"), ins):
            out[f"mdcn_op{k}/{name}"] = v
        out[f"mdcn_op{k}/out"] = y.asnumpy()
        out[f"mdcn_op{k}/attrs"] = np.array(json.dumps(attrs))


def set_params(rng, block, out, key, scale=None):
    """Gives every parameter random values, stored under its name without
    the block's prefix."""
    for name, p in block.collect_params().items():
        short = name[len(block.prefix):]
        s = (scale or {}).get(short, 0.5)
        v = rand(rng, p.shape, -s, s)
        p.set_data(mx.nd.array(v))
        out[f"{key}/{short}"] = v


def blocks(rng, out):
    from mxnet.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution
    x = rand(rng, (2, 3, 6, 7))
    specs = [
        ("dcn_block", DeformableConvolution(4, kernel_size=3, padding=1, num_deformable_group=1, in_channels=3,
                                            activation="relu")),
        ("mdcn_block", ModulatedDeformableConvolution(4, kernel_size=(3, 2), strides=(1, 2), padding=1,
                                                      in_channels=3)),
    ]
    for key, block in specs:
        block.initialize()
        block(mx.nd.array(x))  # finish the deferred shapes
        set_params(rng, block, out, key, scale={"offset_weight": 0.3, "offset_bias": 0.8})
        xa = mx.nd.array(x)
        xa.attach_grad()
        with mx.autograd.record():
            y = block(xa)
        out[f"{key}/x"] = x
        out[f"{key}/out"] = y.asnumpy()
        if key == "dcn_block":
            head = rand(rng, y.shape)
            y.backward(mx.nd.array(head))
            out[f"{key}/head"] = head
            out[f"{key}/grad_x"] = xa.grad.asnumpy()


def cells(rng, out):
    from mxnet.gluon.contrib import rnn
    specs = []
    for kind in ("RNN", "LSTM", "GRU"):
        specs.append((f"Conv1D{kind}Cell", dict(input_shape=(2, 7), hidden_channels=3, i2h_kernel=3,
                                                  h2h_kernel=3, i2h_pad=1), (2, 3, 2, 7)))
        specs.append((f"Conv2D{kind}Cell", dict(input_shape=(2, 5, 4), hidden_channels=2, i2h_kernel=(3, 2),
                                                  h2h_kernel=(3, 1), i2h_dilate=(1, 2), h2h_dilate=(2, 1)),
                      (2, 3, 2, 5, 4)))
        specs.append((f"Conv3D{kind}Cell", dict(input_shape=(1, 3, 4, 4), hidden_channels=2, i2h_kernel=2,
                                                  h2h_kernel=3, i2h_pad=(1, 0, 1)), (1, 3, 1, 3, 4, 4)))
    specs.append(("Conv2DGRUCell", dict(input_shape=(2, 5, 4), hidden_channels=2, i2h_kernel=3, h2h_kernel=3,
                                        activation="relu"), (2, 3, 2, 5, 4)))
    for name, kwargs, xshape in specs:
        cell = getattr(rnn, name)(**kwargs)
        key = f"cell_{name}" + ("_relu" if kwargs.get("activation") else "")
        cell.initialize()
        x = rand(rng, xshape)
        cell.unroll(3, mx.nd.array(x), merge_outputs=True)
        set_params(rng, cell, out, key)
        outputs, states = cell.unroll(3, mx.nd.array(x), layout="NTC", merge_outputs=True)
        out[f"{key}/x"] = x
        out[f"{key}/out"] = outputs.asnumpy()
        for i, s in enumerate(states):
            out[f"{key}/state{i}"] = s.asnumpy()
        out[f"{key}/kwargs"] = np.array(json.dumps(kwargs))


def main():
    rng = np.random.RandomState(20240611)
    mx.random.seed(7)
    out = {}
    dcn_op(rng, out)
    mdcn_ops(rng, out)
    blocks(rng, out)
    cells(rng, out)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "reference.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {len(out)} arrays to {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
