#!/usr/bin/env bash
# Runs the graph-JSON fuzz test (crates/graph/tests/json_fuzz.rs) for many
# more cases than CI does: mutated MXNet-written and oxnet-written graphs fed
# to the loader, which must answer with a symbol or an error, never a panic.
#   bash scripts/fuzz_graph_json.sh [cases]     (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
PROPTEST_CASES="${1:-100000}" cargo test --release -p oxnet-graph --test json_fuzz -- --nocapture
