"""Gluon against files MXNet 1.9.1 wrote (tests/fixtures/params, made by
scripts/make_params_fixtures.py) and files oxnet's Gluon writes, loaded by
MXNet 1.9.1 (skipped when the side environment .venv-mxnet is missing)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon, nd
from oxnet.gluon import nn

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "params"
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _array(record):
    return np.array(record["values"], dtype=record["dtype"]).reshape(record["shape"])


def _exported_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(5, in_units=3, activation="tanh"), nn.Dense(4, in_units=5, activation="relu"),
            nn.Dense(2, in_units=4))
    return net


def test_symbolblock_imports_mxnet_export_and_reproduces_its_output():
    case = EXPECTED["mlp_forward"]
    block = gluon.SymbolBlock.imports(str(FIXTURES / case["symbol"]), ["data"], str(FIXTURES / case["params"]))
    out = block(nd.array(_array(case["input"])))
    np.testing.assert_allclose(out.asnumpy(), _array(case["output"]), rtol=1e-5, atol=1e-6)


def test_load_parameters_from_mxnet_save_parameters():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3, activation="relu"), nn.Dense(2, in_units=4))
    net.load_parameters(str(FIXTURES / "mlp.params"))
    saved = {r["name"]: _array(r) for r in EXPECTED["mlp.params"]["arrays"]}
    for name, param in net._collect_params_with_prefix().items():
        np.testing.assert_array_equal(param.data().asnumpy(), saved[name])


def test_oxnet_export_and_save_parameters_load_in_mxnet(tmp_path):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    net = _exported_net()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    expected = net(nd.array(x)).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "net"))
    net.save_parameters(str(tmp_path / "net.params"))
    script = f"""
import json, numpy as np, mxnet as mx
from mxnet.gluon import nn, SymbolBlock
x = mx.nd.array(np.array({x.tolist()}, dtype=np.float32))
block = SymbolBlock.imports({sym_file!r}, ['data'], {params_file!r})
net = nn.HybridSequential()
net.add(nn.Dense(5, in_units=3, activation='tanh'), nn.Dense(4, in_units=5, activation='relu'), nn.Dense(2, in_units=4))
net.load_parameters({str(tmp_path / 'net.params')!r})
print(json.dumps([block(x).asnumpy().tolist(), net(x).asnumpy().tolist()]))
"""
    result = subprocess.run([str(MXNET_PYTHON), "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    imported, loaded = json.loads(result.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(imported, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded, expected, rtol=1e-5, atol=1e-6)
