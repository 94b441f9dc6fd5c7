"""Writes tests/fixtures/control_flow/values.json with MXNet 1.9.1: what
``mx.nd.contrib.foreach``, ``while_loop`` and ``cond`` and
``gluon.contrib.rnn.rnn_cell.dynamic_unroll`` return, and the gradients
autograd takes through them.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_control_flow_fixtures.py

Every input is drawn from a seeded numpy generator and stored as a float32
list, so the test rebuilds exactly the same arrays. Each case backpropagates
``sum(head_k * result_k)`` over its results with stored heads. MXNet pads
while_loop's stacked outputs with uninitialised memory, so only the rows of
the steps that ran are stored (with the full shape).
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "control_flow"


def values(rng, shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


def leaves(nested):
    if isinstance(nested, mx.nd.NDArray):
        return [nested]
    return [leaf for item in nested for leaf in leaves(item)]


def backward(results, rng):
    """Backpropagates sum(head * result) over ``results``; returns the heads."""
    heads = [values(rng, r.shape) for r in results]
    mx.autograd.backward(results, head_grads=[mx.nd.array(h) for h in heads])
    return heads


def as_lists(arrays):
    return [a.asnumpy().tolist() for a in arrays]


def foreach_case(rng):
    """Two data arrays, nested states, nested outputs and a free weight."""
    inputs = {"x": values(rng, (4, 3)), "y": values(rng, (4, 2)), "h": values(rng, (3,)),
              "c": values(rng, (2,)), "w": values(rng, (3,))}
    arrays = {k: mx.nd.array(v) for k, v in inputs.items()}
    for a in arrays.values():
        a.attach_grad()
    w = arrays["w"]

    def body(data, states):
        x, y = data
        h, [c] = states
        new_h = mx.nd.tanh(x * w + h * 0.5) + y.sum()
        new_c = c * y + new_h.mean()
        return [new_h * 2, [new_c, x * h]], [new_h, [new_c]]

    with mx.autograd.record():
        outs, states = mx.nd.contrib.foreach(body, [arrays["x"], arrays["y"]],
                                             [arrays["h"], [arrays["c"]]])
        results = leaves(outs) + leaves(states)
    heads = backward(results, rng)
    return {"inputs": {k: v.tolist() for k, v in inputs.items()}, "heads": [h.tolist() for h in heads],
            "results": as_lists(results), "grads": {k: a.grad.asnumpy().tolist() for k, a in arrays.items()}}


def nested_foreach_case(rng):
    """A foreach whose body runs a foreach over each slice."""
    inputs = {"data": values(rng, (2, 3, 2)), "state": values(rng, (2,))}
    arrays = {k: mx.nd.array(v) for k, v in inputs.items()}
    for a in arrays.values():
        a.attach_grad()

    def inner(x, states):
        out = x * 2 + mx.nd.sin(states[0])
        return out, [out]

    def outer(x, states):
        out, _ = mx.nd.contrib.foreach(inner, x, states)
        out = mx.nd.broadcast_add(out, states[0])
        return out, [out[1] * 0.5]

    with mx.autograd.record():
        out, states = mx.nd.contrib.foreach(outer, arrays["data"], [arrays["state"]])
        results = [out, states[0]]
    heads = backward(results, rng)
    return {"inputs": {k: v.tolist() for k, v in inputs.items()}, "heads": [h.tolist() for h in heads],
            "results": as_lists(results), "grads": {k: a.grad.asnumpy().tolist() for k, a in arrays.items()}}


def while_case(rng, limit, max_iterations):
    """i counts up while i < limit; s accumulates s * w + i; outputs
    [s, [s * i]]."""
    inputs = {"s": values(rng, (2,)), "w": values(rng, (2,))}
    arrays = {k: mx.nd.array(v) for k, v in inputs.items()}
    for a in arrays.values():
        a.attach_grad()
    w = arrays["w"]

    def func(i, s):
        new_s = mx.nd.sin(s * w) + i
        return [new_s, [new_s * i]], [i + 1, new_s]

    with mx.autograd.record():
        outs, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i < limit, func,
                                                [mx.nd.array([0]), arrays["s"]],
                                                max_iterations=max_iterations)
        steps = int(i.asscalar())
        flat = leaves(outs)
        shapes = [list(o.shape) for o in flat]
        results = [o[:steps] for o in flat] + [s] if steps else [s * 1]
    heads = backward(results, rng)
    return {"limit": limit, "max_iterations": max_iterations, "steps": steps, "shapes": shapes,
            "inputs": {k: v.tolist() for k, v in inputs.items()}, "heads": [h.tolist() for h in heads],
            "results": as_lists(results), "grads": {k: a.grad.asnumpy().tolist() for k, a in arrays.items()}}


def cond_case(rng, pred):
    inputs = {"a": values(rng, (3,)), "b": values(rng, (3,))}
    arrays = {k: mx.nd.array(v) for k, v in inputs.items()}
    for arr in arrays.values():
        arr.attach_grad()
    a, b = arrays["a"], arrays["b"]
    with mx.autograd.record():
        out = mx.nd.contrib.cond(mx.nd.array([pred]), lambda: [a * b, mx.nd.exp(a)],
                                 lambda: [a - mx.nd.square(b), b * 3])
        results = leaves(out)
    heads = backward(results, rng)
    return {"pred": pred, "inputs": {k: v.tolist() for k, v in inputs.items()},
            "heads": [h.tolist() for h in heads], "results": as_lists(results),
            "grads": {k: arr.grad.asnumpy().tolist() for k, arr in arrays.items()}}


def unroll_case(rng, cell_name, layout, valid_length):
    from mxnet.gluon.contrib.rnn.rnn_cell import dynamic_unroll
    seq, batch, size, hidden = 3, 2, 3, 4
    cell = getattr(mx.gluon.rnn, cell_name)(hidden, input_size=size, prefix="rnn_")
    cell.initialize()
    weights = {}
    for name, param in cell.collect_params().items():
        data = values(rng, param.shape, -0.5, 0.5)
        param.set_data(mx.nd.array(data))
        weights[name[len("rnn_"):]] = data.tolist()
    shape = (seq, batch, size) if layout == "TNC" else (batch, seq, size)
    inputs = values(rng, shape)
    begin = [values(rng, (batch, hidden)) for _ in cell.state_info()]
    x = mx.nd.array(inputs)
    x.attach_grad()
    length = None if valid_length is None else mx.nd.array(valid_length)
    with mx.autograd.record():
        outputs, states = dynamic_unroll(cell, x, [mx.nd.array(s) for s in begin], layout=layout,
                                         valid_length=length)
        results = [outputs] + list(states)
    heads = backward(results, rng)
    return {"cell": cell_name, "layout": layout, "valid_length": valid_length, "hidden": hidden,
            "weights": weights, "inputs": inputs.tolist(), "begin": [s.tolist() for s in begin],
            "heads": [h.tolist() for h in heads], "results": as_lists(results),
            "grad_inputs": x.grad.asnumpy().tolist(),
            "grad_i2h_weight": cell.i2h_weight.grad().asnumpy().tolist()}


def foreach_model_case(rng):
    """A hybridized block with a foreach loop, exported by MXNet
    (foreach_model-symbol.json, foreach_model-0000.params) with its
    inputs and outputs."""
    from mxnet import gluon

    class Recurrence(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.w = self.params.get("w", shape=(3,))

        def hybrid_forward(self, F, x, h, w):
            def step(xt, states):
                nh = F.tanh(F.broadcast_mul(xt, w) + states[0])
                return nh * 2, [nh]
            out, states = F.contrib.foreach(step, x, [h])
            return out, states[0]

    net = Recurrence(prefix="rec_")
    net.initialize()
    net.w.set_data(mx.nd.array(values(rng, (3,))))
    net.hybridize()
    x, h = values(rng, (4, 2, 3)), values(rng, (2, 3))
    out, last = net(mx.nd.array(x), mx.nd.array(h))
    net.export(str(OUT / "foreach_model"))
    return {"x": x.tolist(), "h": h.tolist(), "out": out.asnumpy().tolist(), "last": last.asnumpy().tolist()}


def branch_loop_model_case(rng):
    """A hybridized block with a while_loop and a cond whose bodies read an
    earlier layer's output, exported by MXNet (branch_loop_model-symbol.json,
    branch_loop_model-0000.params) with its inputs and outputs. The loop
    stops after 3 of at most 5 steps; MXNet leaves the padding rows
    uninitialised, so only the first 3 rows are stored."""
    from mxnet import gluon

    class BranchLoop(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.dense = gluon.nn.Dense(3, in_units=4)
                self.w = self.params.get("w", shape=(3,))

        def hybrid_forward(self, F, x, i, s, w):
            y = self.dense(x)

            def step(i, s):
                new = F.tanh(F.broadcast_mul(s, w) + y)
                return new * 2, [i + 1, new]
            outs, (i, s) = F.contrib.while_loop(lambda i, s: i < 3, step, [i, s], max_iterations=5)
            picked = F.contrib.cond(s.sum() > 0, lambda: s * 2 + y, lambda: s - y)
            return outs, s, picked

    net = BranchLoop(prefix="bl_")
    net.initialize()
    net.dense.weight.set_data(mx.nd.array(values(rng, (3, 4))))
    net.dense.bias.set_data(mx.nd.array(values(rng, (3,))))
    net.w.set_data(mx.nd.array(values(rng, (3,))))
    net.hybridize()
    x, s = values(rng, (2, 4)), values(rng, (2, 3))
    outs, last, picked = net(mx.nd.array(x), mx.nd.array([0.0]), mx.nd.array(s))
    net.export(str(OUT / "branch_loop_model"))
    return {"x": x.tolist(), "s": s.tolist(), "outs": outs.asnumpy()[:3].tolist(),
            "last": last.asnumpy().tolist(), "picked": picked.asnumpy().tolist()}


def main():
    rng = np.random.default_rng(20240611)
    fixtures = {
        "foreach": foreach_case(rng),
        "nested_foreach": nested_foreach_case(rng),
        "while_loop": [while_case(rng, 3, 5), while_case(rng, 4, 4), while_case(rng, 0, 3)],
        "cond": [cond_case(rng, 1.0), cond_case(rng, 0.0)],
        "dynamic_unroll": [unroll_case(rng, "LSTMCell", "TNC", None),
                           unroll_case(rng, "LSTMCell", "NTC", [2.0, 3.0]),
                           unroll_case(rng, "GRUCell", "TNC", [3.0, 1.0])],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    fixtures["foreach_model"] = foreach_model_case(rng)
    fixtures["branch_loop_model"] = branch_loop_model_case(rng)
    with open(OUT / "values.json", "w") as f:
        json.dump(fixtures, f)
    print("wrote", OUT / "values.json")


if __name__ == "__main__":
    main()
