#!/usr/bin/env bash
# Set-up of the side-by-side benchmarks (bench/python_ops.sh, graph.sh,
# gluon.sh): builds oxnet's Python package in release mode into .venv and
# makes the side venvs for the comparison: PyTorch in .venv-bench (unless
# WITH_TORCH=0) and MXNet 1.9.1 in .venv-mxnet (unless WITH_MXNET=0);
# neither is a dependency of oxnet, and a failed install leaves that column out.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet
if [ "${WITH_TORCH:-1}" = 1 ] && [ ! -x .venv-bench/bin/python ]; then
    python3 -m venv .venv-bench
    .venv-bench/bin/python -m pip install --quiet torch "numpy<2" \
        || { echo "could not install PyTorch: its column is left out"; rm -rf .venv-bench; }
fi
if [ "${WITH_MXNET:-1}" = 1 ] && [ ! -x .venv-mxnet/bin/python ]; then
    python3 -m venv .venv-mxnet
    .venv-mxnet/bin/python -m pip install --quiet "mxnet==1.9.1" "numpy<1.24" \
        || { echo "could not install mxnet 1.9.1: its column is left out"; rm -rf .venv-mxnet; }
fi
