"""Writes tests/fixtures/model_zoo/models.json with MXNet 1.9.1.

Run from the repository root with MXNet 1.9.1 installed::

    .venv-mxnet/bin/python scripts/make_model_zoo_fixtures.py

For every name ``mx.gluon.model_zoo.vision.get_model`` accepts, the script
builds the model in a fresh name scope (so its prefix is the first one of
its class, ``resnetv10_``), finds the smallest square input the network
accepts (by shape inference, confirmed by a forward pass; never below 32,
the total stride of the ResNets and MobileNets), initializes it, runs one
forward pass on a 1x3xSxS input and records:

- ``input``: the input shape used, and ``output``: the output's shape;
- ``prefix``: the model's prefix;
- ``params``: ``[name, shape]`` for each parameter in ``collect_params()``
  order, the name without the model's prefix (it is ``prefix + name``);
- ``structure``: the ``save_parameters`` keys (``features.0.weight``) in the
  same order.

Names and shapes only: the file stays small enough to commit.
"""

import json
import pathlib

import mxnet as mx
from mxnet.gluon.model_zoo import vision

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "model_zoo"

MODEL_NAMES = [
    "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
    "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
    "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
    "alexnet", "densenet121", "densenet161", "densenet169", "densenet201",
    "squeezenet1.0", "squeezenet1.1", "inceptionv3",
    "mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25",
    "mobilenetv2_1.0", "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25",
]

FLOOR = 32


def build(name):
    """The model ``name`` built as the first of its class."""
    with mx.name.NameManager():
        return vision.get_model(name)


def accepts(sym, size):
    """Whether shape inference passes for a 1x3xSxS input with no empty output."""
    try:
        _, out, _ = sym.infer_shape(data=(1, 3, size, size))
    except mx.base.MXNetError:
        return False
    return out is not None and all(d > 0 for d in out[0])


def smallest_input(name):
    """The smallest square side (at least FLOOR) the model runs on."""
    sym = build(name)(mx.sym.var("data"))
    lo, hi = 1, 512
    assert accepts(sym, hi), name
    while lo < hi:
        mid = (lo + hi) // 2
        if accepts(sym, mid):
            hi = mid
        else:
            lo = mid + 1
    # Inference is monotone here, but confirm the boundary explicitly.
    assert accepts(sym, lo) and (lo == 1 or not accepts(sym, lo - 1)), name
    return max(lo, FLOOR), lo


def record(name):
    """The fixture entry for one model."""
    size, minimum = smallest_input(name)
    net = build(name)
    net.initialize()
    x = mx.nd.ones((1, 3, size, size))
    out = net(x)
    out.wait_to_read()
    prefix = net.prefix
    params = []
    for pname, p in net.collect_params().items():
        assert pname.startswith(prefix), (pname, prefix)
        params.append([pname[len(prefix):], list(p.shape)])
    structure = list(net._collect_params_with_prefix().keys())
    assert len(structure) == len(params), name
    return {"input": list(x.shape), "smallest_side": minimum, "output": list(out.shape),
            "prefix": prefix, "params": params, "structure": structure}


def main():
    """Writes the fixture file."""
    OUT.mkdir(parents=True, exist_ok=True)
    data = {"mxnet_version": mx.__version__, "models": {}}
    for name in MODEL_NAMES:
        data["models"][name] = record(name)
        entry = data["models"][name]
        print(f"{name}: input {entry['input']} (smallest side {entry['smallest_side']}), "
              f"{len(entry['params'])} parameters, output {entry['output']}")
    text = json.dumps(data, separators=(",", ":"))
    (OUT / "models.json").write_text(text + "\n")
    print(f"wrote {OUT / 'models.json'} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
