"""Writes the parameter-file fixtures in tests/fixtures/params/ with MXNet 1.9.1.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_params_fixtures.py

It writes, all small and deterministic:

- ``mlp.params``: ``HybridSequential.save_parameters`` of two Dense layers
  (named list, float32, keys ``0.weight``, ``0.bias``, ...);
- ``dtypes.params``: ``mx.nd.save`` of an unnamed list, one array per dtype
  (float32, float64, float16, int32, int64, uint8, int8, bool);
- ``np_shape.params``: a named list saved under ``np_shape(True)`` (version-3
  array records): a 0-d array, an empty ``(0, 3)`` array and a 2x2 matrix;
- ``mlp-symbol.json`` + ``mlp-0000.params``: ``HybridBlock.export`` of a small
  net (Dense+tanh, Dense+relu, Dense), its keys prefixed ``arg:``;
- ``expected.json``: every array of every file above (name, dtype, shape,
  values) and the exported net's output on a fixed input.
"""

import json
import pathlib

import mxnet as mx
import numpy as np
from mxnet.gluon import nn

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "params"


def describe(arrays):
    """JSON records for a dict (name -> NDArray) or a list of NDArrays."""
    items = arrays.items() if isinstance(arrays, dict) else [(None, a) for a in arrays]
    out = []
    for name, a in items:
        v = a.asnumpy()
        rec = {"dtype": str(v.dtype), "shape": list(v.shape),
               "values": [x.item() for x in v.reshape(-1)]}
        if name is not None:
            rec["name"] = name
        out.append(rec)
    return out


def file_record(path, kind):
    """The expected content of one file, read back with MXNet itself."""
    loaded = mx.nd.load(str(path))
    assert isinstance(loaded, dict) == (kind == "named")
    return {"kind": kind, "arrays": describe(loaded)}


def set_params(net, rng):
    """Deterministic parameter values with few significant digits."""
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(np.round(rng.uniform(-1, 1, p.shape), 3)))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(7)
    expected = {}

    # 1. save_parameters of a tiny MLP
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3, activation="relu"), nn.Dense(2, in_units=4))
    net.initialize()
    set_params(net, rng)
    net.save_parameters(str(OUT / "mlp.params"))
    expected["mlp.params"] = file_record(OUT / "mlp.params", "named")

    # 2. an unnamed list of several dtypes
    arrays = [
        mx.nd.array([[1.5, -2.25, 3.0], [0.125, 1e-3, -7.0]], dtype="float32"),
        mx.nd.array([1.0 / 3.0, -2.5e-8, 1e10], dtype="float64"),
        mx.nd.array([0.5, -65504.0, 0.0999755859375], dtype="float16"),
        mx.nd.array([[-2147483647, 0], [7, 2147483647]], dtype="int32"),
        mx.nd.array([-(2 ** 40), 3, 2 ** 50], dtype="int64"),
        mx.nd.array([0, 1, 128, 255], dtype="uint8"),
        mx.nd.array([-128, -1, 0, 127], dtype="int8"),
        mx.nd.array([1, 0, 1], dtype="bool"),
    ]
    mx.nd.save(str(OUT / "dtypes.params"), arrays)
    expected["dtypes.params"] = file_record(OUT / "dtypes.params", "unnamed")

    # 3. version-3 records: numpy shape semantics (0-d and empty arrays)
    with mx.util.np_shape(True):
        named = {
            "scalar": mx.nd.array(np.array(2.5, dtype=np.float32)),
            "empty": mx.nd.zeros((0, 3)),
            "matrix": mx.nd.array([[1, 2], [3, 4]], dtype="float64"),
        }
        mx.nd.save(str(OUT / "np_shape.params"), named)
        expected["np_shape.params"] = file_record(OUT / "np_shape.params", "named")

    # 4. an exported model and its output on a fixed input
    with mx.name.NameManager():  # fresh counters: dense0, dense1, dense2
        net = nn.HybridSequential()
        net.add(nn.Dense(5, in_units=3, activation="tanh"),
                nn.Dense(4, in_units=5, activation="relu"),
                nn.Dense(2, in_units=4))
    net.initialize()
    set_params(net, rng)
    net.hybridize()
    x = mx.nd.array(np.round(rng.uniform(-2, 2, (2, 3)), 2))
    y = net(x)
    net.export(str(OUT / "mlp"), epoch=0)
    expected["mlp-0000.params"] = file_record(OUT / "mlp-0000.params", "named")
    expected["mlp_forward"] = {"symbol": "mlp-symbol.json", "params": "mlp-0000.params",
                               "input": describe([x])[0], "output": describe([y])[0]}

    with open(OUT / "expected.json", "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    for p in sorted(OUT.iterdir()):
        print(p.name, p.stat().st_size)


if __name__ == "__main__":
    main()
