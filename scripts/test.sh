#!/usr/bin/env bash
# Runs oxnet's whole test suite: unit, integration and example tests, the
# benchmarks in test mode (each runs once, to prove it works) and the doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets
cargo test --workspace --doc
