#!/usr/bin/env bash
# The GPU suite, run on a machine with a GPU (CUDA 12 or 13 driver, Python
# with numpy and pytest; PyTorch and CuPy where present), over a checkout
# whose python/oxnet/_oxnet.abi3.so was built with the `cuda` feature
# (`maturin develop --release`, the default) on a build machine: the GPU
# machine needs no Rust.
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
$PY -m pytest -q -rs -p no:cacheprovider tests/python/test_gpu.py || status=1
# which operators still run on the host under a whole training step
OXNET_GPU_QUIET=1 $PY -m pytest -q -s -p no:cacheprovider tests/python/test_gpu.py -k gluon_training | grep 'run on the host' || true
$PY bench/gpu.py || status=1
exit $status
