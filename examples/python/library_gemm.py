"""Seed 004 from Python: build the C++ `my_gemm` example library, load it with
`mx.library.load`, and use its operator like a built-in (forward, autograd).

Run: python examples/python/library_gemm.py   (needs g++)
"""

import os
import pathlib
import subprocess
import tempfile

import numpy as np
import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build(source, out_dir):
    """Compiles an example operator library; returns its absolute path."""
    source = ROOT / source
    compiler = "g++" if source.suffix == ".cc" else "cc"
    std = "-std=c++17" if compiler == "g++" else "-std=c99"
    out = pathlib.Path(out_dir) / f"lib{source.stem}.so"
    subprocess.run([compiler, std, "-O2", "-shared", "-fPIC", "-I", str(ROOT / "include"), str(source), "-o", str(out)],
                   check=True)
    return str(out.resolve())


def main(out_dir=None):
    out_dir = out_dir or tempfile.mkdtemp(prefix="oxnet-ext-")
    path = build("examples/extensions/cpp/my_gemm.cc", out_dir)
    mx.library.load(path)  # prints "Found 1 operators in library" and the names

    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    b = mx.nd.array([[7], [8], [9]])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        c = mx.nd.my_gemm(a, b)
    c.backward()
    print("my_gemm:", c)
    print("grad a:", a.grad, "grad b:", b.grad)
    np.testing.assert_allclose(c.asnumpy(), a.asnumpy() @ b.asnumpy())
    return a, b, c


if __name__ == "__main__":
    main()
