#!/usr/bin/env python3
"""Writes Symbol/graph compatibility fixtures with the real MXNet 1.9.1.

oxnet's Symbol layer must read the symbol JSON that MXNet writes and compute
the same outputs and gradients. This script builds a few small graphs with
MXNet 1.9.1 itself and writes, for each case NAME, into tests/fixtures/graph/:

    NAME-symbol.json  the graph exactly as MXNet writes it (`sym.save`); for
                      the `legacy` case a hand-written JSON in the old
                      (MXNet 0.8, pre-NNVM) format, which MXNet 1.9.1 loads
    NAME.npz          float32 arrays:
                        arg:<name>   every argument (random, fixed seed)
                        aux:<name>   every auxiliary state (none so far)
                        head:<i>     the gradient fed to output i (random)
                        out:<i>      output i of forward(is_train=True)
                        grad:<name>  the gradient of every argument after
                                     backward(out_grads=[head:0, head:1, ...])

The executor comes from `simple_bind(ctx=mx.cpu(), grad_req='write', ...)`.
Only operators whose outputs do not depend on train mode are used, so the
`out:<i>` arrays are also the inference outputs. The .npz files are written
with a fixed timestamp, so running the script again rewrites identical bytes
(given the same MXNet build and CPU).

Usage (from the repository root; needs mxnet==1.9.1 and numpy<1.24):

    python3 -m venv .venv-mxnet
    .venv-mxnet/bin/pip install "mxnet==1.9.1" "numpy<1.24"
    .venv-mxnet/bin/python scripts/make_graph_fixtures.py [--out DIR]
"""

import argparse
import io
import os
import pathlib
import sys
import zipfile

import numpy as np

# bind the graph exactly as written: no MKLDNN operator fusion (it gives the
# same bits here, but the reference should not depend on it)
os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
try:
    import mxnet as mx
except ImportError:
    sys.exit("mxnet is not importable; run this script with .venv-mxnet/bin/python (see its docstring)")

MXNET_VERSION = "1.9.1"
ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "graph"


# --------------------------------------------------------------------------
# the cases: each returns (symbol, {argument: shape}, {argument: (low, high)})
# arguments not named in the third dict are drawn from uniform(-1, 1)
# --------------------------------------------------------------------------

def case_mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    out = mx.sym.softmax(fc2)
    return out, {"data": (4, 10)}, {}


def case_elemwise():
    a = mx.sym.var("a")
    b = mx.sym.var("b")
    c = mx.sym.var("c")
    t = a * b + mx.sym.exp(a) - b / 2.0                  # elemwise_mul/add/sub, exp, _div_scalar
    u = mx.sym.broadcast_add(t, c)                       # (3,4) + (1,4)
    v = mx.sym.sqrt(mx.sym.square(u) + 1.0)              # square, _plus_scalar, sqrt
    w = mx.sym.log(v) * 3.0 - 1.0 / (mx.sym.relu(a) + 1.0)  # log, _mul_scalar, relu, _rdiv_scalar
    x = mx.sym.clip(2.0 - w, -1.5, 1.5) / b              # _rminus_scalar, clip, elemwise_div
    z = mx.sym.broadcast_div(mx.sym.broadcast_mul(x, c), mx.sym.exp(c))
    out = z.sum(axis=1) + z.max(axis=1) * 0.5 - z.mean(axis=1) - 1  # sum/max/mean, _minus_scalar
    return out, {"a": (3, 4), "b": (3, 4), "c": (1, 4)}, {"b": (0.5, 2.0)}


def case_shapes():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    z = mx.sym.var("z")
    weight = mx.sym.var("weight")
    r = mx.sym.reshape(x, shape=(6, 4))                  # (6,4)
    t = mx.sym.transpose(r)                              # (4,6)
    cat = mx.sym.concat(t, y, dim=0)                     # (6,6)
    s = mx.sym.slice_axis(cat, axis=1, begin=1, end=5)   # (6,4)
    e = mx.sym.expand_dims(s, axis=0)                    # (1,6,4)
    f = mx.sym.flatten(e)                                # (1,24)
    d = mx.sym.dot(f, weight, transpose_b=True)          # (1,24) x (5,24)^T -> (1,5)
    p = mx.sym.transpose(x, axes=(2, 0, 1))              # (4,2,3)
    bd = mx.sym.batch_dot(p, z)                          # (4,2,3) x (4,3,2) -> (4,2,2)
    g = mx.sym.reshape(mx.sym.Activation(bd, act_type="softrelu"), shape=(1, -1))  # (1,16)
    h = mx.sym.LeakyReLU(mx.sym.concat(d, g, dim=1), act_type="leaky", slope=0.1)  # (1,21)
    out = mx.sym.log_softmax(h, axis=-1)
    return out, {"x": (2, 3, 4), "y": (2, 6), "z": (4, 3, 2), "weight": (5, 24)}, {}


def case_group():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    out = mx.sym.Group([mx.sym.tanh(x), mx.sym.sigmoid(x) * y])
    return out, {"x": (3, 5), "y": (3, 5)}, {}


# The old format, as MXNet 0.8 (before NNVM) wrote it; compare MXNet's own
# tests/python/unittest/save_000800.json. Per node: "op", "param" (the full
# operator parameter dict, also for variables, where it is empty), "name",
# "inputs" as [node, output] pairs, "backward_source_id": -1, and "attr"
# (user attributes such as ctx_group/lr_mult; absent when there are none).
# No "node_row_ptr" and no top-level "attrs" (hence no mxnet_version, which
# MXNet reads as 0.8.0 and upgrades: ctx_group -> __ctx_group__ and the like,
# weight_lr_mult on fc1 -> __lr_mult__ on fc1_weight). Written byte for byte
# in the old writer's style: two-space indent, ", " + newline between items.
LEGACY_JSON = """{
  "nodes": [
    {
      "op": "null", 
      "param": {}, 
      "name": "data", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "lr_mult": "0.2"
      }
    }, 
    {
      "op": "Flatten", 
      "param": {}, 
      "name": "flatten0", 
      "inputs": [[0, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage1"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc1_weight", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc1_bias", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "FullyConnected", 
      "param": {
        "no_bias": "False", 
        "num_hidden": "8"
      }, 
      "name": "fc1", 
      "inputs": [[1, 0], [2, 0], [3, 0]], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "Activation", 
      "param": {"act_type": "tanh"}, 
      "name": "tanh1", 
      "inputs": [[4, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage1"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc2_weight", 
      "inputs": [], 
      "backward_source_id": -1
    }, 
    {
      "op": "FullyConnected", 
      "param": {
        "no_bias": "True", 
        "num_hidden": "4"
      }, 
      "name": "fc2", 
      "inputs": [[5, 0], [6, 0]], 
      "backward_source_id": -1
    }, 
    {
      "op": "LeakyReLU", 
      "param": {
        "act_type": "leaky", 
        "lower_bound": "0.125", 
        "slope": "0.1", 
        "upper_bound": "0.334"
      }, 
      "name": "leaky1", 
      "inputs": [[7, 0]], 
      "backward_source_id": -1
    }, 
    {
      "op": "Activation", 
      "param": {"act_type": "sigmoid"}, 
      "name": "sigmoid1", 
      "inputs": [[5, 0]], 
      "backward_source_id": -1
    }, 
    {
      "op": "Concat", 
      "param": {
        "dim": "1", 
        "num_args": "2"
      }, 
      "name": "concat1", 
      "inputs": [[8, 0], [9, 0]], 
      "backward_source_id": -1
    }
  ], 
  "arg_nodes": [0, 2, 3, 6], 
  "heads": [[10, 0]]
}"""

LEGACY_SHAPES = {"data": (2, 3, 4)}

CASES = [
    ("mlp", case_mlp, 1),
    ("elemwise", case_elemwise, 2),
    ("shapes", case_shapes, 3),
    ("group", case_group, 4),
    ("legacy", None, 5),
]


# --------------------------------------------------------------------------

def write_npz(path, arrays):
    """np.savez_compressed, but with a fixed timestamp so reruns are byte-identical."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    data = buf.getvalue()
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def write_text(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def run_case(sym, shapes, ranges, seed):
    """Binds sym, runs forward(is_train=True) + backward; returns the npz dict."""
    rng = np.random.RandomState(seed)
    exe = sym.simple_bind(ctx=mx.cpu(), grad_req="write", **shapes)
    arrays = {}
    for name in sym.list_arguments():
        low, high = ranges.get(name, (-1.0, 1.0))
        value = rng.uniform(low, high, size=exe.arg_dict[name].shape).astype(np.float32)
        exe.arg_dict[name][:] = value
        arrays["arg:" + name] = value
    for name in sym.list_auxiliary_states():
        value = rng.uniform(-1.0, 1.0, size=exe.aux_dict[name].shape).astype(np.float32)
        exe.aux_dict[name][:] = value
        arrays["aux:" + name] = value
    outputs = exe.forward(is_train=True)
    heads = []
    for i, out in enumerate(outputs):
        head = rng.uniform(-1.0, 1.0, size=out.shape).astype(np.float32)
        heads.append(mx.nd.array(head, dtype=np.float32))
        arrays["head:%d" % i] = head
    for i, out in enumerate(outputs):
        arrays["out:%d" % i] = out.asnumpy()
    exe.backward(out_grads=heads)
    for name in sym.list_arguments():
        arrays["grad:" + name] = exe.grad_dict[name].asnumpy()
    # the train pass and an inference pass must agree (no train-mode ops)
    for i, out in enumerate(exe.forward(is_train=False)):
        np.testing.assert_array_equal(out.asnumpy(), arrays["out:%d" % i])
    for key, value in arrays.items():
        assert np.all(np.isfinite(value)), key
        assert value.dtype == np.float32, key
    return arrays


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if mx.__version__ != MXNET_VERSION:
        sys.exit(f"need mxnet=={MXNET_VERSION}, found {mx.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)

    for name, build, seed in CASES:
        json_path = args.out / f"{name}-symbol.json"
        if build is None:                      # legacy: the JSON is given, MXNet loads it
            write_text(json_path, LEGACY_JSON)  # no final newline, like MXNet's writer
            sym = mx.sym.load(str(json_path))
            # MXNet saw no mxnet_version, took it for 0.8.0 and upgraded it
            attrs = sym.attr_dict()
            assert attrs["fc1_weight"]["__lr_mult__"] == "1.2", attrs
            assert attrs["data"]["__ctx_group__"] == "stage1", attrs
            shapes, ranges = LEGACY_SHAPES, {}
        else:
            with mx.name.NameManager():        # fresh counters: activation0, softmax0, ...
                sym, shapes, ranges = build()
            tmp = json_path.with_suffix(".json.tmp")
            sym.save(str(tmp))
            text = tmp.read_text()
            tmp.unlink()
            write_text(json_path, text)
            # what MXNet wrote loads back to the same graph
            assert mx.sym.load(str(json_path)).tojson() == sym.tojson(), name
        arrays = run_case(sym, shapes, ranges, seed)
        npz_path = args.out / f"{name}.npz"
        write_npz(npz_path, arrays)
        outs = [arrays["out:%d" % i].shape for i in range(len(sym.list_outputs()))]
        print(f"{name}: args={sym.list_arguments()} aux={sym.list_auxiliary_states()} "
              f"outputs={sym.list_outputs()} shapes={outs} "
              f"({npz_path.stat().st_size} bytes npz)")


if __name__ == "__main__":
    main()
