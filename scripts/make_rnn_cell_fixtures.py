"""Writes tests/fixtures/rnn/cells.json with MXNet 1.9.1: the recurrent
cells of ``gluon.rnn`` (and ``gluon.contrib.rnn``) unrolled over fixed
inputs, with their outputs, final states and gradients.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_rnn_cell_fixtures.py

Each cell is described by a small JSON "spec" (its class, constructor
arguments and, for stacks and modifiers, the cells inside) so the tests can
build the same cell in oxnet. Its parameters are set from seeded float32
arrays (stored by full parameter name). Each case unrolls the cell once:
length, layout (NTC/TNC), inputs as one tensor or a list of steps,
``merge_outputs`` (True/False/None), ``valid_length`` or not, and begin
states given or left to ``begin_state`` (zeros). The recorded gradients are
those of ``sum(outputs * head) + sum_i sum(states[i] * state_head[i])``
with respect to the inputs, the given begin states and every parameter.
All arrays are stored as flat lists with their shapes (float32 values:
read them back as float32); per-step lists (outputs or inputs) are
stored stacked along a new first (time) axis.
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "rnn"

BATCH = 3

# (name, spec); every cell takes inputs of width INPUT_SIZE
CELLS = [
    ("rnn_tanh", {"type": "RNNCell", "hidden_size": 4, "input_size": 3, "prefix": "rnn_"}),
    ("rnn_relu", {"type": "RNNCell", "hidden_size": 4, "input_size": 3, "activation": "relu", "prefix": "rnnr_"}),
    ("rnn_softrelu", {"type": "RNNCell", "hidden_size": 3, "input_size": 3, "activation": "softrelu",
                      "prefix": "rnns_"}),
    ("lstm", {"type": "LSTMCell", "hidden_size": 4, "input_size": 3, "prefix": "lstm_"}),
    ("lstm_softsign", {"type": "LSTMCell", "hidden_size": 3, "input_size": 3, "activation": "softsign",
                       "recurrent_activation": "sigmoid", "prefix": "lstms_"}),
    ("gru", {"type": "GRUCell", "hidden_size": 4, "input_size": 3, "prefix": "gru_"}),
    ("lstmp", {"type": "contrib.LSTMPCell", "hidden_size": 5, "projection_size": 3, "input_size": 3,
               "prefix": "lstmp_"}),
    ("hybrid_sequential", {"type": "HybridSequentialRNNCell", "prefix": "hseq_", "cells": [
        {"type": "LSTMCell", "hidden_size": 4, "input_size": 3, "prefix": "l0_"},
        {"type": "GRUCell", "hidden_size": 3, "input_size": 4, "prefix": "l1_"}]}),
    ("sequential", {"type": "SequentialRNNCell", "prefix": "seq_", "cells": [
        {"type": "RNNCell", "hidden_size": 4, "input_size": 3, "prefix": "l0_"},
        {"type": "DropoutCell", "rate": 0.0, "prefix": "drop_"},
        {"type": "LSTMCell", "hidden_size": 3, "input_size": 4, "prefix": "l1_"}]}),
    ("residual", {"type": "ResidualCell", "base": {"type": "GRUCell", "hidden_size": 3, "input_size": 3,
                                                   "prefix": "resgru_"}}),
    ("bidirectional", {"type": "BidirectionalCell",
                       "l_cell": {"type": "LSTMCell", "hidden_size": 4, "input_size": 3, "prefix": "bl_"},
                       "r_cell": {"type": "GRUCell", "hidden_size": 2, "input_size": 3, "prefix": "br_"}}),
    ("zoneout_zero", {"type": "ZoneoutCell", "zoneout_outputs": 0.0, "zoneout_states": 0.0,
                      "base": {"type": "LSTMCell", "hidden_size": 3, "input_size": 3, "prefix": "zlstm_"}}),
    ("vardrop_zero", {"type": "contrib.VariationalDropoutCell", "drop_inputs": 0.0, "drop_states": 0.0,
                      "drop_outputs": 0.0,
                      "base": {"type": "GRUCell", "hidden_size": 3, "input_size": 3, "prefix": "vgru_"}}),
]

INPUT_SIZE = 3

# (name, length, layout, inputs as "tensor"/"list", merge_outputs, valid_length or None, begin states given)
VARIANTS = [
    ("t3_ntc_merge", 3, "NTC", "tensor", True, None, False),
    ("t4_tnc_split_vl", 4, "TNC", "tensor", False, [2, 4, 1], True),
    ("t1_list_none", 1, "NTC", "list", None, None, True),
    ("t5_ntc_none_vl", 5, "NTC", "tensor", None, [5, 3, 2], False),
    ("t3_tnc_list_merge_vl", 3, "TNC", "list", True, [1, 3, 2], False),
    ("t2_ntc_split_states", 2, "NTC", "tensor", False, None, True),
    ("t1_tnc_merge_vl", 1, "TNC", "tensor", True, [1, 1, 1], True),
]


def build(spec):
    """The cell that ``spec`` describes (MXNet)."""
    kind = spec["type"]
    args = {k: v for k, v in spec.items() if k not in ("type", "cells", "base", "l_cell", "r_cell")}
    if kind.startswith("contrib."):
        cls = getattr(mx.gluon.contrib.rnn, kind[len("contrib."):])
    else:
        cls = getattr(mx.gluon.rnn, kind)
    if "cells" in spec:
        cell = cls(**args)
        with cell.name_scope():
            for child in spec["cells"]:
                cell.add(build(child))
        return cell
    if "base" in spec:
        return cls(build(spec["base"]), **args)
    if "l_cell" in spec:
        return cls(build(spec["l_cell"]), build(spec["r_cell"]), **args)
    return cls(**args)


def flat(a):
    """A float32 array as its shape and values; each value is written as the
    shortest decimal that reads back as the same float32."""
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(str(v)) for v in a.reshape(-1)]}


def case(cell_name, spec, variant, rng):
    name, length, layout, form, merge, valid_length, given_states = variant
    cell = build(spec)
    cell.initialize()
    params = {}
    for pname, p in sorted(cell.collect_params().items()):
        value = rng.uniform(-0.6, 0.6, p.shape).astype(np.float32)
        p.set_data(mx.nd.array(value))
        params[pname] = value
    shape = (BATCH, length, INPUT_SIZE) if layout == "NTC" else (length, BATCH, INPUT_SIZE)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    if form == "tensor":
        inputs = mx.nd.array(x)
        inputs.attach_grad()
        grad_leaves = [inputs]
    else:
        steps = [x[:, t] if layout == "NTC" else x[t] for t in range(length)]
        inputs = [mx.nd.array(s) for s in steps]
        for s in inputs:
            s.attach_grad()
        grad_leaves = inputs
    begin = None
    begin_values = None
    if given_states:
        begin_values = [rng.uniform(-1, 1, info["shape"]).astype(np.float32)
                        for info in cell.state_info(BATCH)]
        begin = [mx.nd.array(v) for v in begin_values]
        for b in begin:
            b.attach_grad()
    vl = None if valid_length is None else mx.nd.array(valid_length)
    with mx.autograd.record():
        outputs, states = cell.unroll(length, inputs, begin_state=begin, layout=layout, merge_outputs=merge,
                                      valid_length=vl)
        merged = isinstance(outputs, mx.nd.NDArray)
        out_value = outputs.asnumpy() if merged else np.stack([o.asnumpy() for o in outputs])
        head = rng.uniform(0.5, 1.5, out_value.shape).astype(np.float32)
        state_heads = [rng.uniform(0.5, 1.5, s.shape).astype(np.float32) for s in states]
        if merged:
            loss = (outputs * mx.nd.array(head)).sum()
        else:
            loss = sum((o * mx.nd.array(h)).sum() for o, h in zip(outputs, head))
        for s, h in zip(states, state_heads):
            loss = loss + (s * mx.nd.array(h)).sum()
    loss.backward()
    if form == "tensor":
        input_grad = grad_leaves[0].grad.asnumpy()
    else:
        input_grad = np.stack([s.grad.asnumpy() for s in grad_leaves])
    return {
        "name": f"{cell_name}/{name}", "cell": cell_name, "length": length, "layout": layout, "form": form,
        "merge_outputs": merge, "valid_length": valid_length,
        "inputs": flat(x),
        "begin_state": None if begin_values is None else [flat(v) for v in begin_values],
        "params": {k: flat(v) for k, v in params.items()},
        "outputs_merged": merged, "outputs": flat(out_value), "head": flat(head),
        "states": [flat(s.asnumpy()) for s in states], "state_heads": [flat(h) for h in state_heads],
        "input_grad": flat(input_grad),
        "begin_state_grad": None if begin is None else [flat(b.grad.asnumpy()) for b in begin],
        "param_grads": {k: flat(p.grad().asnumpy()) for k, p in sorted(cell.collect_params().items())},
    }


def main():
    rng = np.random.RandomState(20240611)
    cases = []
    skipped = []
    for cell_name, spec in CELLS:
        for variant in VARIANTS:
            if cell_name == "bidirectional" and variant[0] == "t5_ntc_none_vl":
                # MXNet 1.9.1 stacks the backward outputs twice for merge_outputs=None with
                # valid_length and layout NTC, and fails in concat; oxnet returns the merged
                # outputs (the tests check it against merge_outputs=True instead)
                skipped.append(f"{cell_name}/{variant[0]}")
                continue
            cases.append(case(cell_name, spec, variant, rng))
    OUT.mkdir(parents=True, exist_ok=True)
    fixture = {"mxnet": mx.__version__, "batch": BATCH, "input_size": INPUT_SIZE,
               "cells": {name: spec for name, spec in CELLS}, "skipped": skipped, "cases": cases}
    (OUT / "cells.json").write_text(json.dumps(fixture) + "\n")
    print(f"wrote {len(cases)} cases to {OUT / 'cells.json'}")


if __name__ == "__main__":
    main()
