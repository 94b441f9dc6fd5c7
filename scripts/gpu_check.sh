#!/usr/bin/env bash
# The GPU suite, run on a machine with a GPU (CUDA 12 or 13 driver, Python
# with numpy and pytest; PyTorch and CuPy where present), over a checkout
# whose python/oxnet/_oxnet.abi3.so was built with the `cuda` feature
# (`maturin develop --release`, the default) on a build machine: the GPU
# machine needs no Rust. `bash scripts/gpu_build.sh` on the build machine
# makes everything this script runs: the Python extension, the Rust GPU test
# binaries (target/gpu-tests) and MXNet's extension SDK (target/mxnet-sdk,
# for the library built against MXNet's headers); nvcc on the GPU machine
# compiles the test extension library.
#
#   bash scripts/gpu_check.sh            # tests, then the benchmark table
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi not found"
$PY -c "import oxnet as mx; n = mx.context.num_gpus(); print('oxnet sees', n, 'GPU(s)'); raise SystemExit(0 if n else 1)" || {
    echo "oxnet sees no GPU: nothing to check"; exit 1; }
status=0
# for the Rust binaries: NVRTC and cuBLAS from the nvidia-* wheels or the toolkit
# (the Python package finds them by itself)
NV_LIBS=$($PY -c "import glob, nvidia; print(':'.join(d for p in nvidia.__path__ for d in sorted(glob.glob(p + '/cu1*/lib') + glob.glob(p + '/*/lib'))))" 2>/dev/null || true)
RUST_LD="${NV_LIBS}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
$PY -m pytest -q -rs -p no:cacheprovider tests/python/test_gpu.py tests/python/test_gpu_library.py tests/python/test_gpu_random.py tests/python/test_rtc.py || status=1
# the Rust GPU tests, built by scripts/gpu_build.sh
for t in target/gpu-tests/*; do
    [ -x "$t" ] || continue
    echo "== $(basename "$t")"
    LD_LIBRARY_PATH="$RUST_LD" "$t" --test-threads=1 --nocapture || status=1
done
# which operators still run on the host under a whole training step
OXNET_GPU_QUIET=1 $PY -m pytest -q -s -p no:cacheprovider tests/python/test_gpu.py -k gluon_training | grep 'run on the host' || true
$PY bench/gpu.py || status=1
# the Rust GPU benchmarks, built by scripts/gpu_build.sh
for b in target/gpu-bench/*; do
    [ -x "$b" ] && { LD_LIBRARY_PATH="$RUST_LD" "$b" || status=1; }
done
exit $status
