"""oxnet.library.load: compiled operator libraries from Python."""

import pathlib
import shutil

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd

import library_gemm

needs_compilers = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cc") is None, reason="needs g++ and cc to build the examples"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("ext")
    return {
        "my_gemm": library_gemm.build("examples/extensions/cpp/my_gemm.cc", out),
        "my_scale": library_gemm.build("examples/extensions/c/my_scale.c", out),
    }


@needs_compilers
def test_loaded_cpp_op_works_with_autograd(built, capfd):
    names = mx.library.load(built["my_gemm"])
    assert names == ["my_gemm"]
    assert "Found 1 operators in library" in capfd.readouterr().out
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    x, y = nd.array(a), nd.array(b)
    x.attach_grad()
    y.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            z = nd.my_gemm(x, y)
        z.backward()
    np.testing.assert_allclose(z.asnumpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones((3, 2)) @ b.T, rtol=1e-5)
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * a.T @ np.ones((3, 2)), rtol=1e-5)  # 'add' accumulated
    # float32 only (the example checks dtypes); gemm is linear, so wide steps stay exact
    worst = mx.test_utils.check_numeric_gradient("my_gemm", [a, b], numeric_eps=1e-2, rtol=1e-3, atol=1e-3)
    assert worst < 1e-3
    with pytest.raises(mx.MXNetError, match="my_gemm"):
        nd.my_gemm(x, nd.ones((5, 2)))


@needs_compilers
def test_loaded_c_op_quietly_and_twice(built, capfd):
    assert mx.library.load(built["my_scale"], verbose=False) == ["my_scale"]
    assert "Found" not in capfd.readouterr().out
    mx.library.load(built["my_scale"], verbose=False)  # loading again is safe
    x = nd.array([1.0, -2.0])
    np.testing.assert_allclose(nd.my_scale(x, scale=3).asnumpy(), [3.0, -6.0])
    with pytest.raises(mx.MXNetError, match="my_scale.*not a number"):
        nd.my_scale(x, scale="abc")


def test_bad_library_paths_are_clear_errors(tmp_path):
    with pytest.raises(mx.MXNetError, match="absolute"):
        mx.library.load("libnothing.so")
    with pytest.raises(mx.MXNetError, match="missing.so"):
        mx.library.load(str(tmp_path / "missing.so"))
    fake = tmp_path / "libfake.so"
    fake.write_text("not a library")
    with pytest.raises(mx.MXNetError, match="libfake.so"):
        mx.library.load(str(fake))
    with pytest.raises(mx.MXNetError):
        mx.library.load(12)
    assert pathlib.Path(fake).exists()
