#!/usr/bin/env bash
# Builds oxnet's Python package in release mode into .venv and the side
# venvs (MXNet 1.9.1 in .venv-mxnet; PyTorch in .venv-bench unless
# WITH_TORCH=0) through bench/side_envs.sh, then prints bench/operators.py's
# table: sorting, top-k, gather_nd and element-wise maths against numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/side_envs.sh
.venv/bin/python bench/operators.py "$@"
