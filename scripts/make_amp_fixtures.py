"""Writes tests/fixtures/amp/: graphs MXNet 1.9.1's ``amp.convert_symbol``
makes from small float32 networks (cast nodes, their places, parameter
dtypes), and a bfloat16 model saved with its amp_cast nodes, with MXNet's
outputs. Run under MXNet 1.9.1: ``.venv-mxnet/bin/python scripts/make_amp_fixtures.py``."""

import json
import os

import mxnet as mx
import numpy as np
from mxnet.contrib import amp

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "amp")


def net_cnn():
    """conv -> bn -> relu -> pool -> flatten -> fc1 -> softrelu; fc2 branch; add; fc3 -> softmax."""
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.Activation(x, act_type="relu", name="act")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    f = mx.sym.Flatten(x, name="flat")
    a = mx.sym.Activation(mx.sym.FullyConnected(f, num_hidden=8, name="fc1"), act_type="softrelu", name="act2")
    b = mx.sym.FullyConnected(f, num_hidden=8, name="fc2")
    s = mx.sym.elemwise_add(a, b, name="add")
    y = mx.sym.FullyConnected(s, num_hidden=4, name="fc3")
    return mx.sym.softmax(y, name="out")


def net_split():
    """split into two, fc on each, exp on one, broadcast_add, tanh."""
    data = mx.sym.var("data")
    parts = mx.sym.split(data, num_outputs=2, axis=1, name="split")
    a = mx.sym.FullyConnected(parts[0], num_hidden=3, name="fca")
    b = mx.sym.exp(parts[1], name="ex")
    b = mx.sym.FullyConnected(b, num_hidden=3, name="fcb")
    c = mx.sym.broadcast_add(a, b, name="badd")
    d = mx.sym.broadcast_mul(c, mx.sym.var("scale"), name="bmul")
    return mx.sym.Group([mx.sym.tanh(d, name="th"), mx.sym.relu(a, name="rl")])


def describe(sym):
    """The amp nodes (op, name, attrs, inputs as node name and output index)
    and every input's __dtype__."""
    graph = json.loads(sym.tojson(remove_amp_cast=False))
    nodes = graph["nodes"]
    amp_nodes = []
    consumers = {}
    for n in nodes:
        for e in n["inputs"]:
            src = nodes[e[0]]
            if src["op"] in ("amp_cast", "amp_multicast"):
                consumers.setdefault(src["name"], []).append([n["name"], e[1]])
    for n in nodes:
        if n["op"] in ("amp_cast", "amp_multicast"):
            amp_nodes.append({"op": n["op"], "name": n["name"], "attrs": n.get("attrs", {}),
                              "inputs": [[nodes[e[0]]["name"], e[1]] for e in n["inputs"]],
                              "consumers": sorted(consumers.get(n["name"], []))})
    heads = [[nodes[h[0]]["name"], h[1]] for h in graph["heads"]]
    dtypes = {n["name"]: n.get("attrs", {}).get("__dtype__") for n in nodes if n["op"] == "null"}
    return {"amp_nodes": amp_nodes, "heads": heads, "dtypes": dtypes}


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = {}
    nets = {"cnn": net_cnn(), "split": net_split()}
    for net_name, sym in nets.items():
        for target in ("float16", "bfloat16"):
            for optional in (False, True):
                conv = amp.convert_symbol(sym, target_dtype=target, cast_optional_params=optional,
                                          data_names=["data"])
                cases[f"{net_name}/{target}/optional={optional}"] = describe(conv)
        # default data_names (inputs without __dtype__), excluded names, own lists
        conv = amp.convert_symbol(sym, target_dtype="bfloat16")
        cases[f"{net_name}/bfloat16/default_data_names"] = describe(conv)
    conv = amp.convert_symbol(nets["cnn"], target_dtype="float16", excluded_sym_names=["fc2", "conv"],
                              data_names=["data"])
    cases["cnn/float16/excluded"] = describe(conv)
    conv = amp.convert_symbol(nets["cnn"], target_dtype="float16", target_dtype_ops=["FullyConnected"],
                              fp32_ops=["Convolution"], conditional_fp32_ops=[], data_names=["data"])
    cases["cnn/float16/own_lists"] = describe(conv)
    with open(os.path.join(OUT, "convert_symbol.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)

    # a bfloat16 model saved with its casts, with parameters and outputs
    sym = nets["cnn"]
    rng = np.random.RandomState(7)
    shapes, _, aux_shapes = sym.infer_shape(data=(2, 3, 8, 8))
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in zip(sym.list_arguments(), shapes)
            if n != "data"}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.0, s)) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    data = rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    exe = sym.bind(mx.cpu(), dict(args, data=mx.nd.array(data)), aux_states=dict(aux))
    fp32_out = exe.forward()[0].asnumpy()
    csym, cargs, caux = amp.convert_model(sym, dict(args), dict(aux), target_dtype="bfloat16")
    csym.save(os.path.join(OUT, "cnn_bf16-symbol.json"), remove_amp_cast=False)
    mx.nd.save(os.path.join(OUT, "cnn_bf16-0000.params"),
               dict([("arg:" + k, v.astype("float32")) for k, v in args.items()]
                    + [("aux:" + k, v) for k, v in aux.items()]))
    exe = csym.bind(mx.cpu(), dict(cargs, data=mx.nd.array(data)), aux_states=dict(caux))
    bf16_out = exe.forward()[0].asnumpy()
    np.savez(os.path.join(OUT, "cnn_bf16-io.npz"), data=data, fp32_out=fp32_out, bf16_out=bf16_out)
    print("wrote", OUT, "max |bf16 - fp32| =", np.abs(bf16_out - fp32_out).max())


if __name__ == "__main__":
    main()
