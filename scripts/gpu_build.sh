#!/usr/bin/env bash
# Builds, on a machine with Rust (no GPU needed), what scripts/gpu_check.sh
# runs on a GPU machine without Rust:
#   - python/oxnet/_oxnet.abi3.so with the `cuda` feature (release);
#   - the Rust GPU test binaries, copied to target/gpu-tests/, and the Rust
#     GPU benchmark (a custom operator with a CUDA kernel) to target/gpu-bench/;
#   - MXNet 1.9.1's extension SDK in target/mxnet-sdk (for the test library
#     built against MXNet's own headers; skipped with a warning offline).
# Then carry python/oxnet/_oxnet.abi3.so and target/gpu-carry.tar.xz (the
# binaries and the SDK, packed small) to the GPU machine with the checkout,
# and there: tar xJf target/gpu-carry.tar.xz -C target && bash scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VIRTUAL_ENV=$PWD/.venv .venv/bin/maturin develop --release --quiet
python3 scripts/fetch_mxnet_sdk.py
rm -rf target/gpu-tests && mkdir -p target/gpu-tests
cargo test -p oxnet-graph --features oxnet-ops/cuda --test every_op_gpu --no-run --message-format=json \
    | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    exe = m.get("executable") if m.get("reason") == "compiler-artifact" else None
    if exe and m["target"]["kind"] == ["test"]:
        shutil.copy(exe, "target/gpu-tests/" + m["target"]["name"])
        print("built", m["target"]["name"])
'
rm -rf target/gpu-bench && mkdir -p target/gpu-bench
cargo build --release -p oxnet-ops --features cuda --example gpu_custom_op
cp target/release/examples/gpu_custom_op target/gpu-bench/
strip target/gpu-tests/* target/gpu-bench/* 2>/dev/null || true
tar cJf target/gpu-carry.tar.xz -C target gpu-tests gpu-bench $( [ -d target/mxnet-sdk ] && echo mxnet-sdk )
ls -la target/gpu-tests target/gpu-bench target/gpu-carry.tar.xz
