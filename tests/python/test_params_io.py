"""mx.nd.save / mx.nd.load / mx.nd.load_frombuffer: round trips in MXNet's
format and safetensors, errors for corrupt files, the files MXNet 1.9.1
wrote (tests/fixtures/params), and files oxnet writes loading in MXNet 1.9.1
(``mx.nd.load`` and ``Block.load_parameters``)."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "params"
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]


def _sample(dtype, shape=(2, 3), seed=0):
    rng = np.random.RandomState(seed)
    if dtype == "bool":
        return rng.rand(*shape) > 0.5
    if dtype.startswith("float"):
        return rng.uniform(-10, 10, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.randint(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)


def _arrays():
    return {f"p_{d}": _sample(d, seed=i) for i, d in enumerate(DTYPES)}


def _check_same(got, want):
    assert isinstance(got, mx.nd.NDArray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


# ----- round trips ---------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".params", ".safetensors"])
def test_dict_round_trip_keeps_names_order_and_dtypes(tmp_path, suffix):
    data = _arrays()
    names = list(reversed(list(data)))  # not sorted: the order must survive
    path = tmp_path / f"model{suffix}"
    mx.nd.save(str(path), {k: mx.nd.array(data[k], dtype=data[k].dtype) for k in names})
    loaded = mx.nd.load(str(path))
    assert isinstance(loaded, dict)
    assert list(loaded) == names
    for k in names:
        _check_same(loaded[k], data[k])
    head = path.read_bytes()[:8]
    if suffix == ".params":
        assert head == (0x112).to_bytes(8, "little")
    else:
        assert path.read_bytes()[8:9] == b"{"


@pytest.mark.parametrize("suffix", [".params", ".safetensors"])
def test_list_and_single_array_round_trip(tmp_path, suffix):
    values = [_sample(d, shape=(3,), seed=i) for i, d in enumerate(DTYPES)]
    path = tmp_path / f"list{suffix}"
    mx.nd.save(path, [mx.nd.array(v, dtype=v.dtype) for v in values])  # a PathLike works too
    loaded = mx.nd.load(path)
    assert isinstance(loaded, list) and len(loaded) == len(values)
    for got, want in zip(loaded, values):
        _check_same(got, want)

    one = tmp_path / f"one{suffix}"
    mx.nd.save(str(one), mx.nd.array([[1.5, 2.5]]))
    (got,) = mx.nd.load(str(one))
    _check_same(got, np.array([[1.5, 2.5]], dtype=np.float32))


def test_zero_d_empty_and_non_contiguous_arrays(tmp_path):
    m = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    data = {
        "scalar": mx.nd.array(np.array(4.25, dtype=np.float32)),
        # (nd.zeros((0, 3)) is an error outside mx.np_shape(), as in MXNet 1.9.1)
        "empty": mx.nd.array(np.zeros((0, 3), dtype=np.float32)),
        "transposed": m.T,
        "sliced": m[:, 1],
    }
    for name in ["a.params", "a.safetensors"]:
        mx.nd.save(str(tmp_path / name), data)
        loaded = mx.nd.load(str(tmp_path / name))
        assert loaded["scalar"].shape == () and loaded["scalar"].asscalar() == 4.25
        assert loaded["empty"].shape == (0, 3)
        np.testing.assert_array_equal(loaded["transposed"].asnumpy(), np.arange(6).reshape(2, 3).T)
        np.testing.assert_array_equal(loaded["sliced"].asnumpy(), [1, 4])


def test_load_frombuffer_and_forced_safetensors(tmp_path):
    data = {"w": mx.nd.array([[1, 2], [3, 4]]), "b": mx.nd.array([5], dtype="int64")}
    path = tmp_path / "x.params"
    mx.nd.save(str(path), data)
    buf = path.read_bytes()
    loaded = mx.nd.load_frombuffer(buf)
    assert list(loaded) == ["w", "b"]
    _check_same(loaded["b"], np.array([5], dtype=np.int64))
    assert list(mx.nd.load_frombuffer(bytearray(buf))) == ["w", "b"]

    st = tmp_path / "weights.bin"
    mx.nd.save_safetensors(str(st), [data["w"], data["b"]])
    assert st.read_bytes()[8:9] == b"{"
    for loaded in (mx.nd.load(str(st)), mx.nd.load_safetensors(str(st)), mx.nd.load_frombuffer(st.read_bytes())):
        assert isinstance(loaded, list)
        _check_same(loaded[0], np.array([[1, 2], [3, 4]], dtype=np.float32))
    with pytest.raises(MXNetError, match="x.params"):
        mx.nd.load_safetensors(str(path))


def test_empty_collections(tmp_path):
    for data in ([], {}):
        mx.nd.save(str(tmp_path / "e.params"), data)
        assert mx.nd.load(str(tmp_path / "e.params")) == []  # as MXNet: no names, a list


# ----- errors --------------------------------------------------------------------------

def test_bad_arguments_raise_as_mxnet_does(tmp_path):
    with pytest.raises(TypeError, match="dict str->NDArray"):
        mx.nd.save(str(tmp_path / "a"), {1: mx.nd.ones((1,))})
    with pytest.raises(TypeError, match="dict str->NDArray"):
        mx.nd.save(str(tmp_path / "a"), [mx.nd.ones((1,)), np.ones(1)])
    with pytest.raises(ValueError, match="NDArray"):
        mx.nd.save(str(tmp_path / "a"), 3)
    with pytest.raises(TypeError, match="fname"):
        mx.nd.load(3)
    with pytest.raises(TypeError, match="buf"):
        mx.nd.load_frombuffer(3)


def test_corrupt_and_truncated_files_name_the_file(tmp_path):
    good = tmp_path / "good.params"
    mx.nd.save(str(good), {"w": mx.nd.ones((4, 4)), "b": mx.nd.zeros((4,))})
    raw = good.read_bytes()

    truncated = tmp_path / "truncated.params"
    truncated.write_bytes(raw[:-30])
    with pytest.raises(MXNetError, match=r"truncated\.params.*truncated at byte"):
        mx.nd.load(str(truncated))

    garbage = tmp_path / "garbage.params"
    garbage.write_bytes(b"this is not a parameter file at all")
    with pytest.raises(MXNetError, match=r"garbage\.params.*bad magic"):
        mx.nd.load(str(garbage))

    flipped = bytearray(raw)
    flipped[24 + 12] = 0xFF  # the first array's ndim becomes huge
    bad = tmp_path / "bad_ndim.params"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(MXNetError, match=r"bad_ndim\.params.*array 0"):
        mx.nd.load(str(bad))

    with pytest.raises(MXNetError, match=r"missing\.params"):
        mx.nd.load(str(tmp_path / "missing.params"))
    with pytest.raises(MXNetError, match="parameter buffer.*truncated"):
        mx.nd.load_frombuffer(raw[:100])

    # a failed save leaves no file behind and a present one intact
    target = tmp_path / "good.params"
    with pytest.raises(MXNetError):
        mx.nd.save(str(tmp_path / "no_dir" / "x.params"), [mx.nd.ones((1,))])
    assert target.read_bytes() == raw
    assert not any(".tmp" in p.name for p in tmp_path.iterdir())


# ----- files MXNet 1.9.1 wrote -----------------------------------------------------------

def _expected():
    return json.loads((FIXTURES / "expected.json").read_text())


@pytest.mark.parametrize("name", ["mlp.params", "dtypes.params", "np_shape.params", "mlp-0000.params"])
def test_mxnet_written_fixtures_load(name):
    exp = _expected()[name]
    loaded = mx.nd.load(str(FIXTURES / name))
    if exp["kind"] == "named":
        assert isinstance(loaded, dict)
        assert list(loaded) == [r["name"] for r in exp["arrays"]]
        arrays = list(loaded.values())
    else:
        assert isinstance(loaded, list)
        arrays = loaded
    for got, rec in zip(arrays, exp["arrays"]):
        _check_same(got, np.array(rec["values"], dtype=rec["dtype"]).reshape(rec["shape"]))


def test_exported_model_runs_to_mxnets_output():
    exp = _expected()["mlp_forward"]
    sym = mx.sym.load(str(FIXTURES / exp["symbol"]))
    params = mx.nd.load(str(FIXTURES / exp["params"]))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    x = np.array(exp["input"]["values"], dtype=np.float32).reshape(exp["input"]["shape"])
    args["data"] = mx.nd.array(x)
    out = sym.eval(**args)[0].asnumpy()
    want = np.array(exp["output"]["values"], dtype=np.float32).reshape(exp["output"]["shape"])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


# ----- files oxnet writes, read by MXNet 1.9.1 ---------------------------------------------

_MXNET_READER = r"""
import json, sys
import mxnet as mx
path, np_shape = sys.argv[1], sys.argv[2] == "1"
with mx.util.np_shape(np_shape):
    loaded = mx.nd.load(path)
    def rec(a):
        v = a.asnumpy()
        return {"dtype": str(v.dtype), "shape": list(v.shape), "values": v.reshape(-1).tolist()}
    if isinstance(loaded, dict):
        out = {"kind": "named", "names": list(loaded), "arrays": [rec(a) for a in loaded.values()]}
    else:
        out = {"kind": "unnamed", "arrays": [rec(a) for a in loaded]}
print(json.dumps(out))
"""

_MXNET_GLUON = r"""
import json, sys
import mxnet as mx
import numpy as np
from mxnet.gluon import nn
net = nn.HybridSequential()
net.add(nn.Dense(4, in_units=3, activation="relu"), nn.Dense(2, in_units=4))
net.load_parameters(sys.argv[1])
x = mx.nd.array(json.loads(sys.argv[2]))
print(json.dumps(net(x).asnumpy().tolist()))
"""


def _run_in_mxnet(script, *args):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    result = subprocess.run([str(MXNET_PYTHON), "-c", script, *map(str, args)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _check_mxnet_record(rec, want):
    assert rec["dtype"] == str(want.dtype)
    assert rec["shape"] == list(want.shape)
    np.testing.assert_array_equal(np.array(rec["values"], dtype=want.dtype).reshape(want.shape), want)


def test_mxnet_loads_oxnet_named_and_unnamed_files(tmp_path):
    data = _arrays()
    named = tmp_path / "named.params"
    mx.nd.save(str(named), {k: mx.nd.array(v, dtype=v.dtype) for k, v in data.items()})
    got = _run_in_mxnet(_MXNET_READER, named, 0)
    assert got["kind"] == "named" and got["names"] == list(data)
    for rec, want in zip(got["arrays"], data.values()):
        _check_mxnet_record(rec, want)

    unnamed = tmp_path / "unnamed.params"
    mx.nd.save(str(unnamed), [mx.nd.array(v, dtype=v.dtype) for v in data.values()])
    got = _run_in_mxnet(_MXNET_READER, unnamed, 0)
    assert got["kind"] == "unnamed"
    for rec, want in zip(got["arrays"], data.values()):
        _check_mxnet_record(rec, want)


def test_mxnet_loads_oxnet_zero_d_and_empty_arrays_under_np_shape(tmp_path):
    path = tmp_path / "np.params"
    mx.nd.save(str(path), {"s": mx.nd.array(np.array(2.5, dtype=np.float32)), "e": mx.nd.array(np.zeros((0, 2), dtype=np.float32)),
                           "m": mx.nd.array([[1, 2]], dtype="int32")})
    got = _run_in_mxnet(_MXNET_READER, path, 1)
    assert got["names"] == ["s", "e", "m"]
    _check_mxnet_record(got["arrays"][0], np.array(2.5, dtype=np.float32))
    _check_mxnet_record(got["arrays"][1], np.zeros((0, 2), dtype=np.float32))
    _check_mxnet_record(got["arrays"][2], np.array([[1, 2]], dtype=np.int32))


def test_mxnet_gluon_load_parameters_accepts_an_oxnet_file(tmp_path):
    rng = np.random.RandomState(3)
    params = {"0.weight": rng.uniform(-1, 1, (4, 3)), "0.bias": rng.uniform(-1, 1, (4,)),
              "1.weight": rng.uniform(-1, 1, (2, 4)), "1.bias": rng.uniform(-1, 1, (2,))}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    path = tmp_path / "mlp.params"
    mx.nd.save(str(path), {k: mx.nd.array(v) for k, v in params.items()})
    x = rng.uniform(-2, 2, (3, 3)).astype(np.float32)
    got = np.array(_run_in_mxnet(_MXNET_GLUON, path, json.dumps(x.tolist())), dtype=np.float32)
    h = np.maximum(x @ params["0.weight"].T + params["0.bias"], 0)
    want = h @ params["1.weight"].T + params["1.bias"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
