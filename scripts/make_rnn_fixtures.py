"""Writes tests/fixtures/rnn/fused.json (and MXNet-exported recurrent layers
next to it) with MXNet 1.9.1: the fused ``RNN`` operator and the
``gluon.rnn`` layers built on it.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_rnn_fixtures.py

Contents of fused.json:

``op_cases``
    ``mx.nd.RNN`` on the CPU for each mode (rnn_relu, rnn_tanh, lstm, gru)
    and each (num_layers, bidirectional) of (1, False), (2, False),
    (2, True), with seeded data (T=4, N=3, I=5), state size 4, a seeded
    parameter vector and seeded initial states, ``state_outputs=True``;
    plus one float64 case. Recorded: the outputs and final states, and the
    gradients of ``sum(out*h0) + sum(hy*h1) [+ sum(cy*h2)]`` (seeded heads)
    with respect to data, parameters, state and state_cell.
``symbols``
    ``list_arguments``/``list_outputs`` of named ``mx.sym.RNN`` symbols
    (with explicit variables and with auto-named ones) and the shapes
    ``infer_shape`` gives from the data's shape alone.
``layers``
    A ``gluon.rnn.LSTM`` (2 layers, bidirectional, hidden 6, input 5, NTC,
    called with explicit begin states) and a ``gluon.rnn.GRU`` (2 layers,
    unidirectional, hidden 5, input 5, NTC, called without states): each
    is initialized with a fixed seed, trained for a few SGD steps on seeded
    data, hybridized, run once and exported to tests/fixtures/rnn/mxnet_<name>
    (-symbol.json, -0000.params) and saved with ``save_parameters`` to
    tests/fixtures/rnn/mxnet_<name>.params. Recorded: the input (and begin
    states), MXNet's outputs (and final states), the exported graph's input
    names and the parameter names.
``param_names``
    ``collect_params().keys()`` of a few layers built with a fixed prefix.

Arrays are stored as flat lists with their shape and dtype; float32 values
are written as the shortest decimal that reads back as the same float32,
float64 values exactly.
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "rnn"

T, N, I, H = 4, 3, 5, 4
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def flat(a, dtype=np.float32):
    a = np.asarray(a, dtype=dtype)
    if dtype == np.float32:
        data = [float(str(v)) for v in a.reshape(-1)]
    else:
        data = [float(v) for v in a.reshape(-1)]
    return {"shape": list(a.shape), "dtype": np.dtype(dtype).name, "data": data}


def param_len(mode, layers, dirs, inp, hidden):
    g = GATES[mode] * hidden
    total = 0
    ni = inp
    for _ in range(layers):
        total += dirs * (g * ni + g * hidden + 2 * g)
        ni = hidden * dirs
    return total


def op_case(mode, layers, bidirectional, dtype, rng):
    dirs = 2 if bidirectional else 1
    plen = param_len(mode, layers, dirs, I, H)
    x = rng.uniform(-1, 1, (T, N, I)).astype(dtype)
    params = rng.uniform(-0.5, 0.5, (plen,)).astype(dtype)
    h0 = rng.uniform(-1, 1, (layers * dirs, N, H)).astype(dtype)
    c0 = rng.uniform(-1, 1, (layers * dirs, N, H)).astype(dtype) if mode == "lstm" else None
    ins = [mx.nd.array(x, dtype=dtype), mx.nd.array(params, dtype=dtype), mx.nd.array(h0, dtype=dtype)]
    if c0 is not None:
        ins.append(mx.nd.array(c0, dtype=dtype))
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        res = mx.nd.RNN(*ins, state_size=H, num_layers=layers, bidirectional=bidirectional, mode=mode,
                        state_outputs=True)
        heads = [rng.uniform(0.5, 1.5, r.shape).astype(dtype) for r in res]
        loss = None
        for r, h in zip(res, heads):
            term = (r * mx.nd.array(h, dtype=dtype)).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    names = ["data", "parameters", "state", "state_cell"][:len(ins)]
    return {
        "name": f"{mode}_l{layers}_{'bi' if bidirectional else 'uni'}_{np.dtype(dtype).name}",
        "mode": mode, "num_layers": layers, "bidirectional": bidirectional, "state_size": H,
        "dtype": np.dtype(dtype).name, "param_len": plen,
        "inputs": {n: flat(v, dtype) for n, v in zip(names, [x, params, h0, c0])},
        "outputs": [flat(r.asnumpy(), dtype) for r in res],
        "heads": [flat(h, dtype) for h in heads],
        "grads": {n: flat(a.grad.asnumpy(), dtype) for n, a in zip(names, ins)},
    }


def symbols():
    out = []
    configs = [dict(state_size=H, num_layers=layers, bidirectional=bidi, mode=mode, state_outputs=state_outputs)
               for mode in ["lstm", "gru", "rnn_tanh"]
               for state_outputs in [True, False]
               for layers, bidi in [(1, False), (2, True)]]
    # symbolic only in MXNet 1.9.1's CPU build (its CPU kernels refuse them)
    configs += [dict(state_size=H, num_layers=2, bidirectional=True, mode="lstm", state_outputs=True,
                     projection_size=2, use_sequence_length=True),
                dict(state_size=H, num_layers=2, bidirectional=False, mode="gru", state_outputs=True,
                     use_sequence_length=True),
                dict(state_size=H, num_layers=1, bidirectional=False, mode="lstm", state_outputs=False,
                     projection_size=3)]
    for kw in configs:
        mode = kw["mode"]
        names = ["data", "parameters", "state"]
        if mode == "lstm":
            names.append("state_cell")
        if kw.get("use_sequence_length"):
            names.append("sequence_length")
        explicit = mx.sym.RNN(name="rnn0", **{n: mx.sym.var(n) for n in names}, **kw)
        auto = mx.sym.RNN(name="rnn1", **kw)
        args, outs, aux = auto.infer_shape(rnn1_data=(T, N, I))
        out.append({
            "kwargs": kw,
            "explicit": {"arguments": explicit.list_arguments(), "outputs": explicit.list_outputs()},
            "auto": {"arguments": auto.list_arguments(), "outputs": auto.list_outputs(),
                     "arg_shapes": [list(s) for s in args], "out_shapes": [list(s) for s in outs]},
        })
    return out


def train_and_export(name, layer, with_states, rng):
    mx.random.seed(7)
    layer.initialize(mx.init.Xavier())
    # a deterministic start: overwrite the random initialization with seeded values
    for _, p in sorted(layer.collect_params().items()):
        p.set_data(mx.nd.array(rng.uniform(-0.4, 0.4, p.shape).astype(np.float32)))
    trainer = mx.gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.1})
    batch, steps = 2, 3
    for _ in range(3):
        x = mx.nd.array(rng.uniform(-1, 1, (batch, steps, 5)).astype(np.float32))
        with mx.autograd.record():
            out = layer(x)
            loss = ((out - 0.3) ** 2).mean()
        loss.backward()
        trainer.step(batch)
    layer.hybridize()
    x = rng.uniform(-1, 1, (batch, steps, 5)).astype(np.float32)
    rec = {"name": name, "input": flat(x)}
    if with_states:
        states = [rng.uniform(-1, 1, info["shape"]).astype(np.float32) for info in layer.state_info(batch)]
        out, new_states = layer(mx.nd.array(x), [mx.nd.array(s) for s in states])
        rec["begin_state"] = [flat(s) for s in states]
        rec["states"] = [flat(s.asnumpy()) for s in new_states]
    else:
        out = layer(mx.nd.array(x))
    rec["output"] = flat(out.asnumpy())
    prefix = OUT / f"mxnet_{name}"
    layer.export(str(prefix))
    layer.save_parameters(str(OUT / f"mxnet_{name}.params"))
    sym = mx.sym.load(str(prefix) + "-symbol.json")
    rec["symbol_inputs"] = sym.list_inputs()
    rec["symbol_outputs"] = sym.list_outputs()
    rec["param_names"] = sorted(layer.collect_params().keys())
    rec["saved_keys"] = sorted(mx.nd.load(str(OUT / f"mxnet_{name}.params")).keys())
    rec["exported_keys"] = sorted(mx.nd.load(str(prefix) + "-0000.params").keys())
    return rec


def layers(rng):
    lstm = mx.gluon.rnn.LSTM(6, num_layers=2, layout="NTC", bidirectional=True, input_size=5, prefix="lstm0_")
    gru = mx.gluon.rnn.GRU(5, num_layers=2, layout="NTC", input_size=5, prefix="gru0_")
    lstm_rec = train_and_export("lstm", lstm, True, rng)
    lstm_rec["config"] = {"type": "LSTM", "hidden_size": 6, "num_layers": 2, "layout": "NTC",
                          "bidirectional": True, "input_size": 5, "prefix": "lstm0_"}
    gru_rec = train_and_export("gru", gru, False, rng)
    gru_rec["config"] = {"type": "GRU", "hidden_size": 5, "num_layers": 2, "layout": "NTC",
                         "bidirectional": False, "input_size": 5, "prefix": "gru0_"}
    return [lstm_rec, gru_rec]


def param_names():
    configs = [
        {"type": "LSTM", "hidden_size": 4, "num_layers": 2, "bidirectional": True, "prefix": "lstm9_"},
        {"type": "LSTM", "hidden_size": 4, "num_layers": 1, "projection_size": 3, "prefix": "lstmp_"},
        {"type": "LSTM", "hidden_size": 4, "num_layers": 2, "bidirectional": True, "projection_size": 3,
         "prefix": "lstmpb_"},
        {"type": "GRU", "hidden_size": 4, "num_layers": 3, "prefix": "gru9_"},
        {"type": "RNN", "hidden_size": 4, "num_layers": 1, "activation": "tanh", "bidirectional": True,
         "prefix": "rnn9_"},
    ]
    out = []
    for cfg in configs:
        kw = {k: v for k, v in cfg.items() if k != "type"}
        layer = getattr(mx.gluon.rnn, cfg["type"])(**kw)
        params = layer.collect_params()
        out.append({"config": cfg, "keys": list(params.keys()),
                    "shapes": {k: list(p.shape) for k, p in params.items()},
                    "state_info": [{"shape": list(s["shape"]), "__layout__": s["__layout__"]}
                                   for s in layer.state_info(3)],
                    "repr": repr(layer)})
    return out


def main():
    rng = np.random.RandomState(20240612)
    cases = []
    for mode in ["rnn_relu", "rnn_tanh", "lstm", "gru"]:
        for layers_, bidi in [(1, False), (2, False), (2, True)]:
            cases.append(op_case(mode, layers_, bidi, np.float32, rng))
    cases.append(op_case("lstm", 2, True, np.float64, rng))
    OUT.mkdir(parents=True, exist_ok=True)
    fixture = {"mxnet": mx.__version__, "T": T, "N": N, "I": I, "H": H, "op_cases": cases,
               "symbols": symbols(), "layers": layers(rng), "param_names": param_names()}
    (OUT / "fused.json").write_text(json.dumps(fixture) + "\n")
    print(f"wrote {len(cases)} operator cases to {OUT / 'fused.json'}")


if __name__ == "__main__":
    main()
