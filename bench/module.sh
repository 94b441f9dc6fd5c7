#!/usr/bin/env bash
# Prints the table of bench/module.py (after bench/side_envs.sh: oxnet built
# in release mode, PyTorch and MXNet 1.9.1 in side venvs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/side_envs.sh
.venv/bin/python bench/module.py
