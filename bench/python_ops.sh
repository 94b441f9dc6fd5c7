#!/usr/bin/env bash
# Builds oxnet's Python package in release mode into .venv, makes a second
# venv with the reference engine (mxnet 1.9.1, numpy<1.24) unless
# WITH_MXNET=0, builds the MXNet-style example library, and prints the
# side-by-side table of bench/python_ops.py.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet
if [ "${WITH_MXNET:-1}" = 1 ] && [ ! -x .venv-mxnet/bin/python ]; then
    python3 -m venv .venv-mxnet
    .venv-mxnet/bin/python -m pip install --quiet "mxnet==1.9.1" "numpy<1.24" \
        || { echo "could not install mxnet 1.9.1: the MXNet column is skipped"; rm -rf .venv-mxnet; }
fi
# A library built for MXNet 1.9.1 (against its own SDK), loaded by both engines.
python3 scripts/fetch_mxnet_sdk.py
if [ -f target/mxnet-sdk/src/lib_api.cc ] && make -s -C examples/extensions/mxnet; then
    export OXNET_BENCH_MXNET_LIB="$PWD/examples/extensions/mxnet/libmx_ops.so"
fi
.venv/bin/python bench/python_ops.py
