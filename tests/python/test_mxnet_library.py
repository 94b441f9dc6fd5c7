"""oxnet.library.load on a library built for MXNet 1.9.1 (its ABI, version 11).

examples/extensions/mxnet/mx_ops.cc includes MXNet's own lib_api.h and links
MXNet's lib_api.cc; both come only with the mxnet 1.9.1 wheel
(python3 scripts/fetch_mxnet_sdk.py puts them into target/mxnet-sdk). Without
them these tests are skipped, saying so.
"""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "extensions" / "mxnet" / "mx_ops.cc"
SKIP_REASON = ("MXNet 1.9.1's lib_api.h/lib_api.cc not found (run python3 scripts/fetch_mxnet_sdk.py, "
               "or set MXNET_SDK)")


def _sdk_at(root):
    """(include dir, lib_api.cc) when `root` is laid out like target/mxnet-sdk."""
    root = pathlib.Path(root)
    header, source = root / "include" / "mxnet" / "lib_api.h", root / "src" / "lib_api.cc"
    return (root / "include", source) if header.is_file() and source.is_file() else None


def mxnet_sdk():
    """The SDK, looked up as the Rust tests do (crates/library/tests/common): $MXNET_SDK;
    $MXNET_INCLUDE (the wheel's mxnet/include/mxnet); target/mxnet-sdk; the wheel in .venv-mxnet."""
    if os.environ.get("MXNET_SDK"):
        return _sdk_at(os.environ["MXNET_SDK"])
    if os.environ.get("MXNET_INCLUDE"):
        return _sdk_at(pathlib.Path(os.environ["MXNET_INCLUDE"]).parent.parent)
    found = _sdk_at(ROOT / "target" / "mxnet-sdk")
    if found:
        return found
    for package in sorted((ROOT / ".venv-mxnet" / "lib").glob("python*/site-packages/mxnet")):
        found = _sdk_at(package)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def mx_ops(tmp_path_factory):
    """The example library, built with g++ (or reused from the Rust tests'
    target/ext-examples/native when newer than its sources), loaded once."""
    sdk = mxnet_sdk()
    if sdk is None:
        pytest.skip(SKIP_REASON)
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build the MXNet-style example")
    include, lib_api_cc = sdk
    built = ROOT / "target" / "ext-examples" / "native" / "libmx_ops.so"
    newest_source = max(p.stat().st_mtime for p in (SOURCE, lib_api_cc, include / "mxnet" / "lib_api.h"))
    if built.is_file() and built.stat().st_mtime > newest_source:
        path = built
    else:
        path = tmp_path_factory.mktemp("mxnet") / "libmx_ops.so"
        subprocess.run(["g++", "-shared", "-fPIC", "-std=c++11", "-O2", "-I", str(include), str(SOURCE),
                        str(lib_api_cc), "-o", str(path)], check=True)
    names = mx.library.load(str(path.resolve()), verbose=False)
    return names


def test_the_library_registers_its_operators(mx_ops):
    assert mx_ops == ["mx_gemm", "mx_state_gemm", "mx_noise", "mx_throw", "mx_fail", "mx_accumulate", "mx_probe"]
    assert callable(nd.mx_gemm) and callable(nd.mx_state_gemm)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mx_gemm_matches_numpy(mx_ops, dtype):
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(4, 5)).astype(dtype)
    c = nd.mx_gemm(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype))
    assert c.dtype == dtype
    np.testing.assert_allclose(c.asnumpy(), a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_mx_gemm_gradients_through_autograd(mx_ops):
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    w = rng.normal(size=(3, 2))
    x, y = nd.array(a, dtype=np.float64), nd.array(b, dtype=np.float64)
    x.attach_grad()
    y.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            z = nd.mx_gemm(x, y)
        z.backward(nd.array(w, dtype=np.float64))
    np.testing.assert_allclose(z.asnumpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), w @ b.T, rtol=1e-12)
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * a.T @ w, rtol=1e-12)  # 'add' accumulated twice
    # the stateful version, scaled
    x.attach_grad()
    with autograd.record():
        z = nd.mx_state_gemm(x, y, scale=0.5)
    z.backward(nd.array(w, dtype=np.float64))
    np.testing.assert_allclose(z.asnumpy(), 0.5 * (a @ b), rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), 0.5 * (w @ b.T), rtol=1e-12)


def test_errors_carry_the_librarys_messages(mx_ops):
    x = nd.array([1.0, 2.0, 3.0])
    with pytest.raises(MXNetError, match="mx_fail: bad input"):
        nd.mx_fail(x)
    with pytest.raises(MXNetError, match="mx_throw: boom"):
        nd.mx_throw(x)
    with pytest.raises(MXNetError, match=r"mx_gemm: cannot multiply 2x2 by 3x1"):
        nd.mx_gemm(nd.ones((2, 2)), nd.ones((3, 1)))
    # mx.MXNetError is the same class, and the library stays usable
    assert mx.MXNetError is MXNetError
    np.testing.assert_allclose(nd.mx_gemm(nd.ones((2, 2)), nd.ones((2, 1))).asnumpy(), [[2.0], [2.0]])


def test_optimize_for_with_the_librarys_partitioner_and_pass(mx_ops):
    """MXNet's lib_subgraph/lib_pass flow: mx_part replaces the gemm chain by
    one `_mx_subgraph_op` node (the library does not define that operator,
    so oxnet runs the subgraph itself); mx_tag_pass tags every node."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    net = mx.sym.tanh(mx.sym.mx_gemm(mx.sym.relu(mx.sym.mx_gemm(x, w, name="g0"), name="r0"), w, name="g1"), name="t0")
    rng = np.random.default_rng(5)
    args = {"x": nd.array(rng.normal(size=(2, 3))), "w": nd.array(rng.normal(size=(3, 3)) / 2)}
    want = net.eval(**args)[0].asnumpy()
    part = net.optimize_for("mx_part", ops="mx_gemm,relu")
    graph = part.tojson()
    assert "_mx_subgraph_op" in graph and "mx_reviewed" in graph
    np.testing.assert_allclose(part.eval(**args)[0].asnumpy(), want, rtol=1e-5)
    # gradients through the subgraph node match the original graph's
    grads = {k: nd.zeros(v.shape) for k, v in args.items()}
    grads2 = {k: nd.zeros(v.shape) for k, v in args.items()}
    for sym, g in ((net, grads), (part, grads2)):
        exe = sym.bind(mx.cpu(), dict(args), args_grad=g)
        exe.forward(is_train=True)
        exe.backward(nd.ones((2, 3)))
    for k in args:
        np.testing.assert_allclose(grads2[k].asnumpy(), grads[k].asnumpy(), rtol=1e-5, atol=1e-6)
    # exported, loaded back, it still runs
    np.testing.assert_allclose(mx.sym.load_json(graph).eval(**args)[0].asnumpy(), want, rtol=1e-5)
    tagged = net.optimize_for("mx_tag_pass", tag="hello")
    assert tagged.attr_dict()["g0"]["mx_tag"] == "hello"
    with pytest.raises(MXNetError, match="no backend `nope`"):
        net.optimize_for("nope")
