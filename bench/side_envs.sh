#!/usr/bin/env bash
# Set-up of the side-by-side benchmarks (bench/graph.sh, bench/gluon.sh):
# builds oxnet's Python package in release mode into .venv and makes the
# side venvs for the comparison (PyTorch in .venv-bench, MXNet 1.9.1 in
# .venv-mxnet; neither is a dependency of oxnet).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet
if [ ! -x .venv-bench/bin/python ]; then
    python3 -m venv .venv-bench
    .venv-bench/bin/python -m pip install --quiet torch "numpy<2" \
        || echo "could not install PyTorch: its column is left out"
fi
if [ ! -x .venv-mxnet/bin/python ]; then
    python3 -m venv .venv-mxnet
    .venv-mxnet/bin/python -m pip install --quiet "mxnet==1.9.1" "numpy<1.24" \
        || echo "could not install mxnet 1.9.1: its column is left out"
fi
