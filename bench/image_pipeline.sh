#!/usr/bin/env bash
# Prints the table of bench/image_pipeline.py (after bench/side_envs.sh:
# oxnet built in release mode, MXNet 1.9.1 in its side venv).
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TORCH=0 bash bench/side_envs.sh
.venv/bin/python bench/image_pipeline.py "$@"
