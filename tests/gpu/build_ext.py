"""Builds tests/gpu/ext/gpu_ops.cu, an extension library with CUDA kernels,
with nvcc: against oxnet's SDK (`sdk="oxnet"`, operators `ox_*`) or against
MXNet 1.9.1's own (`sdk="mxnet"`, operators `mx_*`; needs
`python3 scripts/fetch_mxnet_sdk.py` to have put lib_api.h and lib_api.cc
into target/mxnet-sdk).

Used by tests/python/test_gpu_library.py and bench/gpu.py on a GPU machine.
`build` returns the library's path, or raises `Unavailable` with the reason
(no nvcc, no SDK); a compile error is a RuntimeError.
"""

import os
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "gpu" / "ext" / "gpu_ops.cu"
MXNET_SDK = ROOT / "target" / "mxnet-sdk"


class Unavailable(Exception):
    """The library cannot be built here; the message says why."""


def nvcc():
    """The CUDA compiler: $OXNET_NVCC, nvcc on the PATH, or CUDA's default place."""
    for c in (os.environ.get("OXNET_NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.exists(c):
            return c
    raise Unavailable("no CUDA compiler (nvcc) found; set OXNET_NVCC")


def build(sdk, out_dir):
    """Compiles the library for this machine's GPU into `out_dir`."""
    out = pathlib.Path(out_dir) / f"libgpu_ops_{sdk}.so"
    cmd = [nvcc(), "-shared", "-Xcompiler", "-fPIC", "-std=c++17", "-O2", "-arch=native"]
    if sdk == "oxnet":
        cmd += ["-I", str(ROOT / "include" / "oxnet"), "-DGPU_OPS_PREFIX=ox", str(SOURCE)]
    elif sdk == "mxnet":
        header, impl = MXNET_SDK / "include" / "mxnet" / "lib_api.h", MXNET_SDK / "src" / "lib_api.cc"
        if not (header.exists() and impl.exists()):
            raise Unavailable(f"MXNet's SDK is missing ({header}); run python3 scripts/fetch_mxnet_sdk.py")
        cmd += ["-I", str(header.parent), "-I", str(header.parent.parent), "-DGPU_OPS_PREFIX=mx", str(SOURCE),
                str(impl)]
    else:
        raise ValueError(f"unknown SDK {sdk!r}")
    cmd += ["-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed on {SOURCE.name}:\n{r.stderr[-3000:]}")
    return str(out)
