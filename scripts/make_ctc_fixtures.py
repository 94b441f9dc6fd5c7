"""Writes tests/fixtures/ctc/expected.json with MXNet 1.9.1: CTC losses and
their gradients with respect to the activations.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_ctc_fixtures.py

Each case gives the inputs (float32 activations of shape (T, N, C), padded
labels, optional lengths), the attributes, the head gradient used (one
weight per example), MXNet's ``ctc_loss`` output and the gradient of
``sum(head * loss)`` with respect to the activations; and one run of
``gluon.loss.CTCLoss`` (hybridized, layout NTC, lengths, weights) with the
gradient of the sum of its output.
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ctc"


def case(name, rng, t, n, c, labels, blank_label, data_lengths=None, label_lengths=None):
    # MXNet's ctc_loss runs in float32 only: the values are float32 (exact in JSON)
    data = rng.uniform(-2, 2, (t, n, c)).astype(np.float32)
    head = rng.uniform(0.5, 1.5, (n,)).astype(np.float32)
    x = mx.nd.array(data, dtype="float32")
    x.attach_grad()
    inputs = [x, mx.nd.array(labels, dtype="float32")]
    attrs = {"blank_label": blank_label}
    if data_lengths is not None:
        inputs.append(mx.nd.array(data_lengths, dtype="float32"))
        attrs["use_data_lengths"] = True
    if label_lengths is not None:
        inputs.append(mx.nd.array(label_lengths, dtype="float32"))
        attrs["use_label_lengths"] = True
    with mx.autograd.record():
        loss = mx.nd.ctc_loss(*inputs, **attrs)
    loss.backward(mx.nd.array(head, dtype="float32"))
    return {
        "name": name,
        "shape": [t, n, c],
        "data": data.reshape(-1).tolist(),
        "label": np.asarray(labels, dtype=np.float64).tolist(),
        "data_lengths": data_lengths,
        "label_lengths": label_lengths,
        "blank_label": blank_label,
        "head": head.tolist(),
        "loss": loss.asnumpy().tolist(),
        "grad": x.grad.asnumpy().reshape(-1).tolist(),
    }


def gluon_case(rng):
    """``gluon.loss.CTCLoss`` (layout NTC, blank last) with lengths and a
    sample weight, hybridized."""
    n, t, c = 3, 6, 5
    pred = rng.uniform(-2, 2, (n, t, c)).astype(np.float32)
    label = np.array([[0, 1, 1], [3, 2, -1], [2, -1, -1]], dtype=np.float32)
    pred_lengths = [6, 5, 4]
    label_lengths = [3, 2, 1]
    sample_weight = rng.uniform(0.5, 1.5, (n,)).astype(np.float32)
    loss_fn = mx.gluon.loss.CTCLoss(weight=0.5)
    loss_fn.hybridize()
    x = mx.nd.array(pred)
    x.attach_grad()
    with mx.autograd.record():
        loss = loss_fn(x, mx.nd.array(label), mx.nd.array(pred_lengths), mx.nd.array(label_lengths),
                       mx.nd.array(sample_weight))
    loss.backward()
    return {
        "pred": pred.reshape(-1).tolist(), "shape": [n, t, c], "label": label.tolist(),
        "pred_lengths": pred_lengths, "label_lengths": label_lengths,
        "sample_weight": sample_weight.tolist(), "weight": 0.5,
        "loss": loss.asnumpy().tolist(), "grad": x.grad.asnumpy().reshape(-1).tolist(),
    }


def main():
    rng = np.random.RandomState(7)
    cases = [
        # the docstring's example: 'ba', 'cbb', 'abac' over {a, b, c}
        case("first_padded", rng, 9, 3, 4, [[2, 1, 0, 0], [3, 2, 2, 0], [1, 2, 1, 3]], "first"),
        case("last_padded", rng, 9, 3, 4, [[1, 0, -1, -1], [2, 1, 1, -1], [0, 1, 0, 2]], "last"),
        case("lengths", rng, 7, 2, 5, [[1, 2, 2], [3, 4, 1]], "first",
             data_lengths=[7, 5], label_lengths=[3, 2]),
        case("single_class", rng, 4, 2, 2, [[1, 1], [1, 0]], "first"),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    fixture = {"mxnet": mx.__version__, "cases": cases, "gluon": gluon_case(rng)}
    (OUT / "expected.json").write_text(json.dumps(fixture) + "\n")


if __name__ == "__main__":
    main()
