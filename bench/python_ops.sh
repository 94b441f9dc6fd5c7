#!/usr/bin/env bash
# Builds oxnet's Python package in release mode into .venv and the reference
# engine's venv (mxnet 1.9.1, numpy<1.24) unless WITH_MXNET=0 (through
# bench/side_envs.sh), builds the MXNet-style example library, and prints the
# side-by-side table of bench/python_ops.py.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TORCH=0 bash bench/side_envs.sh
# A library built for MXNet 1.9.1 (against its own SDK), loaded by both engines.
python3 scripts/fetch_mxnet_sdk.py
if [ -f target/mxnet-sdk/src/lib_api.cc ] && make -s -C examples/extensions/mxnet; then
    export OXNET_BENCH_MXNET_LIB="$PWD/examples/extensions/mxnet/libmx_ops.so"
fi
.venv/bin/python bench/python_ops.py
